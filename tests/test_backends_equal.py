"""Every learner kind, compiled and pure Python, on the SRP paper's streams and ELEC: the same
prediction at every sample, the same state at the end, and a state written by one backend
continuing identically in the other.

A kind with no compiled implementation yet runs the reference on both sides until it gets one.
"""

from __future__ import annotations

import functools
import math

import pytest

from edgebayes import codec
from edgebayes.base import KINDS, learner_from_state, make_learner
from edgebayes.streams import open_stream
from edgebayes.streams.presets import PRESETS, srp_stream
from tests.conftest import BACKENDS, SHARED, needs_shared, use_backend

ELEC_REL = "data/elec2/elec2.csv.gz"
ELEC = SHARED / ELEC_REL
STREAMS = (*PRESETS, pytest.param("ELEC", marks=needs_shared(ELEC_REL)))

#: the SRP paper's settings (Table II) with its default base learner, the Hoeffding tree
PAPER_SRP = {"n_models": 10, "lam": 6.0, "subspace_size": 0.6, "seed": 1}
#: config id -> (kind, its parameters given the stream's nominal feature indices)
CONFIGS = {
    "gaussian_nb": ("gaussian_nb", lambda nominal: {}),
    "mixed_nb": ("mixed_nb", lambda nominal: {"nominal_attributes": nominal}),
    "hoeffding_tree": ("hoeffding_tree", lambda nominal: {"nominal_attributes": nominal,
                                                          "seed": 1}),
    # Gaussian members: with LED's 24 nominal features, 20 MixedNB members learn ~250 samples/s
    "nb_committee": ("nb_committee", lambda nominal: {"seed": 1}),
    "srp": ("srp", lambda nominal: PAPER_SRP),
    # ~8 kB a member: binds on every stream (unbounded, 140 kB to 1.4 MB after 800 samples)
    "srp_bounded": ("srp", lambda nominal: {**PAPER_SRP, "max_size_bytes": 250_000}),
}
#: samples compared, then samples after a state changed backend. In Python SRP learns ~1,000
#: samples a second, the committee ~2,000 on LED (predicting twice: it draws its own ties), the
#: others 5,000 (MixedNB on LED) to 1,000,000
N_LEARN = {"srp": 800, "srp_bounded": 800, "nb_committee": 800}
N_LEARN_DEFAULT = 1500
N_CONTINUE = 200


@functools.cache
def _stream(name: str, n: int):
    """(X, y, nominal feature indices): the first ``n`` samples of stream ``name``."""
    stream = open_stream(ELEC, drop=["date"]) if name == "ELEC" else srp_stream(name, n, seed=1)
    X, y = stream.to_arrays(n)
    assert len(y) == n
    return X, y, stream.schema.nominal


def _data(config: str, stream: str):
    """(X, y, nominal, n): n samples to compare, then `N_CONTINUE` more."""
    n = N_LEARN.get(config, N_LEARN_DEFAULT)
    return (*_stream(stream, n + N_CONTINUE), n)


class _Side:
    """A learner of one backend, only ever used inside ``use_backend(backend)``: SRP builds its
    members and drift detectors as it learns, with the backend of that moment."""

    def __init__(self, backend: str, build):
        self.backend = backend
        with use_backend(backend):
            self.learner = build()

    def step(self, x, y) -> dict:
        """Predict ``x`` (the probabilities as (label, p) pairs in their order, the label),
        then learn ``(x, y)``."""
        with use_backend(self.backend):
            proba = self.learner.predict_proba_one(x)
            label = self.learner.predict_one(x)  # a learner's own (SRP compiled, the committee's ties)
            self.learner.learn_one(x, y)
        return {"proba": list(proba.items()), "label": label}

    def state(self) -> dict:
        """The state as a checkpoint holds it (msgpack round trip: numpy scalars are plain)."""
        with use_backend(self.backend):
            return codec.decode(codec.encode(self.learner.state()))


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


