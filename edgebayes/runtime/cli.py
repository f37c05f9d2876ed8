"""``edgebayes run --config FILE [--broker HOST:PORT] [--checkpoint-dir DIR] [--log-level LEVEL]``.

Runs until SIGTERM or SIGINT, then stops taking readings, processes what is queued for up to
5 s (the rest stays unacknowledged and the broker delivers it again to the next session),
checkpoints, publishes ``offline`` and exits 0. Exit 2 for a bad config (every problem on
stderr, including a ``[memory] model_budget_bytes`` too small for the models), 1 when the
worker thread died or stopped at ``[memory] rss_limit_mb`` after checkpointing (a service
manager restarts the runtime; the last line says which), 3 when the broker refused the login (``[broker] username``,
``password_file``) a few times in a row, after checkpointing; the last line says why.
"""

from __future__ import annotations

import argparse
import gc
import logging
import os
import signal
import sys
import threading

from edgebayes import backend_description
from edgebayes.runtime.config import ConfigError, check_files, default_checkpoint_dir, load_config

log = logging.getLogger("edgebayes.runtime")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE", help="TOML config file")
    parser.add_argument("--broker", metavar="HOST:PORT", help="override [broker] host and port")
    parser.add_argument("--checkpoint-dir", metavar="DIR", help="override [checkpoint] dir")
    add_log_level(parser)


def add_log_level(parser: argparse.ArgumentParser) -> None:
    """``--log-level LEVEL``, read by `start_logging` (``edgebayes run`` and ``edgebayes cluster``)."""
    parser.add_argument("--log-level", default="INFO", type=str.upper,
                        choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"],
                        help="messages logged to stderr from this level up (default INFO)")


def start_logging(args: argparse.Namespace) -> None:
    """Log to stderr from ``--log-level`` up, each line stamped and named."""
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


def freeze_startup_objects() -> None:
    """Leave the objects made at start (modules, config, the runtime's parts) out of every
    later garbage collection (``gc.freeze``): a full collection, which pauses every reading in
    flight, then walks only what serving made, not the whole heap."""
    gc.collect()
    gc.freeze()


def main(args: argparse.Namespace) -> int:
    start_logging(args)
    try:
        config = load_config(args.config).with_overrides(args.broker, args.checkpoint_dir)
        check_files(config, args.config)
    except ConfigError as exc:
        print(f"edgebayes run: {exc}", file=sys.stderr)
        return 2
    from edgebayes.runtime.service import Runtime
    from edgebayes.runtime.systemd import Notifier, hooks

    notifier = Notifier()  # READY / WATCHDOG / STOPPING under systemd Type=notify
    try:
        runtime = Runtime(config, **hooks(notifier))
    except (OSError, ConfigError) as exc:
        print(f"edgebayes run: {exc}", file=sys.stderr)
        return 2
    log.info("backend: %s", backend_description())  # after the one-line start errors
    where = config.checkpoint.dir
    _say_where(config, runtime.worker.store)
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.set())
    freeze_startup_objects()
    runtime.start()
    while not stop.wait(0.5):
        if not runtime.worker.is_alive():
            log.critical("%s; exiting", runtime.worker.stop_reason or "the worker thread died")
            runtime.client.stop()
            return 1
        if runtime.client.watch.fatal is not None:
            runtime.stop()
            log.critical("%s; exiting", runtime.client.watch.fatal)
            return 3
    log.info("stopping: processing what is queued (up to 5 s)%s", "" if where is None else ", checkpointing")
    notifier.stopping()
    runtime.stop()
    if where is None:
        log.warning("stopped; checkpoints are off: nothing learned was saved")
    else:
        saved = runtime.worker.n_saved_at_stop
        log.info("stopped; %d of %d devices saved in %s", saved, len(runtime.worker.devices), where)
    return 0


def _say_where(config, store) -> None:
    """Log where learning is kept and what is there; warn when nothing will be kept, or when a
    default folder is empty beside one of another client id that holds checkpoints."""
    where = config.checkpoint.dir
    if where is None:
        log.warning("checkpoints are off ([checkpoint] enabled = false): everything learned is lost "
                    "when the runtime stops; remove that line to keep learning across restarts")
        return
    if not store.dir.is_dir():  # told at ERROR by the store: nothing is kept until it can be made
        return
    saved = store.saved_devices()
    names = ", ".join(saved[:8]) + (", ..." if len(saved) > 8 else "")
    log.info("checkpoints and journal in %s: learning is kept across restarts; devices saved there: %d%s "
             "(each restored at its first message)", where, len(saved), f" ({names})" if saved else "")
    if saved or where != default_checkpoint_dir(config.broker.client_id) or os.environ.get("STATE_DIRECTORY"):
        return
    others = sorted(d for d in where.parent.glob("*") if d != where and any(d.glob("*.ckpt")))
    if others:
        log.warning("no checkpoint in %s, the default folder for client_id %r, but %s holds some (another "
                    "[broker] client_id?): set [checkpoint] dir = \"%s\" to go on learning from them",
                    where, config.broker.client_id, others[0], others[0])

