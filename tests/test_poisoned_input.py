"""One reading must not wipe, brick or lock out a device ("Nothing lost, nothing wiped").

A reading the parser accepts never makes a learner raise (one rule for feature values and
labels, `edgebayes.base.to_float` and ``check_label``); no ``seq`` or ``ts`` locks a device out;
the worker's error bookkeeping is bounded; decoder limits are ``decode`` errors."""

import json
import logging
import time

import pytest

from edgebayes.base import MAX_ABS_X
from edgebayes.codec import DecodeError, decode
from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import load_config
from edgebayes.runtime.ingest.native import Parser
from edgebayes.runtime.ingest.values import to_label, to_number
from edgebayes.runtime.messages import ERROR_KINDS, ProtocolError
from edgebayes.runtime.reports import MAX_ERROR_TOPICS
from edgebayes.runtime.service import Runtime
from tests.runtime_client import FEATURES, Device, decode_default, wait_for, write_config
from tests.test_runtime_robustness import send, worker

P = Parser(FEATURES, "y")


def _runtime(broker, tmp_path):
    rt = Runtime(load_config(write_config(tmp_path / "c.toml", broker, checkpoint_dir=tmp_path / "ck",
                                          extra="[output]\nerror_interval_s = 0\n")))
    rt.start()
    wait_for(rt.client.subscribed.is_set, what="runtime subscription")
    return rt


# --- 1. one reading wiped a device's models --------------------------------------------------

def test_an_x_above_the_learners_bound_is_refused_and_the_model_keeps_its_learning(broker, tmp_path):
    """A finite 1e101 passed the parser; the learner refused it and the device reset its model
    (naive Bayes fell from 350 learned samples to 50), and the checkpoint kept the loss."""
    rt = _runtime(broker, tmp_path)
    try:
        dev = Device(broker)
        for seq in range(20):
            dev.publish("d1", "reading", {"seq": seq, "ts": 1e9 + seq, "x": [seq % 2 * 5, 0, 0], "y": "ab"[seq % 2]})
        dev.publish("d1", "reading", {"seq": 20, "ts": 1e9 + 20, "x": [1e101, 0, 0], "y": "a"})
        dev.publish("d1", "reading", {"seq": 21, "ts": 1e9 + 21, "x": [0, 0, 0], "y": "a"})
        wait_for(lambda: 21 in dev.predictions() and dev.got("error"), what="seq 21 served, seq 20 refused")
        errors = dev.got("error")
        assert [(e["kind"], e["seq"]) for e in errors] == [("out_of_range", 20)]
        assert errors[0]["error"] == "feature 'f0' = 1e+101 is out of range: learning takes |x| <= 1e+100"
        assert sorted(dev.predictions()) == [*range(20), 21]
    finally:
        rt.stop(timeout_s=5)
    assert CheckpointStore(tmp_path / "ck", FEATURES).read("d1")["models"][0]["learner"]["n"] == 21.0


@pytest.mark.parametrize("x,kind", [
    ([1e101, 0, 0], "out_of_range"), ([0, -10**101, 0], "out_of_range"), ({"f2": 1e300}, "out_of_range"),
    ([MAX_ABS_X, -MAX_ABS_X, 0], None), ([0, 10**400, 0], "not_finite"), ({"f0": 10**400}, "not_finite"),
])
def test_the_parser_applies_the_learners_bound(x, kind):
    payload = json.dumps({"seq": 1, "x": x}).encode()  # JSON: ints beyond 64 bits too
    if kind is None:
        assert P.parse_reading("d", payload).x[:2] == [MAX_ABS_X, -MAX_ABS_X]
        return
    with pytest.raises(ProtocolError) as err:
        P.parse_reading("d", payload)
    assert (err.value.kind, err.value.seq) == (kind, 1)
    assert "out_of_range" in ERROR_KINDS and "model_reset" not in ERROR_KINDS


def test_sources_apply_the_learners_bound():
    with pytest.raises(ProtocolError) as err:
        to_number("2e100", "temp")
    assert (err.value.kind, str(err.value)) == (
        "out_of_range", "feature 'temp' = 2e+100 is out of range: learning takes |x| <= 1e+100")
    with pytest.raises(ProtocolError) as err:
        to_number(-(10**400), "temp")
    assert err.value.kind == "not_finite"
    assert to_number("1e100", "temp") == 1e100


# --- 2. one label bricked a device -----------------------------------------------------------

def test_a_lone_surrogate_label_is_refused_and_the_device_keeps_working(broker, tmp_path):
    """``"y": "\\ud800"`` was learned; every later prediction (msgpack) and checkpoint of the
    device then failed with UnicodeEncodeError until a restart."""
    rt = _runtime(broker, tmp_path)
    try:
        dev = Device(broker)
        dev.publish("d1", "reading", {"seq": 0, "x": [0, 0, 0], "y": "a"})
        dev.publish("d1", "reading", b'{"seq": 1, "x": [1, 0, 0], "y": "\\ud800"}')
        dev.publish("d1", "reading", {"seq": 2, "x": [2, 0, 0]})
        dev.publish("d1", "label", b'{"seq": 2, "y": "b\\udfff"}')
        dev.publish("d1", "label", {"seq": 2, "y": "b"})
        dev.publish("d1", "reading", {"seq": 3, "x": [2, 0, 0], "y": "b"})
        wait_for(lambda: 3 in dev.predictions() and len(dev.got("error")) == 2, what="seq 3 served, 2 refusals")
        assert [(e["kind"], e["seq"]) for e in dev.got("error")] == [("field", 1), ("field", 2)]
        assert "lone surrogate" in dev.got("error")[0]["error"]
        assert sorted(dev.predictions()) == [0, 2, 3] and dev.predictions()[3]["y_pred"] == "b"
        assert rt.worker.n_internal_errors == 0 and rt.worker.serving.n_learned == 3
    finally:
        rt.stop(timeout_s=5)
    saved = CheckpointStore(tmp_path / "ck", FEATURES).read("d1")
    assert (saved["last_seq"], saved["models"][0]["learner"]["classes"]) == (3, ["a", "b"])


