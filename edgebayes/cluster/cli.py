"""``edgebayes cluster --config FILE [--log-level LEVEL]``: serve, as one runtime of a pool, the
partitions of a NATS cluster this runtime takes (``edgebayes.cluster.node``; docs/scale-out.md).

The config is a runtime config with a ``[cluster]`` table and ``[checkpoint]`` on. Runs until
SIGTERM or SIGINT, then hands every partition over (processed, checkpointed to JetStream, lease
deleted) and exits 0. Exit 2 for a bad config or no NATS server reachable (one line on
stderr), 1 when the worker thread died.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading

from edgebayes.runtime.cli import add_log_level, freeze_startup_objects, start_logging
from edgebayes.runtime.config import ConfigError, load_config

log = logging.getLogger("edgebayes.cluster")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE", help="TOML config file with [cluster]")
    add_log_level(parser)


def main(args: argparse.Namespace) -> int:
    start_logging(args)
    try:
        config = load_config(args.config)
        cluster = config.cluster
        if cluster is None:
            raise ConfigError(["[cluster]: missing (servers, partitions)"], args.config)
        from edgebayes.cluster.node import ClusterRuntime

        runtime = ClusterRuntime(config, cluster)
        freeze_startup_objects()
        runtime.start()
    except (ConfigError, ValueError, OSError, TimeoutError) as exc:
        print(f"edgebayes cluster: {exc}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda signum, frame: stop.set())
    log.info("serving partitions of %s as %s", ", ".join(cluster.servers), runtime.owner)
    while not stop.wait(0.5):
        if not runtime.worker.is_alive():
            log.critical("the worker thread died; exiting")
            return 1
    log.info("stopping: handing partitions %s over", sorted(runtime.owned))
    runtime.stop()
    log.info("stopped; %d partition checkpoints uploaded", runtime.n_uploads)
    return 0
