"""Hoeffding tree vs River's HoeffdingTreeClassifier, side by side in the same run.

Prequential (test-then-train) accuracy, samples/s, model bytes, nodes and depth on ELEC
(../shared/data/elec2, `date` dropped) and on AGR_A, LED_A, RBF_M (edgebayes.streams), with
VFDT's defaults (grace_period=200, delta=1e-7, tau=0.05, nba) and SRP's base-tree settings
(grace_period=50, delta=0.01). Also times the per-element access of the storage candidates.

    python bench/tree.py [--n-samples 100000] [--streams ELEC AGR_A LED_A RBF_M] [--no-river]
"""

from __future__ import annotations

import argparse
import sys
import time
import timeit
from array import array
from pathlib import Path

import numpy as np

from edgebayes.streams import open_stream
from edgebayes.tree import HoeffdingTreeClassifier

ELEC = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "elec2" / "elec2.csv.gz"
SETTINGS = {"vfdt": {"grace_period": 200, "delta": 1e-7, "tau": 0.05},
            "srp": {"grace_period": 50, "delta": 0.01, "tau": 0.05}}


def load(name: str, n: int):
    if name == "ELEC":
        return open_stream(ELEC, drop=["date"], n_samples=n).to_arrays()
    return open_stream(f"synth:{name}", n_samples=n, seed=1).to_arrays()


def run_ours(X, y, params):
    model = HoeffdingTreeClassifier(leaf_prediction="nba", **params)
    correct = 0
    t0 = time.perf_counter()
    for xi, yi in zip(X, y):
        correct += model.predict_one(xi) == yi
        model.learn_one(xi, yi)
    dt = time.perf_counter() - t0
    return correct / len(y), len(y) / dt, model.memory_bytes(), model.n_nodes, model.depth


def run_river(X, y, params):
    from river import tree

    model = tree.HoeffdingTreeClassifier(leaf_prediction="nba", **params)
    names = [f"x{j}" for j in range(X.shape[1])]
    rows = [dict(zip(names, r)) for r in X.tolist()]
    correct = 0
    t0 = time.perf_counter()
    for xi, yi in zip(rows, y):
        correct += model.predict_one(xi) == yi
        model.learn_one(xi, yi)
    dt = time.perf_counter() - t0
    return correct / len(y), len(y) / dt, model._raw_memory_usage, model.n_nodes, model.height - 1


def storage_access():
    """ns per read-modify-write of one float: stdlib array vs numpy vs list."""
    out = {}
    for name, a in (("array('d')", array("d", [0.0]) * 1000), ("numpy", np.zeros(1000)), ("list", [0.0] * 1000)):
        def rmw(a=a):
            a[517] = a[517] + 1.0
        out[name] = timeit.timeit(rmw, number=200_000) / 200_000 * 1e9
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n-samples", type=int, default=100_000)
    p.add_argument("--streams", nargs="+", default=["ELEC", "AGR_A", "LED_A", "RBF_M"])
    p.add_argument("--no-river", action="store_true")
    args = p.parse_args(argv)
    print("storage access, ns per read-modify-write:",
          ", ".join(f"{k} {v:.0f}" for k, v in storage_access().items()))
    head = (f"{'stream':7} {'setting':5} {'model':6} {'acc%':>6} {'samples/s':>10} {'bytes':>10} "
            f"{'nodes':>6} {'depth':>5}")
    print(head)
    for name in args.streams:
        X, y = load(name, args.n_samples)
        for setting, params in SETTINGS.items():
            ours = run_ours(X, y, params)
            rows = [("ours", ours)]
            if not args.no_river:
                rows.append(("river", run_river(X, y, params)))
            for model, (acc, sps, nbytes, nodes, depth) in rows:
                print(f"{name:7} {setting:5} {model:6} {100 * acc:6.2f} {sps:10.0f} {nbytes:10d} {nodes:6d} {depth:5d}")
            if len(rows) == 2:
                (a, s, b, _, _), (ra, rs, rb, _, _) = ours, rows[1][1]
                print(f"{'':13} ours-river {100 * (a - ra):+.2f} pt, speed x{s / rs:.2f}, bytes x{b / rb:.2f}")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
