"""Memory benchmark: peak RSS of ``edgebayes run`` and of the same models in River; SRP in a budget.

1. Peak RSS (``VmHWM``) of ``edgebayes run`` with NB + SRP(10), 8 features, 1 device, over
   ``--n`` labelled readings through a local Mosquitto; unbounded and with a
   ``[memory] model_budget_bytes`` of ``--budget`` (one device). Side by side, in fresh processes
   over the same readings without a broker: edgebayes's GaussianNB + SRPClassifier(n_models=10),
   and River's ``naive_bayes.GaussianNB`` + ``ensemble.SRPClassifier(n_models=10)``. Every peak
   is ``VmHWM``, which starts anew at exec: ``ru_maxrss`` keeps the peak of the process image
   it was forked from, here this bench's own (~200 MB after the runtime runs).
2. ``--agr N``: SRP(10) over N samples of AGR_A, with a 256 KiB budget and unbounded, default
   detectors (as tests/test_memory.py at N = 200,000): memory_bytes() every 1,000 samples,
   test-then-train accuracy, seconds.
3. ``--classes N`` (alone): N samples of N distinct labels (2 features, the second a nominal
   code for MixedNB) into each learner with a ``max_size_bytes``: peak ``memory_bytes()`` read
   after every sample against the bound, samples refused (ClassLimitError), classes held,
   seconds, and the mean latency of ``predict_proba_one`` at the end.

    python bench/memory.py [--n 100000] [--budget 1048576] [--agr 200000] [--skip-river]
    python bench/memory.py --classes 10000
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import msgpack
import numpy as np
import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from tests.broker import Broker

FEATURES = [f"f{i}" for i in range(8)]
MODELS = ('[[models]]\nname = "nb"\nkind = "gaussian_nb"\n'
          '[[models]]\nname = "srp"\nkind = "srp"\nn_models = 10\nseed = 1\n')


def readings(n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 3, n)
    X = rng.normal(0, 1, (n, 8)) + y[:, None]
    return X.tolist(), y.tolist()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_runtime(n: int, budget: int | None) -> dict:
    """``edgebayes run`` as a subprocess over n readings; peak RSS, seconds, model bytes."""
    tmp = Path(tempfile.mkdtemp(prefix="eb-mem-"))
    broker = Broker(tmp / "broker").start()
    memory = f"[memory]\nmodel_budget_bytes = {budget}\nmax_devices = 1\n" if budget else ""
    cfg = tmp / "rt.toml"
    cfg.write_text(f'[broker]\nhost = "{broker.host}"\nport = {broker.port}\nclient_id = "mem-rt"\n'
                   '[topics]\nprefix = "bench"\n' + f"[schema]\nfeatures = {json.dumps(FEATURES)}\n"
                   + memory + "[output]\nmetrics_interval_s = 0.5\n" + MODELS)
    rt = subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(cfg),
                           "--checkpoint-dir", str(tmp / "ckpt"), "--log-level", "WARNING"], cwd=ROOT)
    metrics, done = {}, threading.Event()

    def on_message(client, userdata, msg):
        metrics.update(json.loads(msg.payload))
        if metrics.get("n_learned", 0) >= n:
            done.set()

    col = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="mem-collector")
    col.on_message = on_message
    col.connect(broker.host, broker.port)
    col.subscribe("bench/runtime/+/metrics", qos=0)
    col.loop_start()
    pub = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="mem-pub")
    pub.max_inflight_messages_set(1000)
    pub.connect(broker.host, broker.port)
    pub.loop_start()
    try:
        time.sleep(2.0)
        start_mb = peak_rss_mb(rt.pid)
        X, y = readings(n)
        t0 = time.time()
        for seq in range(n):
            payload = msgpack.packb({"seq": seq, "x": X[seq], "y": y[seq]})
            while pub.publish("bench/d1/reading", payload, qos=1).rc == paho.MQTT_ERR_QUEUE_SIZE:
                time.sleep(0.001)
        if not done.wait(timeout=max(600.0, n / 50)):
            print(f"runtime learned only {metrics.get('n_learned')} of {n}")
        return {"peak_rss_mb": peak_rss_mb(rt.pid), "start_rss_mb": start_mb, "seconds": time.time() - t0,
                "model_bytes": {k: v["bytes"] for k, v in metrics.get("models", {}).items()}}
    finally:
        rt.terminate()
        rt.wait(60)
        for c in (pub, col):
            c.loop_stop()
        broker.stop()


IN_PROCESS = r"""
import json, os, sys, time
sys.path.insert(0, {root!r})
from bench.memory import peak_rss_mb, readings
X, y = readings({n})
if {river}:
    from river import ensemble, naive_bayes
    models = [naive_bayes.GaussianNB(), ensemble.SRPClassifier(n_models=10, seed=1)]
    X = [dict(enumerate(x)) for x in X]
    predict, learn = (lambda m, x: m.predict_one(x)), (lambda m, x, c: m.learn_one(x, c))