def test_a_sources_label_that_is_not_valid_unicode_is_refused():
    with pytest.raises(ProtocolError) as err:
        to_label("\ud800", {})
    assert err.value.kind == "field"
    assert to_label("ok", {}) == "ok" and to_label(3.0, {}) == 3


# --- 3. one reading locked a device out for good ---------------------------------------------

def test_no_seq_or_ts_locks_a_device_out(broker, tmp_path):
    """``seq`` 2**53 - 1 without ``ts`` (or ``ts`` 1e300) was accepted, and every later reading
    of the device was refused as a duplicate, also after a restart (it was checkpointed)."""
    rt = _runtime(broker, tmp_path)
    now = time.time()
    try:
        dev = Device(broker)
        for seq in range(3):
            dev.publish("nots", "reading", {"seq": seq, "x": [0, 0, 0]})
        dev.publish("nots", "reading", {"seq": 2**53 - 1, "x": [1, 2, 3]})
        dev.publish("nots", "reading", {"seq": 3, "x": [0, 0, 0]})
        dev.publish("clock", "reading", {"seq": 7, "ts": now, "x": [0, 0, 0]})
        dev.publish("clock", "reading", {"seq": 8, "ts": 1e300, "x": [0, 0, 0]})
        dev.publish("clock", "reading", {"seq": 0, "ts": now + 5, "x": [0, 0, 0]})  # rebooted
        wait_for(lambda: len(dev.got("prediction")) == 6 and len(dev.got("error")) == 2,
                 what="6 readings served, 2 refused")
        got = sorted((e["topic"], e["kind"], e["seq"]) for e in dev.got("error"))
        assert got == [("eb/clock/reading", "ts_ahead", 8), ("eb/nots/reading", "seq_jump", 2**53 - 1)]
        with dev.lock:
            served = [(t.split("/")[1], decode_default(p)["seq"]) for t, p, _ in dev.raw if t.endswith("/prediction")]
        assert [s for d, s in served if d == "nots"] == [0, 1, 2, 3]
        assert [s for d, s in served if d == "clock"] == [7, 0]
        assert (rt.worker.devices["nots"].last_seq, rt.worker.devices["clock"].n_reboots) == (3, 1)
    finally:
        rt.stop(timeout_s=5)
    store = CheckpointStore(tmp_path / "ck", FEATURES)
    assert (store.read("nots")["last_seq"], store.read("clock")["last_ts"]) == (3, now + 5)


# --- 8. error bookkeeping is bounded ---------------------------------------------------------

def test_error_rate_limits_are_kept_for_a_bounded_number_of_topics():
    """About 260 B stayed per distinct error topic (RSS 41.6 -> 88.9 MB over 180,000 topics)."""
    w = worker(output={"format": "json", "error_interval_s": 60})
    n = MAX_ERROR_TOPICS + 500
    for i in range(n):
        send(w, f"dev{i}", "reading", b"junk")
    assert len(w.reports.last_error) == MAX_ERROR_TOPICS + 1 and len(w.reports.suppressed) == 1
    errors = w.session.on("error")  # one per remembered topic, one for all the others together
    assert len(errors) == MAX_ERROR_TOPICS + 1 and w.reports.n_errors_suppressed == 499
    assert errors[-1]["topic"] == f"eb/dev{MAX_ERROR_TOPICS}/reading" and w.reports.errors["decode"] == n
    send(w, "dev0", "reading", b"junk")  # a remembered topic keeps its own limit
    assert w.reports.suppressed["eb/dev0/error"] == 1 and len(w.reports.last_error) == MAX_ERROR_TOPICS + 1


# --- 10. decoder limits ----------------------------------------------------------------------

DEEP_JSON = b"[" * 992 + b"]" * 992  # 1,984 bytes
PAYLOADS = {
    "deep JSON": DEEP_JSON,
    "deep JSON map": b'{"a":' * 5000 + b"1" + b"}" * 5000,
    "a 4,301-digit JSON int": b'{"seq": 1, "x": [' + b"1" * 4301 + b', 0, 0]}',
}


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_decoder_limits_are_decode_errors(name):
    with pytest.raises(DecodeError):
        decode(PAYLOADS[name])


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_decoder_limits_are_reported_on_the_device_error_topic_without_a_traceback(name, caplog):
    """They were counted as ``internal``, logged with a traceback every time, never reported."""
    w = worker()
    with caplog.at_level(logging.DEBUG, logger="edgebayes"):
        send(w, "d1", "reading", PAYLOADS[name])
    assert [(e["kind"], e["topic"]) for e in w.session.on("error")] == [("decode", "eb/d1/reading")]
    assert w.n_internal_errors == 0 and not any(r.exc_info for r in caplog.records)
    assert json.loads(json.dumps(w.metrics()["errors"])) == {"decode": 1}
