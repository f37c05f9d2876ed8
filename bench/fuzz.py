"""Long fuzz run: the properties of tests/test_fuzz.py over 10^5+ seeded random inputs, then
10^5 malformed payloads through a real runtime.

Part 1 (no broker): the parser (arbitrary bytes, arbitrary msgpack/JSON documents, mutated
valid readings and labels and their bytes), the ``[[sources]]`` adapters on mutated real
payloads, every learner's and detector's ``from_state`` on mutated trained states, and
``Device.load_state`` on mutated device states, and mutated checkpoint files (bytes or
fields) restored by a worker serving the next reading. Prints the count of each outcome per target
(``ok``, an error kind, ``refused``/``restored``, ``moved aside``) and
every failure (an exception or a broken invariant), once per kind and place, with an input.

Part 2 (``python -m edgebayes run`` and a local Mosquitto): ``--runtime-n`` payloads that the
parser refuses, published to the reading and label topics, with a valid labelled reading
every ``--every`` of them; reports the runtime's RSS (/proc/<pid>/status VmRSS) before and
after, its error counts, and whether every valid reading's prediction equals an offline
``GaussianNB``'s trained on the valid readings alone.

    python -m bench.fuzz [--n 100000] [--runtime-n 100000] [--every 100] [--others 1000]
                         [--seed 0] [--skip-runtime]

Exits 1 when part 1 found a failure, or part 2 saw a prediction differ, an internal error or a
learner error.
"""

from __future__ import annotations

import argparse
import copy
import logging
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

import msgpack
from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from edgebayes.naive_bayes import GaussianNB
from edgebayes.runtime.messages import ProtocolError
from tests import test_fuzz as F

KEYS = ("f0", "f1", "f2", "x", "y", "seq", "ts", "", "kind")


# --- random inputs ---------------------------------------------------------------------------

def rand_leaf(r: random.Random):
    k = r.randrange(9)
    if k == 0:
        return r.choice((None, True, False))
    if k == 1:
        return r.choice(F.EDGE_INTS)
    if k == 2:
        return r.getrandbits(r.choice((7, 32, 64, 70, 300))) * r.choice((1, -1))
    if k == 3:
        return r.choice(F.EDGE_FLOATS)
    if k == 4:
        return struct.unpack("<d", r.randbytes(8))[0]  # any bit pattern: subnormals, nan payloads
    if k == 5:
        return r.uniform(-1e3, 1e3)
    if k == 6:
        return "".join(chr(r.choice((r.randrange(0x80), r.randrange(0xD800, 0xE000), r.randrange(0x110000))))
                       for _ in range(r.randrange(6)))
    if k == 7:
        return r.choice(KEYS)
    return r.randbytes(r.randrange(6))


def rand_doc(r: random.Random, depth: int = 0):
    k = r.random()
    if depth >= 4 or k < 0.5:
        return rand_leaf(r)
    if k < 0.75:
        return [rand_doc(r, depth + 1) for _ in range(r.randrange(5))]
    return {r.choice((rand_leaf(r), r.choice(KEYS))) if r.random() < 0.3 else r.choice(KEYS): rand_doc(r, depth + 1)
            for _ in range(r.randrange(5))}


def _key(k):
    return k if isinstance(k, (str, int)) and not isinstance(k, bool) else str(k)


def jsonable(doc):
    """``doc`` with map keys JSON can hold (msgpack takes any)."""
    if isinstance(doc, dict):
        return {_key(k): jsonable(v) for k, v in doc.items() if not isinstance(k, bytes)}
    if isinstance(doc, list):
        return [jsonable(v) for v in doc]
    return doc


def rand_reading(r: random.Random, label: bool):
    """A valid reading (label) document with zero to three mutated fields."""
    doc = {"seq": r.randrange(2**53), "y": r.choice(("a", "b", 0, 1, -3, "é"))}
    if not label:
        xs = [r.uniform(-1e3, 1e3) for _ in F.FEATURES]
        doc["x"] = xs if r.random() < 0.5 else dict(zip(F.FEATURES, xs))
        if r.random() < 0.5:
            doc["ts"] = r.uniform(0, 2e9)
    for _ in range(r.randrange(4)):
        key = r.choice([*doc, "extra"])
        how = r.randrange(3)
        if how == 0:
            doc.pop(key, None)
        elif how == 1 or not isinstance(doc.get(key), (list, dict)) or not doc[key]:
            doc[key] = rand_doc(r)
        elif isinstance(doc[key], list):
            i = r.randint(0, len(doc[key]))
            doc[key][i:i + r.randint(0, 1)] = [rand_leaf(r)] * r.randint(0, 2)
        else:
            doc[key][r.choice(KEYS)] = rand_leaf(r)
    return doc


def parser_input(r: random.Random) -> tuple[bytes, str]:
    kind = r.choice(("reading", "label"))
    mode = r.randrange(4)
    if mode == 0:
        return r.randbytes(r.randrange(120)), kind
    doc = rand_doc(r) if mode == 1 else rand_reading(r, kind == "label")
    payload = F.wire(jsonable(doc) if r.random() < 0.5 else doc, r.choice(("msgpack", "json")))
    return (F.mutate_bytes(payload, r) if mode == 3 else payload), kind


