"""Fuzzing: the parser, the ``[[sources]]`` adapters and every ``from_state`` never fail in any
way but the documented one (hypothesis; the long run is bench/fuzz.py).

- ``Parser.parse_reading``/``parse_label`` on arbitrary bytes, arbitrary msgpack and JSON
  documents and mutated valid readings/labels: a clean ``Reading``/``Label`` (see
  `check_item`) or ``ProtocolError`` with a kind of ``ERROR_KINDS``, nothing else.
- ``Adapter.extract`` of every ecosystem on mutated real payloads (../shared/payloads): an
  ``Extract``, never an exception.
- ``learner_from_state`` for every learner of tests/test_learner_contract.py, and
  ``detector_from_state``, on trained states with one to three random mutations (keys dropped,
  types changed, numbers made nan/inf/huge/negative, lists shrunk or grown, values nested
  wrong): ``ValueError``, or a model that predicts a finite distribution, learns a valid
  sample, predicts again and can be checkpointed again (`check_restored`).
- ``Device.load_state`` on mutated device states: an exception (the worker moves the file
  aside), or a device whose models and pending readings all serve without a model error.
- checkpoint files, their bytes or fields mutated, given to a worker that serves the device's
  next reading: moved aside or restored, never an internal or learner error.

The minimal failing examples the fuzzing found are pinned at the end, one test per fix.

The parser's rules for values and labels are edgebayes.base's (``to_float``, ``check_label``):
a feature value is finite (or NaN) with magnitude at most ``MAX_ABS_X``, a label an int of 64
bits or valid Unicode text; the decoder's limits (nesting depth, integer digits) are
``decode`` errors.
"""

from __future__ import annotations

import copy
import json
import math
import random
import tempfile
import time
import tracemalloc
import zlib
from pathlib import Path

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from edgebayes.base import LABEL_LIMIT, LABEL_MIN, MAX_ABS_X, learner_from_state
from edgebayes.codec import decode, encode
from edgebayes.drift import ADWIN, ErrorDetector
from edgebayes.drift.base import detector_from_state
from edgebayes.runtime.checkpoint import FRAME, MAGIC, CheckpointStore
from edgebayes.runtime.config import parse_config
from edgebayes.runtime.device import Device
from edgebayes.runtime.ingest.adapter import Extract
from edgebayes.runtime.ingest.adapters import make_adapter
from edgebayes.runtime.ingest.native import Parser
from edgebayes.runtime.messages import ERROR_KINDS, SEQ_LIMIT, Label, ProtocolError, Reading
from edgebayes.runtime.pending import Early, Pending, PendingLabels
from tests import test_runtime_robustness as robustness
from tests import test_sources
from tests.conftest import SHARED, needs_shared
from tests.runtime_client import blobs
from tests.test_learner_contract import LEARNERS, _stream

