"""``edgebayes demo``: a broker, simulated devices, the runtime and a monitor, on this machine.

What runs, all on loopback:

1. a broker: Mosquitto when it is installed, else amqtt (a pure-Python broker; the ``demo``
   extra) in a thread of this process;
2. ``edgebayes run`` in a subprocess, with Gaussian naive Bayes and Streaming Random Patches
   (config written to the work folder; the demo waits for its systemd-style READY=1);
3. a ``firmware_sim.Monitor`` scoring every prediction;
4. ``--devices`` simulated devices (``firmware_sim.Simulator``), each replaying its own period
   of a real sensor data set, sped up (default: the UCI room-occupancy sensors, one reading a
   minute over two weeks, from ../shared/data; every few minutes' reading), the true label
   inline in each reading (test-then-train). The concept changes halfway for the last
   device: from then on its labels are the other class (2 classes: inverted), as if its
   sensor had been moved to another room; both models must notice and adapt.

Prints the monitor's live table, then a summary (accuracy per model against a majority and a
no-change baseline, drift alerts, readings/s, latency, the runtime's memory), writes it as
JSON and, with matplotlib, a PNG of accuracy over time with the drift alerts marked.
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import itertools
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

#: the real sensor set replayed by default (the shared data folder next to the checkout)
DEFAULT_DATA = (
    Path(__file__).resolve().parents[1].parent
    / "shared"
    / "data"
    / "occupancy_uci"
    / "occupancy.csv.gz"
)
DEFAULT_DROP = ("date",)  # occupancy's timestamp column is not a feature
FALLBACK_SOURCE = "synth:AGRAWAL"  # when the shared data is not there (an installed package)
SAMPLE_EVERY_S = 0.5  # timeline resolution of the accuracy plot
PLOT_WINDOW = 4  # timeline samples per accuracy point (2 s)
MODELS = """
[[models]]
name = "nb"
kind = "gaussian_nb"
learning_rate = 0.01

[[models]]
name = "srp"
kind = "srp"
n_models = 10
subspace_size = 0.6
seed = {seed}
max_size_bytes = 1048576
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--duration",
        type=float,
        default=40.0,
        metavar="S",
        help="seconds of readings (default 40; the whole demo takes a few more)",
    )
    parser.add_argument(
        "--rate",
        type=float,
        default=50.0,
        metavar="HZ",
        help="readings per second per device (default 50)",
    )
    parser.add_argument(
        "--devices", type=int, default=3, metavar="N", help="simulated devices (default 3)"
    )
    parser.add_argument(
        "--data",
        metavar="FILE",
        help=f"CSV or ARFF data set to replay (default: {DEFAULT_DATA.name} from "
        f"../shared/data if present, else {FALLBACK_SOURCE})",
    )
    parser.add_argument(
        "--target", metavar="COLUMN", help="label column of --data (default: the last)"
    )
    parser.add_argument(
        "--drop", nargs="*", metavar="COLUMN", help="columns of --data that are not features (default: date for the built-in data set)"
    )
    parser.add_argument(
        "--broker",
        choices=["auto", "mosquitto", "embedded"],
        default="auto",
        help="auto: Mosquitto if installed, else the embedded amqtt broker",
    )
    parser.add_argument(
        "--out", default=".", metavar="DIR", help="where edgebayes-demo.json/.png go (default: the current folder)"
    )
    parser.add_argument(
        "--refresh-s",
        type=float,
        default=2.0,
        metavar="S",
        help="live table period in seconds (default 2; 0: none)",
    )
    parser.add_argument(
        "--seed", type=int, default=1, help="seed of SRP and of a synth: stream (default 1)"
    )


# --- data -------------------------------------------------------------------------------------


@dataclass
class DemoData:
    """The rows replayed: ``n_per_device`` rows per device, device after device."""

    csv_path: Path
    features: tuple[str, ...]
    labels: list  # all rows, device after device, the concept change applied
    n_per_device: int
    change_index: int  # first changed row of the last device (index in its window)
    source: str


