"""edgebayes GaussianNB against River's GaussianNB on the same real stream, in one run.

    python bench/nb.py [--data ../shared/data/elec2/elec2.csv.gz] [--drop date] [--repeats 3]

Prints prequential accuracy and microseconds per sample of predict_proba_one + learn_one (test
then train, one sample at a time) for ours on each backend (`edgebayes.backend()`: compiled,
python; the compiled rows are left out when the core is not built) and River's, and samples
per second of learn_many and predict_proba_many on the whole stream (numpy, the same code on
both backends), with the ratios; River's batch row needs pandas and is left out without it.
The stream is read once before timing; River gets its dicts (and its pandas DataFrame) prebuilt,
edgebayes the float64 rows the stream yields. Best of ``--repeats`` runs, in process CPU time
(``time.process_time``) so that other work on a shared machine distorts less.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import edgebayes
from bench.adwin import implementations
from edgebayes.naive_bayes import GaussianNB, ReferenceGaussianNB
from edgebayes.streams import open_stream


def best_time(fn, repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def trained(make, fit):
    model = make()
    fit(model)
    return model


def prequential_one(make, rows, labels):
    """Test then train one sample at a time; returns the number of right predictions."""
    model, right = make(), 0
    for x, y in zip(rows, labels):
        proba = model.predict_proba_one(x)
        if proba and max(proba, key=proba.get) == y:
            right += 1
        model.learn_one(x, y)
    return right


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(ROOT / ".." / "shared" / "data" / "elec2" / "elec2.csv.gz"))
    parser.add_argument("--drop", nargs="*", default=["date"])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from river.naive_bayes import GaussianNB as RiverGaussianNB

    stream = open_stream(args.data, drop=args.drop)
    X, y = stream.to_arrays()
    names = [f.name for f in stream.schema.features]
    dicts = [dict(zip(names, row)) for row in X.tolist()]
    n, d = X.shape
    dropped = ", ".join(args.drop) or "none"
    print(f"{args.data}: {n:,} samples, {d} features (dropped: {dropped}), best of {args.repeats}")
    classes = implementations(ReferenceGaussianNB, GaussianNB)
    print(f"backend: {edgebayes.backend_description()}")

    print("\nprequential, one sample at a time (predict_proba_one + learn_one)")
    print(f"{'model':<52}{'accuracy':>10}{'us/sample':>12}{'vs River':>10}")
    river_s, river_right = best_time(lambda: prequential_one(RiverGaussianNB, dicts, y), args.repeats)
    rows = list(X)  # the float64 vectors a stream yields
    for backend, cls in classes.items():
        for label, make in (("GaussianNB()", cls),
                            ("GaussianNB(learning_rate=0.01)", lambda: cls(learning_rate=0.01))):
            secs, right = best_time(lambda: prequential_one(make, rows, y), args.repeats)
            label = f"edgebayes {label}, {backend}"
            print(f"{label:<52}{right / n:>10.4f}{secs / n * 1e6:>12.2f}{secs / river_s:>9.2f}x")
    print(f"{'river GaussianNB()':<52}{river_right / n:>10.4f}{river_s / n * 1e6:>12.2f}{1:>9.2f}x")

    print("\nbatch, the whole stream at once (samples/s)")
    print(f"{'model':<52}{'learn_many':>14}{'predict_proba_many':>20}")
    models = [
        ("edgebayes GaussianNB()", GaussianNB, lambda m: m.learn_many(X, y), lambda m: m.predict_proba_many(X)),
        ("edgebayes GaussianNB(learning_rate=0.01)", lambda: GaussianNB(learning_rate=0.01),
         lambda m: m.learn_many(X, y), lambda m: m.predict_proba_many(X)),
    ]
    try:
        import pandas as pd
    except ImportError:
        print("(River's batch methods take a pandas DataFrame: not installed, River's row left out)")
    else:
        frame, series = pd.DataFrame(X, columns=names), pd.Series(y)
        models.append(("river GaussianNB()", RiverGaussianNB, lambda m: m.learn_many(frame, series),
                       lambda m: m.predict_proba_many(frame)))
    results = {}
    for label, make, fit, proba in models:
        fit_s, model = best_time(lambda: trained(make, fit), args.repeats)
        proba_s, _ = best_time(lambda: proba(model), args.repeats)
        results[label] = (n / fit_s, n / proba_s)
        print(f"{label:<52}{n / fit_s:>14,.0f}{n / proba_s:>20,.0f}")
    if "river GaussianNB()" in results:
        ours, river = results["edgebayes GaussianNB()"], results["river GaussianNB()"]
        print(f"{'ratio edgebayes / River':<52}{ours[0] / river[0]:>13.1f}x{ours[1] / river[1]:>19.1f}x")


if __name__ == "__main__":
    main()