settings.register_profile(
    "fuzz", max_examples=300, derandomize=True, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile("fuzz")

FEATURES = ("f0", "f1", "f2")
PARSER = Parser(FEATURES)
PAYLOADS = SHARED / "payloads"

# --- values -------------------------------------------------------------------------------

EDGE_INTS = (0, 1, -1, 2**31, 2**53 - 1, 2**53, 2**63 - 1, 2**63, -2**63, -2**63 - 1, 2**64 - 1,
             2**64, 10**30, -10**30, 10**400, -10**400)
EDGE_FLOATS = (0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 1e100, -1e100, 1e101, 1e300,
               1.7976931348623157e308, math.inf, -math.inf, math.nan)
ints = st.integers() | st.sampled_from(EDGE_INTS)
floats = st.floats(allow_nan=True, allow_infinity=True, allow_subnormal=True) | st.sampled_from(EDGE_FLOATS)
texts = st.text(st.characters() | st.characters(categories=["Cs"]), max_size=8) | st.sampled_from(
    ["f0", "f1", "x", "y", "seq", "ts", "", "\ud800", "nan", "1e999"])
leaves = st.none() | st.booleans() | ints | floats | texts | st.binary(max_size=8)
documents = st.recursive(
    leaves, lambda inner: st.lists(inner, max_size=5) | st.dictionaries(texts | ints, inner, max_size=5),
    max_leaves=20)


def wire(doc, fmt: str) -> bytes:
    """``doc`` as msgpack (surrogates kept) or JSON (bytes as hex); msgpack falls back to JSON
    for an int beyond 64 bits, which msgpack cannot hold; JSON skips bytes keys."""
    if fmt == "msgpack":
        try:
            return msgpack.packb(doc, use_bin_type=True, unicode_errors="surrogatepass")
        except (OverflowError, ValueError, TypeError):
            pass
    return json.dumps(doc, default=lambda b: b.hex(), skipkeys=True).encode()


# --- the parser -----------------------------------------------------------------------------

def check_label(y) -> None:
    """Assert ``y`` is a label a model can learn and both output formats encode and decode."""
    assert type(y) is str or type(y) is int, y
    if type(y) is int:
        assert LABEL_MIN <= y < LABEL_LIMIT, y
    for fmt in ("msgpack", "json"):
        assert decode(encode({"y": y}, fmt)) == {"y": y}


def check_values(xs) -> None:
    """Assert every value is a float, NaN (missing) or of magnitude at most ``MAX_ABS_X``."""
    assert all(type(v) is float and (math.isnan(v) or abs(v) <= MAX_ABS_X) for v in xs), xs


def check_item(item, device: str = "d") -> None:
    """Assert the invariants of a parsed ``Reading``/``Label``."""
    assert item.device == device
    assert type(item.seq) is int and 0 <= item.seq < SEQ_LIMIT
    if type(item) is Label:
        check_label(item.y)
        return
    assert type(item) is Reading
    assert item.ts is None or (type(item.ts) is float and math.isfinite(item.ts))
    assert type(item.x) is list and len(item.x) == len(PARSER.features)
    check_values(item.x)
    if item.y is not None:
        check_label(item.y)


def parse_outcome(payload: bytes, kind: str = "reading") -> str:
    """"ok" or the ``ProtocolError`` kind; any other exception escapes."""
    parse = PARSER.parse_reading if kind == "reading" else PARSER.parse_label
    try:
        item = parse("d", payload)
    except ProtocolError as exc:
        assert exc.kind in ERROR_KINDS, exc.kind
        assert exc.seq is None or type(exc.seq) is int
        return exc.kind
    check_item(item)
    return "ok"


@st.composite
def readings(draw, label: bool = False):
    """A valid reading (or label) document, then zero to three mutations of its fields."""
    doc = {"seq": draw(st.integers(0, SEQ_LIMIT - 1)), "y": draw(st.text(max_size=4) | st.integers(-5, 5))}
    if not label:
        xs = draw(st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=3))
        doc["x"] = xs if draw(st.booleans()) else dict(zip(FEATURES, xs))
        if draw(st.booleans()):
            doc["ts"] = draw(st.floats(0, 2e9))
    for _ in range(draw(st.integers(0, 3))):
        key = draw(st.sampled_from(sorted(doc, key=str) + ["extra"]))
        how = draw(st.sampled_from(["drop", "set", "item"]))
        if how == "drop":
            doc.pop(key, None)
        elif how == "set" or not isinstance(doc.get(key), (list, dict)) or not doc[key]:
            doc[key] = draw(documents)
        elif isinstance(doc[key], list):
            i = draw(st.integers(0, len(doc[key])))
            v = draw(leaves)
            doc[key][i:i + draw(st.integers(0, 1))] = [v] * draw(st.integers(0, 2))
        else:
            doc[key][draw(texts)] = draw(leaves)
    return doc


def mutate_bytes(data: bytes, r: random.Random) -> bytes:
    """``data`` with one to four random byte edits: flip, insert, delete, truncate."""
    b = bytearray(data)
    for _ in range(r.randint(1, 4)):
        op, i = r.randrange(4), r.randint(0, len(b))
        if op == 0 and i < len(b):
            b[i] ^= 1 << r.randrange(8)
        elif op == 1:
            b[i:i] = bytes([r.randrange(256)])
        elif op == 2:
            del b[i:i + 1]
        else:
            del b[i:]
    return bytes(b)


@FUZZ
@given(st.binary(max_size=200), st.sampled_from(["reading", "label"]))
def test_parser_on_arbitrary_bytes(payload, kind):
    assert parse_outcome(payload, kind) in ERROR_KINDS + ("ok",)