def adapter_input(r: random.Random) -> tuple[str, str, bytes]:
    name = r.choice(sorted(F.SOURCES))
    entry = copy.deepcopy(r.choice(F.FIXTURES[name]))
    topic = entry["topic"].replace("%topic%", "dev1").replace("<name>", "dev1")
    doc = entry["payload"]
    for _ in range(r.randrange(4)):
        doc = F._set_somewhere(doc, jsonable(rand_doc(r)), r.randrange)
    payload = F.as_payload(doc)
    return name, topic, F.mutate_bytes(payload, r) if r.random() < 0.3 else payload


def mutated_state(r: random.Random, name: str) -> dict:
    state = copy.deepcopy(F.STATES[name])
    F.mutate(state, F.STATES[name], F.PATHS[name], F.KEY_PATHS[name], r.choice, r.randint(1, 3))
    return state


def mutated_device(r: random.Random) -> dict:
    state = copy.deepcopy(F.DEVICE_STATE)
    F.mutate(state, F.DEVICE_STATE, F.DEVICE_PATHS, F.DEVICE_KEY_PATHS, r.choice, r.randint(1, 3))
    return state


def mutated_checkpoint(r: random.Random) -> bytes:
    if r.random() < 0.5:
        return F.mutate_bytes(F.CHECKPOINT, r)
    doc = copy.deepcopy(F.CHECKPOINT_DOC)
    F.mutate(doc, F.CHECKPOINT_DOC, F.CHECKPOINT_PATHS, F.CHECKPOINT_KEY_PATHS, r.choice, r.randint(1, 3))
    return msgpack.packb(doc, use_bin_type=True)


# --- part 1 ----------------------------------------------------------------------------------

def _where(exc: BaseException) -> str:
    """The innermost edgebayes frame of ``exc`` (file:line), else the innermost frame."""
    frames = traceback.extract_tb(exc.__traceback__)
    inner = [f for f in frames if "/edgebayes/" in f.filename] or frames
    f = inner[-1]
    return f"{Path(f.filename).name}:{f.lineno}"


def properties(n: int, seed: int) -> tuple[dict[str, Counter], dict[str, str]]:
    """Run ``n`` inputs: 60% parser, 15% adapters, 20% learner/detector states, 2.5% device
    states, 2.5% checkpoint files through a worker. Returns outcome counts per target and one
    example per failure."""
    r = random.Random(seed)
    logging.disable(logging.CRITICAL)  # restored checkpoints log their missing models
    counts: dict[str, Counter] = {}
    failures: dict[str, str] = {}
    names = sorted(F.STATES)
    for _ in tqdm(range(n), desc="fuzz", unit="input", mininterval=1.0):
        u = r.random()
        if u < 0.6:
            payload, kind = parser_input(r)
            target, run, example = f"parser.{kind}", lambda: F.parse_outcome(payload, kind), payload
        elif u < 0.75:
            name, topic, payload = adapter_input(r)
            target, run, example = f"adapter.{name}", lambda: F.extract_outcome(name, topic, payload), (topic, payload)
        elif u < 0.95:
            name = r.choice(names)
            state = mutated_state(r, name)
            target, run, example = f"state.{name}", lambda: F.check_restored(name, state), state
        elif u < 0.975:
            state = mutated_device(r)
            target, run, example = "device", lambda: F.check_device(state), state
        else:
            data = mutated_checkpoint(r)
            target, run, example = "checkpoint", lambda: F.restore_outcome(data), data
        try:
            outcome = run()
        except Exception as exc:  # noqa: BLE001 - every failure is counted and shown once
            outcome = f"FAIL {type(exc).__name__} at {_where(exc)}"
            failures.setdefault(f"{target}: {outcome}", f"{exc!r:.300}\n    input: {example!r:.1500}")
        counts.setdefault(target, Counter())[outcome] += 1
    logging.disable(logging.NOTSET)
    return counts, failures


# --- part 2 ----------------------------------------------------------------------------------

def malformed(r: random.Random) -> tuple[bytes, str]:
    """A payload the parser refuses (so no model may change), for the reading or label topic."""
    while True:
        payload, kind = parser_input(r)
        try:
            (F.PARSER.parse_reading if kind == "reading" else F.PARSER.parse_label)("d", payload)
        except ProtocolError:
            return payload, kind
        except Exception:  # noqa: BLE001 - a payload the parser fails on (part 1 reports it)
            continue


