"""The ``firmware-sim`` command: ``run`` simulated devices, ``monitor`` what comes back.

Exit codes: 0 success (also when stopped by SIGINT/SIGTERM), 1 the broker could not be
reached, 2 bad usage, bad option value or unreadable input (one line on stderr). Everything
that can be checked is checked before connecting: option values and combinations, the
``--json`` folder, a file source's rows (see `firmware_sim.device.build_devices`).
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import os
import signal
import sys
import threading
from dataclasses import asdict
from pathlib import Path

from edgebayes.streams import drop_hint
from firmware_sim.device import (
    ENCODINGS,
    FORMATS,
    LABEL_MODES,
    MAX_DEVICES,
    REBOOT_SEQ,
    X_SHAPES,
    SimConfig,
)
from firmware_sim.faults import MALFORMED_KINDS, FaultRates
from firmware_sim.monitor import Monitor
from firmware_sim.mqtt import BrokerOptions
from firmware_sim.runner import Simulator

log = logging.getLogger("firmware_sim")


def _broker_arguments(p: argparse.ArgumentParser, client_id: str) -> None:
    g = p.add_argument_group("broker")
    a = g.add_argument
    a("--broker", required=True, metavar="HOST:PORT", help="the MQTT broker")
    a("--client-id", default=client_id, help="MQTT client id")
    a("--qos", type=int, choices=(0, 1, 2), default=1, help="QoS")
    a("--username", help="user name (anonymous without it)")
    a("--password-file", metavar="FILE", help="file whose first line is the password")
    a("--tls-ca-file", metavar="FILE", help="CA certificates; turns TLS on")
    a("--tls-cert-file", metavar="FILE", help="client certificate (mutual TLS)")
    a("--tls-key-file", metavar="FILE", help="client key (mutual TLS)")
    a("--tls-server-name", metavar="NAME", help="the name in the broker's certificate (default: the host)")
    a("--tls-insecure", action="store_true", help="do not verify the broker's certificate (test brokers)")
    a("--transport", choices=("tcp", "websockets"), default="tcp", help="MQTT over TCP or websockets")
    a("--ws-path", default="/mqtt", help="the websockets path")
    a("--keepalive-s", type=int, default=60, help="MQTT keep-alive, s")
    a("--prefix", default="edgebayes", help="topic prefix")
    p.add_argument("--json", metavar="PATH", help="write the summary as JSON to PATH at the end")
    p.add_argument("--log-level", default="WARNING", type=str.upper,
                   choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], help="logging level")


def _run_arguments(p: argparse.ArgumentParser) -> None:
    a = p.add_argument
    a("--source", required=True, help="CSV/ARFF file, or synth:NAME (a generator)")
    a("--devices", type=int, default=1, help=f"number of devices, at most {MAX_DEVICES:,}")
    a("--rate", type=float, default=10.0, metavar="HZ", help="readings per second per device")
    stop = p.add_mutually_exclusive_group()
    stop.add_argument("--limit", type=int, help="samples per device (default: the whole stream)")
    stop.add_argument("--duration", type=float, metavar="S", help="seconds of readings")
    a("--seed", type=int, default=0, help="seed of everything random")
    a("--jitter", type=float, default=0.0, help="sampling jitter, fraction of the period, [0, 1)")
    a = p.add_argument_group("labels").add_argument
    a("--labels", choices=LABEL_MODES, default="inline", help="where labels go")
    a("--label-delay-s", type=float, default=1.0, help="delay of delayed labels, s")
    a("--label-fraction", type=float, default=1.0, help="fraction of samples labelled")
    a("--label-until", type=int, metavar="N",
      help="no label from each device's sample N on (0-based): its label sensor taken away")
    a("--label-key", default="y", help="key of the label in payloads")
    a = p.add_argument_group("faults (probabilities per reading)").add_argument
    a("--loss-rate", type=float, default=0.0, help="reading never published")
    a("--duplicate-rate", type=float, default=0.0, help="reading published twice")
    a("--malformed-rate", type=float, default=0.0, help="reading published corrupted")
    a("--malformed-kinds", nargs="+", choices=MALFORMED_KINDS, default=list(MALFORMED_KINDS),
      metavar="KIND", help=f"corruptions to choose from: {', '.join(MALFORMED_KINDS)}")
    a("--reboot-rate", type=float, default=0.0, help="device reboots before the reading")
    a("--reboot-s", type=float, default=0.5, help="time a reboot keeps a device offline, s")
    a("--reboot-seq", choices=REBOOT_SEQ, default="zero", help="seq after a reboot")
    a("--burst-rate", type=float, default=0.0, help="a burst starts at the reading")
    a("--burst-size", type=int, default=10, help="readings held back and sent at once per burst")
    a = p.add_argument_group("payloads").add_argument
    a("--device-prefix", default="sim-", help="device ids are this followed by the index")
    a("--target", help="label column of a file (default: the last)")
    a("--drop", nargs="+", default=[], metavar="COL", help="file columns that are not features")
    a("--x-shape", choices=X_SHAPES, default="list", help="x as a list or a name -> value map")
    a("--encoding", choices=ENCODINGS, default="msgpack", help="payload encoding")
    a("--format", choices=FORMATS, default="edgebayes", help="payload shape")
    a("--sensor", default="SIM", metavar="NAME", help="tasmota: the sensor block, e.g. BME280")
    a("--fields", nargs="+", default=[], metavar="KEY",
      help="tasmota: the keys of the features in the sensor block, in order (default: their names)")
    a("--switch", metavar="NAME",
      help="tasmota: the label (0/1) as this switch's ON/OFF in the SENSOR message, e.g. Switch1")
    _broker_arguments(p, "firmware-sim-{device}")


def _monitor_arguments(p: argparse.ArgumentParser) -> None:
    a = p.add_argument
    a("--duration", type=float, metavar="S", help="stop after S seconds (>= 0)")
    a("--idle-s", type=float, metavar="S", help="stop after S seconds without a message (>= 0)")
    a("--interval-s", type=float, default=1.0, help="table refresh period, s (> 0)")
    a("--quiet", action="store_true", help="no live table")
    a("--label-key", default="y", help="key of the label in payloads")
    a("--max-records", type=int, default=100_000, help="unscored readings kept per device")
    a = p.add_argument_group("other payload shapes (run --format)").add_argument
    a("--format", choices=FORMATS, default="edgebayes",
      help="the devices' payload shape: with another than edgebayes, readings and labels are read on "
           "that firmware's topics and predictions matched to them in arrival order")
    a("--labels", choices=("inline", "delayed"), default="inline",
      help="another format: a label message labels the next reading (inline) or the oldest unlabelled one")
    a("--switch", metavar="NAME", help="tasmota: the label (0/1) is this switch's ON/OFF in the SENSOR message")
    a("--label-values", nargs="+", default=[], metavar="WIRE=CLASS",
      help="the runtime's label_values: a wire label (as text) scored as this class, e.g. ON=open OFF=closed")
    _broker_arguments(p, "firmware-sim-monitor")


class _DefaultsFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Adds "(default: X)" only where there is a default and the help does not already say it."""

    def _get_help_string(self, action):
        default = action.default
        if default is None or default is False or default == [] or "default" in (action.help or ""):
            return action.help
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="firmware-sim",
        description="Simulated sensor devices publishing over MQTT (in the edgebayes protocol, or "
                    "as Tasmota, Zigbee2MQTT, ESPHome or Shelly devices with --format), and a "
                    "monitor scoring the runtime's predictions.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    fmt = _DefaultsFormatter
    run = sub.add_parser("run", help="simulated devices publishing readings and labels",
                         description="Simulated sensor devices publishing readings and labels "
                                     "(payload shape: --format).",
                         formatter_class=fmt)
    _run_arguments(run)
    run.set_defaults(_main=run_main)
    mon = sub.add_parser("monitor", help="score the runtime's predictions, live",
                         description="Score the runtime's predictions per device, live.",
                         formatter_class=fmt)
    _monitor_arguments(mon)
    mon.set_defaults(_main=monitor_main)
    return parser