@settings(FUZZ, max_examples=200)
@given(documents, st.sampled_from(["msgpack", "json"]), st.sampled_from(["reading", "label"]))
def test_parser_on_arbitrary_documents(doc, fmt, kind):
    assert parse_outcome(wire(doc, fmt), kind) in ERROR_KINDS + ("ok",)


@FUZZ
@given(st.data(), st.sampled_from(["msgpack", "json"]), st.sampled_from(["reading", "label"]))
def test_parser_on_mutated_readings_and_labels(data, fmt, kind):
    doc = data.draw(readings(label=kind == "label"))
    payload = wire(doc, fmt)
    assert parse_outcome(payload, kind) in ERROR_KINDS + ("ok",)
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    assert parse_outcome(mutate_bytes(payload, rng), kind) in ERROR_KINDS + ("ok",)


def test_parser_accepts_the_unmutated_documents_exactly():
    """The property is not vacuous: valid readings parse to their exact values."""
    r = PARSER.parse_reading("d", wire({"seq": 7, "ts": 1.5, "x": {"f1": -0.0, "f2": 5e-324}, "y": 3}, "msgpack"))
    assert (r.seq, r.ts, r.y) == (7, 1.5, 3) and math.isnan(r.x[0]) and r.x[1:] == [-0.0, 5e-324]
    lab = PARSER.parse_label("d", wire({"seq": 2**53 - 1, "y": "é"}, "json"))
    assert (lab.seq, lab.y) == (2**53 - 1, "é")


_DEEP_JSON = b'{"seq": 1, "x": ' + b"[" * 5000 + b"]" * 5000 + b"}"
_DEEP_MSGPACK = b"\x82\xa3seq\x01\xa1x" + b"\x91" * 5000 + b"\x90"
_LONG_INT = b'{"seq": 1, "x": [' + b"9" * 5000 + b', 0, 0]}'


@pytest.mark.parametrize("payload", [_DEEP_JSON, _LONG_INT, _DEEP_MSGPACK],
                         ids=["json_depth", "json_int_digits", "msgpack_depth"])
def test_decoder_limits_are_decode_errors(payload):
    assert parse_outcome(payload) == "decode"


@pytest.mark.parametrize("x", [[1e101, 0, 0], {"f2": -1.7976931348623157e308}, [0, 10**200, 0]])
def test_a_value_beyond_max_abs_x_is_refused(x):
    assert parse_outcome(wire({"seq": 1, "x": x}, "msgpack")) == "out_of_range"


@pytest.mark.parametrize("kind, doc", [("reading", {"seq": 1, "x": [0, 0, 0], "y": "\ud800"}),
                                       ("label", {"seq": 1, "y": "a\udfff"})])
def test_a_lone_surrogate_label_is_refused(kind, doc):
    assert parse_outcome(wire(doc, "json"), kind) == "field"


# --- the [[sources]] adapters ---------------------------------------------------------------

SOURCES = {
    "tasmota": (["t", "h", "p"], {"kind": "tasmota", "topic": "#", "label": "Switch1",
                                  "features": {"t": "AM2301.Temperature", "h": "BME280.Humidity",
                                               "p": ["BME280.Pressure", "ENERGY.Power"]}}),
    "zigbee2mqtt": (["t", "h"], {"kind": "zigbee2mqtt", "topic": "zigbee2mqtt/#", "label": "occupancy",
                                 "features": {"t": "temperature", "h": "humidity"}}),
    "shelly": (["t", "p"], {"kind": "shelly", "topic": "#",
                            "features": {"t": "temperature:0.tC", "p": "switch:0.apower"}}),
    "esphome": (["t"], {"kind": "esphome", "features": {"t": "+/sensor/+/state"}}),
    "json": (["v"], {"kind": "json", "topic": "#", "device_level": -2, "features": {"v": "value"},
                     "label": "state"}),
}


def _adapter(name):
    features, src = SOURCES[name]
    cfg = parse_config({"schema": {"features": features}, "models": [{"name": "nb", "kind": "gaussian_nb"}],
                        "sources": [src]})
    return make_adapter(0, cfg.sources[0])


ADAPTERS = {name: _adapter(name) for name in SOURCES}
FIXTURES = {name: json.loads((PAYLOADS / f"{name if name != 'json' else 'homeassistant'}.json").read_text())
            for name in SOURCES} if PAYLOADS.is_dir() else {}
needs_payloads = needs_shared("payloads")


