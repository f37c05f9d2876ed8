"""The ``edgebayes`` command line: one sub-command per module, imported only when it runs.

Each sub-command module defines ``add_arguments(parser)`` and ``main(args) -> int`` (the exit
code). Exit codes: 0 success, 1 a verdict against the user (e.g. over budget), 2 bad usage,
bad config or unreadable input (one-line error on stderr).
"""

from __future__ import annotations

import argparse
import importlib
import sys

#: what ``edgebayes --help`` says first
DESCRIPTION = "Online naive Bayes and Streaming Random Patches on a Raspberry Pi, over MQTT."

#: sub-command -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "evaluate": ("edgebayes.evaluate_cli", "prequential (test-then-train) evaluation of a model on a stream"),
    "run": ("edgebayes.runtime.cli", "serve sensor devices over MQTT: predict, learn, alert on drift"),
    "budget": ("edgebayes.budget", "check a config's models against its memory budget, no broker needed"),
    "demo": ("edgebayes.demo", "a broker, simulated devices, the runtime and a monitor on this machine"),
    "acl": ("edgebayes.acl", "the Mosquitto ACL that admits a config's runtime, devices and [[sources]]"),
    "config-docs": ("edgebayes.runtime.config_docs", "the config reference (docs/config.md), from the schema"),
    "nats-config": ("edgebayes.cluster.nats_config", "a NATS cluster's partition mappings and users for a config"),
    "cluster": ("edgebayes.cluster.cli", "serve the partitions of a NATS cluster this runtime owns (scale-out)"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="edgebayes", description=DESCRIPTION)
    from edgebayes import __version__

    parser.add_argument("--version", action="version", version=f"edgebayes {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue  # not built yet
        p = sub.add_parser(name, help=help_text, description=help_text)
        mod.add_arguments(p)
        p.set_defaults(_main=mod.main)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return args._main(args)


if __name__ == "__main__":
    sys.exit(main())
