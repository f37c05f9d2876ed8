"""The published comparison: edgebayes against River and MOA on the same streams, in one run.

    python -m bench.report                   # full: 100,000 samples a stream (about an hour or more)
    python -m bench.report --quick           # small: 5,000 samples, 3 streams (a few minutes)
    python -m bench.report --samples 20000 --streams AGR_G LED_A ELEC --jobs 2 --out /tmp/r

Writes ``docs/results.md`` (``--out``), and PNG plots next to it when matplotlib is installed:

1. Seed 000, Table I in miniature: prequential accuracy of NB, HT, SRP, SRS, BAG (10 members)
   and of River's SRPClassifier and ARFClassifier and MOA's StreamingRandomPatches (CapyMOA,
   when Java and capymoa are there) on the SRP paper's synthetic streams and the real sets of
   ../shared/data; average ranks.
2. Seed 000, figures 3-6: average pairwise kappa and average tree depth over time for SRP, SRS
   and BAG on AGR_G and LED_A (`edgebayes.ensemble.diagnostics.DiversityMonitor`).
3. Seed 001: online exact vs offline naive Bayes under 10-fold cross-validation on the UCI sets
   (they must agree), and exact vs learning rate 0.01 on drifting streams (accuracy over time,
   recovery after each drift).
4. Cost of every row of 1: samples/s, model bytes, peak RSS, speed as a ratio to River in the
   same run.
5. The components one by one (bench/nb.py, tree.py, srp.py, adwin.py, runtime.py, memory.py),
   each beside River (SRP also beside MOA): not run here; each row's command prints its figures,
   entered in that section by hand. This report keeps that section of the results.md it rewrites
   as it stands.
6. Seed 002 (committees of naive Bayes): not run here but by ``python -m bench.committee
   --results docs/results.md`` (its own command, a few minutes); this report keeps that section
   (unnumbered in results.md) as it stands too (`KEPT`).

Every row of 1 and 4 runs in its own process (``--row``), so that its peak RSS is its own.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import math
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench import committee, sections
from edgebayes.streams import PRESETS, open_stream, srp_stream

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data"
SEED = 1
#: Real streams: file under ../shared/data and the columns that are not features (data README).
REAL = {
    "ELEC": ("elec2/elec2.csv.gz", ["date"]),
    "WEATHER": ("weather_noaa/weather_noaa.csv.gz", []),
    "OCCUPANCY": ("occupancy_uci/occupancy.csv.gz", ["date"]),
    "POWERSUPPLY": ("powersupply/powersupply.csv.gz", []),
    "GAS": ("gas_sensor_drift/gas_drift_raw_batches_1-6_8-9.csv.gz", ["batch", "concentration_ppmv"]),
    "WISDM": ("wisdm_ar_v1.1/wisdm_ar_v1.1_transformed.csv.gz", ["UNIQUE_ID", "user"]),
    "NOMAO": ("nomao/nomao.csv.gz", []),
    "ADS": ("internet_ads/internet_ads.csv.gz", []),
}
UCI = {
    "iris": "uci_iris/iris.csv", "wine": "uci_wine/wine.csv",
    "breast_cancer": "uci_breast_cancer_wdbc/breast_cancer_wdbc.csv",
    "pima": "uci_pima_diabetes/pima_diabetes.csv", "ionosphere": "uci_ionosphere/ionosphere.csv",
    "sonar": "uci_sonar/sonar.csv", "heart": "uci_heart_statlog/heart_statlog.csv",
    "australian": "uci_australian_statlog/australian_statlog.csv",
}
OURS = ("NB", "HT", "SRP", "SRS", "BAG")
METHOD = {"SRP": "patches", "SRS": "subspaces", "BAG": "resampling"}
TABLE1 = OURS + ("River SRP", "River ARF", "MOA SRP")
#: Each system's River counterpart for the speed ratio (River has SRP's ablations only as options).
RIVER_OF = {"NB": "River NB", "HT": "River HT", "SRP": "River SRP", "SRS": "River SRP",
            "BAG": "River SRP", "River ARF": "River SRP", "MOA SRP": "River SRP"}
SYSTEMS = TABLE1 + ("River NB", "River HT")
#: Rough relative cost, to start the slowest rows first.
COST = {"River SRP": 9, "River ARF": 6, "BAG": 5, "SRP": 4, "MOA SRP": 3, "SRS": 3, "River HT": 2, "HT": 1}
HT_PARAMS = {"grace_period": 200, "delta": 1e-7, "tau": 0.05, "leaf_prediction": "nba"}  # VFDT/MOA defaults
FIGURE_STREAMS = ("AGR_G", "LED_A")
DRIFT_STREAMS = ("AGR_A", "LED_A", "AGR_G", "LED_G")
#: Seed 000, Table I (1,000,000 samples, MOA), for the same columns.
PAPER = {
    "LED_A": (53.964, 69.032, 73.588, 73.533, 73.944), "LED_G": (54.02, 68.649, 72.416, 72.296, 73.151),
    "AGR_A": (65.739, 81.045, 91.788, 91.558, 85.733), "AGR_G": (65.759, 77.374, 87.762, 88.538, 81.347),
    "RBF_M": (30.994, 45.491, 83.28, 81.685, 85.431), "RBF_F": (29.136, 32.292, 70.825, 59.061, 74.891),
    "ELEC": (73.362, 79.195, 88.82, 89.4, 89.502), "ADS": (68.161, 85.91, 99.756, 98.445, 99.665),
    "NOMAO": (86.865, 92.128, 97.232, 96.451, 97.064),
}
#: Section 5: each component alone beside River (SRP also beside MOA), figures entered by hand
#: from the output of the scripts its rows name.
COMPONENTS = "## 5. Components, each beside River and MOA"
#: The sections of results.md this report does not compute, in their order after section 4, each
#: kept as it stands in the results.md it rewrites: (heading, what stands in for a missing one;
#: ``{path}``: that file).
KEPT = (
    (COMPONENTS, "Not in this file yet: each row of this section's table is the output of its command "
                 "(`python bench/nb.py`, `bench/tree.py`, `bench/srp.py`, `bench/adwin.py`, `bench/runtime.py`, "
                 "`bench/memory.py`), entered by hand; `python -m bench.report` keeps the section as it stands."),
    (committee.SECTION, committee.NOT_RUN),
)


# ------------------------------------------------------------------------------ streams


def load(name: str, n: int):
    """(X float64 (m, d), y list, schema) of a preset or real stream, m = min(n, rows)."""
    if name in PRESETS:
        stream = srp_stream(name, n, seed=SEED)
    else:
        path, drop = REAL[name]
        stream = open_stream(DATA / path, drop=drop, n_samples=n)
    X, y = stream.to_arrays()
    return X, list(y), stream.schema


def rss_mb() -> float:
    """Resident set size now, in MB (Linux /proc)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """Peak resident set size of this process image, in MB (Linux ``VmHWM``; ``ru_maxrss``
    would also keep the peak of the process it was spawned from)."""
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024