def check_extract(ex) -> None:
    """Assert an ``Extract``'s invariants (values and label as the parser's)."""
    assert isinstance(ex, Extract) and ex.kind in ("values", "availability", "ignored", "rejected")
    if ex.kind == "rejected":
        assert ex.reason in ERROR_KINDS + ("no_feature",), ex.reason
        return
    check_values(list(ex.values.values()))
    if ex.has_label and ex.label is not None:
        check_label(ex.label)


def extract_outcome(name: str, topic: str, payload: bytes) -> str:
    """"values", "availability", "ignored" or "rejected:<reason>"; a broken invariant or an
    exception escapes."""
    ex = ADAPTERS[name].extract(topic, payload)
    check_extract(ex)
    return f"rejected:{ex.reason}" if ex.kind == "rejected" else ex.kind


def _set_somewhere(doc, value, draw_index):
    """Replace one value anywhere in the JSON ``doc`` (found by ``draw_index``) by ``value``."""
    slots = []

    def walk(o):
        items = o.items() if isinstance(o, dict) else enumerate(o) if isinstance(o, list) else ()
        for k, v in items:
            slots.append((o, k))
            walk(v)

    walk(doc)
    if not slots:
        return value
    parent, key = slots[draw_index(len(slots))]
    parent[key] = value
    return doc


def as_payload(doc) -> bytes:
    """A fixture's payload on the wire: text as is (surrogates kept), None as nothing, else
    JSON (bytes as hex)."""
    if isinstance(doc, str):
        return doc.encode("utf-8", "surrogatepass")
    return b"" if doc is None else json.dumps(doc, default=lambda b: b.hex()).encode()


@needs_payloads
@settings(FUZZ, max_examples=150)
@given(st.data(), st.sampled_from(sorted(SOURCES)))
def test_adapters_on_mutated_real_payloads(data, name):
    entry = copy.deepcopy(data.draw(st.sampled_from(FIXTURES[name])))
    topic = entry["topic"].replace("%topic%", "dev1").replace("<name>", "dev1")
    doc = entry["payload"]
    for _ in range(data.draw(st.integers(0, 3))):
        value = data.draw(documents.filter(lambda d: not isinstance(d, bytes)))
        doc = _set_somewhere(doc, value, lambda n: data.draw(st.integers(0, n - 1)))
    payload = as_payload(doc)
    assert extract_outcome(name, topic, payload)
    rng = random.Random(data.draw(st.integers(0, 2**32)))
    assert extract_outcome(name, topic, mutate_bytes(payload, rng))


def _router_worker(name):
    features, src = SOURCES[name]
    return test_sources.worker_with(features, [src])


@needs_payloads
@settings(FUZZ, max_examples=100)
@given(st.data(), st.sampled_from(sorted(SOURCES)))
def test_sources_through_the_worker(data, name):
    """Mutated real payloads, a few in a row, through the ``SourceRouter``, the assembler and
    the worker's reading/label path: never an exception, an internal or a learner error."""
    w = _router_worker(name)
    for _ in range(data.draw(st.integers(1, 6))):
        entry = copy.deepcopy(data.draw(st.sampled_from(FIXTURES[name])))
        topic = entry["topic"].replace("%topic%", "dev1").replace("<name>", "dev1")
        doc = entry["payload"]
        if data.draw(st.booleans()):
            doc = _set_somewhere(doc, data.draw(documents), lambda n: data.draw(st.integers(0, n - 1)))
        for item, where in w.intake.sources.handle(topic, as_payload(doc)) or []:
            w.serving.serve(item, where, 0.0)
        for item, where in w.intake.sources.tick():
            w.serving.serve(item, where, 0.0)
    assert w.n_internal_errors == 0 and not w.reports.errors["learner_error"], w.reports.errors


# --- learner and detector states ------------------------------------------------------------

def _trained_states():
    out = {}
    X, y = _stream(n=120)
    for name, make in LEARNERS.items():
        model = make()
        for xi, yi in zip(X, y):
            model.learn_one(xi, yi)
        out[name] = model.state()
    det = ErrorDetector(ADWIN(delta=0.01))
    for v in np.random.default_rng(3).random(300) < np.r_[np.full(150, 0.1), np.full(150, 0.7)]:
        det.update(float(v))
    out["error_detector"] = det.state()
    out["adwin"] = det.detector.state()
    return out, X, y


