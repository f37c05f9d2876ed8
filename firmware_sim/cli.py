"""The ``firmware-sim`` command: ``run`` simulated devices, ``monitor`` what comes back.

Exit codes: 0 success (also when stopped by SIGINT/SIGTERM), 1 the broker could not be
reached, 2 bad usage, bad option value or unreadable input (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from dataclasses import asdict
from pathlib import Path

from firmware_sim.device import ENCODINGS, FORMATS, LABEL_MODES, REBOOT_SEQ, X_SHAPES, SimConfig
from firmware_sim.faults import MALFORMED_KINDS, FaultRates
from firmware_sim.monitor import Monitor
from firmware_sim.mqtt import BrokerOptions
from firmware_sim.runner import Simulator

log = logging.getLogger("firmware_sim")


def _broker_arguments(p: argparse.ArgumentParser, client_id: str) -> None:
    g = p.add_argument_group("broker")
    g.add_argument("--broker", required=True, metavar="HOST:PORT", help="the MQTT broker")
    g.add_argument("--client-id", default=client_id, help=f"MQTT client id (default {client_id})")
    g.add_argument("--qos", type=int, choices=(0, 1, 2), default=1, help="QoS (default 1)")
    g.add_argument("--username", help="user name (anonymous without it)")
    g.add_argument("--password-file", metavar="FILE", help="file whose first line is the password")
    g.add_argument("--tls-ca-file", metavar="FILE", help="CA certificates; turns TLS on")
    g.add_argument("--tls-cert-file", metavar="FILE", help="client certificate (mutual TLS)")
    g.add_argument("--tls-key-file", metavar="FILE", help="client key (mutual TLS)")
    g.add_argument("--keepalive-s", type=int, default=60, help="MQTT keep-alive, s (default 60)")
    g.add_argument("--prefix", default="edgebayes", help="topic prefix (default edgebayes)")
    p.add_argument("--json", metavar="PATH", help="write the summary as JSON to PATH at the end")
    p.add_argument("--log-level", default="WARNING", help="logging level (default WARNING)")


def _run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--source", required=True, help="CSV/ARFF file, or synth:NAME (a generator)")
    p.add_argument("--devices", type=int, default=1, help="number of devices (default 1)")
    p.add_argument("--rate", type=float, default=10.0, metavar="HZ", help="readings/s per device (default 10)")
    stop = p.add_mutually_exclusive_group()
    stop.add_argument("--limit", type=int, help="samples per device (default: the whole stream)")
    stop.add_argument("--duration", type=float, metavar="S", help="seconds of readings")
    p.add_argument("--seed", type=int, default=0, help="seed of everything random (default 0)")
    p.add_argument("--jitter", type=float, default=0.0, help="sampling jitter, fraction of the period in [0, 1)")
    g = p.add_argument_group("labels")
    g.add_argument("--labels", choices=LABEL_MODES, default="inline", help="where labels go (default inline)")
    g.add_argument("--label-delay-s", type=float, default=1.0, help="delay of delayed labels, s (default 1)")
    g.add_argument("--label-fraction", type=float, default=1.0, help="fraction of samples labelled (default 1)")
    g.add_argument("--label-key", default="y", help="key of the label in payloads (default y)")
    g = p.add_argument_group("faults (probabilities per reading)")
    g.add_argument("--loss-rate", type=float, default=0.0, help="reading never published")
    g.add_argument("--duplicate-rate", type=float, default=0.0, help="reading published twice")
    g.add_argument("--malformed-rate", type=float, default=0.0, help="reading published corrupted")
    g.add_argument("--malformed-kinds", nargs="+", choices=MALFORMED_KINDS, default=list(MALFORMED_KINDS),
                   metavar="KIND", help=f"corruptions to use (default all: {' '.join(MALFORMED_KINDS)})")
    g.add_argument("--reboot-rate", type=float, default=0.0, help="device reboots before the reading")
    g.add_argument("--reboot-s", type=float, default=0.5, help="time a reboot keeps a device offline, s")
    g.add_argument("--reboot-seq", choices=REBOOT_SEQ, default="zero", help="seq after a reboot (default zero)")
    g.add_argument("--burst-rate", type=float, default=0.0, help="a burst starts at the reading")
    g.add_argument("--burst-size", type=int, default=10, help="readings held and sent at once per burst")
    g = p.add_argument_group("payloads")
    g.add_argument("--device-prefix", default="sim-", help="device ids are this + index (default sim-)")
    g.add_argument("--target", help="label column of a file (default: the last)")
    g.add_argument("--drop", nargs="+", default=[], metavar="COL", help="file columns that are not features")
    g.add_argument("--x-shape", choices=X_SHAPES, default="list", help="x as a list or a name -> value map")
    g.add_argument("--encoding", choices=ENCODINGS, default="msgpack", help="payload encoding (default msgpack)")
    g.add_argument("--format", choices=FORMATS, default="edgebayes", help="payload shape (default edgebayes)")
    _broker_arguments(p, "firmware-sim-{device}")


def _monitor_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--duration", type=float, metavar="S", help="stop after S seconds")
    p.add_argument("--idle-s", type=float, metavar="S", help="stop after S seconds without a message")
    p.add_argument("--interval-s", type=float, default=1.0, help="table refresh period, s (default 1)")
    p.add_argument("--quiet", action="store_true", help="no live table")
    p.add_argument("--label-key", default="y", help="key of the label in payloads (default y)")
    p.add_argument("--max-records", type=int, default=100_000, help="unscored readings kept per device")
    _broker_arguments(p, "firmware-sim-monitor")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="firmware-sim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    run = sub.add_parser("run", help="simulated devices publishing readings and labels",
                         description="Simulated sensor devices publishing readings and labels.")
    _run_arguments(run)
    run.set_defaults(_main=run_main)
    mon = sub.add_parser("monitor", help="score the runtime's predictions, live",
                         description="Score the runtime's predictions per device, live.")
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
    )


def _stop_on_signals(stop: threading.Event) -> None:
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())


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
    config = SimConfig(
        args.source,
        n_devices=args.devices,
        rate_hz=args.rate,
        limit=args.limit,
        duration_s=args.duration,
        seed=args.seed,
        labels=args.labels,
        label_delay_s=args.label_delay_s,
        label_fraction=args.label_fraction,
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
    )
    sim = Simulator(config, _broker(args), qos=args.qos, client_id=args.client_id)
    stop = threading.Event()
    _stop_on_signals(stop)
    sim.start()
    while sim.running:
        if stop.wait(0.2):
            sim.stop()
    stats = sim.join()
    t = stats.totals()
    print(
        f"firmware-sim: {len(stats.devices)} device(s), {t['samples']} samples, "
        f"{t['readings_published']} readings and {t['labels_published']} labels published, "
        f"{t['lost']} lost, {t['duplicated']} duplicated, {sum(t['malformed'].values())} malformed, "
        f"{t['reboots']} reboots, {t['bursts']} bursts in {stats.elapsed_s:.1f} s "
        f"(max lag {stats.max_lag_s * 1000:.1f} ms)",
        file=sys.stderr,
    )
    _write_json(args.json, {"config": asdict(config), **stats.as_dict()})
    return 0


def monitor_main(args) -> int:
    monitor = Monitor(
        _broker(args),
        prefix=args.prefix,
        client_id=args.client_id,
        qos=args.qos,
        max_records=args.max_records,
        label_key=args.label_key,
    )
    stop = threading.Event()
    _stop_on_signals(stop)
    monitor.start()
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


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args._main(args)
    except (ValueError, FileNotFoundError, PermissionError, IsADirectoryError) as exc:
        print(f"firmware-sim: {exc}", file=sys.stderr)
        return 2
    except (ConnectionError, OSError) as exc:
        print(f"firmware-sim: cannot reach the broker {args.broker}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
