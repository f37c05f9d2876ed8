"""Streaming Random Patches: ours against River's SRPClassifier and MOA's StreamingRandomPatches.

    python bench/srp.py [--n 100000] [--streams ELEC AGR_A ...] [--systems ours river moa ...]
                        [--seed 1] [--budget 1000000]

All systems run in one process on the same samples (ELEC from ../shared/data with ``date``
dropped, at most ``--n`` rows; the paper's synthetic presets at ``--n`` samples) with the paper's settings: 10
members, m = 60 %, lam = 6, ADWIN 1e-4 (warning) / 1e-5 (drift), Hoeffding tree with grace
period 50, delta 0.01, naive Bayes adaptive leaves, nominal features declared as nominal.
Prequential (test-then-train) accuracy over the whole stream.

Systems (``--systems``):

- ``ours``: `edgebayes.ensemble.SRPClassifier` (training_method="patches": SRP).
- ``ours_budget``: the same with ``max_size_bytes=--budget`` (the bytes column must stay under it).
- ``ours_srs`` / ``ours_bag``: training_method "subspaces" (SRS) and "resampling" (BAG), the
  paper's two ablations (its ranking: SRP >= BAG, SRS).
- ``river``: ``river.ensemble.SRPClassifier`` (its base tree gets the same settings).
- ``moa``: MOA through CapyMOA (``pip install capymoa``, Java 17): the stream is written to a
  temporary ARFF file so that MOA's own Java loop runs it (``prequential_evaluation``,
  ``optimise=True``), without a Python call per sample. Its bytes come from MOA's
  ``measureByteSize``, which needs the SizeOf java agent: the agent's classes ship inside
  CapyMOA's moa.jar without the manifest entry, so the bench writes a two-file agent jar to the
  temporary directory and starts the JVM with ``-javaagent`` (when that fails, bytes show -1).
  The ARFF file declares the schema's nominal features ``{0,1,...}`` (`write_arff`), so MOA
  treats them as nominal. `moa_learner` also builds MOA's NaiveBayes, HoeffdingTree and SRP's
  Resampling variant (BAG) for ``python -m bench.report``.

Columns: accuracy in %, samples/s (our and River's: process CPU time of predict + learn; MOA:
CapyMOA's CPU time of its evaluation loop, JIT and GC threads included), model bytes at the end
(ours: ``memory_bytes()``; River: none, shown as -1; MOA: measureByteSize), warnings/drifts
signalled (ours), and the ratios that the goals are stated in: accuracy minus MOA's (points),
speed over River's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ELEC = ROOT / ".." / "shared" / "data" / "elec2" / "elec2.csv.gz"
STREAMS = ("ELEC", "AGR_A", "AGR_G", "LED_A", "RBF_M", "RBF_F")
SYSTEMS = ("ours", "ours_budget", "ours_srs", "ours_bag", "river", "moa")
PAPER = {"n_models": 10, "subspace_size": 0.6, "lam": 6.0}
TREE = {"grace_period": 50, "delta": 0.01, "leaf_prediction": "nba"}


def load(name: str, n: int, seed: int):
    """(X float64 (n, d), y list, schema) for a stream name."""
    from edgebayes.streams import open_stream

    if name == "ELEC":
        stream = open_stream(ELEC, drop=["date"], n_samples=n)
    else:
        stream = open_stream(f"synth:{name}", n_samples=n, seed=seed)
    X, y = stream.to_arrays()
    return X, list(y), stream.schema


# ---------------------------------------------------------------------------- our SRP


def run_ours(X, y, schema, seed, **kwargs) -> dict:
    from edgebayes.ensemble import SRPClassifier
    from edgebayes.tree import HoeffdingTreeClassifier

    tree = HoeffdingTreeClassifier(**TREE, nominal_attributes=schema.nominal or None)
    model = SRPClassifier(model=tree, seed=seed, **PAPER, **kwargs)
    ok = 0
    start = time.process_time()
    for xi, yi in zip(X, y):
        ok += model.predict_one(xi) == yi
        model.learn_one(xi, yi)
    cpu = time.process_time() - start
    return {"accuracy": 100.0 * ok / len(y), "sps": len(y) / cpu, "bytes": model.memory_bytes(),
            "events": f"{model.n_warnings}/{model.n_drifts}"}


# ---------------------------------------------------------------------------- River


def run_river(X, y, schema, seed) -> dict:
    from river import drift, ensemble, tree

    names = schema.feature_names
    nominal = set(schema.nominal)
    rows = [{k: (int(v) if j in nominal else v) for j, (k, v) in enumerate(zip(names, xi.tolist()))} for xi in X]
    base = tree.HoeffdingTreeClassifier(**TREE, nominal_attributes=[names[j] for j in sorted(nominal)] or None)
    model = ensemble.SRPClassifier(
        model=base, n_models=PAPER["n_models"], subspace_size=PAPER["subspace_size"], lam=PAPER["lam"],
        drift_detector=drift.ADWIN(delta=1e-5), warning_detector=drift.ADWIN(delta=1e-4), seed=seed,
    )
    ok = 0
    start = time.process_time()
    for xi, yi in zip(rows, y):
        ok += model.predict_one(xi) == yi
        model.learn_one(xi, yi)
    cpu = time.process_time() - start
    return {"accuracy": 100.0 * ok / len(y), "sps": len(y) / cpu, "bytes": -1, "events": ""}


# ---------------------------------------------------------------------------- MOA via CapyMOA


def sizeof_agent(tmp: Path) -> Path | None:
    """A java agent jar for MOA's measureByteSize, from the classes inside CapyMOA's moa.jar."""
    try:
        import importlib.util

        spec = importlib.util.find_spec("capymoa")
        moa_jar = Path(spec.origin).parent / "jar" / "moa.jar"
        agent = tmp / "sizeofag.jar"
        with zipfile.ZipFile(moa_jar) as src, zipfile.ZipFile(agent, "w") as out:
            out.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nPremain-Class: sizeof.agent.SizeOfAgent\n\n")
            for name in src.namelist():
                if name.startswith("sizeof/agent/") and name.endswith(".class"):
                    out.writestr(name, src.read(name))
        return agent
    except Exception as exc:  # noqa: BLE001 - the bench reports and goes on without bytes
        print(f"# MOA bytes unavailable: cannot build the SizeOf agent ({exc})")
        return None


def arff_classes(y, schema) -> list:
    """The labels in the order `write_arff` declares them (MOA's class indices)."""
    return list(schema.classes) if schema.classes else sorted(set(y), key=str)


def write_arff(path: Path, X, y, schema) -> None:
    classes = arff_classes(y, schema)
    nominal = set(schema.nominal)
    with open(path, "w") as f:
        f.write("@relation bench\n\n")
        for j, feat in enumerate(schema.features):
            if j in nominal:
                f.write(f"@attribute {feat.name} {{{','.join(str(i) for i in range(len(feat.categories)))}}}\n")
            else:
                f.write(f"@attribute {feat.name} numeric\n")
        f.write(f"@attribute class {{{','.join(str(c) for c in classes)}}}\n\n@data\n")
        for xi, yi in zip(X.tolist(), y):
            f.write(",".join("?" if v != v else str(int(v)) if j in nominal else repr(v)  # NaN: ARFF's missing
                             for j, v in enumerate(xi)) + f",{yi}\n")


def moa_learner(learner: str, schema, seed: int, ht: dict | None = None):
    """A CapyMOA learner: ``"SRP"`` / ``"BAG"`` (MOA's StreamingRandomPatches, training method
    RandomPatches / Resampling, the paper's settings), ``"NB"`` (NaiveBayes) or ``"HT"``
    (HoeffdingTree with ``ht``: grace_period, delta, tau, leaf_prediction "nba")."""
    from capymoa.classifier import HoeffdingTree, NaiveBayes, StreamingRandomPatches

    if learner == "NB":
        return NaiveBayes(schema=schema, random_seed=seed)
    if learner == "HT":
        ht = ht or {}
        return HoeffdingTree(schema=schema, random_seed=seed, grace_period=ht.get("grace_period", 200),
                             confidence=ht.get("delta", 1e-7), tie_threshold=ht.get("tau", 0.05),
                             leaf_prediction="NaiveBayesAdaptive")
    method = {"SRP": "RandomPatches", "BAG": "Resampling"}[learner]
    return StreamingRandomPatches(
        schema=schema, random_seed=seed, ensemble_size=PAPER["n_models"],
        base_learner=f"trees.HoeffdingTree -g {TREE['grace_period']} -c {TREE['delta']}",
        max_features=PAPER["subspace_size"], lambda_param=PAPER["lam"], training_method=method,
    )


def run_moa(X, y, schema, seed, tmp: Path, learner: str = "SRP", ht: dict | None = None) -> dict:
    """MOA's ``learner`` (`moa_learner`) test-then-train on (X, y) written to an ARFF file
    (`write_arff`: the schema's nominal features as ARFF nominal attributes), in MOA's own loop."""
    from capymoa.evaluation import prequential_evaluation
    from capymoa.stream import ARFFStream

    path = tmp / "stream.arff"
    write_arff(path, X, y, schema)
    stream = ARFFStream(str(path))
    model = moa_learner(learner, stream.get_schema(), seed, ht)
    result = prequential_evaluation(stream, model, max_instances=len(y), window_size=len(y), optimise=True)
    try:
        size = int(model.moa_learner.measureByteSize())
    except Exception:  # noqa: BLE001
        size = -1
    cpu = result.cpu_time()
    return {"accuracy": float(result.cumulative.accuracy()), "sps": len(y) / cpu,
            "bytes": size if size > 0 else -1, "events": ""}


def moa_available(tmp: Path) -> str | None:
    """None when MOA can run, else why not (printed with the results)."""
    agent = sizeof_agent(tmp)
    if agent is not None and "CAPYMOA_JVM_ARGS" not in os.environ:
        # Java 17 denies reflection into java.base (ArrayList, HashMap, ...) unless opened: without
        # these the agent's fullSizeOf silently skips every collection's contents and measures
        # MOA's SRP ~150x too small (tens of kB where the opened measure gives MBs).
        opens = " ".join(f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
                         for pkg in ("java.lang", "java.util", "java.util.concurrent", "java.util.concurrent.atomic"))
        os.environ["CAPYMOA_JVM_ARGS"] = f"-Xmx8g -Xss10M -javaagent:{agent} {opens}"
    try:
        import capymoa  # noqa: F401  (starts the JVM)
        from capymoa.classifier import StreamingRandomPatches  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return f"capymoa unusable: {type(exc).__name__}: {exc}"
    return None


# ---------------------------------------------------------------------------- main


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000,
                    help="samples per stream (ELEC: its first n rows, 45,312 at most)")
    ap.add_argument("--streams", nargs="+", default=list(STREAMS), choices=STREAMS)
    ap.add_argument("--systems", nargs="+", default=list(SYSTEMS), choices=SYSTEMS)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget", type=int, default=1_000_000, help="max_size_bytes of ours_budget")
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="bench_srp_"))
    moa_problem = moa_available(tmp) if "moa" in args.systems else None
    if moa_problem:
        print(f"# MOA skipped: {moa_problem}")
    runners = {
        "ours": lambda X, y, s: run_ours(X, y, s, args.seed),
        "ours_budget": lambda X, y, s: run_ours(X, y, s, args.seed, max_size_bytes=args.budget),
        "ours_srs": lambda X, y, s: run_ours(X, y, s, args.seed, training_method="subspaces"),
        "ours_bag": lambda X, y, s: run_ours(X, y, s, args.seed, training_method="resampling"),
        "river": lambda X, y, s: run_river(X, y, s, args.seed),
        "moa": lambda X, y, s: run_moa(X, y, s, args.seed, tmp),
    }
    systems = [s for s in args.systems if not (s == "moa" and moa_problem)]
    print(f"# SRP(n_models=10, m=60%, lam=6), tree(grace 50, delta 0.01, nba); n={args.n}, seed={args.seed}")
    print(f"{'stream':7} {'system':12} {'acc %':>7} {'samples/s':>10} {'bytes':>11} {'warn/drift':>10} "
          f"{'-MOA pts':>8} {'xRiver':>7}")
    for name in args.streams:
        X, y, schema = load(name, args.n, args.seed)
        rows = {}
        for system in systems:
            rows[system] = runners[system](X, y, schema)
            sys.stdout.flush()
        moa_acc = rows.get("moa", {}).get("accuracy")
        river_sps = rows.get("river", {}).get("sps")
        for system, r in rows.items():
            vs_moa = f"{r['accuracy'] - moa_acc:+8.2f}" if moa_acc is not None else f"{'':>8}"
            vs_river = f"{r['sps'] / river_sps:7.1f}" if river_sps else f"{'':>7}"
            print(f"{name:7} {system:12} {r['accuracy']:7.2f} {r['sps']:10.0f} {r['bytes']:11d} "
                  f"{r['events']:>10} {vs_moa} {vs_river}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