STATES, X_VALID, Y_VALID = _trained_states()
DETECTORS = ("adwin", "error_detector")

#: values a mutation writes: wrong types, non-finite, huge, negative, tiny, empty, nested (ints
#: within msgpack's 64 bits: a checkpoint cannot hold others)
EVIL = (None, True, False, "x", "", "adwin", -1, 0, 1, 2, -0.0, math.nan, math.inf, -math.inf, 10**6, 10**18,
        2**63, 2**64 - 1, -2**63, 5e-324, 1e308, -1e308, 1e-308, 1e100, [], {}, [[]], [None], [math.nan],
        {"kind": "adwin"}, {"kind": "gaussian_nb"})


def state_paths(obj, path=()):
    """Every path (keys and list indices) to a value below ``obj``."""
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        yield path + (k,)
        yield from state_paths(v, path + (k,))


PATHS = {name: [p for p in state_paths(s) if p != ("kind",)] for name, s in STATES.items()}
#: dict keys separately, so that long number lists do not crowd them out
KEY_PATHS = {name: [p for p in ps if isinstance(p[-1], str)] for name, ps in PATHS.items()}

OPS = ("delete", "set", "scale", "shrink", "grow", "wrap", "unwrap", "swap")


def apply_mutation(state, path, op, value, factor, other):
    """Mutate ``state`` in place at ``path`` (silently nothing if the path is gone)."""
    parent = state
    try:
        for p in path[:-1]:
            parent = parent[p]
        key = path[-1]
        old = parent[key]
        parent[key] = old  # a str or a tuple on the way (an earlier mutation): nothing to do
    except (KeyError, IndexError, TypeError):
        return
    if op == "delete":
        del parent[key]
    elif op == "set":
        parent[key] = copy.deepcopy(value)
    elif op == "scale":
        if isinstance(old, (int, float)) and not isinstance(old, bool):
            parent[key] = old * factor if isinstance(factor, float) or isinstance(old, int) else old + factor
        else:
            parent[key] = copy.deepcopy(value)
    elif op == "shrink" and isinstance(old, list) and old:
        del old[-1 if factor > 0 else 0:]
    elif op == "grow" and isinstance(old, list):
        old.extend(copy.deepcopy(old[-1:] or [value]) * (1 if factor < 2 else 3))
    elif op == "wrap":
        parent[key] = [old]
    elif op == "unwrap" and isinstance(old, (list, dict)) and old:
        parent[key] = copy.deepcopy(next(iter(old.values())) if isinstance(old, dict) else old[0])
    elif op == "swap":
        parent[key] = copy.deepcopy(other)


FACTORS = (-1.0, 0.0, 1e300, 1e-300, 3, -1, 1)


def mutate(state, original, paths, key_paths, choose, n: int) -> None:
    """Apply ``n`` random mutations to ``state`` (a copy of ``original``); ``choose(seq)``
    picks one item of ``seq`` (a hypothesis draw, or ``random.Random.choice``)."""
    for _ in range(n):
        path = choose(key_paths if choose((True, False)) else paths)
        try:
            other = _get(original, choose(paths))
        except (KeyError, IndexError, TypeError):
            other = None
        apply_mutation(state, path, choose(OPS), choose(EVIL), choose(FACTORS), other)


def _drawer(draw):
    return lambda seq: draw(st.sampled_from(seq))


@st.composite
def mutated_states(draw, name):
    state = copy.deepcopy(STATES[name])
    mutate(state, STATES[name], PATHS[name], KEY_PATHS[name], _drawer(draw), draw(st.integers(1, 3)))
    return state


def _get(obj, path):
    for p in path:
        obj = obj[p]
    return obj


def _assert_distribution(proba):
    values = list(proba.values())
    assert all(type(p) is float and math.isfinite(p) and 0.0 <= p <= 1.0 for p in values), proba
    assert not values or abs(sum(values) - 1.0) <= 1e-9, proba