def prepare_data(
    source: str, target, drop, n_devices: int, n_per_device: int, seed: int, workdir: Path
) -> DemoData:
    """Cut ``source`` into ``n_devices`` consecutive parts, take ``n_per_device`` evenly spaced
    rows of each (in order: each device replays its own period, faster), apply the concept
    change to the last device's second half (each label -> the next class, cyclically), and
    write the rows as a CSV, device after device.

    Raises:
        ValueError: fewer rows than needed, or a single class (no change possible).
    """
    from edgebayes.streams import open_stream

    need = n_devices * n_per_device
    if source.startswith("synth:"):
        stream = open_stream(source, n_samples=need, seed=seed)
    else:
        stream = open_stream(source, target=target, drop=drop)
    rows = list(stream)
    per = len(rows) // n_devices
    if per < n_per_device:
        raise ValueError(
            f"{source}: {len(rows)} rows, the demo needs {need} "
            f"({n_devices} devices x {n_per_device}); lower --duration or --rate"
        )
    step = per // n_per_device
    rows = [
        r for d in range(n_devices) for r in rows[d * per : d * per + step * n_per_device : step]
    ]
    classes = sorted({y for _, y in rows}, key=str)
    if len(classes) < 2:
        raise ValueError(f"{source}: a single class in the rows replayed")
    shift = {c: classes[(i + 1) % len(classes)] for i, c in enumerate(classes)}
    change = n_per_device // 2
    start_last = (n_devices - 1) * n_per_device
    labels = [shift[y] if i >= start_last + change else y for i, (_, y) in enumerate(rows)]
    features = tuple(stream.schema.feature_names)
    path = workdir / "replay.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*features, "class"])
        for (x, _), y in zip(rows, labels):
            w.writerow([*map(repr, x.tolist()), y])
    return DemoData(path, features, labels, n_per_device, change, source)


def baselines(labels: list, n_devices: int, n_per_device: int) -> dict:
    """Accuracy of always the overall majority class, and of repeating each device's previous
    label (the no-change baseline; a device's first reading counts as wrong)."""
    majority = Counter(labels).most_common(1)[0][1] / len(labels)
    same = 0
    for d in range(n_devices):
        window = labels[d * n_per_device : (d + 1) * n_per_device]
        same += sum(a == b for a, b in itertools.pairwise(window))
    return {"majority": majority, "no_change": same / len(labels)}


# --- broker -----------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mosquitto_path() -> str | None:
    exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    return exe if os.access(exe, os.X_OK) else None


class DemoBroker:
    """A broker on a free loopback port: Mosquitto (subprocess) or amqtt (thread).

    Attributes: kind ("mosquitto" or "amqtt"), address ("127.0.0.1:PORT"), protocol (the
    runtime's ``[broker] protocol``: amqtt speaks MQTT 3.1.1 only).

    Raises:
        RuntimeError: the broker asked for is not available or did not start.
    """

    def __init__(self, choice: str, workdir: Path):
        exe = mosquitto_path()
        if choice == "mosquitto" and exe is None:
            raise RuntimeError("mosquitto is not installed (apt-get install mosquitto)")
        self.kind = "mosquitto" if exe is not None and choice != "embedded" else "amqtt"
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.protocol = "mqttv5" if self.kind == "mosquitto" else "mqttv311"
        self.workdir = workdir
        self._proc = self._loop = self._broker = None
        self._mosquitto(exe) if self.kind == "mosquitto" else self._amqtt()
        _wait_port(self.port)

    def _mosquitto(self, exe: str) -> None:
        conf = self.workdir / "mosquitto.conf"
        conf.write_text(
            f"listener {self.port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
            "max_queued_messages 100000\nlog_dest stderr\nlog_type error\nlog_type warning\n"
            # as root Mosquitto switches to the user "mosquitto" unless told otherwise
            + ("user root\n" if os.geteuid() == 0 else "")
        )
        with open(self.workdir / "mosquitto.log", "wb") as log:
            self._proc = subprocess.Popen([exe, "-c", str(conf)], stdout=log, stderr=log)

    def _amqtt(self) -> None:
        try:
            from amqtt.broker import Broker
        except ImportError:
            raise RuntimeError(
                "no broker: install Mosquitto, or the embedded one with "
                "pip install 'edgebayes[demo]'"
            ) from None
        config = {
            "listeners": {"default": {"type": "tcp", "bind": f"127.0.0.1:{self.port}"}},
            "plugins": {
                "amqtt.plugins.authentication.AnonymousAuthPlugin": {"allow_anonymous": True}
            },
        }
        self._loop = asyncio.new_event_loop()
        started = threading.Event()
        errors = []

        async def start():
            self._broker = Broker(config, loop=self._loop)
            await self._broker.start()

        def run():
            asyncio.set_event_loop(self._loop)
            try:
                self._loop.run_until_complete(start())
            except Exception as exc:  # surfaced below, not lost in the thread
                errors.append(exc)
            started.set()
            if not errors:
                self._loop.run_forever()

        threading.Thread(target=run, name="amqtt-broker", daemon=True).start()
        started.wait(10)
        if errors:
            raise RuntimeError(f"the embedded broker did not start: {errors[0]}")

    def stop(self) -> None:
        if self._proc is not None:
            self._proc.terminate()
            self._proc.wait(10)
        if self._broker is not None:
            asyncio.run_coroutine_threadsafe(self._broker.shutdown(), self._loop).result(10)
            self._loop.call_soon_threadsafe(self._loop.stop)


