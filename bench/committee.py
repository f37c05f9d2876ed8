"""Seed 002's experiment in batch form: committees of naive Bayes over bootstraps and Monte Carlo
splits on the Australian credit data, against the single model of each iteration.

    python bench/committee.py [--data ../shared/data/uci_australian_statlog/australian_statlog.csv]
        [--iterations 50] [--splits 5] [--test-fraction 0.3] [--variant mixed|symbolic|both]
        [--seed 0] [--json out.json] [--plot out.png]

For each random split of the data into a training part (TRN) and a test part (TST), each
fraction f = 10 %, 20 %, ..., 100 % and each way of drawing (Monte Carlo: round(f |TRN|) objects
without replacement; bootstrap: as many with replacement, copies learned as weights), 50
iterations each train one naive Bayes on a new draw; after each iteration the single model and
the committee of all models so far (majority vote, ties at random) classify TST. Accuracy is
global (share of TST right) and balanced (mean of the per-class recalls).

Variants: ``mixed`` = `MixedNB` with the nominal columns of the data's SOURCE.md (A1, A4, A5,
A6, A8, A9, A11, A12) counted with Laplace smoothing and the others Gaussian; ``symbolic`` =
every attribute a symbol with the paper's borrowing rule (its NB "for symbolic data").

The table gives, per variant, draw and fraction: the single models' accuracy (mean, and std
over the iterations of a split averaged over splits), the committee's after 10, 20 and 50 iterations (mean and std
over splits), and the committee's largest move after iteration 20 (max |acc_t - acc_50| for
t >= 20, mean over splits), the paper's "stable from about 20 iterations".
A plot of the committee's and the single model's accuracy per iteration is written with
``--plot`` when matplotlib is installed.
"""

from __future__ import annotations

import argparse
import csv
import json
from pathlib import Path

import numpy as np

from edgebayes.naive_bayes_mixed import MixedNB

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data" / "uci_australian_statlog" / "australian_statlog.csv"
NOMINAL = ["A1", "A4", "A5", "A6", "A8", "A9", "A11", "A12"]  # SOURCE.md
FRACTIONS = [round(0.1 * i, 1) for i in range(1, 11)]
DRAWS = ("monte_carlo", "bootstrap")
CHECKPOINTS = (10, 20, 50)


def load(path: Path) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Features (n, 14) float64 (NaN = empty field), labels (n,) int, feature names."""
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    header, body = rows[0], rows[1:]
    X = np.array([[float(v) if v != "" else np.nan for v in r[:-1]] for r in body])
    y = np.array([int(r[-1]) for r in body])
    return X, y, header[:-1]


def decide(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Column of the largest score per row, ties (within 1e-9 relative) drawn at random."""
    tied = scores >= scores.max(axis=1, keepdims=True) * (1.0 - 1e-9)
    return np.argmax(tied * rng.random(scores.shape), axis=1)