def check_restored(name: str, state: dict) -> str:
    """"refused" (``ValueError``) or "restored" after the restored object passed its checks;
    any other exception, or a failing check, escapes."""
    try:
        obj = detector_from_state(state) if name in DETECTORS else learner_from_state(state)
    except ValueError:
        return "refused"
    if name in DETECTORS:
        for v in (0.0, 1.0, 1.0):
            assert obj.update(v) in (True, False)
            assert math.isfinite(obj.estimation), obj.estimation
    else:
        for xi in X_VALID[:3]:
            _assert_distribution(obj.predict_proba_one(xi))
        obj.learn_one(X_VALID[0], Y_VALID[0])
        _assert_distribution(obj.predict_proba_one(X_VALID[1]))
    decode(encode(obj.state()))  # a restored model can be checkpointed again
    return "restored"


@pytest.mark.parametrize("name", sorted(STATES))
def test_from_state_of_mutated_states(name):
    outcomes = []

    @settings(FUZZ, max_examples=150)
    @given(mutated_states(name))
    def prop(state):
        outcomes.append(check_restored(name, state))

    prop()
    assert "refused" in outcomes  # the mutations do reach the checks


# --- device checkpoints ---------------------------------------------------------------------

DEVICE_MODELS = [{"name": "nb", "kind": "gaussian_nb"}, {"name": "tree", "kind": "hoeffding_tree", "grace_period": 10}]


def _device():
    cfg = parse_config({"schema": {"features": ["a", "b", "c", "d"]}, "models": DEVICE_MODELS})
    return Device("d1", cfg.models, 50, 0.002, PendingLabels(8, 600.0))


def _device_state():
    dev = _device()
    for seq, (xi, yi) in enumerate(zip(X_VALID[:60].tolist(), Y_VALID[:60])):
        y_preds, _, _ = dev.predict(xi)
        if seq % 3:
            dev.check_label(yi)
            dev.learn(seq, xi, yi, y_preds, 0.0)
        else:
            dev.pending.add(seq, Pending(time.time(), xi, y_preds))
        dev.accept(seq, float(seq), 0.0, "next")
    dev.pending.hold(61, Early(0.0, dev.check_label(Y_VALID[61])[0], "eb/d1/label"))
    return dev.state()


DEVICE_STATE = _device_state()
DEVICE_PATHS = [p for p in state_paths(DEVICE_STATE) if "learner" not in p]  # learners: above
DEVICE_KEY_PATHS = [p for p in DEVICE_PATHS if isinstance(p[-1], str)]


def check_device(state: dict) -> str:
    """"refused" (any exception from ``load_state``: the worker moves the checkpoint aside) or
    "restored", after every model predicted, every pending reading was labelled and learned,
    and a new reading was learned, all without a model error (``Device.model_errors``)."""
    dev = _device()
    try:
        dev.load_state(state, 4)
    except Exception:  # noqa: BLE001 - any exception is a corrupt checkpoint (worker._device)
        return "refused"
    now = time.time()
    for seq in list(dev.pending._items):
        entry = dev.pending.pop(seq)
        dev.learn(seq, entry.x, Y_VALID[seq % len(Y_VALID)], entry.y_preds, now)
    y_preds, _, proba = dev.predict(X_VALID[1].tolist())
    _assert_distribution(proba)
    dev.learn(dev.last_seq + 1, X_VALID[1].tolist(), Y_VALID[1], y_preds, now)
    assert dev.model_errors == [], dev.model_errors
    encode(dev.state())
    return "restored"


@st.composite
def mutated_devices(draw):
    state = copy.deepcopy(DEVICE_STATE)
    mutate(state, DEVICE_STATE, DEVICE_PATHS, DEVICE_KEY_PATHS, _drawer(draw), draw(st.integers(1, 3)))
    return state


@settings(FUZZ, max_examples=300)
@given(mutated_devices())
def test_device_load_state_of_mutated_checkpoints(state):
    check_device(state)



# --- checkpoint files through the worker -----------------------------------------------------

def _checkpoint_bytes() -> bytes:
    """A real checkpoint of device d1 (tests/test_runtime_robustness.py's worker: one
    GaussianNB, 3 features): 12 readings, the last 4 waiting for their label."""
    with tempfile.TemporaryDirectory() as d:
        w = robustness.worker(store=CheckpointStore(Path(d), robustness.FEATURES))
        for seq, (x, y) in enumerate(blobs(12, seed=2)):
            robustness.send(w, "d1", "reading", {"seq": seq, "x": x, "y": y if seq < 8 else None})
        assert w.checkpoint(all_devices=True) == 1
        return (Path(d) / "d1.ckpt").read_bytes()