# ------------------------------------------------------------------------------ one row


def _ours(system: str, schema):
    if system == "NB":
        from edgebayes.naive_bayes import GaussianNB

        return GaussianNB()
    from edgebayes.tree import HoeffdingTreeClassifier

    nominal = schema.nominal or None
    if system == "HT":
        return HoeffdingTreeClassifier(**HT_PARAMS, nominal_attributes=nominal)
    from bench.srp import PAPER as SRP_SETTINGS
    from bench.srp import TREE
    from edgebayes.ensemble import SRPClassifier

    return SRPClassifier(model=HoeffdingTreeClassifier(**TREE, nominal_attributes=nominal),
                         training_method=METHOD[system], seed=SEED, **SRP_SETTINGS)


def _river(system: str, schema):
    from river import drift, ensemble, forest, naive_bayes, tree

    nominal = [schema.feature_names[j] for j in schema.nominal] or None
    if system == "River NB":
        return naive_bayes.GaussianNB()
    if system == "River HT":
        return tree.HoeffdingTreeClassifier(**HT_PARAMS, nominal_attributes=nominal)
    from bench.srp import PAPER as SRP_SETTINGS
    from bench.srp import TREE

    detectors = {"drift_detector": drift.ADWIN(delta=1e-5), "warning_detector": drift.ADWIN(delta=1e-4)}
    if system == "River SRP":
        return ensemble.SRPClassifier(model=tree.HoeffdingTreeClassifier(**TREE, nominal_attributes=nominal),
                                      n_models=SRP_SETTINGS["n_models"], subspace_size=SRP_SETTINGS["subspace_size"],
                                      lam=SRP_SETTINGS["lam"], seed=SEED, **detectors)
    # the paper's ARF: m = 60 %, lam = 6, ADWIN 1e-4 / 1e-5, grace 50, delta 0.01, nba
    return forest.ARFClassifier(n_models=10, max_features=0.6, lambda_value=6, nominal_attributes=nominal,
                                seed=SEED, **detectors, **TREE)


def _test_then_train(model, rows, y, monitor=None, every=0):
    """Prequential loop; returns (accuracy, CPU seconds, curve [(n, window acc, kappa, depth)])."""
    learner = monitor or model
    ok, hits, curve = 0, 0, []
    cpu = 0.0
    clock = time.process_time
    for i, (xi, yi) in enumerate(zip(rows, y), 1):
        t0 = clock()
        right = learner.predict_one(xi) == yi
        learner.learn_one(xi, yi)
        cpu += clock() - t0
        ok += right
        hits += right
        if every and i % every == 0:
            curve.append((i, hits / every, monitor.kappa(), monitor.average_depth()))
            hits = 0
    return ok / len(y), cpu, curve


def run_row(system: str, stream: str, n: int, curve_every: int = 0) -> dict:
    """Test-then-train one system on one stream in this process; accuracy, speed, bytes, RSS."""
    X, y, schema = load(stream, n)
    out = {"system": system, "stream": stream, "n": len(y), "features": X.shape[1], "curve": []}
    if system == "MOA SRP":
        from bench.srp import moa_available, run_moa

        tmp = Path(tempfile.mkdtemp(prefix="bench_report_"))
        problem = moa_available(tmp)  # starts the JVM
        if problem:
            raise RuntimeError(problem)
        base_mb = rss_mb()
        r = run_moa(X, y, schema, SEED, tmp)
        out.update(accuracy=r["accuracy"] / 100, samples_per_s=r["sps"], model_bytes=r["bytes"])
    else:
        if system in OURS:
            model, rows = _ours(system, schema), X
        else:
            model = _river(system, schema)
            names = schema.feature_names
            rows = ({k: v for k, v in zip(names, xi) if v == v} for xi in X.tolist())  # NaN = absent
        monitor = None
        if curve_every and system in METHOD:
            from edgebayes.ensemble.diagnostics import DiversityMonitor

            monitor = DiversityMonitor(model, window=curve_every)
        base_mb = rss_mb()
        acc, cpu, curve = _test_then_train(model, rows, y, monitor, curve_every if monitor else 0)
        nbytes = model.memory_bytes() if system in OURS else model._raw_memory_usage
        out.update(accuracy=acc, samples_per_s=len(y) / cpu, model_bytes=nbytes, curve=curve)
    peak_mb = peak_rss_mb()
    out.update(peak_rss_mb=peak_mb, rss_growth_mb=peak_mb - base_mb)
    return out


