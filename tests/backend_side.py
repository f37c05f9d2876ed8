"""One side of `tests/test_backends_equal.py`: a learner of this process's backend (chosen at
import by ``EDGEBAYES_PURE_PYTHON``) run over one stream, as a subprocess.

``python -m tests.backend_side`` reads a msgpack request on stdin: ``case`` ([config, stream]
or ["vocab", ""]), ``start`` (the sample index to begin at) and ``stop``, ``state`` (a state to
continue from, or None for a new learner), ``int_vocab`` (store the state's nominal vocabulary
as ints first). It writes msgpack: ``backend``, ``read`` (the state right after building),
``steps`` (per sample: the probabilities as (label, p) pairs in their order and the label
predicted before learning it) and ``states`` (str(sample index + 1) -> state, every 250
samples, at ``mark`` and at ``stop``).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import edgebayes
from edgebayes import codec
from edgebayes.base import learner_from_state, make_learner
from edgebayes.streams import open_stream
from edgebayes.streams.presets import PRESETS, srp_stream

ELEC_REL = "data/elec2/elec2.csv.gz"  # under ../shared; the tests skip ELEC without it
ELEC = Path(__file__).resolve().parents[1].parent / "shared" / ELEC_REL
STREAMS = (*PRESETS, "ELEC")

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
    # a nominal feature passing from scanned to hashed (the compiled tree scans a vocabulary
    # up to 16 values and hashes a larger one), one with 0.0 and -0.0, and a numeric one
    "vocab": ("hoeffding_tree", lambda nominal: {"nominal_attributes": [0, 1], "grace_period": 50,
                                                 "seed": 1}),
}
#: samples compared, then samples after a state changed backend. In Python SRP learns ~1,000
#: samples a second, the committee ~2,000 on LED (predicting twice: it draws its own ties), the
#: others 5,000 (MixedNB on LED) to 1,000,000
N_LEARN = {"srp": 800, "srp_bounded": 800, "nb_committee": 800, "vocab": 1000}
N_LEARN_DEFAULT = 1500
N_CONTINUE = 200
#: samples in a stream when not n_learn + N_CONTINUE
N_TOTAL = {"vocab": 1500}
#: samples between two state comparisons
STATE_EVERY = 250


def n_learn(config: str) -> int:
    """Samples compared before a state changes backend."""
    return N_LEARN.get(config, N_LEARN_DEFAULT)


def n_total(config: str) -> int:
    """Samples of the stream a config is run over."""
    return N_TOTAL.get(config, n_learn(config) + N_CONTINUE)


@functools.cache
def stream(name: str, n: int):
    """(X, y, nominal feature indices): the first ``n`` samples of stream ``name`` ("" for the
    nominal-vocabulary case)."""
    if not name:
        import numpy as np

        rng = np.random.default_rng(3)
        many = rng.integers(0, 40, n).astype(float)
        signed = rng.choice([0.0, -0.0, 1.0], n)
        X = np.column_stack([many, signed, rng.normal(size=n)])
        y = [int(m) % 3 if s == 0.0 else int(m) % 2 for m, s in zip(many, signed)]
        return X, y, [0, 1]
    source = open_stream(ELEC, drop=["date"]) if name == "ELEC" else srp_stream(name, n, seed=1)
    X, y = source.to_arrays(n)
    assert len(y) == n
    return X, y, source.schema.nominal


def run(request: dict) -> dict:
    """The answer to one request (see the module docstring)."""
    config, name = request["case"]
    start, stop = request["start"], request["stop"]
    X, y, nominal = stream(name, n_total(config))
    state = request["state"]
    if state is not None and request.get("int_vocab"):
        state = {**state, "vocab": [[int(v) for v in values] for values in state["vocab"]]}
    if state is None:
        kind, params = CONFIGS[config]
        learner = make_learner(kind, **params(nominal))
    else:
        learner = learner_from_state(state)
    out = {"backend": edgebayes.backend(), "read": learner.state(), "steps": [], "states": {}}
    for i in range(start, stop):
        proba = learner.predict_proba_one(X[i])
        label = learner.predict_one(X[i])  # a learner's own (SRP compiled, the committee's ties)
        learner.learn_one(X[i], y[i])
        out["steps"].append({"proba": list(proba.items()), "label": label})
        if (i + 1) % STATE_EVERY == 0 or i + 1 in (request["mark"], stop):
            out["states"][str(i + 1)] = learner.state()
    return out


if __name__ == "__main__":
    sys.stdout.buffer.write(codec.encode(run(codec.decode(sys.stdin.buffer.read()))))