def _wait_port(port: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(
                    f"the broker does not listen on port {port} after {timeout_s} s"
                ) from None
            time.sleep(0.05)


# --- runtime ----------------------------------------------------------------------------------


def runtime_config(data: DemoData, broker: DemoBroker, seed: int) -> str:
    """The runtime's TOML config for the demo."""
    return (
        f'[broker]\nport = {broker.port}\nclient_id = "edgebayes-demo"\n'
        f'protocol = "{broker.protocol}"\n'
        "reconnect_min_s = 0.2\nreconnect_max_s = 2\n\n"
        f"[schema]\nfeatures = {json.dumps(list(data.features))}\n"
        + MODELS.format(seed=seed)
        + "\n[output]\nmetrics_interval_s = 1\n\n[memory]\nmax_devices = 64\n"
    )


class RuntimeProcess:
    """``edgebayes run`` in a subprocess; ``start`` returns once it sent READY=1 (subscribed)."""

    def __init__(self, config_path: Path, workdir: Path):
        self.sock_dir = tempfile.mkdtemp(prefix="ebd", dir="/tmp")  # short: sun_path <= 107 bytes
        self.sock_path = f"{self.sock_dir}/notify"
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.sock_path)
        self.log_path = workdir / "runtime.log"
        # -P and cwd: an ``edgebayes/`` folder in the caller's cwd (a checkout) would otherwise
        # be imported as a namespace package instead of the installed edgebayes
        command = [sys.executable, "-P", "-m", "edgebayes", "run", "--config", str(config_path)]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                [*command, "--log-level", "WARNING"],
                cwd=workdir,
                env={**os.environ, "NOTIFY_SOCKET": self.sock_path},
                stdout=log,
                stderr=log,
            )

    def wait_ready(self, timeout_s: float = 30.0) -> None:
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            if self.proc.poll() is not None:
                break
            self.sock.settimeout(min(left, 0.5))
            try:
                if self.sock.recv(4096).startswith(b"READY=1"):
                    return
            except TimeoutError:
                continue
        raise RuntimeError(
            f"the runtime did not become ready:\n{self.log_path.read_text()[-2000:]}"
        )

    def stop(self, timeout_s: float = 20.0) -> int:
        """SIGTERM (clean stop); the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.sock.close()
        shutil.rmtree(self.sock_dir, ignore_errors=True)
        return self.proc.returncode


# --- the run ----------------------------------------------------------------------------------


class Timeline:
    """Per device and model, (t_s, scored, correct) sampled from the monitor over the run."""

    def __init__(self):
        self.t: list[float] = []
        self.counts: list[dict] = []  # device -> model -> (scored, correct)

    def sample(self, t_s: float, summary: dict) -> None:
        self.t.append(t_s)
        self.counts.append(
            {
                d: {m: (v["scored"], v["correct"]) for m, v in dev["models"].items()}
                for d, dev in summary["devices"].items()
            }
        )

    def accuracy(self, device: str, model: str, window: int = PLOT_WINDOW) -> tuple[list, list]:
        """Accuracy over the readings scored in each ``window`` samples: (times, values)."""
        ts, acc = [], []
        for k in range(window, len(self.t)):
            s1, c1 = self.counts[k].get(device, {}).get(model, (0, 0))
            s0, c0 = self.counts[k - window].get(device, {}).get(model, (0, 0))
            if s1 > s0:
                ts.append(self.t[k])
                acc.append((c1 - c0) / (s1 - s0))
        return ts, acc


def _live_line(summary: dict, readings_per_s: float) -> str:
    models = "  ".join(
        f"{m} {v['accuracy']:.3f}"
        for m, v in summary["models"].items()
        if v["accuracy"] is not None
    )
    rss = [rt["metrics"]["rss_bytes"] for rt in summary["runtimes"].values() if rt.get("metrics")]
    mem = f" | runtime RSS {rss[0] / 2**20:.0f} MB" if rss else ""
    return f"models: {models or '-'} | {readings_per_s:.0f} readings/s{mem}"


def choose_source(data: str | None, default: Path, say=print) -> str:
    """``--data`` if given, else ``default`` if it exists, else FALLBACK_SOURCE (said aloud)."""
    if data:
        return data
    if default.exists():
        return str(default)
    say(
        f"{_shown(default)} not found; replaying {FALLBACK_SOURCE} instead — pass --data PATH"
    )
    return FALLBACK_SOURCE


def _shown(path: Path) -> str:
    """``path`` relative to the cwd when below it or its parent (../shared/...), else absolute."""
    for base, prefix in ((Path.cwd(), ""), (Path.cwd().parent, "../")):
        try:
            return prefix + str(path.relative_to(base))
        except ValueError:
            continue
    return str(path)


def run_demo(args, out: Path, workdir: Path, say=print) -> dict:
    """Run everything; return the summary (see the module docstring)."""
    from firmware_sim import Monitor, SimConfig, Simulator

    t_start = time.monotonic()
    n_per_device = max(2, round(args.rate * args.duration))
    source = choose_source(args.data, DEFAULT_DATA, say)
    drop = (
        tuple(args.drop) if args.drop is not None else (DEFAULT_DROP if args.data is None else ())
    )
    data = prepare_data(
        source,
        args.target,
        drop if not source.startswith("synth:") else (),
        args.devices,
        n_per_device,
        args.seed,
        workdir,
    )
    broker = DemoBroker(args.broker, workdir)
    runtime = monitor = None
    try:
        config_path = workdir / "edgebayes.toml"
        config_path.write_text(runtime_config(data, broker, args.seed))
        runtime = RuntimeProcess(config_path, workdir)
        runtime.wait_ready()
        monitor = Monitor(broker.address, client_id="edgebayes-demo-monitor").start()
        sim = Simulator(
            SimConfig(
                str(data.csv_path),
                n_devices=args.devices,
                rate_hz=args.rate,
                limit=n_per_device,
                seed=args.seed,
                labels="inline",
                target="class",
            ),
            broker.address,
            client_id="edgebayes-demo-{device}",
        )
        changed = sim.devices[-1].device_id
        say(
            f"edgebayes demo: {args.devices} devices x {n_per_device} readings "
            f"at {args.rate:g}/s each "
            f"from {Path(source).name}, broker {broker.kind} on {broker.address}, models nb + srp"
        )
        say(
            f"concept change: {changed}'s labels switch class from its reading {data.change_index} "
            f"(t = {data.change_index / args.rate:.1f} s)\n"
        )
        timeline = Timeline()
        t0_mon = monitor.elapsed_s
        sim.start()
        t_sim = time.monotonic()
        _follow(sim, monitor, timeline, t_sim, args.refresh_s, say)
        stats = sim.join()
        published = stats.totals()["readings_published"]
        labels = stats.totals()["labels_inline"]
        monitor.wait_until(
            lambda t: t["predictions"] >= published and t["scored"] >= labels, timeout_s=15
        )
        monitor.wait_until(lambda t: _metrics_caught_up(monitor, published), timeout_s=5)
        timeline.sample(time.monotonic() - t_sim, monitor.summary())
        summary = monitor.summary()
        exit_code = runtime.stop()
        runtime = None
    finally:
        if runtime is not None:
            runtime.stop()
        if monitor is not None:
            monitor.stop()
        broker.stop()
    result = _summary(args, data, broker, stats, summary, changed, t0_mon, exit_code)
    result["png"] = _plot(timeline, result, summary, t0_mon, out / "edgebayes-demo.png")
    result["wall_s"] = time.monotonic() - t_start
    return result


def _follow(sim, monitor, timeline: Timeline, t_sim: float, refresh_s: float, say) -> None:
    """Sample the timeline while the devices run; print the live table every ``refresh_s``."""
    tty = sys.stdout.isatty()
    next_print = time.monotonic() + refresh_s if refresh_s > 0 else math.inf
    lines_up = 0
    while sim.running:
        time.sleep(SAMPLE_EVERY_S)
        now = time.monotonic()
        summary = monitor.summary()
        timeline.sample(now - t_sim, summary)
        if now >= next_print:
            next_print = now + refresh_s
            text = (
                monitor.table()
                + "\n"
                + _live_line(summary, summary["totals"]["readings"] / (now - t_sim))
            )
            if tty and lines_up:
                sys.stdout.write(f"\x1b[{lines_up}F\x1b[J")
            say(text + ("" if tty else "\n"))
            lines_up = text.count("\n") + 1


def _metrics_caught_up(monitor, published: int) -> bool:
    for rt in monitor.summary()["runtimes"].values():
        if rt.get("metrics") and rt["metrics"]["n_predictions"] >= published:
            return True
    return False


def _summary(
    args,
    data: DemoData,
    broker: DemoBroker,
    stats,
    summary: dict,
    changed: str,
    t0_mon: float,
    exit_code: int,
) -> dict:
    totals = summary["totals"]
    metrics = (
        next((rt["metrics"] for rt in summary["runtimes"].values() if rt.get("metrics")), {}) or {}
    )
    alerts = summary["drift_alerts"]
    by_model: dict = {}
    for a in alerts:
        by_model.setdefault(a["model"], Counter())[a["level"]] += 1
    t_change = data.change_index / args.rate
    after = [
        a["t_s"] - t0_mon - t_change
        for a in alerts
        if a["device"] == changed and a["level"] == "drift" and a["t_s"] - t0_mon >= t_change
    ]
    models = {
        name: {
            "accuracy": m["accuracy"],
            "scored": m["scored"],
            "drift_alerts": by_model.get(name, {}).get("drift", 0),
            "warnings": by_model.get(name, {}).get("warning", 0),
            "bytes": (metrics.get("models", {}).get(name) or {}).get("bytes"),
        }
        for name, m in summary["models"].items()
    }
    return {
        "source": data.source,
        "broker": broker.kind,
        "devices": args.devices,
        "rate_hz": args.rate,
        "duration_s": stats.elapsed_s,
        "concept_change": {"device": changed, "from_reading": data.change_index, "t_s": t_change},
        "readings": stats.totals()["readings_published"],
        "predictions": totals["predictions"],
        "labels": stats.totals()["labels_inline"],
        "scored": totals["scored"],
        "readings_per_s": totals["readings"] / stats.elapsed_s if stats.elapsed_s else None,
        "accuracy": totals["accuracy"],
        "models": models,
        "baselines": baselines(data.labels, args.devices, data.n_per_device),
        "drift_alerts": sum(m["drift_alerts"] for m in models.values()),
        "warnings": sum(m["warnings"] for m in models.values()),
        "first_drift_after_change_s": min(after) if after else None,
        "errors": totals["errors"],
        "latency_ms": totals["latency_ms"],
        "runtime": {
            "rss_bytes": metrics.get("rss_bytes"),
            "n_malformed": metrics.get("n_malformed"),
            "n_dropped": metrics.get("n_dropped"),
            "n_internal_errors": metrics.get("n_internal_errors"),
            "exit_code": exit_code,
        },
        "per_device": {
            d: {
                "accuracy": v["accuracy"],
                "drift_alerts": v["drift_alerts"],
                "warnings": v["warnings"],
            }
            for d, v in summary["devices"].items()
        },
    }


def _plot(timeline: Timeline, result: dict, summary: dict, t0_mon: float, path: Path) -> str | None:
    """Accuracy over time per device and model, drift alerts as vertical lines; None without
    matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    devices = sorted(result["per_device"])
    models = list(result["models"])
    colors = dict(zip(models, ["tab:blue", "tab:orange", "tab:green", "tab:red"]))
    fig, axes = plt.subplots(
        len(devices), 1, figsize=(9, 2.2 * len(devices) + 0.6), sharex=True, squeeze=False
    )
    for ax, device in zip(axes[:, 0], devices):
        for m in models:
            ts, acc = timeline.accuracy(device, m)
            ax.plot(ts, acc, color=colors.get(m), label=f"{m}")
        for a in summary["drift_alerts"]:
            if a["device"] == device and a["level"] == "drift":
                ax.axvline(a["t_s"] - t0_mon, color=colors.get(a["model"]), alpha=0.5, lw=1)
        if device == result["concept_change"]["device"]:
            ax.axvline(
                result["concept_change"]["t_s"],
                color="black",
                ls="--",
                lw=1.2,
                label="concept change",
            )
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel(f"{device}\naccuracy")
        ax.legend(loc="lower left", fontsize=8)
    axes[-1, 0].set_xlabel("seconds (accuracy over 2 s windows; vertical lines: drift alerts)")
    fig.suptitle(f"edgebayes demo: {Path(result['source']).name}, NB vs SRP over MQTT")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)


