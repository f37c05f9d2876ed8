"""``edgebayes demo``: a broker, simulated devices, the runtime and a monitor, on this machine.

What runs, all on loopback:

1. a broker: Mosquitto when it is installed, else amqtt (a pure-Python broker; the ``demo``
   extra) in a thread of this process;
2. ``edgebayes run`` in a subprocess, with Gaussian naive Bayes and Streaming Random Patches
   (config written to the work folder; the demo waits for its systemd-style READY=1);
3. a ``firmware_sim.Monitor`` (the live table, drift alerts, latency, the runtime's metrics)
   and a collector of every prediction, scored here against the true labels;
4. ``--devices`` simulated devices (``firmware_sim.Simulator``), each replaying the whole of a
   real sensor data set, sped up, from its own minutes of it (default: the UCI room-occupancy
   sensors, one reading a minute over two weeks, from ../shared/data; every few minutes'
   reading, each device from its own offset), so each sees weekdays and a weekend.

The scenario, on every device: its label sensor (the room's motion sensor, whose state is the
label) reports with each reading for the first ``--labels-until`` of the run (default half),
then it is taken away: readings only. The runtime keeps predicting from the features with
what it learned; the no-change baseline (repeat the device's last label) can only repeat the
last label it saw. While labels come with every reading, that baseline is hard to beat on a
class that changes a few times a day; once they stop, learning pays. The last device also
has a concept change at a fifth of the run, while it still has labels: from then on its labels
are the other class (2 classes: inverted), as if it had been moved to another room; both models
must notice and adapt before the labels stop.

Prints the monitor's live table, then a summary: accuracy per phase (with labels, label sensor
removed) of the prediction served, of each model and of the no-change and majority baselines
(each using only the labels the device sent), drift alerts, readings/s, the latencies named
for what they measure, the runtime's memory; writes it as JSON and, with matplotlib, a PNG of
accuracy over the run per device, the baselines beside the models, drift alerts marked
(`edgebayes.demo_report`).
"""

from __future__ import annotations

import argparse
import asyncio
import csv
import json
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

from edgebayes.demo_report import format_summary, plot, summarise

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
LABELS_UNTIL = 0.5  # the fraction of each device's readings sent with their label
CHANGE_AT = 0.2  # the last device's concept change, as a fraction of its readings
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
        "--drop", nargs="*", metavar="COLUMN",
        help="columns of --data that are not features (default: date for the built-in data set)"
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
    parser.add_argument(
        "--labels-until",
        type=float,
        default=LABELS_UNTIL,
        metavar="F",
        help="fraction of each device's readings sent with their label; then its label sensor "
        f"is taken away (default {LABELS_UNTIL:g}; 1: labels throughout)",
    )


# --- data -------------------------------------------------------------------------------------


@dataclass
class DemoData:
    """The rows replayed: ``n_per_device`` rows per device, device after device.

    ``labels`` are the true labels of all rows (the concept change applied), whether or not a
    device sends them; each device sends those of its first ``labels_until`` readings."""

    csv_path: Path
    features: tuple[str, ...]
    labels: list  # all rows, device after device, the concept change applied
    n_per_device: int
    change_index: int  # first changed row of the last device (index in its window)
    labels_until: int  # each device's first reading without a label (its label sensor gone)
    source: str

    def device_labels(self, d: int) -> list:
        return self.labels[d * self.n_per_device : (d + 1) * self.n_per_device]