def spawn_row(system: str, stream: str, n: int, curve_every: int) -> dict:
    """`run_row` in a fresh Python process (its own peak RSS); errors come back as ``error``."""
    cmd = [sys.executable, "-m", "bench.report", "--row", system, stream, str(n), str(curve_every)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"system": system, "stream": stream, "error": why}
    return json.loads(lines[-1])


def run_rows(systems, streams, n: int, jobs: int, curve_every: int) -> list[dict]:
    tasks = [(s, st) for st in streams for s in systems]
    tasks.sort(key=lambda t: -COST.get(t[0], 0))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = [pool.submit(spawn_row, s, st, n, curve_every if st in FIGURE_STREAMS else 0)
                   for s, st in tasks]
        rows = []
        for fut in concurrent.futures.as_completed(futures):
            row = fut.result()
            rows.append(row)
            status = row.get("error") or f"{100 * row['accuracy']:.2f} %, {row['samples_per_s']:.0f} samples/s"
            print(f"  {row['stream']:<12} {row['system']:<10} {status}", file=sys.stderr, flush=True)
    return rows


# ------------------------------------------------------------------------------ seed 001


def offline_nb_predict(X_train, y_train, X_test):
    """Offline Gaussian NB: priors n_k / n, means, population variances, scikit-learn's epsilon."""
    from edgebayes.naive_bayes import EPS_FLOOR

    y_train = np.asarray(y_train, dtype=object)
    classes = list(dict.fromkeys(y_train.tolist()))
    prior = np.array([np.mean(y_train == c) for c in classes])
    mean = np.array([X_train[y_train == c].mean(axis=0) for c in classes])
    var = np.array([X_train[y_train == c].var(axis=0) for c in classes])
    v = var + max(1e-9 * X_train.var(axis=0).max(), EPS_FLOOR)
    jll = np.log(prior) - 0.5 * (np.log(2 * np.pi * v).sum(axis=1)
                                 + (((X_test[:, None, :] - mean) ** 2) / v).sum(axis=2))
    return [classes[k] for k in jll.argmax(axis=1)]


#: Seed 001's online models: Algorithm 1 (exact), the learning rate 0.01 with the warm-up
#: (DESIGN.md 2.1, edgebayes's default) and the paper's Algorithm 2 as written (no warm-up).
NB_MODELS = {
    "exact": {},
    "lr": {"learning_rate": 0.01},
    "alg2": {"learning_rate": 0.01, "warm_up": False},
}
NB_LABELS = {"exact": "exact (Alg. 1)", "lr": "lr 0.01, warm-up", "alg2": "lr 0.01, Alg. 2 as written"}
#: Seeds of the drifting streams of seed 001's section (each its own stream), and the window
#: that accuracy over time and recovery are measured over.
NB_SEEDS = (1, 2, 3, 4, 5)
NB_WINDOW = 200


def cross_validation(n_folds: int = 10) -> list[dict]:
    """10-fold CV of offline NB and of the `NB_MODELS`, each trained one `learn_one` at a time
    in the shuffled order (the UCI files are sorted by class)."""
    from edgebayes.naive_bayes import GaussianNB

    out = []
    for name, path in UCI.items():
        stream = open_stream(DATA / path)
        X, y = stream.to_arrays()
        y = np.asarray(y, dtype=object)
        order = np.random.default_rng(SEED).permutation(len(y))
        acc = {"offline": [], **{k: [] for k in NB_MODELS}}
        differ = dict.fromkeys(NB_MODELS, 0)  # test predictions unlike the offline model's
        largest = 0  # the most samples one class has in a training fold
        for test in np.array_split(order, n_folds):
            train = order[~np.isin(order, test)]  # shuffled order kept (np.setdiff1d would sort)
            largest = max(largest, int(np.unique(y[train], return_counts=True)[1].max()))
            offline = offline_nb_predict(X[train], y[train], X[test])
            acc["offline"].append(np.mean(np.array(offline, dtype=object) == y[test]))
            for key, params in NB_MODELS.items():
                model = GaussianNB(**params)
                for i in train:
                    model.learn_one(X[i], y[i])
                pred = [model.predict_one(x) for x in X[test]]
                acc[key].append(np.mean(np.array(pred, dtype=object) == y[test]))
                differ[key] += sum(a != b for a, b in zip(pred, offline))
        out.append({"data": name, "n": len(y), "features": X.shape[1], "classes": len(set(y.tolist())),
                    "largest": int(largest), "differ": differ,
                    **{k: (float(np.mean(v)), float(np.std(v))) for k, v in acc.items()}})
    return out