CHECKPOINT = _checkpoint_bytes()
CHECKPOINT_DOC = msgpack.unpackb(CHECKPOINT[FRAME.size:], strict_map_key=False)


def framed(doc: dict) -> bytes:
    """``doc`` as a checkpoint file whose checksum holds (the fuzzing is of the values)."""
    body = msgpack.packb(doc, use_bin_type=True)
    return FRAME.pack(MAGIC, len(body), zlib.crc32(body)) + body
CHECKPOINT_PATHS = list(state_paths(CHECKPOINT_DOC))
CHECKPOINT_KEY_PATHS = [p for p in CHECKPOINT_PATHS if isinstance(p[-1], str)]


def restore_outcome(data: bytes) -> str:
    """Start a worker on checkpoint ``data`` and send device d1 its next reading (seq 12):
    "moved aside" (then the reading is predicted by a fresh model), "restored" (the device is
    checkpointed again) or "left alone" (a checkpoint of another version or needing a feature
    the schema lacks: the device is refused, its file unchanged); never an internal error or a
    learner error."""
    with tempfile.TemporaryDirectory() as d:
        store = CheckpointStore(Path(d), robustness.FEATURES)
        store.path("d1").write_bytes(data)
        w = robustness.worker(store=store)
        robustness.send(w, "d1", "reading", {"seq": 12, "x": [0.5, 0.5, 0.5], "y": "a"})
        aside = list(Path(d).glob("d1.ckpt.corrupt-*"))
        assert w.n_internal_errors == 0 and not w.reports.errors["learner_error"]
        predicted = [p["seq"] for p in w.session.on("prediction")]
        refused = [e["kind"] for e in w.session.on("error")]
        if refused == ["checkpoint_refused"]:
            assert predicted == [] and store.path("d1").read_bytes() == data and w.checkpoint(all_devices=True) == 0
            return "left alone"
        assert (predicted, refused) == ([12], []) or (not aside and predicted == [] and len(refused) == 1)
        assert w.checkpoint(all_devices=True) == 1 and store.read("d1")["device"] == "d1"
    return "moved aside" if aside else "restored"


@settings(FUZZ, max_examples=200)
@given(st.data())
def test_a_mutated_checkpoint_file_is_restored_or_moved_aside(data):
    if data.draw(st.booleans()):
        payload = mutate_bytes(CHECKPOINT, random.Random(data.draw(st.integers(0, 2**32))))
    else:
        doc = copy.deepcopy(CHECKPOINT_DOC)
        mutate(doc, CHECKPOINT_DOC, CHECKPOINT_PATHS, CHECKPOINT_KEY_PATHS, _drawer(data.draw),
               data.draw(st.integers(1, 3)))
        payload = framed(doc)
    restore_outcome(payload)


def test_both_outcomes_of_a_restore():
    """The property is not vacuous: the file as written is restored, a torn or spoilt one is
    moved aside."""
    assert restore_outcome(CHECKPOINT) == "restored"
    assert restore_outcome(CHECKPOINT[:-9]) == "moved aside"
    doc = copy.deepcopy(CHECKPOINT_DOC)
    doc["device"]["pending"]["items"][0][2] = [0.5, 0.5]
    assert restore_outcome(framed(doc)) == "moved aside"
    doc["device"]["pending"]["items"][0][2] = [0.5, 0.5, 0.5]
    doc["version"] = 3
    assert restore_outcome(framed(doc)) == "left alone"


# --- minimal examples the fuzzing found, pinned -----------------------------------------------

def _spoiled(change) -> dict:
    state = copy.deepcopy(DEVICE_STATE)
    change(state)
    return state


def _pending_x(s):
    s["pending"]["items"][0][2][2] = [0.5]  # a learner refuses it (its delayed label reset every model)


def _pending_x_short(s):
    s["pending"]["items"][0][2].pop()


def _pending_predictions(s):
    s["pending"]["items"][0][3] = []  # zip() with the models: none would learn it


def _last_seq_float(s):
    s["last_seq"] = 5.9e301  # int() made it a 1000-bit int: locked out, never checkpointed again


def _last_seq_beyond(s):
    s["last_seq"] = 2**60  # every reading a duplicate, for good


def _counter_float(s):
    s["models"][0]["n_correct"] = 2.5e301