def _assert_same_state(sides: dict, where: str) -> None:
    (name_a, a), (name_b, b) = sides.items()
    diff = _difference(a.state(), b.state())
    assert not diff, f"{where}: {name_a} vs {name_b}, {diff}"


def _lockstep(sides: dict, X, y, start: int, where: str) -> None:
    """Predict then learn each sample on every side; the same predictions at every sample, the
    same state every 250 samples and at the end."""
    for i, (xi, yi) in enumerate(zip(X, y), start):
        (name_a, a), (name_b, b) = ((name, side.step(xi, yi)) for name, side in sides.items())
        diff = _difference(a, b, "prediction")
        assert not diff, f"{where}, sample {i}: {name_a} vs {name_b}, {diff}"
        if (i + 1) % 250 == 0:
            _assert_same_state(sides, f"{where}, after sample {i}")
    _assert_same_state(sides, f"{where}, at the end")


def _build(config: str, nominal):
    kind, params = CONFIGS[config]
    return lambda: make_learner(kind, **params(nominal))


#: (config, stream, backend) -> the `_Side` the first test trained, for the second to continue
_TRAINED: dict = {}


def test_every_kind_is_compared():
    assert sorted({kind for kind, _ in CONFIGS.values()}) == sorted(KINDS)


@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("config", CONFIGS)
def test_backends_give_identical_predictions_and_states(config, stream):
    X, y, nominal, n = _data(config, stream)
    sides = {name: _Side(name, _build(config, nominal)) for name in BACKENDS}
    _lockstep(sides, X[:n], y[:n], 0, f"{config} on {stream}")
    _TRAINED.update({(config, stream, name): side for name, side in sides.items()})


@pytest.mark.parametrize("writer, reader", [BACKENDS, BACKENDS[::-1]])
@pytest.mark.parametrize("stream", STREAMS)
@pytest.mark.parametrize("config", CONFIGS)
def test_a_state_written_by_one_backend_continues_identically_in_the_other(
    config, stream, writer, reader
):
    X, y, nominal, n = _data(config, stream)
    original = _TRAINED.pop((config, stream, writer), None)
    if original is None:  # run on its own: train the writer here
        original = _Side(writer, _build(config, nominal))
        for xi, yi in zip(X[:n], y[:n]):
            original.step(xi, yi)
    state = original.state()
    copy = _Side(reader, lambda: learner_from_state(state))
    where = f"{config} on {stream}, written by {writer}, read by {reader}"
    _assert_same_state({writer: original, reader: copy}, f"{where}, when read")
    _lockstep({writer: original, reader: copy}, X[n:], y[n:], n, where)


def test_nominal_values_get_the_same_codes_from_small_and_large_vocabularies():
    """The compiled tree scans a small vocabulary and hashes a large one: on a feature that
    grows past 16 values, one with 0.0 and -0.0, and a state whose vocabulary holds ints (a
    checkpoint may), both backends give the same predictions and states."""
    import numpy as np

    rng = np.random.default_rng(3)
    n = 1500
    many = rng.integers(0, 40, n).astype(float)  # passes from scanned to hashed
    signed = rng.choice([0.0, -0.0, 1.0], n)
    noise = rng.normal(size=n)
    X = np.column_stack([many, signed, noise])
    y = [int(m) % 3 if s == 0.0 else int(m) % 2 for m, s in zip(many, signed)]
    build = lambda: make_learner("hoeffding_tree", nominal_attributes=[0, 1], grace_period=50, seed=1)
    sides = {name: _Side(name, build) for name in BACKENDS}
    _lockstep(sides, X[:1000], y[:1000], 0, "nominal vocabularies")
    state = sides[BACKENDS[0]].state()
    state["vocab"] = [[int(v) for v in values] for values in state["vocab"]]
    copies = {name: _Side(name, lambda: learner_from_state(state)) for name in BACKENDS}
    _lockstep(copies, X[1000:], y[1000:], 1000, "nominal vocabularies with int values")
