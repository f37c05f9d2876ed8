"""The published comparison: edgebayes against River and MOA on the same streams, in one run.

    python -m bench.report --jobs 2 --resume rows.jsonl  # full: per `PLAN` (estimated 5.5 h on 2 cores)
    python -m bench.report --plan --jobs 2   # the full run's rows, samples, seeds and estimated time; no run
    python -m bench.report --quick           # small: 5,000 samples, 3 streams, one seed (a few minutes)
    python -m bench.report --samples 20000 --seeds 2 --streams AGR_G LED_A ELEC --jobs 2 --out /tmp/r
    python -m bench.report --measure --samples 20000 --systems "River SRP"   # the plan's speeds

Writes ``docs/results.md`` (``--out``), and PNG plots next to it when matplotlib is installed:

1. Seed 000, Table I: prequential accuracy of NB (GaussianNB), NB mixed (MixedNB(scoring="moa"):
   MOA's NaiveBayes rule), HT, SRP, SRS, BAG (10 members) and of MOA's NaiveBayes, HoeffdingTree and
   StreamingRandomPatches (RandomPatches: MOA SRP; Resampling: MOA BAG, the paper's BAG) through
   CapyMOA, when Java and capymoa are there, on the SRP paper's synthetic streams and the real sets
   of ../shared/data (the paper's ELEC, with its date column, beside ELEC without it; nominal
   attributes declared, `NOMINAL`), over seeds 1, 2, ...: mean ± sample standard deviation,
   average ranks of the means (also over the paper's own streams), each of our cells minus its MOA
   counterpart's, and every cell beside the paper's. River's SRPClassifier and ARFClassifier in a
   table of their own. The full run follows `PLAN`: Table I at the paper's 1,000,000 samples of
   each synthetic stream, 3 seeds; River's ensembles at 200,000, one seed; the real sets whole
   (``--plan``: about 5.5 h on 2 cores; ``--resume`` carries it over several sessions). A section
   after 2 gives the paper's claims, one by one, with their verdict on the run (`bench.sections`).
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
   (unnumbered in results.md) as it stands too (`KEPT`), and so is the last section, the figures
   behind choices in the code, entered by hand (`KEPT_LAST`).

Every row of 1 and 4 (one system, one stream, one seed) runs in its own process (``--row``), so
that its peak RSS is its own; the longest rows start first.
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
from bench.sections import ranks
from edgebayes.streams import PRESETS, open_stream, srp_stream

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data"
#: Seed of section 3's shuffles, and the first seed of section 1's rows (the one section 2's curves come from).
SEED = 1
#: Real streams: file under ../shared/data and the columns that are not features (data README).
#: ELEC is the SRP paper's ELEC: elec2 with its ``date`` column as a numeric feature and ``day``
#: nominal (`NOMINAL`), as in the paper's ARFF; ELEC_NODATE drops ``date``, another data set.
REAL = {
    "ELEC": ("elec2/elec2.csv.gz", []),
    "ELEC_NODATE": ("elec2/elec2.csv.gz", ["date"]),
    "WEATHER": ("weather_noaa/weather_noaa.csv.gz", []),
    "OCCUPANCY": ("occupancy_uci/occupancy.csv.gz", ["date"]),
    "POWERSUPPLY": ("powersupply/powersupply.csv.gz", []),
    "GAS": ("gas_sensor_drift/gas_drift_raw_batches_1-6_8-9.csv.gz", ["batch", "concentration_ppmv"]),
    "WISDM": ("wisdm_ar_v1.1/wisdm_ar_v1.1_transformed.csv.gz", ["UNIQUE_ID", "user"]),
    "NOMAO": ("nomao/nomao.csv.gz", []),
    "ADS": ("internet_ads/internet_ads.csv.gz", []),
}
#: Nominal attributes of the real sets, which ../shared/data holds as CSV files of integer codes:
#: the attributes the ARFF each file came from declares ``{...}`` (its SOURCE.md), so that every
#: system, MOA included, sees them as the paper's runs did. MOA with these gives the paper's NOMAO
#: exactly (NB 86.865, HT 92.128; all numeric: 87.956, 91.890). ADS is left numeric although its
#: SOURCE.md calls 1,555 attributes nominal {0,1}: MOA gives the paper's ADS (NB 68.161, HT 85.910)
#: exactly with them numeric, and 98.658 / 98.658 with them nominal, so the paper's run read them
#: as numbers (2026-12-02, seed 1, CapyMOA 0.15.1).
NOMINAL = {
    "ELEC": ("day",), "ELEC_NODATE": ("day",),
    "NOMAO": tuple(f"V{i}" for i in (7, 8, 15, 16, 23, 24, 31, 32, 39, 40, 47, 48, 55, 56, 63, 64, 71, 72, 79, 80,
                                     87, 88, 92, 96, 100, 104, 108, 112, 116)),
}
UCI = {
    "iris": "uci_iris/iris.csv", "wine": "uci_wine/wine.csv",
    "breast_cancer": "uci_breast_cancer_wdbc/breast_cancer_wdbc.csv",
    "pima": "uci_pima_diabetes/pima_diabetes.csv", "ionosphere": "uci_ionosphere/ionosphere.csv",
    "sonar": "uci_sonar/sonar.csv", "heart": "uci_heart_statlog/heart_statlog.csv",
    "australian": "uci_australian_statlog/australian_statlog.csv",
}
#: How a stream is named in the report (the key is how it is named on the command line).
LABEL = {"ELEC": "ELEC (paper, with date)", "ELEC_NODATE": "ELEC (no date)"}
#: Ours: NB = GaussianNB (every feature a Gaussian); NB mixed = MixedNB(scoring="moa"), MOA's NaiveBayes
#: rule (counts for the nominal attributes with MOA's Laplace correction, a Gaussian per numeric one with
#: MOA's sample variance, products in floating point, MOA's class order for ties).
OURS = ("NB", "NB mixed", "HT", "SRP", "SRS", "BAG")
METHOD = {"SRP": "patches", "SRS": "subspaces", "BAG": "resampling"}
#: MOA's own (CapyMOA): NaiveBayes, HoeffdingTree, and StreamingRandomPatches with its training
#: methods RandomPatches (SRP) and Resampling (BAG: the paper's BAG is SRP's bagging-only variant,
#: "BAG only simulates bagging using all features", with SRP's drift detectors, not OzaBag).
MOA = ("MOA NB", "MOA HT", "MOA SRP", "MOA BAG")
#: Each of our columns' MOA counterpart (its difference to MOA on the same samples).
MOA_OF = {"NB": "MOA NB", "NB mixed": "MOA NB", "HT": "MOA HT", "SRP": "MOA SRP", "SRS": "MOA SRP",
          "BAG": "MOA BAG"}
#: Table I: ours and MOA's at the plan's length; River's ensembles in a table of their own (`RIVER_TABLE`).
TABLE1 = OURS + MOA
RIVER_TABLE = ("River SRP", "River ARF")
#: Each system's River counterpart for the speed ratio (River has SRP's ablations only as options).
RIVER_OF = {"NB": "River NB", "NB mixed": "River NB", "HT": "River HT", "SRP": "River SRP", "SRS": "River SRP",
            "BAG": "River SRP", "River ARF": "River SRP", "MOA SRP": "River SRP", "MOA BAG": "River SRP",
            "MOA NB": "River NB", "MOA HT": "River HT"}
#: Where a peer column is the same algorithm as one of ours (the behind list compares the two).
SAME_AS = {"River NB": "NB", "River HT": "HT", "River SRP": "SRP", "MOA NB": "NB mixed", "MOA HT": "HT",
           "MOA SRP": "SRP", "MOA BAG": "BAG"}
SYSTEMS = TABLE1 + RIVER_TABLE + ("River NB", "River HT")
PEERS = MOA + RIVER_TABLE + ("River NB", "River HT")
HT_PARAMS = {"grace_period": 200, "delta": 1e-7, "tau": 0.05, "leaf_prediction": "nba"}  # VFDT/MOA defaults
FIGURE_STREAMS = ("AGR_G", "LED_A")
DRIFT_STREAMS = ("AGR_A", "LED_A", "AGR_G", "LED_G")
#: Seed 000, Table I (1,000,000 samples, MOA), for `PAPER_COLUMNS` (ELEC: with its date column).
PAPER_COLUMNS = ("NB", "HT", "SRP", "SRS", "BAG")
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
#: Section 6: the deviations of our SRP from MOA's and the checks of the paper's baselines (MOA's
#: NaiveBayes rule, the nominal attributes), entered by hand.
DEVIATIONS = "## 6. Deviations from MOA, and the paper's baselines checked"
#: The sections of results.md this report does not compute, in their order after section 4, each
#: kept as it stands in the results.md it rewrites: (heading, what stands in for a missing one;
#: ``{path}``: that file).
KEPT = (
    (COMPONENTS, "Not in this file yet: each row of this section's table is the output of its command "
                 "(`python bench/nb.py`, `bench/tree.py`, `bench/srp.py`, `bench/adwin.py`, `bench/runtime.py`, "
                 "`bench/memory.py`), entered by hand; `python -m bench.report` keeps the section as it stands."),
    (DEVIATIONS, "Not in this file yet: the deviations of `edgebayes.ensemble.SRPClassifier` from MOA's "
                 "StreamingRandomPatches and the checks of the paper's NB and HT columns, entered by hand; "
                 "`python -m bench.report` keeps the section as it stands."),
    (committee.SECTION, committee.NOT_RUN),
)
#: The last section of results.md: the figures behind choices the code's docstrings state,
#: entered by hand, kept as it stands after "Where edgebayes is behind".
FIGURES = "## Figures behind choices in the code"
KEPT_LAST = ((FIGURES, "Not in this file yet: the measurements behind design choices stated in the code's "
                       "docstrings, each with its command, entered by hand; `python -m bench.report` keeps the "
                       "section as it stands."),)


# ------------------------------------------------------------------------------ streams


def label(stream: str) -> str:
    """The report's name of a stream ("ELEC (paper, with date)" for ELEC)."""
    return LABEL.get(stream, stream)