def drift_curves(n: int, seeds=NB_SEEDS, window: int = NB_WINDOW) -> list[dict]:
    """The `NB_MODELS` test-then-train on the drifting presets, one stream per seed: accuracy
    over consecutive windows of ``window`` samples, averaged over the seeds, and recovery."""
    from edgebayes.naive_bayes import GaussianNB

    out = []
    for name in DRIFT_STREAMS:
        per_seed = {k: [] for k in NB_MODELS}
        for seed in seeds:
            X, y, _ = srp_load(name, n, seed)
            for key, params in NB_MODELS.items():
                model = GaussianNB(**params)
                hits = np.empty(len(y), dtype=bool)
                for i, (xi, yi) in enumerate(zip(X, y)):
                    hits[i] = model.predict_one(xi) == yi
                    model.learn_one(xi, yi)
                per_seed[key].append(hits[: len(y) // window * window].reshape(-1, window).mean(axis=1))
        curves = {k: np.mean(v, axis=0) for k, v in per_seed.items()}
        out.append({"stream": name, "n": n, "seeds": list(seeds), "step": window, "curves": curves,
                    "accuracy": {k: (float(np.mean([c.mean() for c in v])), float(np.std([c.mean() for c in v])))
                                 for k, v in per_seed.items()},
                    "recovery": recovery(curves, window, n)})
    return out


def srp_load(name: str, n: int, seed: int):
    """(X, y, schema) of preset ``name`` at ``n`` samples with its own ``seed``."""
    stream = srp_stream(name, n, seed=seed)
    X, y = stream.to_arrays()
    return X, list(y), stream.schema


def recovery(curves: dict, step: int, n: int, tolerance: float = 0.02) -> list[dict]:
    """Samples after each drift (n/4, n/2, 3n/4) until a model's accuracy over ``step`` samples
    (averaged over the seeds) gets within ``tolerance`` of the best level any model holds at the
    end of that concept (its last quarter); None when it does not within the concept."""
    out = []
    for q in (1, 2, 3):
        start, end = q * n // 4 // step, (q + 1) * n // 4 // step
        target = max(float(c[end - max((end - start) // 4, 1): end].mean()) for c in curves.values()) - tolerance
        row = {"at": q * n // 4, "target": target}
        for key, c in curves.items():
            seg = c[start:end]
            above = np.flatnonzero(seg >= target)
            row[key] = int((above[0] + 1) * step) if len(above) else None
        out.append(row)
    return out


def seed001_claims(cv: list[dict], drifts: list[dict]) -> list[str]:
    """The paper's claims, one by one, each with the numbers of this run that bear on it."""
    pct = lambda v: f"{100 * v:.2f}"
    L = ["**The paper's claims, checked**", ""]
    equal = [c["data"] for c in cv if c["differ"]["exact"] == 0 and c["exact"][0] == c["offline"][0]]
    L.append(f"1. *Algorithm 1 gives the offline classifier (Table 2: the same accuracy on all eight sets).* "
             f"{'Holds' if len(equal) == len(cv) else 'Does not hold'}: online exact and offline agree on "
             f"{len(equal)} of {len(cv)} sets, every test prediction the same "
             f"({sum(c['differ']['exact'] for c in cv)} differences over {sum(c['n'] for c in cv):,} predictions).")
    d2 = [(c["data"], c["alg2"][0] - c["exact"][0]) for c in cv]
    better = [f"{k} {100 * v:+.2f}" for k, v in d2 if v > 0.005]
    worse = [f"{k} {100 * v:+.2f}" for k, v in d2 if v < -0.005]
    same = [k for k, v in d2 if abs(v) <= 0.005]
    aus = next((c for c in cv if c["data"] == "australian"), None)
    text = (f"2. *Algorithm 2 (alpha = 0.01) does about as well as Algorithm 1 on these stationary sets, and "
            f"slightly better on Australian.* Algorithm 2 as written, minus exact, in points: better on "
            f"{', '.join(better) or 'none'}; worse on {', '.join(worse) or 'none'}; within 0.5 on "
            f"{', '.join(same) or 'none'} (mean {100 * np.mean([v for _, v in d2]):+.2f}). ")
    if aus:
        text += (f"Australian: exact {pct(aus['exact'][0])}, Algorithm 2 {pct(aus['alg2'][0])}, warm-up "
                 f"{pct(aus['lr'][0])} %. ")
    spread = np.mean([c["exact"][1] for c in cv])
    within = all(abs(v) <= max(c["exact"][1], c["alg2"][1]) for (_, v), c in zip(d2, cv))
    text += (f"Every difference is smaller than the folds' standard deviation on that set (mean "
             f"{100 * spread:.2f} points), so the claim holds as 'about as well', and 'better' is within noise."
             if within else "Some differences exceed the folds' standard deviation: 'about as well' does not hold "
             "everywhere.")
    d1 = np.mean([c["lr"][0] - c["exact"][0] for c in cv])
    text += f" The warm-up variant minus exact: mean {100 * d1:+.2f} points."
    L.append(text)
    if drifts:
        rec = {k: [r[k] for d in drifts for r in d["recovery"]] for k in NB_MODELS}
        fmt = lambda v: "never" if v is None else f"{v:,}"
        gain = {k: np.mean([d["accuracy"][k][0] - d["accuracy"]["exact"][0] for d in drifts]) for k in ("lr", "alg2")}
        inf = lambda v: math.inf if v is None else v
        faster = sum(inf(a) < inf(e) for a, e in zip(rec["alg2"], rec["exact"]))
        slower = sum(inf(a) > inf(e) for a, e in zip(rec["alg2"], rec["exact"]))
        L.append(f"3. *Under concept drift the learning rate adapts faster than Algorithm 1.* "
                 f"{'Holds' if faster > slower else 'Does not hold'}: Algorithm 2 as written recovers sooner "
                 f"after {faster} drifts, later after {slower}, on the drifting streams above "
                 f"({len(drifts)} streams x {len(rec['exact']) // len(drifts)} drifts, "
                 f"{len(drifts[0]['seeds'])} seeds): samples to recover after each drift, exact "
                 f"{', '.join(fmt(v) for v in rec['exact'])}; Algorithm 2 "
                 f"{', '.join(fmt(v) for v in rec['alg2'])}; warm-up {', '.join(fmt(v) for v in rec['lr'])}. "
                 f"Exact never recovers within the concept in {sum(v is None for v in rec['exact'])} of "
                 f"{len(rec['exact'])} cases, Algorithm 2 in {sum(v is None for v in rec['alg2'])}. Over the "
                 f"whole streams the learning rate gains {100 * gain['alg2']:+.2f} points (as written) and "
                 f"{100 * gain['lr']:+.2f} (warm-up) on exact. The paper shows no drift experiment of its own "
                 "(its tests are the eight stationary sets): these streams are the SRP paper's.")
    small = [f"{c['data']} ({c['largest']})" for c in cv if c["largest"] <= 100]
    L.append("")
    L.append(f"*Warm-up and Algorithm 2 as written* (not a claim of the paper). With "
             f"the warm-up an estimate is the plain average of its first 1/alpha = 100 samples, so where no class "
             f"has more than 100 training samples it is the exact model by construction: "
             f"{', '.join(small) or 'no set'} (largest class in a training fold in brackets; its predictions "
             f"differ from the offline ones {sum(c['differ']['lr'] for c in cv if c['largest'] <= 100)} times "
             "there). Algorithm 2 as written moves by alpha from the second sample of each class and gives "
             + ", ".join(f"{c['data']} {pct(c['alg2'][0])}" for c in cv if c["largest"] <= 100) + " %.")
    return L


def seed001_section(cv: list[dict], drifts: list[dict], command: str, out: Path) -> list[str]:
    """Section 3 of results.md (seed 001), its plots written to ``out``."""
    pm = lambda t: f"{100 * t[0]:.2f} ± {100 * t[1]:.2f}"
    L = ["## 3. Naive Bayes: online exact = offline, and a constant learning rate under drift (seed 001)", "",
         (f"Reproduce: `{command}` (run on {datetime.date.today().isoformat()}). Three online models: "
          "*exact* = `GaussianNB()` (the paper's Algorithm 1); "
         "*warm-up* = `GaussianNB(learning_rate=0.01)`, edgebayes's default rate rule: each estimate moves by "
         "max(0.01, 1/n), the plain average until it has seen 100 samples; *Alg. 2* = "
         "`GaussianNB(learning_rate=0.01, warm_up=False)`, the paper's Algorithm 2 as written: an estimate's "
         "first sample sets it, every later one moves it by 0.01 (Eqs. 12-14)."), "",
         (f"10-fold cross-validation as the paper's Table 2 (rows shuffled with seed {SEED}, the UCI files are "
         "sorted by class; each online model learns its nine training folds one `learn_one` at a time in that "
         "shuffled order): offline = batch estimates (priors, means, population variances) with the same "
         "Gaussian likelihood and scikit-learn's variance smoothing. Mean ± standard deviation over the folds. "
         "*largest class* = the most training samples one class has in a fold (the warm-up ends at 100); "
         "*differ* = test predictions unlike the offline model's (exact must give 0)."), ""]
    L += table(["data", "n", "features", "classes", "largest class", "offline %", "exact %", "differ",
                "warm-up %", "differ", "Alg. 2 %", "differ"],
               [[c["data"], c["n"], c["features"], c["classes"], c["largest"], pm(c["offline"]),
                 pm(c["exact"]), c["differ"]["exact"], pm(c["lr"]), c["differ"]["lr"], pm(c["alg2"]),
                 c["differ"]["alg2"]] for c in cv])
    if drifts:
        d0 = drifts[0]
        L += ["", (f"Drifting streams: the SRP paper's presets at {d0['n']:,} samples (drifts at n/4, n/2, 3n/4; "
              f"abrupt for _A, {round(50_000 * d0['n'] / 1e6):,} samples wide for _G), one stream per seed "
              f"({', '.join(map(str, d0['seeds']))}), test then train. Accuracy: mean ± standard deviation over "
              f"the seeds. *Recovery* = samples after the drift until the accuracy over {d0['step']} samples, "
              "averaged over the seeds, gets within 2 points of the best level any of the three holds over the "
              "last quarter of that concept (`never` = not within the concept)."), ""]
        fmt = lambda v: "never" if v is None else f"{v:,}"
        body = []
        for d in drifts:
            rec = [" / ".join(fmt(r[k]) for k in NB_MODELS) for r in d["recovery"]]
            body.append([d["stream"]] + [pm(d["accuracy"][k]) for k in NB_MODELS] + rec)
        L += table(["stream", "exact %", "warm-up %", "Alg. 2 %", "recovery n/4 (exact / warm-up / Alg. 2)",
                    "recovery n/2", "recovery 3n/4"], body)
        L += ["", f"Accuracy over time (%, over the previous {d0['step']} samples, mean of the seeds):", ""]
        for d in drifts:
            c = d["curves"]
            length = len(c["exact"])
            pick = np.linspace(0, length - 1, min(length, 16)).round().astype(int)
            L += [f"**{d['stream']}**", ""]
            L += table(["samples"] + [f"{(i + 1) * d['step']:,}" for i in pick],
                       [[NB_LABELS[k]] + [f"{100 * c[k][i]:.1f}" for i in pick] for k in NB_MODELS])
            xs = [(i + 1) * d["step"] for i in range(length)]
            L += plot(out / f"nb_drift_{d['stream']}.png", f"{d['stream']}: naive Bayes accuracy",
                      {NB_LABELS[k]: (xs, c[k]) for k in NB_MODELS}, "accuracy")
            L += [""]
    L += [""] + seed001_claims(cv, drifts) + [""]
    return L


def replace_section(path: Path, number: int, lines: list[str]) -> None:
    """Put ``lines`` in place of section ``number`` ("## 3. ...") of the report at ``path``."""
    text = path.read_text().split("\n")
    start = next(i for i, t in enumerate(text) if t.startswith(f"## {number}. "))
    end = next((i for i, t in enumerate(text) if i > start and t.startswith("## ")), len(text))
    path.write_text("\n".join(text[:start] + lines + text[end:]))


# ------------------------------------------------------------------------------ report


def machine() -> str:
    cpu = platform.processor() or "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    versions = []
    for mod in ("numpy", "river", "capymoa"):
        try:
            versions.append(f"{mod} {__import__(mod).__version__}")
        except Exception:  # noqa: BLE001 - a missing peer is reported, not fatal
            versions.append(f"{mod} absent")
    load1 = os.getloadavg()[0]
    return (f"{cpu}, {os.cpu_count()} cores, {mem:.1f} GB RAM; {platform.system()} {platform.release()}; "
            f"Python {platform.python_version()}, {', '.join(versions)}; load average {load1:.1f} at the start "
            f"(the machine is shared: absolute speeds are noisy, ratios less so)")


def ranks(table: dict, systems) -> dict:
    """Average rank (1 = best, ties share the mean rank) of each system over the streams where
    every system has a result."""
    per = {s: [] for s in systems}
    for accs in table.values():
        if not all(s in accs for s in systems):
            continue
        vals = [accs[s] for s in systems]
        for s in systems:
            better = sum(v > accs[s] for v in vals)
            ties = sum(v == accs[s] for v in vals)
            per[s].append(better + (ties + 1) / 2)
    return {s: (float(np.mean(r)) if r else math.nan) for s, r in per.items()}


def fmt_bytes(b) -> str:
    if b is None or b < 0:
        return "n/a"
    return f"{b / 2**20:.2f} MB" if b >= 2**20 else f"{b / 1024:.1f} kB"


def table(header, rows) -> list[str]:
    rule = "|".join("---" if i == 0 else "---:" for i in range(len(header)))
    lines = ["| " + " | ".join(header) + " |", "|" + rule + "|"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return lines


def plot(path: Path, title: str, series: dict, ylabel: str) -> list[str]:
    """A line plot of ``{label: (xs, ys)}`` to ``path``; the markdown lines showing it, none
    when matplotlib is absent."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return []
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for label, (xs, ys) in series.items():
        ax.plot(xs, ys, label=label)
    ax.set(title=title, xlabel="samples", ylabel=ylabel)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return ["", f"![{title}]({path.name})"]


def reproduce_command(argv: list[str]) -> str:
    """The shell command that reruns this report; arguments quoted ("MOA SRP" has a space)."""
    return shlex.join(["python", "-m", "bench.report", *argv])


def write_report(out: Path, args, command: str, rows, cv, drifts, moa_note, elapsed_s) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    acc, res = {}, {}
    for r in rows:
        if "error" not in r:
            acc.setdefault(r["stream"], {})[r["system"]] = 100 * r["accuracy"]
            res[(r["system"], r["stream"])] = r
    errors = [r for r in rows if "error" in r]
    streams = [s for s in args.streams if s in acc]
    columns = [s for s in TABLE1 if any(s in a for a in acc.values())]
    L = [
        "# edgebayes: results against River and MOA",
        "",
        f"Generated by `{command}` on {datetime.date.today().isoformat()} in {elapsed_s / 60:.0f} min.",
        f"Machine: {machine()}.",
        "",
        f"Streams: the SRP paper's synthetic presets at {args.samples:,} samples (`edgebayes.streams.srp_stream`, "
        f"seed {SEED}; the paper uses 1,000,000) and the real sets of `../shared/data` (at most {args.samples:,} rows, "
        "non-feature columns dropped). Every system sees the same samples in the same order, test then train. "
        "Ensembles: 10 members, m = 60 %, lam = 6, ADWIN 1e-4 (warning) / 1e-5 (drift), Hoeffding tree grace "
        f"period 50, delta 0.01, nba leaves, seed {SEED} (the paper's settings). HT alone: grace period 200, "
        "delta 1e-7, tau 0.05, nba (MOA's defaults).",
        "",
    ]
    if moa_note:
        L += [f"**MOA not run:** {moa_note}", ""]
    for r in errors:
        L += [f"**{r['system']} failed on {r['stream']}:** `{r['error']}`", ""]

    # 1. Table I
    L += ["## 1. Prequential accuracy (seed 000, Table I in miniature)", "",
          f"Reproduce: `{command}`. Accuracy in %, best of a row in bold.", ""]
    body = []
    for st in streams:
        best = max(acc[st].values())
        body.append([st] + [("**%.2f**" if acc[st].get(s) == best else "%.2f") % acc[st][s] if s in acc[st] else "-"
                            for s in columns])
    synth = {s: a for s, a in acc.items() if s in PRESETS}
    real = {s: a for s, a in acc.items() if s not in PRESETS}
    for label, part in (("Avg rank", acc), ("Avg rank synthetic", synth), ("Avg rank real", real)):
        rk = ranks(part, columns)
        body.append([f"*{label}*"] + [("-" if math.isnan(rk[s]) else f"{rk[s]:.2f}") for s in columns])
    L += table(["stream"] + columns, body)
    L += ["", "The paper's Table I (MOA, 1,000,000 samples; real sets whole) for the same columns, for scale:", ""]
    L += table(["stream", "NB", "HT", "SRP", "SRS", "BAG"],
               [[s] + [f"{v:.2f}" for v in PAPER[s]] for s in streams if s in PAPER])

    # 2. Figures 3-6
    L += ["", "## 2. Diversity and tree depth over time (seed 000, figures 3-6)", "",
          f"Reproduce: `{command}` (rows SRP, SRS, BAG on AGR_G and LED_A). Average pairwise Cohen's kappa of "
          "the members' test predictions over the last window, and the members' average tree depth, at the end "
          "of each window (`edgebayes.ensemble.diagnostics.DiversityMonitor`).", ""]
    for st in FIGURE_STREAMS:
        curves = {s: res[(s, st)]["curve"] for s in METHOD if (s, st) in res and res[(s, st)]["curve"]}
        if not curves:
            continue
        length = min(len(c) for c in curves.values())
        pick = sorted(set(np.linspace(0, length - 1, min(length, 10)).round().astype(int).tolist()))
        body = [[f"{curves['SRP' if 'SRP' in curves else next(iter(curves))][i][0]:,}"]
                + [f"{curves[s][i][2]:.3f}" for s in curves] + [f"{curves[s][i][3]:.1f}" for s in curves]
                for i in pick]
        L += [f"**{st}**", ""]
        L += table(["samples"] + [f"kappa {s}" for s in curves] + [f"depth {s}" for s in curves], body)
        for what, k, ylabel in (("kappa", 2, "average pairwise kappa"), ("depth", 3, "average tree depth")):
            L += plot(out / f"{what}_{st}.png", f"{st}: {ylabel}",
                      {s: ([p[0] for p in c], [p[k] for p in c]) for s, c in curves.items()}, ylabel)
        L += [""]

    # 3. Seed 001
    L += seed001_section(cv, drifts, command, out)

    # 4. Cost
    L += ["## 4. Cost", "",
          f"Reproduce: `{command}`. The rows of section 1 plus River's GaussianNB and HoeffdingTreeClassifier (same "
          "settings as ours), each in its own process. *samples/s*: samples over the process CPU time of "
          "predict + learn (River's input dicts are built outside the timing; MOA: CapyMOA's "
          "CPU time of MOA's own Java loop over an ARFF file). *x River*: our samples/s over River's counterpart's "
          "on the same stream in this run (NB: GaussianNB, HT: HoeffdingTreeClassifier, ensembles: SRPClassifier). "
          "*bytes*: `memory_bytes()` (ours), River's `_raw_memory_usage` (a deep sizeof), MOA's `measureByteSize` "
          "(SizeOf agent). *peak RSS*: the process's peak, and in brackets its growth during the run, after "
          "the library was imported (MOA: the JVM started) and the stream loaded.", ""]
    body = []
    for st in streams:
        for s in SYSTEMS:
            r = res.get((s, st))
            if r is None:
                continue
            ref = res.get((RIVER_OF.get(s, ""), st))
            ratio = f"{r['samples_per_s'] / ref['samples_per_s']:.2f}" if ref and s in RIVER_OF else "1"
            body.append([st, s, f"{100 * r['accuracy']:.2f}", f"{r['samples_per_s']:,.0f}", ratio,
                         fmt_bytes(r["model_bytes"]), f"{r['peak_rss_mb']:.0f} MB ({r['rss_growth_mb']:+.0f})"])
    L += table(["stream", "system", "acc %", "samples/s", "x River", "bytes", "peak RSS"], body)

    # 5. (by hand, from bench/*.py) and Seed 002 (bench.committee --results): kept as they stand
    for heading, missing in KEPT:
        L += ["", *sections.kept_section(out / "results.md", heading, missing)]

    # Behind
    L += ["", "## Where edgebayes is behind", ""] + behind(acc, res, streams, columns) + [""]
    path = out / "results.md"
    path.write_text("\n".join(L) + "\n")
    return path


def behind(acc, res, streams, columns) -> list[str]:
    """Plain statements of every place a peer beats us (accuracy by > 0.5 point, speed, bytes)."""
    out = []
    for st in streams:
        a = acc[st]
        ours_best = max((a[s], s) for s in OURS if s in a)
        for peer in ("River SRP", "River ARF", "MOA SRP"):
            if peer in a and a[peer] > ours_best[0] + 0.5:
                out.append(f"- Accuracy on {st}: {peer} {a[peer]:.2f} % vs our best ({ours_best[1]}) "
                           f"{ours_best[0]:.2f} % ({a[peer] - ours_best[0]:.2f} points behind).")
        for peer in ("River SRP", "MOA SRP"):
            if peer in a and "SRP" in a and a[peer] > a["SRP"] + 0.5:
                out.append(f"- Same algorithm on {st}: {peer} {a[peer]:.2f} % vs our SRP {a['SRP']:.2f} %.")
        for s in SYSTEMS:
            ref = RIVER_OF.get(s)
            if s in OURS and (s, st) in res and (ref, st) in res:
                ratio = res[(s, st)]["samples_per_s"] / res[(ref, st)]["samples_per_s"]
                if ratio < 1:
                    out.append(f"- Speed on {st}: our {s} runs at {ratio:.2f}x {ref}'s samples/s.")
        if ("SRP", st) in res and ("MOA SRP", st) in res:
            ours, moa = res[("SRP", st)], res[("MOA SRP", st)]
            if ours["samples_per_s"] < moa["samples_per_s"]:
                out.append(f"- Speed on {st}: our SRP {ours['samples_per_s']:,.0f} samples/s vs MOA's "
                           f"{moa['samples_per_s']:,.0f}.")
            if moa["model_bytes"] and moa["model_bytes"] > 0 and ours["model_bytes"] > moa["model_bytes"]:
                out.append(f"- Model size on {st}: our SRP {fmt_bytes(ours['model_bytes'])} vs MOA's "
                           f"{fmt_bytes(moa['model_bytes'])}.")
    rk = ranks(acc, columns)
    ours_rank = min((rk[s], s) for s in OURS if s in rk and not math.isnan(rk[s])) if rk else None
    for peer in ("River SRP", "River ARF", "MOA SRP"):
        if ours_rank and peer in rk and rk[peer] < ours_rank[0]:
            out.append(f"- Average rank: {peer} {rk[peer]:.2f} beats our best ({ours_rank[1]}) {ours_rank[0]:.2f}.")
    return out or ["- Nowhere in this run (no peer ahead by more than 0.5 point, slower nowhere)."]


# ------------------------------------------------------------------------------ main


def moa_problem() -> str | None:
    """None when Java and capymoa are there, else why MOA's SRP is not run."""
    import importlib.util
    import shutil

    if shutil.which("java") is None:
        return "no Java on this machine (CapyMOA needs a JRE >= 11)"
    if importlib.util.find_spec("capymoa") is None:
        return "capymoa is not installed (`pip install capymoa`)"
    return None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="5,000 samples on AGR_G, LED_A and ELEC")
    ap.add_argument("--samples", type=int, help="samples per stream (default 100,000; quick 5,000)")
    ap.add_argument("--streams", nargs="+", choices=PRESETS + tuple(REAL), help="default: all (quick: 3)")
    ap.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    ap.add_argument("--jobs", type=int, default=1, help="rows run in parallel (each in its own process)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs", help="folder of results.md and the PNGs")
    ap.add_argument("--nb-samples", type=int, help="samples of each drifting stream of section 3 (seed 001; "
                    "default 100,000; quick 20,000)")
    ap.add_argument("--only-seed001", action="store_true",
                    help="run section 3 (seed 001) alone and put it in place of section 3 of the existing results.md")
    ap.add_argument("--row", nargs=4, metavar=("SYSTEM", "STREAM", "N", "CURVE_EVERY"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.row:
        system, stream, n, every = args.row
        print(json.dumps(run_row(system, stream, int(n), int(every))))
        return 0
    args.nb_samples = args.nb_samples or (20_000 if args.quick else 100_000)
    command = reproduce_command(argv if argv is not None else sys.argv[1:])
    if args.only_seed001:
        cv, drifts = cross_validation(), drift_curves(args.nb_samples)
        path = args.out / "results.md"
        replace_section(path, 3, seed001_section(cv, drifts, command, args.out))
        print(path)
        return 0
    args.samples = args.samples or (5_000 if args.quick else 100_000)
    args.streams = args.streams or (["AGR_G", "LED_A", "ELEC"] if args.quick else list(PRESETS) + list(REAL))
    start = time.perf_counter()
    note = moa_problem() if "MOA SRP" in args.systems else None
    systems = [s for s in args.systems if not (s == "MOA SRP" and note)]
    print(f"rows: {len(systems)} systems x {len(args.streams)} streams, {args.samples:,} samples", file=sys.stderr)
    rows = run_rows(systems, args.streams, args.samples, args.jobs, curve_every=max(args.samples // 50, 2))
    print("naive Bayes cross-validation and drift curves", file=sys.stderr)
    cv = cross_validation()
    drifts = drift_curves(args.nb_samples)
    path = write_report(args.out, args, command, rows, cv, drifts, note, time.perf_counter() - start)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