def _window_not_01(s):
    s["models"][0]["window"][0] = 5  # an accuracy above 1


def _detector_kind(s):
    s["models"][0]["detector"] = s["models"][0]["detector"]["detector"]  # a bare ADWIN: learn() raised


def _learner_kind(s):
    s["models"][0]["learner"] = copy.deepcopy(s["models"][1]["learner"])  # a tree in the "nb" slot


@pytest.mark.parametrize("change", [_pending_x, _pending_x_short, _pending_predictions, _last_seq_float,
                                    _last_seq_beyond, _counter_float, _window_not_01, _detector_kind,
                                    _learner_kind])
def test_device_load_state_refuses(change):
    assert check_device(_spoiled(change)) == "refused"


def test_device_load_state_keeps_the_newest_pending_within_the_limit():
    state = copy.deepcopy(DEVICE_STATE["pending"])
    pending = PendingLabels(3, 600.0)
    pending.load_state(state, 4, 2)
    assert list(pending._items) == [seq for seq, *_ in state["items"]][-3:]
    assert pending.n_overflow == state["n_overflow"] + len(state["items"]) - 3
    assert check_device(DEVICE_STATE) == "restored"


def _state_with(name, path, value):
    state = copy.deepcopy(STATES[name])
    parent = _get(state, path[:-1])
    parent[path[-1]] = value
    return state


@pytest.mark.parametrize("name, path, value", [
    ("adwin", ("n_detections",), 2e300),  # int() of it: a 997-bit int no checkpoint can encode
    ("error_detector", ("n_detections",), 1e308),
    ("error_detector", ("detector", "n_detections"), -1),
    ("adwin", ("params", "max_buckets"), 10**18),  # MemoryError
    ("error_detector", ("detector", "params", "clock"), 10**18),  # MemoryError
])
def test_detector_from_state_refuses(name, path, value):
    assert check_restored(name, _state_with(name, path, value)) == "refused"


def test_adwin_refuses_buffers_beyond_the_bound():
    for params in ({"clock": 65537}, {"max_buckets": 65537}):
        with pytest.raises(ValueError, match=r"in \[\d, 65536\]"):
            ADWIN(**params)
    assert ADWIN(clock=65536, max_buckets=65536).clock == 65536


@pytest.mark.parametrize("name, path, value", [
    ("hoeffding_tree", ("caps", 0), 10**7), ("hoeffding_tree", ("caps", 1), 10**7),
    ("hoeffding_tree", ("caps", 2), 10**7), ("srp", ("members", 0, "learner", "caps", 0), 10**7),
    ("hoeffding_tree", ("n_features_in",), 2 * 10**6),
])
def test_tree_from_state_refuses_sizes_before_allocating_them(name, path, value):
    """A capacity of 10**7 allocated ~830 MB before the checks refused it (a Pi runs out);
    n_features_in of 10**7, 466 MB and 20 s."""
    tracemalloc.start()
    try:
        assert check_restored(name, _state_with(name, path, value)) == "refused"
        assert tracemalloc.get_traced_memory()[1] < 2**20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name, path, value", [
    ("hoeffding_tree", ("n_learned",), 2**64 - 1),  # the next learn_one: 2**64, which msgpack cannot hold
    ("srp", ("n_samples_seen",), 2**64 - 1),
    ("srp", ("members", 1, "learner", "n_learned"), 2**64 - 1),
    ("nb_committee", ("n_learned",), 1e300),  # int() of it: a 997-bit int
    ("nb_committee_mc", ("n_learned",), 2**64 - 1),
])
def test_learner_from_state_refuses_counters_no_checkpoint_can_hold(name, path, value):
    assert check_restored(name, _state_with(name, path, value)) == "refused"


@pytest.mark.parametrize("unit", [{"x": 1}, ["mmHg"]])
def test_tasmota_pressure_unit_that_is_not_text_leaves_the_value_as_sent(unit):
    """It raised TypeError (unhashable) out of extract(): an internal error, not a reading."""
    payload = json.dumps({"BME280": {"Pressure": 1000.5}, "PressureUnit": unit}).encode()
    ex = ADAPTERS["tasmota"].extract("tele/dev1/SENSOR", payload)
    assert (ex.kind, ex.device, ex.values) == ("values", "dev1", {"p": 1000.5})