def accuracies(pred: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(global accuracy, balanced accuracy = mean per-class recall)."""
    recalls = [np.mean(pred[y == c] == c) for c in np.unique(y)]
    return float(np.mean(pred == y)), float(np.mean(recalls))


def run_draw(make, Xtr, ytr, Xte, yte, fraction, draw, iterations, rng):
    """Per iteration: (single global, single balanced, committee global, committee balanced)."""
    classes = np.unique(ytr)
    m = max(1, round(fraction * len(ytr)))
    votes = np.zeros((len(yte), len(classes)))
    out = np.empty((iterations, 4))
    for t in range(iterations):
        if draw == "bootstrap":
            w = np.bincount(rng.integers(0, len(ytr), m), minlength=len(ytr)).astype(float)
        else:
            w = np.zeros(len(ytr))
            w[rng.choice(len(ytr), m, replace=False)] = 1.0
        keep = w > 0
        model = make()
        model.learn_many(Xtr[keep], ytr[keep], w[keep])
        proba = np.zeros((len(yte), len(classes)))
        proba[:, np.searchsorted(classes, model.classes_)] = model.predict_proba_many(Xte)
        single = decide(proba, rng)
        votes[np.arange(len(yte)), single] += 1
        out[t, :2] = accuracies(classes[single], yte)
        out[t, 2:] = accuracies(classes[decide(votes, rng)], yte)
    return out


def experiment(X, y, names, variant, iterations, splits, test_fraction, seed):
    """Results array (splits, draws, fractions, iterations, 4)."""
    if variant == "mixed":
        nominal = [names.index(n) for n in NOMINAL]

        def make():
            return MixedNB(nominal_attributes=nominal)
    else:
        def make():
            return MixedNB(nominal_attributes=range(X.shape[1]), zero_frequency="borrow")

    rng = np.random.default_rng(seed)
    res = np.empty((splits, len(DRAWS), len(FRACTIONS), iterations, 4))
    for s in range(splits):
        order = rng.permutation(len(y))
        n_test = round(test_fraction * len(y))
        te, tr = order[:n_test], order[n_test:]
        for d, draw in enumerate(DRAWS):
            for f, fraction in enumerate(FRACTIONS):
                res[s, d, f] = run_draw(make, X[tr], y[tr], X[te], y[te], fraction, draw, iterations, rng)
    return res


def table(res: np.ndarray, variant: str) -> list[str]:
    lines = [
        f"variant {variant}: accuracy in %, global / balanced; single = one model per iteration, "
        f"committee@t = majority vote of the first t models",
        f"{'draw':<12}{'frac':>5}  {'single (mean+-std)':>24}  "
        + "  ".join(f"{'committee@' + str(t):>24}" for t in CHECKPOINTS)
        + f"  {'max move >=20':>14}",
    ]
    last = res.shape[3]
    for d, draw in enumerate(DRAWS):
        for f, fraction in enumerate(FRACTIONS):
            r = 100 * res[:, d, f]
            # single: std over the iterations of a split (the paper's stability), mean over splits
            sd = r[..., :2].std(axis=1).mean(axis=0)
            cells = [f"{r[..., 0].mean():5.1f}+-{sd[0]:4.1f} / {r[..., 1].mean():5.1f}+-{sd[1]:4.1f}"]
            for t in CHECKPOINTS:
                c = r[:, min(t, last) - 1]
                cells.append(f"{c[:, 2].mean():5.1f}+-{c[:, 2].std():4.1f} / "
                             f"{c[:, 3].mean():5.1f}+-{c[:, 3].std():4.1f}")
            move = np.abs(r[:, 19:, 2] - r[:, -1:, 2]).max(axis=1).mean() if last > 20 else float("nan")
            row = "  ".join(f"{c:>24}" for c in cells)
            lines.append(f"{draw:<12}{int(fraction * 100):>4}%  {row}  {move:>13.1f}%")
    return lines


def plot(results: dict, path: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    variants = list(results)
    fig, axes = plt.subplots(len(variants), len(DRAWS), figsize=(12, 4 * len(variants)), squeeze=False)
    for v, variant in enumerate(variants):
        res = results[variant]
        for d, draw in enumerate(DRAWS):
            ax = axes[v, d]
            for f in (0, 4, 9):
                its = np.arange(1, res.shape[3] + 1)
                ax.plot(its, 100 * res[:, d, f, :, 2].mean(axis=0), label=f"committee {FRACTIONS[f]:.0%}")
                ax.plot(its, 100 * res[:, d, f, :, 0].mean(axis=0), ":", label=f"single {FRACTIONS[f]:.0%}")
            ax.set(title=f"{variant}, {draw}", xlabel="iteration", ylabel="global accuracy (%)")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--splits", type=int, default=5, help="random TRN/TST splits averaged")
    parser.add_argument("--test-fraction", type=float, default=0.3)
    parser.add_argument("--variant", choices=("mixed", "symbolic", "both"), default="both")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", help="write the per-iteration results here")
    parser.add_argument("--plot", help="write a PNG here (needs matplotlib)")
    args = parser.parse_args()
    X, y, names = load(args.data)
    variants = ("mixed", "symbolic") if args.variant == "both" else (args.variant,)
    results = {}
    for variant in variants:
        results[variant] = experiment(X, y, names, variant, args.iterations, args.splits, args.test_fraction, args.seed)
        print("\n".join(table(results[variant], variant)), end="\n\n", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps({
            "fractions": FRACTIONS, "draws": DRAWS, "axes": ["split", "draw", "fraction", "iteration", "metric"],
            "metrics": ["single_global", "single_balanced", "committee_global", "committee_balanced"],
            **{v: r.tolist() for v, r in results.items()},
        }))  # fmt: skip
    if args.plot:
        print(f"plot written to {args.plot}" if plot(results, args.plot) else "matplotlib not installed: no plot")


if __name__ == "__main__":
    main()
