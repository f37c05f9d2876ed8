"""Young models against grown ones: what a sample costs in a model's first samples.

A runtime serving many devices holds many young models at once: each new device's models
start empty, and a young tree re-lays its arrays for each of its first classes and splits,
and an SRP builds its members at its first sample. This runs ``--devices`` models of one kind
side by side, interleaved, ``--per`` samples each (every model young), then one model over
the same number of samples (grown), on the stream of ``bench/runtime.py`` (8 numeric
features, 3 classes), and reports the CPU time (``time.process_time``) of predict + learn
per sample, the model's construction included. The backend is this process's
(``EDGEBAYES_PURE_PYTHON=1`` runs the pure-Python reference).

    python bench/young.py [--kind srp] [--devices 1000] [--per 20]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import edgebayes
from edgebayes.base import make_learner

PARAMS = {"srp": {"n_models": 10}, "hoeffding_tree": {}, "gaussian_nb": {}}


def stream(n: int, seed: int = 0) -> list:
    """``n`` samples (list of 8 floats, int label) as `bench.runtime.payloads` draws them."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(0, 1, (n, 8)) + y[:, None]
    return [(X[i].tolist(), int(y[i])) for i in range(n)]


def us_per_sample(kind: str, n_models: int, samples: list) -> float:
    """CPU us per sample of ``n_models`` models of ``kind`` taking ``samples`` in turn."""
    models: list = [None] * n_models
    t = time.process_time()
    for i, (x, y) in enumerate(samples):
        m = models[i % n_models]
        if m is None:
            m = models[i % n_models] = make_learner(kind, **PARAMS[kind])
        m.predict_proba_one(x)
        m.learn_one(x, y)
    return (time.process_time() - t) / len(samples) * 1e6


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kind", choices=sorted(PARAMS), default="srp")
    ap.add_argument("--devices", type=int, default=1000, help="young models, interleaved")
    ap.add_argument("--per", type=int, default=20, help="samples each young model takes")
    args = ap.parse_args()
    samples = stream(args.devices * args.per)
    young = us_per_sample(args.kind, args.devices, samples)
    grown = us_per_sample(args.kind, 1, samples)
    print(f"{args.kind} ({edgebayes.backend()}): {args.devices} models x {args.per} samples {young:.1f} us/sample; "
          f"one model x {len(samples)} samples {grown:.1f} us/sample; young / grown {young / grown:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
