"""Instructions per sample of SRP's learn + predict, counted by valgrind's callgrind.

    python bench/callgrind_srp.py [--streams AGR_A LED_A] [--n 20000 40000] [--seed 1] [--out DIR]
    python bench/callgrind_srp.py --run AGR_A 20000 --total 40000   (what valgrind runs)

For each stream, the same process runs twice under ``valgrind --tool=callgrind``: each loads
``max(--n)`` samples (the same work in both), then tests and trains `SRPClassifier` with
`bench.srp`'s settings (the paper's) on the first n of them, as `bench.srp.run_ours` does. The
difference of the two runs' instruction counts over the difference of their n is the cost of
one ``predict_one`` + ``learn_one`` between the two n (start-up, loading and the young trees'
samples cancel out). Set EDGEBAYES_PURE_PYTHON=1 for the reference.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(stream: str, n: int, total: int, seed: int) -> None:
    """Load ``total`` samples of ``stream``, test then train SRP on the first ``n``."""
    from bench.srp import PAPER, TREE, load
    from edgebayes.ensemble import SRPClassifier
    from edgebayes.tree import HoeffdingTreeClassifier

    X, y, schema = load(stream, total, seed)
    tree = HoeffdingTreeClassifier(**TREE, nominal_attributes=schema.nominal or None)
    model = SRPClassifier(model=tree, seed=seed, **PAPER)
    for xi, yi in zip(X[:n], y[:n]):
        model.predict_one(xi)
        model.learn_one(xi, yi)


def instructions(stream: str, n: int, total: int, seed: int, tmp: Path) -> int:
    """Instructions callgrind counts for ``run(stream, n, total)`` in a fresh interpreter."""
    out = tmp / f"callgrind.{stream}.{n}"
    cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", sys.executable,
           str(Path(__file__).resolve()), "--run", stream, str(n), "--total", str(total), "--seed", str(seed)]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    match = re.search(r"^summary:\s+(\d+)", out.read_text(), re.MULTILINE)
    return int(match.group(1))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--streams", nargs="+", default=["AGR_A", "LED_A"])
    ap.add_argument("--n", nargs=2, type=int, default=[20_000, 40_000], help="the two sample counts")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, help="keep the callgrind files in this directory")
    ap.add_argument("--run", nargs=2, metavar=("STREAM", "N"), help=argparse.SUPPRESS)
    ap.add_argument("--total", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.run:
        run(args.run[0], int(args.run[1]), args.total, args.seed)
        return 0
    lo, hi = sorted(args.n)
    backend = "pure Python" if os.environ.get("EDGEBAYES_PURE_PYTHON") else "compiled"
    print(f"# SRP(10) learn + predict, {backend}; instructions between samples {lo} and {hi}")
    with tempfile.TemporaryDirectory(prefix="callgrind_srp_") as tmp:
        out = args.out or Path(tmp)
        out.mkdir(parents=True, exist_ok=True)
        for stream in args.streams:
            a = instructions(stream, lo, hi, args.seed, out)
            b = instructions(stream, hi, hi, args.seed, out)
            print(f"{stream:7} {(b - a) / (hi - lo):12,.0f} instructions per sample")
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