else:
    from edgebayes.ensemble import SRPClassifier
    from edgebayes.naive_bayes import GaussianNB
    models = [GaussianNB(), SRPClassifier(n_models=10, seed=1)]
    predict, learn = (lambda m, x: m.predict_one(x)), (lambda m, x, c: m.learn_one(x, c))
t0 = time.time()
for x, c in zip(X, y):
    for m in models:
        predict(m, x)
        learn(m, x, c)
print(json.dumps({{"peak_rss_mb": peak_rss_mb(os.getpid()),
                  "seconds": time.time() - t0}}))
"""


def run_in_process(n: int, river: bool) -> dict:
    code = IN_PROCESS.format(root=str(ROOT), n=n, river=river)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return json.loads(out.stdout.splitlines()[-1])


def agr_budget(n: int) -> None:
    from edgebayes.ensemble import SRPClassifier
    from edgebayes.streams import open_stream

    data = [(x.tolist(), int(c)) for x, c in open_stream("synth:AGR_A", n_samples=n, seed=1)]
    for budget in (256 * 1024, None):
        srp = SRPClassifier(n_models=10, seed=1, max_size_bytes=budget)
        correct, peak, t0 = 0, 0, time.time()
        for i, (x, c) in enumerate(data, 1):
            correct += srp.predict_one(x) == c
            srp.learn_one(x, c)
            if i % 1000 == 0:
                peak = max(peak, srp.memory_bytes())
        print(f"AGR_A {n:,}  SRP(10) budget {budget or 'none':>7}: accuracy {correct / n:.4f}, "
              f"peak memory_bytes {peak:,} (read every 1,000), drifts {srp.n_drifts}, {time.time() - t0:.0f} s")


def class_flood(n: int) -> None:
    from edgebayes.base import ClassLimitError
    from edgebayes.ensemble import NaiveBayesCommittee, SRPClassifier
    from edgebayes.naive_bayes import GaussianNB
    from edgebayes.naive_bayes_mixed import MixedNB
    from edgebayes.tree import HoeffdingTreeClassifier

    learners = {  # the bounds of the measurements (SRP, NB's probe charge, the tree)
        "SRPClassifier(10)": lambda: SRPClassifier(n_models=10, seed=1, max_size_bytes=249_616),
        "GaussianNB": lambda: GaussianNB(max_size_bytes=12_528),
        "MixedNB": lambda: MixedNB(nominal_attributes=[1], max_size_bytes=12_528),
        "HoeffdingTreeClassifier": lambda: HoeffdingTreeClassifier(grace_period=50, max_size_bytes=100_000),
        "NaiveBayesCommittee(20)": lambda: NaiveBayesCommittee(seed=1, max_size_bytes=100_000),
    }
    X = np.random.default_rng(0).normal(size=(n, 2))
    X[:, 1] = np.arange(n) % 7
    X = X.tolist()
    print(f"{n:,} samples of {n:,} distinct labels, 2 features")
    for name, build in learners.items():
        model = build()
        peak = refused = 0
        t0 = time.perf_counter()
        for i, x in enumerate(X):
            model.predict_proba_one(x)
            try:
                model.learn_one(x, f"label-{i}")
            except ClassLimitError:
                refused += 1
            peak = max(peak, model.memory_bytes())
        seconds = time.perf_counter() - t0
        t0 = time.perf_counter()
        for x in X[:200]:
            model.predict_proba_one(x)
        latency = (time.perf_counter() - t0) / 200
        print(f"{name:<24} peak memory_bytes {peak:>9,} / max_size_bytes {model.max_size_bytes:>9,}"
              f"  refused {refused:>6,}  classes {len(model.classes_):>5,}  {seconds:6.1f} s"
              f"  predict_proba_one {latency * 1e3:.3f} ms")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--budget", type=int, default=1 << 20, help="model_budget_bytes of the bounded run")
    ap.add_argument("--agr", type=int, default=0, help="samples of the AGR_A budget run (0: skip)")
    ap.add_argument("--skip-river", action="store_true")
    ap.add_argument("--classes", type=int, default=0, help="samples of distinct labels into bounded learners, alone")
    args = ap.parse_args()
    if args.classes:
        class_flood(args.classes)
        return 0
    rows = [("edgebayes run, unbounded", run_runtime(args.n, None)),
            (f"edgebayes run, budget {args.budget:,}", run_runtime(args.n, args.budget)),
            ("edgebayes models, no runtime", run_in_process(args.n, river=False))]
    if not args.skip_river:
        rows.append(("River models, no runtime", run_in_process(args.n, river=True)))
    print(f"NB + SRP(10), 8 features, 3 classes, 1 device, {args.n:,} labelled readings")
    base = rows[0][1]["peak_rss_mb"]
    for name, r in rows:
        extra = f"  model bytes {r['model_bytes']}" if "model_bytes" in r else ""
        print(f"{name:<34} peak RSS {r['peak_rss_mb']:7.1f} MB ({r['peak_rss_mb'] / base:.2f}x)  "
              f"{r['seconds']:6.0f} s{extra}")
    if args.agr:
        agr_budget(args.agr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