def load(name: str, n: int | None, seed: int = SEED):
    """(X float64 (m, d), y list, schema) of a preset (its generator seeded with ``seed``, m = n) or
    a real stream (its rows in the file's order, m = min(n, rows); all of them when n is None)."""
    if name in PRESETS:
        stream = srp_stream(name, n, seed=seed)
    else:
        path, drop = REAL[name]
        stream = open_stream(DATA / path, drop=drop, n_samples=n)
    X, y = stream.to_arrays()
    if name in PRESETS:
        return X, list(y), stream.schema
    X, schema = declare_nominal(X, stream.schema, NOMINAL.get(name, ()))
    return X, list(y), schema


def declare_nominal(X, schema, names):
    """(X, schema) with the features ``names`` nominal: each such column's codes replaced by their
    index among its distinct values in X (sorted; NaN stays missing), the schema's categories those
    codes as text (an ARFF ``{...}``), the other features as they were.

    Raises:
        KeyError: a name is not a feature of ``schema``.
    """
    from edgebayes.streams.schema import Feature, Schema

    features = list(schema.features)
    X = X.copy()
    for name in names:
        j = schema.feature_names.index(name) if name in schema.feature_names else None
        if j is None:
            raise KeyError(f"{name!r} is not a feature of this stream")
        col = X[:, j]
        codes = np.unique(col[~np.isnan(col)])
        X[:, j] = np.where(np.isnan(col), np.nan, np.searchsorted(codes, col))
        features[j] = Feature(name, "nominal", tuple(f"{c:g}" for c in codes))
    return X, Schema(tuple(features), schema.target, schema.classes)


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


def _ours(system: str, schema, seed: int, y=()):
    if system == "NB":
        from edgebayes.naive_bayes import GaussianNB

        return GaussianNB()
    if system == "NB mixed":
        from bench.srp import arff_classes
        from edgebayes.naive_bayes_mixed import MixedNB

        # MOA's class order (the ARFF MOA NB reads) breaks its ties, as in MOA
        return MixedNB(nominal_attributes=schema.nominal or None, scoring="moa", classes=arff_classes(y, schema))
    from edgebayes.tree import HoeffdingTreeClassifier

    nominal = schema.nominal or None
    if system == "HT":
        return HoeffdingTreeClassifier(**HT_PARAMS, nominal_attributes=nominal)
    from bench.srp import PAPER as SRP_SETTINGS
    from bench.srp import TREE
    from edgebayes.ensemble import SRPClassifier

    return SRPClassifier(model=HoeffdingTreeClassifier(**TREE, nominal_attributes=nominal),
                         training_method=METHOD[system], seed=seed, **SRP_SETTINGS)


def _river(system: str, schema, seed: int):
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
                                      lam=SRP_SETTINGS["lam"], seed=seed, **detectors)
    # the paper's ARF: m = 60 %, lam = 6, ADWIN 1e-4 / 1e-5, grace 50, delta 0.01, nba
    return forest.ARFClassifier(n_models=10, max_features=0.6, lambda_value=6, nominal_attributes=nominal,
                                seed=seed, **detectors, **TREE)


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


def run_row(task: dict) -> dict:
    """Test-then-train one system on one stream in this process (`task`: system, stream, samples
    (None: a real set whole), seed, curve_every); accuracy, speed, bytes, RSS, and the process's
    CPU seconds in all (``cpu_s``: interpreter, imports, the JVM, the stream, the learner; what
    the plan estimates)."""
    system, stream, seed, every = task["system"], task["stream"], task["seed"], task.get("curve_every", 0)
    X, y, schema = load(stream, task["samples"], seed)
    whole = stream in REAL and (task["samples"] is None or len(y) < task["samples"])
    out = {"system": system, "stream": stream, "seed": seed, "n": len(y), "whole": whole,
           "features": X.shape[1], "curve": []}
    if system in MOA:
        from bench.srp import moa_available, run_moa

        tmp = Path(tempfile.mkdtemp(prefix="bench_report_"))
        problem = moa_available(tmp)  # starts the JVM
        if problem:
            raise RuntimeError(problem)
        base_mb = rss_mb()
        r = run_moa(X, y, schema, seed, tmp, learner=system.split()[1], ht=HT_PARAMS)
        out.update(accuracy=r["accuracy"] / 100, samples_per_s=r["sps"], model_bytes=r["bytes"])
    else:
        if system in OURS:
            model, rows = _ours(system, schema, seed, y), X
        else:
            model = _river(system, schema, seed)
            names = schema.feature_names
            rows = ({k: v for k, v in zip(names, xi) if v == v} for xi in X.tolist())  # NaN = absent
        monitor = None
        if every and system in METHOD:
            from edgebayes.ensemble.diagnostics import DiversityMonitor

            monitor = DiversityMonitor(model, window=every)
        base_mb = rss_mb()
        acc, cpu, curve = _test_then_train(model, rows, y, monitor, every if monitor else 0)
        nbytes = model.memory_bytes() if system in OURS else model._raw_memory_usage
        out.update(accuracy=acc, samples_per_s=len(y) / cpu, model_bytes=nbytes, curve=curve)
    peak_mb = peak_rss_mb()
    out.update(peak_rss_mb=peak_mb, rss_growth_mb=peak_mb - base_mb, cpu_s=time.process_time())
    return out


