import json

import msgpack
import numpy as np
import pytest

from edgebayes.codec import DecodeError, decode, encode


def test_numpy_scalars_encode_in_both_formats():
    # docs/cases.md C39: numpy float32/int64 scalars in a prediction
    msg = {"y_pred": np.int64(3), "proba": {"a": np.float32(0.25)}, "x": np.arange(2.0)}
    for fmt in ("msgpack", "json"):
        out = decode(encode(msg, fmt))
        assert out == {"y_pred": 3, "proba": {"a": 0.25}, "x": [0.0, 1.0]}
        assert type(out["y_pred"]) is int


def test_str_and_bytes_keep_their_types():
    # docs/cases.md C41: str packed as bin (or bin as str) breaks decoding
    out = decode(encode({"name": "kitchen", "raw": b"\xff\x00"}))
    assert out == {"name": "kitchen", "raw": b"\xff\x00"}


def test_json_is_sniffed():
    assert decode(b' {"seq": 1}') == {"seq": 1}
    assert decode(json.dumps([1, 2]).encode()) == [1, 2]


@pytest.mark.parametrize(
    "payload",
    [b"", msgpack.packb({"seq": 1, "x": [1.0, 2.0]})[:-3], b"{not json", b"\xc1"],
)
def test_bad_payloads_raise_decode_error(payload):
    with pytest.raises(DecodeError):
        decode(payload)


@pytest.mark.parametrize("payload, shown", [(b"hello", "'hello'"), (b"21.5", "'21.5'"), (b"online\n", "'online'")])
def test_plain_text_is_told_as_text_not_as_invalid_msgpack(payload, shown):
    # a shell's or a sensor's plain value on a reading topic: the error names what a reading is
    with pytest.raises(DecodeError, match=f"a text payload that is not JSON \\({shown}\\): a reading or label "
                       "is a JSON object or a msgpack map"):
        decode(payload)


def test_binary_that_is_not_msgpack_is_invalid_msgpack():
    with pytest.raises(DecodeError, match=r"^invalid msgpack: FormatError$"):
        decode(b"\xc1\x00")


def test_oversize_payload_is_refused():
    with pytest.raises(DecodeError, match="exceeds"):
        decode(encode({"x": list(range(100))}), max_bytes=10)
