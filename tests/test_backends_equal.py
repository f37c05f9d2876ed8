"""Every learner kind, compiled and pure Python, on the SRP paper's streams and ELEC: the same
prediction at every sample, the same state every 250 samples and at the end, and a state
written by one backend continuing identically in the other.

The backend is chosen once per process, at import, so each side runs in its own process
(`tests.backend_side`, with and without ``EDGEBAYES_PURE_PYTHON``); a kind with no compiled
implementation yet runs the reference on both sides until it gets one.
"""

from __future__ import annotations

import functools
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import edgebayes
from edgebayes import codec
from edgebayes.base import KINDS
from tests.backend_side import CONFIGS, ELEC_REL, STREAMS, n_learn, n_total
from tests.conftest import BACKENDS, implementation, needs_shared

ROOT = Path(__file__).resolve().parents[1]
#: the configs compared on every stream (the last one has a stream of its own)
STREAM_CONFIGS = [config for config in CONFIGS if config != "vocab"]
#: the streams, ELEC skipped with the one reason when ../shared is absent
STREAM_PARAMS = [pytest.param(s, marks=needs_shared(ELEC_REL)) if s == "ELEC" else s for s in STREAMS]


def _ask(backend: str, **request) -> dict:
    """What `tests.backend_side` answers ``request`` with in a process of backend ``backend``
    (the test is skipped for "compiled" when the compiled core is not built)."""
    if backend == "compiled":
        implementation("ADWIN", "compiled")  # skips (or fails, as CI requires) without the core
    env = {k: v for k, v in os.environ.items() if k != edgebayes.PURE_PYTHON_ENV}
    if backend == "python":
        env[edgebayes.PURE_PYTHON_ENV] = "1"
    done = subprocess.run([sys.executable, "-m", "tests.backend_side"], check=False, cwd=ROOT, env=env,
                          input=codec.encode({"state": None, "mark": 0, **request}),
                          capture_output=True, timeout=600)
    assert done.returncode == 0, done.stderr.decode()[-3000:]
    answer = codec.decode(done.stdout)
    assert answer["backend"] == backend
    return answer


@functools.cache
def _trained(backend: str, config: str, stream: str) -> dict:
    """A new learner of ``backend`` over the whole stream, its state kept after `n_learn`."""
    return _ask(backend, case=[config, stream], start=0, stop=n_total(config), mark=n_learn(config))


def _difference(a, b, path: str = "state") -> str:
    """Where ``a`` and ``b`` differ ("" if nowhere): types, dict key order and values exact,
    NaN equal to NaN, 0.0 unequal to -0.0 (what their msgpack encodings would tell)."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} {a!r:.80} != {type(b).__name__} {b!r:.80}"
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"{path}: keys {list(a)} != {list(b)}"
        pairs = ((a[k], b[k], f"{path}[{k!r}]") for k in a)
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        pairs = ((u, v, f"{path}[{i}]") for i, (u, v) in enumerate(zip(a, b)))
    elif isinstance(a, float):
        same = a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
        return "" if same or (math.isnan(a) and math.isnan(b)) else f"{path}: {a!r} != {b!r}"
    else:
        return "" if a == b else f"{path}: {a!r:.80} != {b!r:.80}"
    return next((d for u, v, p in pairs if (d := _difference(u, v, p))), "")


def _assert_same(a: dict, b: dict, names: tuple, where: str, offset: int = 0) -> None:
    """The same prediction at every sample and the same state at every mark both answers hold
    (every 250 samples and at the end)."""
    for i, (u, v) in enumerate(zip(a["steps"], b["steps"]), offset):
        diff = _difference(u, v, "prediction")
        assert not diff, f"{where}, sample {i}: {names[0]} vs {names[1]}, {diff}"
    assert len(a["steps"]) == len(b["steps"])
    marks = [mark for mark in a["states"] if mark in b["states"]]
    assert marks and str(offset + len(a["steps"])) in marks
    for mark in marks:
        diff = _difference(a["states"][mark], b["states"][mark])
        assert not diff, f"{where}, after {mark} samples: {names[0]} vs {names[1]}, {diff}"


def _first(answer: dict, n: int) -> dict:
    """``answer`` cut to its first ``n`` samples."""
    return {"steps": answer["steps"][:n], "states": {k: v for k, v in answer["states"].items() if int(k) <= n}}


def _after(answer: dict, n: int) -> dict:
    """``answer`` from sample ``n`` on."""
    return {"steps": answer["steps"][n:], "states": {k: v for k, v in answer["states"].items() if int(k) > n}}


def test_every_kind_is_compared():
    assert sorted({kind for kind, _ in CONFIGS.values()}) == sorted(KINDS)


@pytest.mark.parametrize("stream", STREAM_PARAMS)
@pytest.mark.parametrize("config", STREAM_CONFIGS)
def test_backends_give_identical_predictions_and_states(config, stream):
    n = n_learn(config)
    sides = [_first(_trained(name, config, stream), n) for name in BACKENDS]
    _assert_same(*sides, BACKENDS, f"{config} on {stream}")


@pytest.mark.parametrize("writer, reader", [BACKENDS, BACKENDS[::-1]])
@pytest.mark.parametrize("stream", STREAM_PARAMS)
@pytest.mark.parametrize("config", STREAM_CONFIGS)
def test_a_state_written_by_one_backend_continues_identically_in_the_other(
    config, stream, writer, reader
):
    n = n_learn(config)
    original = _trained(writer, config, stream)
    state = original["states"][str(n)]
    copy = _ask(reader, case=[config, stream], start=n, stop=n_total(config), state=state)
    where = f"{config} on {stream}, written by {writer}, read by {reader}"
    diff = _difference(state, copy["read"])
    assert not diff, f"{where}, when read: {diff}"
    _assert_same(_after(original, n), copy, (writer, reader), where, n)


def test_nominal_values_get_the_same_codes_from_small_and_large_vocabularies():
    """The compiled tree scans a small vocabulary and hashes a large one: on a feature that
    grows past 16 values, one with 0.0 and -0.0, and a state whose vocabulary holds ints (a
    checkpoint may), both backends give the same predictions and states."""
    n = n_learn("vocab")
    sides = [_trained(name, "vocab", "") for name in BACKENDS]
    _assert_same(*(_first(side, n) for side in sides), BACKENDS, "nominal vocabularies")
    state = sides[0]["states"][str(n)]
    copies = [_ask(name, case=["vocab", ""], start=n, stop=n_total("vocab"), state=state, int_vocab=True)
              for name in BACKENDS]
    _assert_same(*copies, BACKENDS, "nominal vocabularies with int values", n)