def spawn_row(task: dict) -> dict:
    """`run_row` in a fresh Python process (its own peak RSS); errors come back as ``error``."""
    cmd = [sys.executable, "-m", "bench.report", "--row", json.dumps(task)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        why = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"system": task["system"], "stream": task["stream"], "seed": task["seed"], "error": why}
    return json.loads(lines[-1])


TASK_KEYS = ("system", "stream", "samples", "seed", "curve_every")


def task_key(task: dict) -> tuple:
    """What makes two tasks the same row: their `TASK_KEYS` (a missing one as 0)."""
    return tuple(task.get(k, 0) for k in TASK_KEYS)


def done_rows(path: Path, tasks: list[dict]) -> dict[tuple, dict]:
    """The rows of ``tasks`` that the JSON-lines file ``path`` (`run_rows`'s ``resume``) already
    holds without an error, by their task's `TASK_KEYS`; {} when there is no such file. A line
    cut short (the run killed while writing it) is skipped: its row runs again."""
    if not path.exists():
        return {}
    wanted = {task_key(t) for t in tasks}
    found = {}
    for line in path.read_text().splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            continue
        key = task_key(entry["task"])
        if key in wanted and "error" not in entry["row"]:
            found[key] = entry["row"]
    return found


def run_rows(tasks: list[dict], jobs: int, resume: Path | None = None) -> list[dict]:
    """`spawn_row` of every task, ``jobs`` at a time, the longest (`estimate_s`) first. With
    ``resume`` (a JSON-lines file): tasks whose row it holds are not run again, and each finished
    row is appended to it at once, so that a run stopped part-way goes on where it was."""
    rows = []
    if resume is not None:
        done = done_rows(resume, tasks)
        rows = list(done.values())
        tasks = [t for t in tasks if task_key(t) not in done]
        print(f"{len(rows)} rows taken from {resume}, {len(tasks)} to run", file=sys.stderr)
    tasks = sorted(tasks, key=lambda t: -estimate_s(t["system"], t["stream"], t["samples"]))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(spawn_row, t): t for t in tasks}
        for fut in concurrent.futures.as_completed(futures):
            row = fut.result()
            rows.append(row)
            if resume is not None:
                with open(resume, "a") as f:
                    f.write(json.dumps({"task": futures[fut], "row": row}) + "\n")
            status = row.get("error") or (f"{row['n']:,} samples, {100 * row['accuracy']:.2f} %, "
                                          f"{row['samples_per_s']:.0f} samples/s, {row['cpu_s']:.0f} s CPU")
            print(f"  {row['stream']:<12} {row['system']:<10} seed {row['seed']} {status}", file=sys.stderr,
                  flush=True)
    return rows


# ------------------------------------------------------------------------------ plan

#: Process CPU seconds of a row of 100 samples (interpreter, imports; MOA: the JVM), per system.
FIXED_S = {"NB": 0.3, "HT": 0.3, "SRP": 0.3, "SRS": 0.3, "BAG": 0.3, "River SRP": 2.0, "River ARF": 1.5,
           "MOA SRP": 4.7, "River NB": 1.7, "River HT": 1.6, "NB mixed": 0.2, "MOA NB": 3.3, "MOA HT": 3.5,
           "MOA BAG": 4.6}