def _broker(args) -> BrokerOptions:
    return BrokerOptions.from_address(
        args.broker,
        username=args.username,
        password_file=args.password_file,
        tls_ca_file=args.tls_ca_file,
        tls_cert_file=args.tls_cert_file,
        tls_key_file=args.tls_key_file,
        keepalive_s=args.keepalive_s,
        tls_server_name=args.tls_server_name,
        tls_insecure=args.tls_insecure,
        transport=args.transport,
        ws_path=args.ws_path,
    )


def _stop_on_signals(stop: threading.Event) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())


def _check_json_path(path: str | None) -> None:
    """Refuse a ``--json`` PATH that could not be written at the end of the run."""
    if path is None:
        return
    target = Path(path)
    folder = target.parent
    if target.is_dir():
        raise ValueError(f"--json: {target} is a folder")
    if not folder.is_dir():
        raise ValueError(f"--json: no folder {folder}")
    if target.exists() and not os.access(target, os.W_OK):
        raise ValueError(f"--json: {target} is not writable")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ValueError(f"--json: folder {folder} is not writable")


def _check_seconds(option: str, value: float | None, positive: bool = False) -> None:
    """Refuse a time option that is NaN, infinite, negative (or zero when ``positive``)."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        raise ValueError(f"{option} must be a finite number {'>' if positive else '>='} 0, "
                         f"got {value:g}")


def _write_json(path: str | None, data: dict) -> None:
    if path:
        Path(path).write_text(json.dumps(data, indent=2, default=str) + "\n")


def run_main(args) -> int:
    faults = FaultRates(
        loss_rate=args.loss_rate,
        duplicate_rate=args.duplicate_rate,
        malformed_rate=args.malformed_rate,
        reboot_rate=args.reboot_rate,
        burst_rate=args.burst_rate,
        burst_size=args.burst_size,
        malformed_kinds=tuple(args.malformed_kinds),
    )
    config = _sim_config(args, faults)
    _check_json_path(args.json)
    sim = Simulator(config, _broker(args), qos=args.qos, client_id=args.client_id)
    stop = threading.Event()
    _stop_on_signals(stop)
    sim.start()
    print(f"firmware-sim: {config.n_devices} device(s) connected to {args.broker}, "
          f"publishing {config.source} at {config.rate_hz:g} Hz each",
          file=sys.stderr, flush=True)
    while sim.running:
        if stop.wait(0.2):
            sim.stop()
    stats = sim.join()
    t = stats.totals()
    print(
        f"firmware-sim: {len(stats.devices)} device(s), {t['samples']} samples, "
        f"{t['readings_published']} readings and "
        f"{t['labels_inline'] + t['labels_published']} labels published ({t['labels_inline']} "
        f"inline, {t['labels_published']} label messages), "
        f"{t['lost'] + t['refused']} lost{_refused(t)}, {t['duplicated']} duplicated, "
        f"{sum(t['malformed'].values())} malformed, "
        f"{t['reboots']} reboots, {t['bursts']} bursts in {stats.elapsed_s:.1f} s "
        f"(max lag {stats.max_lag_s * 1000:.1f} ms)",
        file=sys.stderr,
    )
    _write_json(args.json, {"config": asdict(config), **stats.as_dict()})
    return 0


def _refused(totals: dict) -> str:
    """`` (3 refused by the broker: Not authorized)`` when the broker refused publishes."""
    if not totals["refused"]:
        return ""
    why = ", ".join(f"{n} {reason}" for reason, n in totals["refused_reasons"].items())
    return f" ({totals['refused']} refused by the broker: {why})"


def _label_values(items: list[str]) -> dict[str, str]:
    """``["ON=open", "OFF=closed"]`` -> ``{"ON": "open", "OFF": "closed"}``. Raises ValueError."""
    out = {}
    for item in items:
        wire, eq, label = item.partition("=")
        if not eq or not wire or not label:
            raise ValueError(f"--label-values: {item!r} is not WIRE=CLASS")
        out[wire] = label
    return out


def monitor_main(args) -> int:
    _check_seconds("--duration", args.duration)
    _check_seconds("--idle-s", args.idle_s)
    _check_seconds("--interval-s", args.interval_s, positive=True)
    _check_json_path(args.json)
    monitor = Monitor(
        _broker(args),
        prefix=args.prefix,
        client_id=args.client_id,
        qos=args.qos,
        max_records=args.max_records,
        label_key=args.label_key,
        format=args.format,
        labels=args.labels,
        switch=args.switch,
        label_values=_label_values(args.label_values),
    )
    stop = threading.Event()
    _stop_on_signals(stop)
    monitor.start()
    print(f"firmware-sim: monitoring {args.broker} under {args.prefix}/",
          file=sys.stderr, flush=True)
    live = not args.quiet
    clear = "\x1b[H\x1b[2J" if sys.stderr.isatty() else ""
    try:
        while not stop.wait(args.interval_s):
            if live:
                print(clear + monitor.table() + "\n", file=sys.stderr, flush=True)
            if args.duration is not None and monitor.elapsed_s >= args.duration:
                break
            if args.idle_s is not None and monitor.idle_s >= args.idle_s:
                break
    finally:
        monitor.stop()
    print(monitor.table(), file=sys.stderr)
    _write_json(args.json, monitor.summary())
    return 0



#: SimConfig fields named by their command-line flags in error messages
FLAGS = {"n_devices": "--devices", "rate_hz": "--rate", "duration_s": "--duration", "limit": "--limit",
         "seed": "--seed", "label_delay_s": "--label-delay-s", "label_fraction": "--label-fraction",
         "label_until": "--label-until",
         "jitter": "--jitter", "reboot_s": "--reboot-s", "label_key": "--label-key", "prefix": "--prefix"}


def _sim_config(args, faults: FaultRates) -> SimConfig:
    """The simulator's config from the command line.

    Raises:
        ValueError: a bad value, named by its flag (``--devices must be ...``).
    """
    try:
        return SimConfig(
            args.source,
            n_devices=args.devices,
            rate_hz=args.rate,
            limit=args.limit,
            duration_s=args.duration,
            seed=args.seed,
            labels=args.labels,
            label_delay_s=args.label_delay_s,
            label_fraction=args.label_fraction,
            label_until=args.label_until,
            jitter=args.jitter,
            faults=faults,
            reboot_s=args.reboot_s,
            reboot_seq=args.reboot_seq,
            prefix=args.prefix,
            device_prefix=args.device_prefix,
            target=args.target,
            drop=tuple(args.drop),
            label_key=args.label_key,
            x_shape=args.x_shape,
            encoding=args.encoding,
            format=args.format,
            sensor=args.sensor,
            fields=tuple(args.fields),
            switch=args.switch,
        )
    except ValueError as exc:
        name = str(exc).split(" ", 1)[0]
        if name in FLAGS:
            raise ValueError(FLAGS[name] + str(exc)[len(name):]) from None
        raise

def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args._main(args)
    except (ValueError, FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        print(f"firmware-sim: {exc}{drop_hint(str(exc))}", file=sys.stderr)
        return 2
    except (ConnectionError, OSError) as exc:
        print(f"firmware-sim: cannot reach the broker {args.broker}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
