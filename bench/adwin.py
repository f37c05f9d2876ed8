"""ADWIN updates per second against River's ADWIN, same stream, same run.

    python bench/adwin.py [--n 1000000] [--p 0.3] [--seed 42] [--repeats 3]

The stream is Bernoulli(p) as Python floats, pre-generated so that only ``update`` is timed;
each detector gets the best of ``--repeats`` passes over a fresh instance, timed in process
CPU time (``time.process_time``) so that other work on a shared machine distorts less. A
second stream switches p from 0.2 to 0.5 halfway, so cuts happen. Rows: River's ADWIN (a
compiled core behind a Python method), ours on each backend (`edgebayes.backend()`: compiled,
python; the compiled rows are left out when the core is not built or ``EDGEBAYES_PURE_PYTHON``
is set), and ours wrapped in
``ErrorDetector`` (what SRP calls per member).
``drifts`` counts inputs that set ``drift_detected`` (River starts a fresh window after each,
ours keeps the shrunken window as MOA, so ours may cut again on the next checks); ``width`` is
the final window length; ``memory B`` is ``memory_bytes()`` (River has none).
"""

from __future__ import annotations

import argparse
import random
import time

from river.drift import ADWIN as RiverADWIN

import edgebayes
from edgebayes.drift import ADWIN, ErrorDetector
from edgebayes.drift.adwin import ReferenceADWIN


def implementations(reference: type, public: type) -> dict[str, type]:
    """Backend -> class: ``public`` when this process chose the compiled core (at import;
    ``EDGEBAYES_PURE_PYTHON`` decides), then its pure-Python ``reference``."""
    return ({"compiled": public} if edgebayes.backend() == "compiled" else {}) | {"python": reference}


def best_seconds(make, stream, repeats):
    """Best CPU time of ``repeats`` passes of ``update`` over ``stream`` on fresh detectors."""
    best = float("inf")
    for _ in range(repeats):
        det = make()
        update = det.update
        start = time.process_time()
        for x in stream:
            update(x)
        best = min(best, time.process_time() - start)
    return best, det


def count_drifts(det, stream) -> int:
    """Inputs after which ``drift_detected`` was set (untimed; River resets its count)."""
    n = 0
    for x in stream:
        det.update(x)
        n += det.drift_detected
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--p", type=float, default=0.3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    half = args.n // 2
    streams = {
        f"stationary p={args.p}": [float(rng.random() < args.p) for _ in range(args.n)],
        "p 0.2 -> 0.5 at n/2": [
            float(rng.random() < (0.2 if i < half else 0.5)) for i in range(args.n)
        ],
    }
    makers = {"river ADWIN": RiverADWIN}
    classes = implementations(ReferenceADWIN, ADWIN)
    for backend, cls in classes.items():
        makers[f"edgebayes ADWIN, {backend}"] = cls
    for backend, cls in classes.items():
        makers[f"ErrorDetector(ADWIN), {backend}"] = lambda cls=cls: ErrorDetector(cls())
    print(f"backend: {edgebayes.backend_description()}")
    for name, stream in streams.items():
        print(f"\n{name}, n={args.n}, best of {args.repeats}")
        print(f"{'detector':32s} {'updates/s':>12s} {'ns/update':>10s} {'vs river':>9s} "
              f"{'width':>8s} {'drifts':>6s} {'memory B':>9s}")
        river_ns = None
        for label, make in makers.items():
            seconds, det = best_seconds(make, stream, args.repeats)
            ns = seconds / len(stream) * 1e9
            river_ns = river_ns or ns
            drifts = count_drifts(make(), stream)
            inner = getattr(det, "detector", det)
            memory = f"{inner.memory_bytes():9d}" if hasattr(inner, "memory_bytes") else "        -"
            print(f"{label:32s} {len(stream) / seconds:12,.0f} {ns:10.0f} {ns / river_ns:8.2f}x "
                  f"{int(inner.width):8d} {drifts:6d} {memory}")


if __name__ == "__main__":
    main()