#: Samples per CPU second of a row beyond `FIXED_S` (the stream, the learner, its input dicts, MOA's
#: ARFF file; on AGR_G and LED_A with section 2's diversity curves), per system and stream, printed
#: by ``--measure`` (seed 1; 2026-12-01, AMD EPYC, 2 cores, one of them busy with other work):
#: ``--samples 100000`` for ours, MOA, River NB and HT (the real sets whole); River SRP and ARF with
#: ``--samples 20000`` on the synthetic streams and ``--samples 5000`` on the real sets (their first
#: 5,000 rows); MOA on WISDM by one row of its own (its NaNs now written as ARFF's missing value).
SPEED = {
    "NB": {"LED_A": 185_000, "LED_G": 190_000, "AGR_A": 262_000, "AGR_G": 328_000, "RBF_M": 305_000,
           "RBF_F": 298_000, "ELEC": 203_000, "ELEC_NODATE": 196_000, "WEATHER": 103_000, "OCCUPANCY": 401_000,
           "POWERSUPPLY": 116_000, "GAS": 17_000, "WISDM": 57_600, "NOMAO": 27_400, "ADS": 2_040},
    "HT": {"LED_A": 92_300, "LED_G": 86_400, "AGR_A": 166_000, "AGR_G": 143_000, "RBF_M": 152_000,
           "RBF_F": 178_000, "ELEC": 184_000, "ELEC_NODATE": 180_000, "WEATHER": 167_000, "OCCUPANCY": 255_000,
           "POWERSUPPLY": 98_400, "GAS": 22_000, "WISDM": 51_300, "NOMAO": 26_400, "ADS": 2_390},
    "SRP": {"LED_A": 10_600, "LED_G": 11_200, "AGR_A": 15_800, "AGR_G": 13_400, "RBF_M": 13_300, "RBF_F": 12_000,
            "ELEC": 18_900, "ELEC_NODATE": 23_300, "WEATHER": 30_000, "OCCUPANCY": 28_400, "POWERSUPPLY": 10_500,
            "GAS": 3_840, "WISDM": 7_210, "NOMAO": 8_010, "ADS": 1_330},
    "SRS": {"LED_A": 11_000, "LED_G": 12_100, "AGR_A": 22_100, "AGR_G": 24_200, "RBF_M": 22_500, "RBF_F": 21_100,
            "ELEC": 29_900, "ELEC_NODATE": 32_600, "WEATHER": 43_600, "OCCUPANCY": 42_100, "POWERSUPPLY": 14_000,
            "GAS": 5_480, "WISDM": 8_330, "NOMAO": 9_160, "ADS": 1_060},
    "BAG": {"LED_A": 8_180, "LED_G": 9_130, "AGR_A": 13_700, "AGR_G": 9_730, "RBF_M": 10_200, "RBF_F": 11_200,
            "ELEC": 22_900, "ELEC_NODATE": 20_400, "WEATHER": 27_800, "OCCUPANCY": 35_400, "POWERSUPPLY": 14_300,
            "GAS": 2_740, "WISDM": 4_520, "NOMAO": 5_780, "ADS": 1_210},
    "River SRP": {"LED_A": 134, "LED_G": 134, "AGR_A": 408, "AGR_G": 345, "RBF_M": 243, "RBF_F": 164,
                  "ELEC": 491, "ELEC_NODATE": 552, "WEATHER": 495, "OCCUPANCY": 743, "POWERSUPPLY": 177,
                  "GAS": 43.4, "WISDM": 95.7, "NOMAO": 88.2, "ADS": 6.52},
    "River ARF": {"LED_A": 289, "LED_G": 289, "AGR_A": 569, "AGR_G": 590, "RBF_M": 429, "RBF_F": 539,
                  "ELEC": 992, "ELEC_NODATE": 1_020, "WEATHER": 876, "OCCUPANCY": 2_430, "POWERSUPPLY": 638,
                  "GAS": 93.4, "WISDM": 146, "NOMAO": 249, "ADS": 21.2},
    "MOA SRP": {"LED_A": 2_610, "LED_G": 2_960, "AGR_A": 2_340, "AGR_G": 2_190, "RBF_M": 2_670, "RBF_F": 2_810,
                "ELEC": 2_120, "ELEC_NODATE": 1_710, "WEATHER": 2_160, "OCCUPANCY": 8_340, "POWERSUPPLY": 2_550,
                "GAS": 406, "WISDM": 445, "NOMAO": 884, "ADS": 138},
    "River NB": {"LED_A": 3_130, "LED_G": 2_960, "AGR_A": 8_880, "AGR_G": 7_860, "RBF_M": 7_460, "RBF_F": 6_430,
                 "ELEC": 10_900, "ELEC_NODATE": 11_500, "WEATHER": 13_600, "OCCUPANCY": 13_100,
                 "POWERSUPPLY": 7_060, "GAS": 1_460, "WISDM": 4_320, "NOMAO": 2_270, "ADS": 296},
    "River HT": {"LED_A": 2_960, "LED_G": 2_900, "AGR_A": 13_100, "AGR_G": 17_500, "RBF_M": 11_800,
                 "RBF_F": 12_000, "ELEC": 26_800, "ELEC_NODATE": 18_000, "WEATHER": 50_000, "OCCUPANCY": 27_800,
                 "POWERSUPPLY": 9_420, "GAS": 732, "WISDM": 2_640, "NOMAO": 2_560, "ADS": 190},
    # The four columns added on 2026-12-02. NB mixed (scoring="moa"): ``--measure --samples 100000 --systems
    # "NB mixed"``. MOA's real sets: ``--measure --samples 100000 --systems "MOA NB" "MOA HT" "MOA BAG"
    # --streams`` (the nine real sets, whole). Synthetic streams: one AGR_A row each at
    # 1,000,000 samples, seed 1 (MOA NB 22.4 s CPU, MOA HT 23.2 s, MOA BAG 637 s), the
    # same speed taken for the other five streams; MOA BAG's: MOA SRP's x their AGR_A ratio (1,580 / 2,340:
    # every tree sees all the features). ``--measure --samples 100000`` on the synthetic streams refreshes them.
    "NB mixed": {"LED_A": 11_100, "LED_G": 10_900, "AGR_A": 21_300, "AGR_G": 18_500, "RBF_M": 20_900,
                 "RBF_F": 22_500, "ELEC": 19_100, "ELEC_NODATE": 17_800, "WEATHER": 30_800, "OCCUPANCY": 36_200,
                 "POWERSUPPLY": 17_300, "GAS": 7_610, "WISDM": 17_900, "NOMAO": 6_270, "ADS": 1_010},
    "MOA NB": {**dict.fromkeys(PRESETS, 52_900), "ELEC": 81_300, "ELEC_NODATE": 33_300, "WEATHER": 33_300,
               "OCCUPANCY": 102_000, "POWERSUPPLY": 70_600, "GAS": 8_340, "WISDM": 16_900, "NOMAO": 9_270,
               "ADS": 769},
    "MOA HT": {**dict.fromkeys(PRESETS, 50_800), "ELEC": 66_200, "ELEC_NODATE": 40_600, "WEATHER": 162_000,
               "OCCUPANCY": 260_000, "POWERSUPPLY": 68_600, "GAS": 5_520, "WISDM": 21_700, "NOMAO": 7_450,
               "ADS": 672},
    "MOA BAG": {"ELEC": 3_600, "ELEC_NODATE": 3_660, "WEATHER": 2_400, "OCCUPANCY": 11_100, "POWERSUPPLY": 3_720,
                "GAS": 508, "WISDM": 684, "NOMAO": 955, "ADS": 348},
}
SPEED["MOA BAG"].update({stream: SPEED["MOA SRP"][stream] * 1_580 / SPEED["MOA SRP"]["AGR_A"] for stream in PRESETS})
#: A system's speed over a long stream over its `SPEED`, where the short runs are far shorter than
#: the plan's rows: River's ensembles (measured on 20,000 samples) ran AGR_A's 100,000 at 0.81x
#: (SRP) and 0.87x (ARF) their samples/s on 20,000, their trees larger. (Our ensembles and MOA,
#: measured on 100,000, ran AGR_G's and LED_A's 1,000,000 and AGR_A's 500,000 at 0.94-1.5x: 1 here.)
AT_SCALE = {"River SRP": 0.81, "River ARF": 0.87}
#: CPU seconds of section 3 (seed 001), run after the rows, alone.
SEED001_S = 15
#: The full run (``python -m bench.report --jobs 2``): per system, the samples of each synthetic
#: stream (a stream's own count under its name where it needs one) and the number of seeds (1, 2,
#: ...); the real sets run whole with the same seeds. Table I's columns, ours and MOA's, run the
#: paper's 1,000,000 samples with 3 seeds; River's SRP and ARF, which alone took 3.9 of the 4.8 CPU
#: hours of the 200,000-sample run of 2026-12-02, stay at 200,000 and one seed in a table of their
#: own, and River's NB and HT (section 4's speed ratios) at 200,000 too. ``--plan`` prints the
#: estimate: 5.5 h on 2 cores, over `BUDGET_S` (MOA's SRP and BAG alone take 5.2 h of CPU, River's
#: SRP and ARF 3.7 h); ``--resume`` carries the finished rows from one session to the next.
PLAN = {
    **{system: {"samples": 1_000_000, "seeds": 3} for system in TABLE1},
    **{system: {"samples": 200_000, "seeds": 1} for system in ("River SRP", "River ARF", "River NB", "River HT")},
}
BUDGET_S = 3 * 3600
PLAN_JOBS = 2


def real_rows(stream: str) -> int:
    """Data rows of a real set (lines of its file after the header)."""
    if stream not in _ROWS:
        import gzip

        path = DATA / REAL[stream][0]
        with (gzip.open(path, "rt") if path.suffix == ".gz" else open(path)) as f:
            _ROWS[stream] = sum(1 for _ in f) - 1
    return _ROWS[stream]


_ROWS: dict[str, int] = {}


def planned(system: str, stream: str) -> tuple[int | None, int]:
    """(samples, seeds) of a row of the full run; samples None: a real set, whole."""
    p = PLAN[system]
    return (None if stream in REAL else p.get(stream, p["samples"])), p["seeds"]


def estimate_s(system: str, stream: str, samples: int | None) -> float:
    """Estimated process CPU seconds of one row: `FIXED_S` + samples / `SPEED` (a stream not
    measured: the system's slowest)."""
    n = samples or 0
    if stream in REAL:
        n = min(n, real_rows(stream)) if n else real_rows(stream)
    speeds = SPEED.get(system, {})
    speed = (speeds.get(stream) or min(speeds.values(), default=100.0)) * AT_SCALE.get(system, 1.0)
    return FIXED_S.get(system, 5.0) + n / speed


