"""Footprint of edgebayes in one fresh process: import time and resident memory.

Prints one line per stage: wall time of the stage, then VmRSS and VmHWM (peak) of this process
from /proc/self/status, in MiB. Stages: interpreter start (a separate ``python -c pass``),
importing what the runtime imports (numpy, msgpack, paho-mqtt, edgebayes), then for each
learner a prequential pass (predict, then learn) over the first ``--n`` rows of a data set
(default: elec2, 8 features) and its own `memory_bytes()`. Then, for each runtime model set
(``--runtime``), ``edgebayes run`` against Mosquitto on loopback: ``--n`` labelled readings
published at once (msgpack, QoS 1), and the runtime process's VmRSS / VmHWM once it has
published every prediction, with the readings per second it kept up.

Run natively and inside the emulated root (deploy/pi/check.sh). Under qemu user emulation the
RSS includes qemu's translated code and its own heap: an upper bound, not a Pi's figure; and
emulated times say nothing about a Pi's speed.

    python deploy/pi/footprint.py                      # gaussian_nb and srp (10 models, seed 1)
    python deploy/pi/footprint.py gaussian_nb srp:n_models=10,subspace_size=0.6 --runtime nb
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO / ".." / "shared" / "data" / "elec2" / "elec2.csv.gz"
#: runtime model sets by name: [[models]] tables of the config
RUNTIME_MODELS = {
    "nb": [("nb", "gaussian_nb", "")],
    "nb+srp10": [("nb", "gaussian_nb", ""), ("srp", "srp", "n_models = 10\nseed = 1")],
}


def startup_s() -> float:
    """Best of 3 wall times of ``python -c pass`` (interpreter start and exit)."""
    times = []
    for _ in range(3):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True)
        times.append(time.perf_counter() - t)
    return min(times)


def memory_mib(pid: str = "self") -> tuple[float, float]:
    """(VmRSS, VmHWM) of a process in MiB."""
    lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    fields = dict(line.split(":", 1) for line in lines)
    return tuple(int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "VmHWM"))


def report(stage: str, seconds: float, extra: str = "", pid: str = "self") -> None:
    rss, hwm = memory_mib(pid)
    print(f"{stage:<34} {seconds:8.3f} s   rss {rss:7.1f} MiB   peak {hwm:7.1f} MiB   {extra}",
          flush=True)


def parse_learner(spec: str) -> tuple[str, dict]:
    """``kind[:name=value,...]`` -> (kind, params); values are Python literals or bare strings."""
    kind, _, rest = spec.partition(":")
    params = {}
    for item in filter(None, rest.split(",")):
        name, _, value = item.partition("=")
        try:
            params[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError):
            params[name] = value
    return kind, params


def runtime_config(models: list[tuple[str, str, str]], features: list[str]) -> str:
    tables = "".join(f'\n[[models]]\nname = "{n}"\nkind = "{k}"\n{extra}\n'
                     for n, k, extra in models)
    return f"[schema]\nfeatures = {features!r}\n[output]\nmetrics_interval_s = 3600\n{tables}"


def runtime_footprint(name: str, rows: list, features: list[str], timeout_s: float) -> None:
    """Start ``edgebayes run`` with model set ``name``, feed it ``rows``, report its memory."""
    import msgpack
    import paho.mqtt.client as mqtt

    sys.path.insert(0, str(REPO))
    from tests.broker import Broker

    with tempfile.TemporaryDirectory() as tmp:
        broker = Broker(Path(tmp) / "broker").start()
        config = Path(tmp) / "edgebayes.toml"
        config.write_text(runtime_config(RUNTIME_MODELS[name], features))
        proc = subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(config),
                                 "--broker", broker.address, "--checkpoint-dir", str(Path(tmp) / "ckpt"),
                                 "--log-level", "WARNING"])
        online, done, n_pred = threading.Event(), threading.Event(), [0]

        def on_message(client, userdata, msg):
            if msg.topic.endswith("/status"):
                if msg.payload == b"online":
                    online.set()
            else:
                n_pred[0] += 1
                if n_pred[0] == len(rows):
                    done.set()

        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="footprint")
        client.on_message = on_message
        try:
            client.connect(broker.host, broker.port)
            client.subscribe([("edgebayes/runtime/+/status", 1), ("edgebayes/+/prediction", 0)])
            client.loop_start()
            if not online.wait(timeout_s):
                print(f"runtime {name:<26} not available: no 'online' status (exit {proc.poll()})")
                return
            t = time.perf_counter()
            for seq, (x, y) in enumerate(rows):
                payload = msgpack.packb({"seq": seq, "x": x.tolist(), "y": y}, use_bin_type=True)
                client.publish("edgebayes/dev1/reading", payload, qos=1)
            finished = done.wait(timeout_s)
            seconds = time.perf_counter() - t
            report(f"runtime {name} x {n_pred[0]}", seconds,
                   f"{n_pred[0] / seconds:.0f} readings/s" + ("" if finished else ", TIMED OUT"),
                   pid=str(proc.pid))
        finally:
            client.loop_stop()
            client.disconnect()
            proc.terminate()
            proc.wait(timeout_s)
            broker.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("learners", nargs="*", default=["gaussian_nb", "srp:n_models=10,seed=1"])
    parser.add_argument("--data", default=str(DEFAULT_DATA), help="CSV data set (default elec2)")
    parser.add_argument("--n", type=int, default=2000, help="rows learned per learner")
    parser.add_argument("--runtime", nargs="*", default=list(RUNTIME_MODELS),
                        choices=list(RUNTIME_MODELS), help="runtime model sets to measure")
    parser.add_argument("--timeout-s", type=float, default=600.0)
    args = parser.parse_args()

    report("python -c pass (best of 3)", startup_s())
    t = time.perf_counter()
    import msgpack  # noqa: F401
    import numpy
    import paho.mqtt.client  # noqa: F401

    import edgebayes
    from edgebayes.base import make_learner
    from edgebayes.streams import open_stream

    report("import numpy msgpack paho edgebayes", time.perf_counter() - t,
           f"edgebayes {edgebayes.__version__}, numpy {numpy.__version__}")

    rows = list(open_stream(args.data, n_samples=args.n))
    for spec in args.learners:
        kind, params = parse_learner(spec)
        t = time.perf_counter()
        try:
            model = make_learner(kind, **params)
        except (ImportError, AttributeError) as e:  # a learner not written yet
            print(f"{spec:<34} not available: {e}")
            continue
        n_right = 0
        for x, y in rows:
            n_right += model.predict_one(x) == y
            model.learn_one(x, y)
        report(f"{spec} x {len(rows)}", time.perf_counter() - t,
               f"accuracy {n_right / len(rows):.3f}, memory_bytes {model.memory_bytes()}")
    features = [f.name for f in open_stream(args.data, n_samples=1).schema.features]
    for name in args.runtime:
        runtime_footprint(name, rows, features, args.timeout_s)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