def vm_rss(pid: int) -> int:
    """Resident set size of ``pid`` in bytes (/proc/<pid>/status VmRSS)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def runtime(n: int, every: int, others: int, seed: int) -> bool:
    from tests.broker import Broker
    from tests.runtime_client import Device, blobs, wait_for, write_config

    r = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="eb-fuzz-"))
    broker = Broker(tmp / "broker").start()
    cfg = write_config(tmp / "rt.toml", broker, extra="[output]\nmetrics_interval_s = 1\nerror_interval_s = 1\n")
    log = tmp / "rt.log"
    proc = subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(cfg),
                             "--checkpoint-dir", str(tmp / "ckpt"), "--log-level", "WARNING"],
                            cwd=ROOT, stdout=log.open("wb"), stderr=subprocess.STDOUT)
    dev = Device(broker, max_queued=1000)
    try:
        wait_for(lambda: any(t.endswith("/status") and p == b"online" for t, p, _ in list(dev.raw)),
                 timeout_s=20, what="the runtime online")
        n_valid = n // every
        data = blobs(200 + n_valid, seed=seed)
        for seq, (x, y) in enumerate(data[:200]):  # warm up: the model and the interpreter
            dev.publish("d1", "reading", {"seq": seq, "x": x, "y": y})
        wait_for(lambda: len(dev.predictions()) == 200, timeout_s=60, what="200 warm-up predictions")
        time.sleep(1.5)
        rss_before = vm_rss(proc.pid)
        rss_series = []  # VmRSS after each tenth of the payloads was published
        kinds = Counter()
        seq = 200
        t0 = time.monotonic()
        for i in tqdm(range(n), desc="runtime", unit="payload", mininterval=1.0):
            payload, kind = malformed(r)
            device = f"x{(i // 100) % others}" if others and i % 100 == 99 else "d1"  # other error topics
            dev.publish(device, kind, payload)
            kinds[kind] += 1
            if (i + 1) % max(1, n // 10) == 0:
                rss_series.append(vm_rss(proc.pid))
            if (i + 1) % every == 0:
                x, y = data[seq]
                dev.publish("d1", "reading", {"seq": seq, "x": x, "y": y})
                seq += 1
        wait_for(lambda: len(dev.predictions()) == seq, timeout_s=300, what=f"{seq} predictions")
        t_send = time.monotonic() - t0

        def settled():
            m = dev.got("metrics")
            return m and sum(m[-1]["errors"].values()) + m[-1]["n_internal_errors"] >= n

        wait_for(settled, timeout_s=120, what="every malformed payload counted in the metrics")
        rss_after = vm_rss(proc.pid)
        metrics = dev.got("metrics")[-1]
    finally:
        dev.close()
        proc.terminate()
        proc.wait(20)
        broker.stop()
    off = GaussianNB()
    preds = dev.predictions()
    differ = []
    for s, (x, y) in enumerate(data[:seq]):
        if preds[s]["proba"] != off.predict_proba_one(x):
            differ.append(s)
        off.learn_one(x, y)
    print(f"\nruntime: {n} malformed payloads ({dict(kinds)}; 1% on {others} other devices' topics), "
          f"{seq - 200} valid readings among them, all predicted {t_send:.1f} s after the first")
    print(f"  RSS before {rss_before / 2**20:.1f} MiB, after {rss_after / 2**20:.1f} MiB "
          f"({(rss_after - rss_before) / 2**20:+.1f} MiB); metrics rss_bytes {metrics['rss_bytes'] / 2**20:.1f} MiB")
    print("  RSS after each tenth (MiB): " + " ".join(f"{v / 2**20:.1f}" for v in rss_series))
    print(f"  errors counted: {dict(sorted(metrics['errors'].items()))}; internal {metrics['n_internal_errors']}, "
          f"dropped {metrics['n_dropped']}, "
          f"error reports suppressed {metrics['n_errors_suppressed']}")
    print(f"  valid readings whose prediction differs from an offline GaussianNB's: {len(differ)} of {seq}"
          + (f" (first seqs {differ[:10]})" if differ else ""))
    ok = not differ and metrics["n_internal_errors"] == 0 and not metrics["errors"].get("learner_error")
    if ok:
        shutil.rmtree(tmp)
    else:
        print(f"  runtime log: {log}")
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="inputs for part 1 (default 100000)")
    ap.add_argument("--runtime-n", type=int, default=100_000, help="malformed payloads for part 2 (default 100000)")
    ap.add_argument("--every", type=int, default=100, help="a valid reading after this many malformed ones")
    ap.add_argument("--others", type=int, default=1000,
                    help="1%% of the malformed payloads cycle through this many other device ids (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--skip-runtime", action="store_true", help="part 1 only")
    args = ap.parse_args(argv)
    ok = True
    if args.n:
        t0 = time.monotonic()
        counts, failures = properties(args.n, args.seed)
        print(f"\n{args.n} inputs in {time.monotonic() - t0:.0f} s; outcomes per target:")
        for target in sorted(counts):
            c = counts[target]
            print(f"  {target:28s} {sum(c.values()):6d}  " + ", ".join(f"{k} {v}" for k, v in c.most_common()))
        print(f"{len(failures)} failure kind(s)" + (":" if failures else ""))
        for key, example in sorted(failures.items()):
            print(f"  {key}\n    {example}")
        ok = not failures
    if not args.skip_runtime and args.runtime_n:
        ok = runtime(args.runtime_n, args.every, args.others, args.seed) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