def prepare_data(
    source: str,
    target,
    drop,
    n_devices: int,
    n_per_device: int,
    seed: int,
    workdir: Path,
    labels_until: float = LABELS_UNTIL,
) -> DemoData:
    """Take ``n_per_device`` evenly spaced rows of ``source`` for each device, each device from
    its own offset (device d starts ``d / n_devices`` of a step later: every device replays
    the whole period, in order, faster), apply the concept change to the last device from
    ``CHANGE_AT`` of its readings (each label -> the next class, cyclically), and write the
    rows as a CSV, device after device. ``labels_until`` is the fraction of each device's
    readings sent with their label.

    Raises:
        ValueError: fewer rows than a device needs, or a single class (no change possible).
    """
    from edgebayes.streams import open_stream

    if source.startswith("synth:"):
        stream = open_stream(source, n_samples=n_devices * n_per_device, seed=seed)
    else:
        stream = open_stream(source, target=target, drop=drop)
    rows = list(stream)
    if len(rows) < n_per_device:
        raise ValueError(
            f"{source}: {len(rows)} rows, the demo needs {n_per_device} per device; "
            "lower --duration or --rate"
        )
    step = len(rows) // n_per_device
    rows = [
        r for d in range(n_devices) for r in rows[d * step // n_devices :: step][:n_per_device]
    ]
    classes = sorted({y for _, y in rows}, key=str)
    if len(classes) < 2:
        raise ValueError(f"{source}: a single class in the rows replayed")
    shift = {c: classes[(i + 1) % len(classes)] for i, c in enumerate(classes)}
    change = round(n_per_device * CHANGE_AT)
    start_last = (n_devices - 1) * n_per_device
    labels = [shift[y] if i >= start_last + change else y for i, (_, y) in enumerate(rows)]
    features = tuple(stream.schema.feature_names)
    path = workdir / "replay.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*features, "class"])
        for (x, _), y in zip(rows, labels):
            w.writerow([*map(repr, x.tolist()), y])
    until = round(n_per_device * labels_until)
    return DemoData(path, features, labels, n_per_device, change, until, source)


def baseline_predictions(labels: list, labels_until: int) -> tuple[list, list]:
    """What the two baselines predict for each reading of one device, from the labels it sent
    before that reading (only those of its first ``labels_until`` readings): no change (its
    last label) and majority (its most frequent label so far; the first seen on ties). None
    before any label (counted as wrong)."""
    no_change, majority = [], []
    counts: Counter = Counter()
    last = best = None
    for i, y in enumerate(labels):
        no_change.append(last)
        majority.append(best)
        if i < labels_until:
            last = y
            counts[y] += 1
            if best is None or counts[y] > counts[best]:
                best = y
    return no_change, majority


def baselines(labels: list, n_devices: int, n_per_device: int, labels_until=None) -> dict:
    """Accuracy of the no-change and majority baselines (`baseline_predictions`) over all
    devices' readings, labelled or not (``labels_until`` None: every reading sent its label)."""
    until = n_per_device if labels_until is None else labels_until
    hits = Counter()
    for d in range(n_devices):
        window = labels[d * n_per_device : (d + 1) * n_per_device]
        for name, preds in zip(("no_change", "majority"), baseline_predictions(window, until)):
            hits[name] += sum(p is not None and p == y for p, y in zip(preds, window))
    return {"majority": hits["majority"] / len(labels), "no_change": hits["no_change"] / len(labels)}


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
    runtime's ``[broker] protocol``: amqtt speaks MQTT 3.1.1 only), options (the
    ``firmware_sim`` clients' `BrokerOptions`, with that protocol).

    Raises:
        RuntimeError: the broker asked for is not available or did not start.
    """

    def __init__(self, choice: str, workdir: Path):
        from firmware_sim.mqtt import BrokerOptions

        exe = mosquitto_path()
        if choice == "mosquitto" and exe is None:
            raise RuntimeError("mosquitto is not installed (apt-get install mosquitto)")
        self.kind = "mosquitto" if exe is not None and choice != "embedded" else "amqtt"
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.protocol = "mqttv5" if self.kind == "mosquitto" else "mqttv311"
        self.options = BrokerOptions("127.0.0.1", self.port, protocol=self.protocol)
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
            except Exception as exc:  # noqa: BLE001 - surfaced below, not lost in the thread
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


def runtime_config(data: DemoData, broker: DemoBroker, seed: int, checkpoint_dir: Path) -> str:
    """The runtime's TOML config for the demo."""
    return (
        f'[broker]\nport = {broker.port}\nclient_id = "edgebayes-demo"\n'
        f'protocol = "{broker.protocol}"\n'
        "reconnect_min_s = 0.2\nreconnect_max_s = 2\n\n"
        f"[schema]\nfeatures = {json.dumps(list(data.features))}\n"
        + MODELS.format(seed=seed)
        + "\n[output]\nmetrics_interval_s = 1\n\n[memory]\nmax_devices = 64\n"
        # its own folder: a demo starts from fresh models, never from an earlier demo's
        + f"\n[checkpoint]\ndir = {json.dumps(str(checkpoint_dir))}\n"
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


class Predictions:
    """Every prediction the runtime publishes: device -> seq -> (served y_pred, {model: y_pred}).

    Subscribed beside the monitor, which scores only the readings whose label was sent: these
    are scored against the true labels, sent or not (`score`)."""

    def __init__(self, broker, client_id: str = "edgebayes-demo-predictions"):
        from firmware_sim.mqtt import Connection, as_options

        self.by_device: dict[str, dict[int, tuple]] = {}
        self.n = 0
        self._lock = threading.Lock()
        self.connection = Connection(
            as_options(broker), client_id, self._on_message, [("edgebayes/+/prediction", 1)]
        )

    def start(self) -> Predictions:
        self.connection.connect()
        return self

    def stop(self) -> None:
        self.connection.disconnect()

    def _on_message(self, client, userdata, msg) -> None:
        from edgebayes.codec import DecodeError, decode

        try:
            body = decode(msg.payload)
            seq = body["seq"]
            models = body.get("models") if isinstance(body.get("models"), dict) else {}
            entry = (body.get("y_pred"), models)
        except (DecodeError, KeyError, TypeError):
            return  # not a prediction of the protocol: unscored, as a missing one
        device = msg.topic.split("/")[1]
        with self._lock:
            self.by_device.setdefault(device, {})[seq] = entry
            self.n += 1


def _hit(pred, y) -> bool:
    """A prediction scores when it is the true label (as sent: the device sends str(y))."""
    return pred is not None and str(pred) == str(y)


def score(data: DemoData, devices: list[str], predictions: dict, models: list[str]) -> dict:
    """Accuracy of the prediction served, of each model and of the two baselines, per device
    and phase ("labelled": the readings sent with their label; "removed": those after the label
    sensor was taken away), every reading scored against its true label (test-then-train: a
    prediction is made before its label is learned). A reading without a prediction counts as
    wrong. Also, per device, a 0/1 hit list per predictor for the plot."""
    names = ["served", *models, "no_change", "majority"]
    per_device, hits_by_device = {}, {}
    for d, device in enumerate(devices):
        labels = data.device_labels(d)
        got = predictions.get(device, {})
        no_change, majority = baseline_predictions(labels, data.labels_until)
        hits = {name: [] for name in names}
        for i, y in enumerate(labels):
            served, by_model = got.get(i, (None, {}))
            hits["served"].append(_hit(served, y))
            for m in models:
                hits[m].append(_hit(by_model.get(m), y))
            hits["no_change"].append(_hit(no_change[i], y))
            hits["majority"].append(_hit(majority[i], y))
        hits_by_device[device] = hits
        phases = {}
        for phase, sl in (("labelled", slice(0, data.labels_until)),
                          ("removed", slice(data.labels_until, None))):
            n = len(labels[sl])
            phases[phase] = {"readings": n, **{k: sum(v[sl]) / n if n else None for k, v in hits.items()}}
        per_device[device] = {"phases": phases, "answered": len(got)}
    totals = {}
    for phase in ("labelled", "removed"):
        n = sum(per_device[dev]["phases"][phase]["readings"] for dev in devices)
        totals[phase] = {"readings": n}
        for k in names:
            correct = sum(
                per_device[dev]["phases"][phase][k] * per_device[dev]["phases"][phase]["readings"]
                for dev in devices
                if per_device[dev]["phases"][phase]["readings"]
            )
            totals[phase][k] = correct / n if n else None
    overall = {
        k: sum(sum(hits_by_device[dev][k]) for dev in devices) / len(data.labels) for k in names
    }
    return {"phases": totals, "overall": overall, "per_device": per_device, "hits": hits_by_device}


def _live_line(summary: dict, readings_per_s: float) -> str:
    models = "  ".join(
        f"{m} {v['accuracy']:.3f}"
        for m, v in summary["models"].items()
        if v["accuracy"] is not None
    )
    rss = [rt["metrics"]["rss_bytes"] for rt in summary["runtimes"].values() if rt.get("metrics")]
    mem = f" | runtime RSS {rss[0] / 2**20:.0f} MB" if rss else ""
    return f"labelled readings: {models or '-'} | {readings_per_s:.0f} readings/s{mem}"


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


def _demo_data(args, workdir: Path, say) -> DemoData:
    """The rows the devices replay: ``--data`` (or the default set, or the synthetic
    fallback), ``--duration`` times ``--rate`` readings per device."""
    n_per_device = max(2, round(args.rate * args.duration))
    source = choose_source(args.data, DEFAULT_DATA, say)
    drop = (
        tuple(args.drop) if args.drop is not None else (DEFAULT_DROP if args.data is None else ())
    )
    return prepare_data(
        source,
        args.target,
        drop if not source.startswith("synth:") else (),
        args.devices,
        n_per_device,
        args.seed,
        workdir,
        labels_until=args.labels_until,
    )


def _simulator(args, data: DemoData, broker: DemoBroker):
    """The simulated devices, each replaying its rows with its label sensor."""
    from firmware_sim import SimConfig, Simulator

    return Simulator(
        SimConfig(
            str(data.csv_path),
            n_devices=args.devices,
            rate_hz=args.rate,
            limit=data.n_per_device,
            seed=args.seed,
            labels="inline",
            label_until=data.labels_until,
            target="class",
        ),
        broker.options,
        client_id="edgebayes-demo-{device}",
    )


def _announce(args, data: DemoData, broker: DemoBroker, changed: str, say) -> None:
    """Say what runs: devices, readings, rate, data, broker; when the labels stop; the change."""
    say(
        f"edgebayes demo: {args.devices} devices x {data.n_per_device} readings "
        f"at {args.rate:g}/s each "
        f"from {Path(data.source).name}, broker {broker.kind} on {broker.address}, models nb + srp"
    )
    say(
        f"labels: each device's label sensor reports with its first {data.labels_until} "
        f"readings (t < {data.labels_until / args.rate:.1f} s), then it is taken away\n"
        f"concept change: {changed}'s labels switch class from its reading "
        f"{data.change_index} (t = {data.change_index / args.rate:.1f} s)\n"
    )


def _drain(monitor, collector, published: int, labels: int) -> dict:
    """Wait (bounded) until the monitor has every prediction and score, the collector every
    prediction and the runtime's metrics count them; the monitor's summary."""
    monitor.wait_until(
        lambda t: t["predictions"] >= published and t["scored"] >= labels, timeout_s=15
    )
    deadline = time.monotonic() + 5
    while collector.n < published and time.monotonic() < deadline:
        time.sleep(0.02)
    monitor.wait_until(lambda t: _metrics_caught_up(monitor, published), timeout_s=5)
    return monitor.summary()


def run_demo(args, out: Path, workdir: Path, say=print) -> dict:
    """Run everything; return the summary (see the module docstring)."""
    from firmware_sim import Monitor

    t_start = time.monotonic()
    data = _demo_data(args, workdir, say)
    broker = DemoBroker(args.broker, workdir)
    runtime = monitor = collector = None
    try:
        config_path = workdir / "edgebayes.toml"
        config_path.write_text(runtime_config(data, broker, args.seed, workdir / "checkpoints"))
        runtime = RuntimeProcess(config_path, workdir)
        runtime.wait_ready()
        monitor = Monitor(broker.options, client_id="edgebayes-demo-monitor").start()
        collector = Predictions(broker.options).start()
        sim = _simulator(args, data, broker)
        devices = [d.device_id for d in sim.devices]
        changed = devices[-1]
        _announce(args, data, broker, changed, say)
        sim.start()
        _follow(sim, monitor, time.monotonic(), args.refresh_s, say)
        stats = sim.join()
        summary = _drain(monitor, collector, stats.totals()["readings_published"],
                         stats.totals()["labels_inline"])
        exit_code = runtime.stop()
        runtime = None
    finally:
        if runtime is not None:
            runtime.stop()
        for client in (monitor, collector):
            if client is not None:
                client.stop()
        broker.stop()
    scores = score(data, devices, collector.by_device, ["nb", "srp"])
    result = summarise(args, data, broker, stats, summary, scores, changed, exit_code)
    result["png"] = plot(data, scores, result, summary, args.rate, out / "edgebayes-demo.png")
    result["wall_s"] = time.monotonic() - t_start
    return result


def _follow(sim, monitor, t_sim: float, refresh_s: float, say) -> None:
    """Print the live table every ``refresh_s`` while the devices run."""
    tty = sys.stdout.isatty()
    lines_up = 0
    while sim.running:
        sim.join(refresh_s if refresh_s > 0 else 1.0)
        if refresh_s <= 0 or not sim.running:
            continue
        summary = monitor.summary()
        readings_per_s = summary["totals"]["readings"] / (time.monotonic() - t_sim)
        text = monitor.table() + "\n" + _live_line(summary, readings_per_s)
        if tty and lines_up:
            sys.stdout.write(f"\x1b[{lines_up}F\x1b[J")
        say(text + ("" if tty else "\n"))
        lines_up = text.count("\n") + 1


def _metrics_caught_up(monitor, published: int) -> bool:
    for rt in monitor.summary()["runtimes"].values():
        if rt.get("metrics") and rt["metrics"]["n_predictions"] >= published:
            return True
    return False


def main(args: argparse.Namespace) -> int:
    if args.duration <= 0 or args.rate <= 0 or args.devices < 1 or not 0 < args.labels_until <= 1:
        print(
            "edgebayes demo: --duration and --rate must be > 0, --devices >= 1, "
            "--labels-until in (0, 1]",
            file=sys.stderr,
        )
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