def format_summary(r: dict) -> str:
    """The summary printed at the end."""

    def pct(v):
        return "-" if v is None else f"{v:.3f}"

    lines = [
        "",
        (
            f"summary ({r['readings']} readings from {r['devices']} devices "
            f"in {r['duration_s']:.1f} s, broker {r['broker']})"
        ),
        f"{'model':<8}{'accuracy':>9}{'drift':>7}{'warn':>6}{'model bytes':>13}",
    ]
    for name, m in r["models"].items():
        size = "-" if m["bytes"] is None else f"{m['bytes']:,}"
        lines.append(
            f"{name:<8}{pct(m['accuracy']):>9}{m['drift_alerts']:>7}{m['warnings']:>6}{size:>13}"
        )
    b = r["baselines"]
    lines.append(
        f"{'served':<8}{pct(r['accuracy']):>9}   "
        "(each reading: the model with the best recent accuracy)"
    )
    lines.append(
        f"baselines: majority class {b['majority']:.3f}, "
        f"no change (previous label) {b['no_change']:.3f}"
    )
    first = r["first_drift_after_change_s"]
    lines.append(
        f"concept change on {r['concept_change']['device']} at {r['concept_change']['t_s']:.1f} s: "
        + ("no drift alert after it" if first is None else f"first drift alert {first:.1f} s later")
    )
    lat = r["latency_ms"]
    rss = r["runtime"]["rss_bytes"]
    lines.append(
        f"predictions {r['predictions']} / readings {r['readings']}, "
        f"{r['readings_per_s']:.0f} readings/s, "
        f"latency p50 {lat['p50']:.1f} ms p99 {lat['p99']:.1f} ms, runtime RSS "
        + ("-" if rss is None else f"{rss / 2**20:.1f} MB")
    )
    if r["runtime"]["n_internal_errors"]:
        lines.append(f"runtime internal errors: {r['runtime']['n_internal_errors']} (see its log)")
    lines.append(
        f"wall time {r['wall_s']:.1f} s"
        + (f", plot: {r['png']}" if r["png"] else ", no plot (pip install matplotlib)")
    )
    return "\n".join(lines)


def main(args: argparse.Namespace) -> int:
    if args.duration <= 0 or args.rate <= 0 or args.devices < 1:
        print("edgebayes demo: --duration and --rate must be > 0, --devices >= 1", file=sys.stderr)
        return 2
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="edgebayes-demo-") as tmp:
        try:
            result = run_demo(args, out, Path(tmp), say=lambda s: print(s, flush=True))
        except (RuntimeError, ValueError, FileNotFoundError) as exc:
            print(f"edgebayes demo: {exc}", file=sys.stderr)
            return 2
    (out / "edgebayes-demo.json").write_text(json.dumps(result, indent=2))
    print(format_summary(result))
    return 0 if result["runtime"]["exit_code"] == 0 else 1