def make_tasks(systems, streams, samples: int | None = None, seeds: int | None = None) -> list[dict]:
    """The rows of a run: every system on every stream for each seed 1..k; ``samples`` (every
    stream, a real set's first rows) and ``seeds`` override the plan's. The first seed's rows of
    SRP, SRS and BAG on `FIGURE_STREAMS` draw section 2's curves."""
    tasks = []
    for system in systems:
        for stream in streams:
            n, k = planned(system, stream) if system in PLAN else (None, 1)
            n, k = samples or n, seeds or k
            for seed in range(SEED, SEED + k):
                curve = system in METHOD and stream in FIGURE_STREAMS and seed == SEED and n
                tasks.append({"system": system, "stream": stream, "samples": n, "seed": seed,
                              "curve_every": max(n // 50, 2) if curve else 0})
    return tasks


def makespan(seconds, jobs: int) -> float:
    """Wall seconds of tasks of these lengths run ``jobs`` at a time, the longest first (as `run_rows`)."""
    import heapq

    free = [0.0] * max(jobs, 1)
    for s in sorted(seconds, reverse=True):
        heapq.heappush(free, heapq.heappop(free) + s)
    return max(free)


def estimate_wall_s(tasks, jobs: int) -> float:
    """Estimated wall seconds of a run: its rows (`makespan`, at least their CPU seconds over
    ``jobs``) and section 3 after them."""
    return makespan([estimate_s(t["system"], t["stream"], t["samples"]) for t in tasks], jobs) + SEED001_S


def plan_lines(tasks, jobs: int) -> list[str]:
    """The rows of a run by system and stream: samples, seeds, samples/s used, estimated CPU
    seconds; totals and the estimated wall time."""
    rows = {}
    for t in tasks:
        key = (t["system"], t["stream"])
        n = t["samples"]
        shown = f"whole ({real_rows(t['stream']):,})" if t["stream"] in REAL and (
            n is None or n >= real_rows(t["stream"])) else f"{n:,}"
        r = rows.setdefault(key, {"samples": shown, "seeds": 0, "cpu": 0.0})
        r["seeds"] += 1
        r["cpu"] += estimate_s(t["system"], t["stream"], n)
    L = [f"{'system':<10} {'stream':<12} {'samples':>16} {'seeds':>5} {'samples/s':>9} {'est. CPU s':>10}",
         "(samples/s: `SPEED` x `AT_SCALE`; est. CPU s: `FIXED_S` + samples / samples/s, over the seeds)"]
    by_system: dict[str, float] = {}
    for (system, stream), r in rows.items():
        speed = SPEED.get(system, {}).get(stream, 0.0) * AT_SCALE.get(system, 1.0)
        L.append(f"{system:<10} {stream:<12} {r['samples']:>16} {r['seeds']:>5} "
                 f"{(f'{speed:,.0f}' if speed else '?'):>9} {r['cpu']:>10,.0f}")
        by_system[system] = by_system.get(system, 0.0) + r["cpu"]
    L += [""] + [f"{system:<10} {cpu:>10,.0f} s CPU" for system, cpu in by_system.items()]
    total = sum(by_system.values())
    L += [f"{'all rows':<10} {total:>10,.0f} s CPU ({len(tasks)} rows; {total / jobs / 3600:.2f} h a job with "
          f"--jobs {jobs}); section 3 after them: {SEED001_S:,.0f} s",
          f"estimated wall time with --jobs {jobs}: {estimate_wall_s(tasks, jobs) / 3600:.2f} h "
          f"({budget_note(tasks)}; cores not shared with other work)"]
    return L


def budget_note(tasks) -> str:
    """Whether a run fits `BUDGET_S` on `PLAN_JOBS` cores."""
    wall = estimate_wall_s(tasks, PLAN_JOBS)
    fits = "within" if wall <= BUDGET_S else "OVER"
    return (f"{fits} the budget of {BUDGET_S / 3600:.0f} h on {PLAN_JOBS} cores: {wall / 3600:.2f} h with "
            f"--jobs {PLAN_JOBS}")


def measure(systems, streams, samples: int, jobs: int) -> None:
    """Measure `FIXED_S` and `SPEED` (one seed, ``samples`` a stream) and print them as Python."""
    fixed = {}
    for system in systems:
        r = spawn_row({"system": system, "stream": "AGR_A", "samples": 100, "seed": SEED})
        fixed[system] = round(r["cpu_s"], 1) if "cpu_s" in r else None
    rows = run_rows(make_tasks(systems, streams, samples, 1), jobs)
    speed: dict[str, dict[str, float]] = {s: {} for s in systems}
    for r in sorted(rows, key=lambda r: (systems.index(r["system"]), streams.index(r["stream"]))):
        if "error" not in r and fixed[r["system"]] is not None:
            extra = max(r["cpu_s"] - fixed[r["system"]], 1e-3)
            speed[r["system"]][r["stream"]] = float(f"{r['n'] / extra:.3g}")
            print(f"# {r['system']:<10} {r['stream']:<12} {r['n']:>8,} samples {r['cpu_s']:8.1f} s CPU, learner "
                  f"{r['samples_per_s']:9,.0f} samples/s, {fmt_bytes(r['model_bytes'])}, "
                  f"peak {r['peak_rss_mb']:.0f} MB")
    print(f"FIXED_S = {fixed!r}")
    print(f"SPEED = {speed!r}")


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
#: (docs/design.md 2.1, edgebayes's default) and the paper's Algorithm 2 as written (no warm-up).
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
            X, y, _ = load(name, n, seed)
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
         "first sample sets it, every later one moves it by 0.01 (Eqs. 12-14), as we read it: the paper's text in "
         "../shared/seeds shows neither its equations nor its algorithm boxes nor Table 2's figures (section 6 says "
         "which parts the text confirms)."), "",
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


def cells(rows) -> dict:
    """Section 1's cells from the rows (those without an error): ``{(system, stream): {"n":
    samples, "whole": a real set whole, "acc": {seed: accuracy %}, "rows": the rows}}``."""
    out: dict = {}
    for r in rows:
        if "error" in r:
            continue
        c = out.setdefault((r["system"], r["stream"]), {"n": r["n"], "whole": r.get("whole", False),
                                                         "acc": {}, "rows": []})
        c["acc"][r["seed"]] = 100 * r["accuracy"]
        c["rows"].append(r)
    for c in out.values():  # in the order of the seeds, whatever order the rows ended in
        c["acc"] = dict(sorted(c["acc"].items()))
    return out


def mean_spread(values) -> tuple[float, float | None]:
    """Mean and sample standard deviation (n - 1 in the denominator; None for a single value)."""
    v = list(values)
    return float(np.mean(v)), (float(np.std(v, ddof=1)) if len(v) > 1 else None)


def fmt_cell(mean: float, spread: float | None) -> str:
    return f"{mean:.2f}" if spread is None else f"{mean:.2f} ± {spread:.2f}"


def moa_diff(cs: dict, system: str, stream: str, ref: str = "MOA SRP") -> float | None:
    """A cell's mean minus ``ref``'s over the seeds both ran; None without both, or when they ran
    streams of different lengths (a synthetic stream is scaled to its length: the first 200,000
    samples of the 1,000,000-sample stream are not the 200,000-sample stream)."""
    c, m = cs.get((system, stream)), cs.get((ref, stream))
    if c is None or m is None or c["n"] != m["n"]:
        return None
    seeds = [s for s in c["acc"] if s in m["acc"]]
    if not seeds:
        return None
    return float(np.mean([c["acc"][s] for s in seeds]) - np.mean([m["acc"][s] for s in seeds]))


def column_runs(cs: dict, column: str, streams) -> tuple[str, str, str]:
    """What a column of section 1 ran: (synthetic streams' samples, real sets' rows, seeds)."""
    mine = {st: c for (s, st), c in cs.items() if s == column and st in streams}
    synth = sorted({c["n"] for st, c in mine.items() if st in PRESETS})
    real = [c for st, c in mine.items() if st not in PRESETS]
    firsts = sorted({c["n"] for c in real if not c["whole"]})
    real_text = ("whole" if all(c["whole"] for c in real) else
                 "first " + " / ".join(f"{n:,}" for n in firsts) + " rows" + (", or whole" if any(
                     c["whole"] for c in real) else "")) if real else "-"
    seeds = sorted({tuple(sorted(c["acc"])) for c in mine.values()})
    seeds_text = "; ".join(", ".join(map(str, s)) for s in seeds) or "-"
    return (" / ".join(f"{n:,}" for n in synth) or "-"), real_text, seeds_text


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
    """The shell command that reruns this report; arguments quoted ("MOA SRP" has a space),
    ``--resume FILE`` left out (where a run keeps its rows, not what it runs)."""
    args = list(argv)
    for i, a in enumerate(args):
        if a == "--resume":
            del args[i:i + 2]
            break
        if a.startswith("--resume="):
            del args[i]
            break
    return shlex.join(["python", "-m", "bench.report", *args])


#: Section 1's heading (the README links to it).
TABLE1_HEADING = "## 1. Prequential accuracy (seed 000, Table I)"


def rank_rows(acc: dict, columns) -> list[list[str]]:
    """The average-rank rows of a table: over all its streams, the synthetic ones, the real ones and
    the paper's own streams (those of `PAPER`)."""
    parts = (("Avg rank", acc), ("Avg rank synthetic", {s: a for s, a in acc.items() if s in PRESETS}),
             ("Avg rank real", {s: a for s, a in acc.items() if s not in PRESETS}),
             ("Avg rank, the paper's streams", {s: a for s, a in acc.items() if s in PAPER}))
    out = []
    for name, part in parts:
        rk = ranks(part, columns)
        out.append([f"*{name}*"] + [("-" if math.isnan(rk[s]) else f"{rk[s]:.2f}") for s in columns])
    return out


def accuracy_table(cs: dict, streams, columns) -> list[str]:
    """Mean ± spread of each (column, stream) cell, the row's best in bold, and `rank_rows`."""
    acc = {st: {s: mean_spread(cs[s, st]["acc"].values())[0] for s in columns if (s, st) in cs} for st in streams}
    body = []
    for st in streams:
        best = max(acc[st].values(), default=None)
        body.append([label(st)] + [("**%s**" if acc[st][s] == best else "%s") % fmt_cell(*mean_spread(
            cs[s, st]["acc"].values())) if s in acc[st] else "-" for s in columns])
    return table(["stream"] + list(columns), body + rank_rows(acc, columns))


def paper_figure(column: str, stream: str) -> float | None:
    """The paper's Table I figure for one of our or MOA's columns (NB mixed and MOA NB: its NB)."""
    base = column.removeprefix("MOA ").replace("NB mixed", "NB")
    return PAPER[stream][PAPER_COLUMNS.index(base)] if stream in PAPER and base in PAPER_COLUMNS else None


def section1(cs: dict, streams, columns, command: str, river=()) -> list[str]:
    """Section 1: Table I (ours and MOA's; mean ± spread over the seeds, average ranks of the means),
    River's ensembles in their own table, each of our cells minus its MOA counterpart's (`MOA_OF`),
    and every cell of ours and MOA's beside the paper's figure."""
    L = [TABLE1_HEADING, "",
         f"Reproduce: `{command}`. Prequential accuracy in %: mean over the seeds ± sample standard deviation "
         "(n - 1; a cell of one seed shows its mean alone); best mean of a row in bold. *NB* is GaussianNB (every "
         "attribute a Gaussian); *NB mixed* is MixedNB(scoring=\"moa\"), MOA's NaiveBayes rule (counts for "
         "the nominal attributes, a Gaussian per numeric one, as MOA computes them; its prediction equals MOA's "
         "sample by sample); *MOA NB* is the paper's NB as it ran it. Average ranks are of the means (1 = best, ties "
         "share the mean rank), over the streams where every column has a cell; *the paper's streams* are those "
         "of its Table I that this run has.", ""]
    L += accuracy_table(cs, streams, columns)
    if river:
        n = sorted({cs[s, st]["n"] for s in river for st in streams if (s, st) in cs and st in PRESETS})
        L += ["", f"**River's ensembles** (SRPClassifier, ARFClassifier; the paper's settings) on "
              f"{' / '.join(f'{v:,}' for v in n) or 'no'} samples of each synthetic stream, with the real sets' rows "
              "and the seeds the header's table gives: a synthetic cell here is another stream than Table I's where "
              "the lengths differ, and is ranked among River's columns only.", ""]
        L += accuracy_table(cs, streams, river)

    pairs = [(s, MOA_OF[s]) for s in columns if s in MOA_OF and MOA_OF[s] in columns]
    if pairs:
        L += ["", "**Difference to MOA**, in points: each of our columns' mean minus its MOA counterpart's over the "
              "seeds both ran, on the same samples (`-`: no such pair at that length).", ""]
        body = [[label(st)] + ["-" if (v := moa_diff(cs, s, st, m)) is None else f"{v:+.2f}" for s, m in pairs]
                for st in streams]
        L += table(["stream"] + [f"{s} - {m}" for s, m in pairs], body)

    shown = [s for s in columns if any(paper_figure(s, st) is not None for st in streams)]
    L += ["", "**Against the paper's Table I** (MOA, 1,000,000 samples of each synthetic stream; real sets whole; its "
          "ELEC with the date column): each cell's mean and, in brackets, minus the paper's figure for that column "
          "(NB mixed and MOA NB against its NB). Where this run's streams are shorter than the paper's (a synthetic "
          "stream under 1,000,000 samples, a real set's first rows; the header) they are other streams.", ""]
    body = []
    for st in streams:
        if st not in PAPER:
            continue
        row = [label(st)]
        for s in shown:
            c, ref = cs.get((s, st)), paper_figure(s, st)
            m = mean_spread(c["acc"].values())[0] if c else None
            row.append("-" if m is None else f"{m:.2f} ({m - ref:+.2f})")
        body.append(row)
    L += table(["stream"] + shown, body)
    L += ["", "The paper's Table I for the same columns:", ""]
    L += table(["stream", *PAPER_COLUMNS],
               [[label(s)] + [f"{v:.2f}" for v in PAPER[s]] for s in streams if s in PAPER])
    return L


def header(cs: dict, streams, columns) -> list[str]:
    """What section 1 ran: the streams, the seeds, and per column its samples and seeds."""
    L = ["Streams: the SRP paper's synthetic presets (`edgebayes.streams.srp_stream`) and the real sets of "
         "`../shared/data` (non-feature columns dropped). The paper runs 1,000,000 samples of each synthetic stream; "
         "a preset of n samples is the paper's stream scaled to n (drifts at n/4, n/2, 3n/4, AGR_G's and LED_G's "
         "50,000 samples wide x n / 1,000,000, RBF's speed x 1,000,000 / n), not its first n samples. *ELEC (paper, "
         "with date)* is "
         "the paper's ELEC: `elec2/elec2.csv.gz` with its `date` column as a numeric feature and `day` nominal, as "
         "in the paper's ARFF. *ELEC (no date)* is the same file without `date`: another data set, which the "
         "paper did not run; its figures are not comparable with the paper's ELEC. Nominal attributes (`NOMINAL` in "
         "bench/report.py, from each file's ARFF): ELEC's `day`, NOMAO's 29; every system, MOA included (its ARFF "
         "file declares them `{...}`), sees them as categories. ADS is read numeric, as the paper's run read it "
         "(MOA gives the paper's ADS NB and HT figures exactly so, not with its binary attributes nominal). "
         "Four of the paper's seven real sets, AIRLINES, COVTYPE, KDD99 and SPAM, are not in `../shared/data`: Table "
         "I has no cell for them, and its ranks over the paper's streams are over the other nine. "
         "Every system sees the same samples in the same order, test then train. "
         "Ensembles: 10 members, m = 60 %, lam = 6, ADWIN 1e-4 (warning) / 1e-5 "
         "(drift), Hoeffding tree grace period 50, delta 0.01, nba leaves (the paper's settings). HT alone: grace "
         "period 200, delta 1e-7, tau 0.05, nba (MOA's defaults).",
         "",
         "Seeds: seed s draws synthetic stream s (its generator's seed) and seeds the learner (s); on the real sets "
         "only the learner's seed varies (the samples are the file's rows in its order; NB and HT, which draw no "
         "random number, give the same figure for every seed there). A cell is the mean over its column's seeds ± "
         "their sample standard deviation. Samples and seeds of each column:", ""]
    body = [[c, *column_runs(cs, c, streams)] for c in columns]
    return L + table(["column", "synthetic streams: samples", "real sets", "seeds"], body) + [""]


def aggregate(cs: dict) -> dict:
    """Per (system, stream), the figures of section 4 over the seeds: accuracy (fraction), samples/s and
    bytes (means), peak RSS (the largest, with its growth), samples, seeds, the first seed's curve."""
    res = {}
    for key, c in cs.items():
        rs = c["rows"]
        peak = max(rs, key=lambda r: r["peak_rss_mb"])
        first = min(rs, key=lambda r: r["seed"])
        sizes = [r["model_bytes"] for r in rs if r["model_bytes"] is not None and r["model_bytes"] > 0]
        res[key] = {"accuracy": float(np.mean([r["accuracy"] for r in rs])), "n": c["n"], "seeds": len(rs),
                    "samples_per_s": float(np.mean([r["samples_per_s"] for r in rs])),
                    "model_bytes": float(np.mean(sizes)) if sizes else -1,
                    "peak_rss_mb": peak["peak_rss_mb"], "rss_growth_mb": peak["rss_growth_mb"],
                    "curve": first["curve"]}
    return res


def write_report(out: Path, args, command: str, rows, cv, drifts, moa_note, elapsed_s, estimate_s=None,
                 resumed: int = 0) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    cs = cells(rows)
    res = aggregate(cs)
    acc = {}
    for (s, st), c in cs.items():
        acc.setdefault(st, {})[s] = mean_spread(c["acc"].values())[0]
    errors = [r for r in rows if "error" in r]
    streams = [s for s in args.streams if s in acc]
    columns = [s for s in TABLE1 if any(s in a for a in acc.values())]
    river = [s for s in RIVER_TABLE if any(s in a for a in acc.values())]
    took = f"{elapsed_s / 60:.0f} min" + (f" (estimated {estimate_s / 60:.0f} min)" if estimate_s else "")
    if resumed:
        took += f", {resumed} of its {len(rows)} rows taken from an earlier run stopped part-way (`--resume`)"
    L = [
        "# edgebayes: results against River and MOA",
        "",
        f"Generated by `{command}` on {datetime.date.today().isoformat()} in {took}.",
        f"Machine: {machine()}.",
        "",
        *header(cs, streams, columns + river),
    ]
    if moa_note:
        L += [f"**MOA not run:** {moa_note}", ""]
    for r in errors:
        L += [f"**{r['system']} failed on {label(r['stream'])}, seed {r.get('seed', '?')}:** `{r['error']}`", ""]

    # 1. Table I
    L += section1(cs, streams, columns, command, river)

    # 2. Figures 3-6
    L += ["", "## 2. Diversity and tree depth over time (seed 000, figures 3-6)", "",
          f"Reproduce: `{command}` (rows SRP, SRS, BAG on AGR_G and LED_A, seed {SEED}). Average pairwise "
          "Cohen's kappa of the members' test predictions over the last window, and the members' average tree "
          "depth, at the end of each window (`edgebayes.ensemble.diagnostics.DiversityMonitor`).", ""]
    for st in FIGURE_STREAMS:
        curves = {s: res[(s, st)]["curve"] for s in METHOD if (s, st) in res and res[(s, st)]["curve"]}
        if not curves:
            continue
        length = min(len(c) for c in curves.values())
        pick = sorted(set(np.linspace(0, length - 1, min(length, 10)).round().astype(int).tolist()))
        body = [[f"{curves['SRP' if 'SRP' in curves else next(iter(curves))][i][0]:,}"]
                + [f"{curves[s][i][2]:.3f}" for s in curves] + [f"{curves[s][i][3]:.1f}" for s in curves]
                for i in pick]
        L += [f"**{label(st)}**", ""]
        L += table(["samples"] + [f"kappa {s}" for s in curves] + [f"depth {s}" for s in curves], body)
        for what, k, ylabel in (("kappa", 2, "average pairwise kappa"), ("depth", 3, "average tree depth")):
            L += plot(out / f"{what}_{st}.png", f"{st}: {ylabel}",
                      {s: ([p[0] for p in c], [p[k] for p in c]) for s, c in curves.items()}, ylabel)
        L += [""]

    # The paper's claims, one by one (from the means of section 1 and the curves of section 2)
    figure_curves = {st: {s: res[(s, st)]["curve"] for s in METHOD if (s, st) in res and res[(s, st)]["curve"]}
                     for st in FIGURE_STREAMS}
    lengths = sorted({cs[k]["n"] for k in cs if k[1] in PRESETS and k[0] in OURS})
    L += ["", *sections.claims_section(
        {st: {s: v for s, v in a.items() if s in TABLE1} for st, a in acc.items() if st in streams},
        {st: c for st, c in figure_curves.items() if c}, PAPER, REAL,
        " / ".join(f"{n:,}" for n in lengths) + " samples of each synthetic stream", command), ""]

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
          "the library was imported (MOA: the JVM started) and the stream loaded. Accuracy, samples/s and bytes are "
          "means over the seeds, peak RSS the largest; where River's counterpart ran fewer samples, *x River* "
          "compares speeds over streams of different lengths.", ""]
    body = []
    for st in streams:
        for s in SYSTEMS:
            r = res.get((s, st))
            if r is None:
                continue
            ref = res.get((RIVER_OF.get(s, ""), st))
            ratio = f"{r['samples_per_s'] / ref['samples_per_s']:.2f}" if ref and s in RIVER_OF else "1"
            body.append([label(st), s, f"{r['n']:,}", r["seeds"], f"{100 * r['accuracy']:.2f}",
                         f"{r['samples_per_s']:,.0f}", ratio, fmt_bytes(r["model_bytes"]),
                         f"{r['peak_rss_mb']:.0f} MB ({r['rss_growth_mb']:+.0f})"])
    L += table(["stream", "system", "samples", "seeds", "acc %", "samples/s", "x River", "bytes", "peak RSS"], body)

    # 5. (by hand, from bench/*.py) and Seed 002 (bench.committee --results): kept as they stand
    for heading, missing in KEPT:
        L += ["", *sections.kept_section(out / "results.md", heading, missing)]

    # Behind
    L += ["", "## Where edgebayes is behind", ""] + behind(cs, res, streams, columns)
    # Figures behind choices in the code (by hand): kept as it stands, last
    for heading, missing in KEPT_LAST:
        L += ["", *sections.kept_section(out / "results.md", heading, missing)]
    L += [""]
    path = out / "results.md"
    path.write_text("\n".join(L) + "\n")
    return path


def spread_of(c: dict) -> float:
    """A cell's sample standard deviation over its seeds (0 for a single seed)."""
    return mean_spread(c["acc"].values())[1] or 0.0


def accuracy_behind(cs: dict, stream: str) -> list[str]:
    """Every peer cell (`PEERS`) of ``stream`` whose mean beats our best column's, or the same
    algorithm's of ours (`SAME_AS`), by more than the seeds' spread: the larger of the two cells'
    sample standard deviations (0 for a single seed), and by at least 0.01 point (the tables' digits)."""
    mean = {s: mean_spread(c["acc"].values())[0] for (s, st), c in cs.items() if st == stream}
    ours = [s for s in OURS if s in mean]
    if not ours:
        return []
    best = max(ours, key=lambda s: mean[s])
    out = []
    for peer in (p for p in PEERS if p in mean):
        for mine, what in ((best, f"our best ({best})"), (SAME_AS.get(peer), f"our {SAME_AS.get(peer)}")):
            if mine not in mean or (what != f"our best ({best})" and mine == best):
                continue
            gap = mean[peer] - mean[mine]
            spread = max(spread_of(cs[peer, stream]), spread_of(cs[mine, stream]))
            if round(gap, 2) > round(spread, 2) and round(gap, 2) >= 0.01:  # as the tables show them
                out.append(f"- Accuracy on {label(stream)}: {peer} {mean[peer]:.2f} % vs {what} {mean[mine]:.2f} % "
                           f"({gap:.2f} points behind; seeds' spread {spread:.2f}).")
    return out


def behind(cs, res, streams, columns) -> list[str]:
    """Plain statements of every place a peer beats us: accuracy (`accuracy_behind`), speed, bytes, rank."""
    out = []
    for st in streams:
        out += accuracy_behind(cs, st)
        for s in SYSTEMS:
            ref = RIVER_OF.get(s)
            if s in OURS and (s, st) in res and (ref, st) in res:
                ratio = res[(s, st)]["samples_per_s"] / res[(ref, st)]["samples_per_s"]
                if ratio < 1:
                    out.append(f"- Speed on {label(st)}: our {s} runs at {ratio:.2f}x {ref}'s samples/s.")
        if ("SRP", st) in res and ("MOA SRP", st) in res:
            ours, moa = res[("SRP", st)], res[("MOA SRP", st)]
            if ours["samples_per_s"] < moa["samples_per_s"]:
                out.append(f"- Speed on {label(st)}: our SRP {ours['samples_per_s']:,.0f} samples/s vs MOA's "
                           f"{moa['samples_per_s']:,.0f}.")
            if moa["model_bytes"] and moa["model_bytes"] > 0 and ours["model_bytes"] > moa["model_bytes"]:
                out.append(f"- Model size on {label(st)}: our SRP {fmt_bytes(ours['model_bytes'])} vs MOA's "
                           f"{fmt_bytes(moa['model_bytes'])}.")
    acc = {st: {s: mean_spread(c["acc"].values())[0] for (s, t), c in cs.items() if t == st} for st in streams}
    rk = ranks(acc, columns)
    ours_rank = min((rk[s], s) for s in OURS if s in rk and not math.isnan(rk[s])) if rk else None
    for peer in (p for p in columns if p in PEERS):
        if ours_rank and peer in rk and rk[peer] < ours_rank[0]:
            out.append(f"- Average rank: {peer} {rk[peer]:.2f} beats our best ({ours_rank[1]}) {ours_rank[0]:.2f}.")
    return out or ["- Nowhere in this run (no peer ahead by more than the seeds' spread, slower nowhere)."]


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
    ap.add_argument("--quick", action="store_true", help="5,000 samples on AGR_G, LED_A and ELEC, one seed")
    ap.add_argument("--samples", type=int, help="samples of every stream, a real set's first rows (default: "
                    "the plan's, `PLAN`, real sets whole; quick 5,000)")
    ap.add_argument("--seeds", type=int, help="seeds 1..N of every system (default: the plan's; quick 1)")
    ap.add_argument("--streams", nargs="+", choices=PRESETS + tuple(REAL), help="default: all (quick: 3)")
    ap.add_argument("--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS))
    ap.add_argument("--jobs", type=int, default=1, help="rows run in parallel (each in its own process)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs", help="folder of results.md and the PNGs")
    ap.add_argument("--nb-samples", type=int, help="samples of each drifting stream of section 3 (seed 001; "
                    "default 100,000; quick 20,000)")
    ap.add_argument("--only-seed001", action="store_true",
                    help="run section 3 (seed 001) alone and put it in place of section 3 of the existing results.md")
    ap.add_argument("--plan", action="store_true", help="print the rows of this run (by default the full run) with "
                    "their estimated CPU seconds and the estimated wall time, and exit")
    ap.add_argument("--measure", action="store_true", help="run every row once (seed 1, --samples, default 20,000) "
                    "and print `FIXED_S` and `SPEED`, the plan's measured speeds, as Python")
    ap.add_argument("--resume", type=Path, metavar="FILE", help="append each finished row to FILE (JSON lines) and "
                    "skip the rows FILE already holds: a run stopped part-way goes on where it was")
    ap.add_argument("--row", metavar="TASK_JSON", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.row:
        print(json.dumps(run_row(json.loads(args.row))))
        return 0
    args.nb_samples = args.nb_samples or (20_000 if args.quick else 100_000)
    command = reproduce_command(argv if argv is not None else sys.argv[1:])
    if args.only_seed001:
        cv, drifts = cross_validation(), drift_curves(args.nb_samples)
        path = args.out / "results.md"
        replace_section(path, 3, seed001_section(cv, drifts, command, args.out))
        print(path)
        return 0
    args.streams = args.streams or (["AGR_G", "LED_A", "ELEC"] if args.quick else list(PRESETS) + list(REAL))
    if args.measure:
        measure(args.systems, args.streams, args.samples or 20_000, args.jobs)
        return 0
    if args.quick:
        args.samples, args.seeds = args.samples or 5_000, args.seeds or 1
    note = moa_problem() if set(MOA) & set(args.systems) and not args.plan else None
    systems = [s for s in args.systems if not (s in MOA and note)]
    tasks = make_tasks(systems, args.streams, args.samples, args.seeds)
    if args.plan:
        print("\n".join(plan_lines(tasks, args.jobs)))
        return 0
    start = time.perf_counter()
    estimate = estimate_wall_s(tasks, args.jobs)
    print(f"rows: {len(systems)} systems x {len(args.streams)} streams, {len(tasks)} rows; estimated "
          f"{estimate / 60:.0f} min with --jobs {args.jobs} ({budget_note(tasks)}; `--plan` lists them)",
          file=sys.stderr)
    resumed = len(done_rows(args.resume, tasks)) if args.resume else 0
    rows = run_rows(tasks, args.jobs, args.resume)
    print("naive Bayes cross-validation and drift curves", file=sys.stderr)
    cv = cross_validation()
    drifts = drift_curves(args.nb_samples)
    path = write_report(args.out, args, command, rows, cv, drifts, note, time.perf_counter() - start, estimate,
                        resumed)
    print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
