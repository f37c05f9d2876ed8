"""``edgebayes acl --config FILE``: the Mosquitto ACL file for a runtime config, on stdout.

    edgebayes acl --config /etc/edgebayes/edgebayes.toml > /etc/mosquitto/edgebayes.acl

Grants, and nothing else (Mosquitto denies what an ACL file does not grant):

- the runtime (user ``[broker] username``): read ``<prefix>/<devices>/reading`` and ``label``,
  write every device's ``prediction``, ``drift`` and ``error`` and its own
  ``<prefix>/runtime/#``; read every topic its ``[[sources]]`` subscribe to (data and
  availability); with ``[homeassistant] discovery``, write its discovery configs
  ``<ha prefix>/+/<node_id>/#`` and each device's ``availability`` and ``attributes``, and read
  ``<ha prefix>/status``;
- user ``monitor`` (a dashboard, the firmware-sim monitor): read ``<prefix>/#``;
- every device, logged in with its device id as user name (``%u``): write its own readings and
  labels, read its own outputs; for each ``[[sources]]`` topic whose device id is a ``+``
  level, write that topic with its own id there (``tele/%u/SENSOR``); topics with no such
  level (a zigbee2mqtt bridge publishing for every device, a fixed ``device``, fixed ESPHome
  topics) may be written by any user with a password.

Deploy/install.sh writes it to /etc/mosquitto/edgebayes.acl; deploy/mosquitto/edgebayes.acl is
this command's output for deploy/edgebayes.toml. Exit 0, or 2 for a bad config or a config
without ``[broker] username`` (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys

from edgebayes.runtime.config import Config, ConfigError, load_config
from edgebayes.runtime.ingest.adapter import Adapter
from edgebayes.runtime.ingest.adapters import make_adapter

#: the read-only user of dashboards and the firmware-sim monitor
MONITOR_USER = "monitor"

HEADER = """\
# Mosquitto ACL for edgebayes (acl_file in edgebayes.conf; topics in docs/protocol.md), made
# from the runtime's config by `edgebayes acl --config FILE`: run it again after changing
# [topics], [[sources]] or [homeassistant]. Installed as /etc/mosquitto/edgebayes.acl.
# Anything not granted here is denied."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE", help="the runtime's TOML config")


def main(args: argparse.Namespace) -> int:
    try:
        text = acl_text(load_config(args.config), args.config)
    except ConfigError as exc:
        print(f"edgebayes acl: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


def acl_text(config: Config, source: str = "config") -> str:
    """The ACL file for ``config`` (see the module docstring).

    Raises:
        ConfigError: ``[broker] username`` is not set (the ACL grants the runtime by user name).
    """
    user = config.broker.username
    if user is None:
        raise ConfigError([("[broker] username: not set; the ACL grants the runtime by its user name "
                            "(deploy/edgebayes.toml uses \"edgebayes\")")], source)
    prefix, devices = config.topics.prefix, config.topics.devices
    adapters = [make_adapter(i, s) for i, s in enumerate(config.sources)]
    lines = [HEADER, "",
             f"# The runtime (user \"{user}\", [broker] username): reads the devices' readings and labels,",
             "# writes predictions, drift alerts and error reports, and its own status, metrics and errors.",
             f"user {user}",
             f"topic read {prefix}/{devices}/reading",
             f"topic read {prefix}/{devices}/label",
             *(f"topic write {prefix}/+/{kind}" for kind in ("prediction", "drift", "error")),
             f"topic write {prefix}/runtime/#",
             "# and the broker's uptime: a broker restart is then not taken for a session takeover",
             "topic read $SYS/broker/uptime"]
    for a in adapters:
        lines += [f"# [[sources]] #{a.index + 1} ({a.cfg.kind}): the topics it reads",
                  *(f"topic read {f}" for f in a.filters())]
    ha = config.homeassistant
    if ha is not None and ha.discovery:
        node = ha.node_id or config.broker.client_id
        lines += ["# [homeassistant] discovery: its config messages, each device's availability and",
                  "# attributes, and Home Assistant's birth message",
                  f"topic write {ha.prefix}/+/{node}/#",
                  *(f"topic write {prefix}/+/{kind}" for kind in ("availability", "attributes")),
                  f"topic read {ha.prefix}/status"]
    lines += ["",
              (f"# A dashboard or the firmware-sim monitor (user \"{MONITOR_USER}\"): reads everything, "
               "writes nothing."),
              f"user {MONITOR_USER}", f"topic read {prefix}/#", "",
              ("# Every sensor device logs in with its device id as user name (%u): it writes its own "
               "readings"),
              "# and labels only, and reads its own predictions, drift alerts and error reports; it can",
              "# neither publish as another device nor read another device's outputs.",
              f"pattern write {prefix}/%u/reading", f"pattern write {prefix}/%u/label",
              *(f"pattern read {prefix}/%u/{kind}" for kind in ("prediction", "drift", "error"))]
    for a in adapters:
        lines += [(f"# [[sources]] #{a.index + 1} ({a.cfg.kind}): its publishers (%u: the device id as "
                   "user name; else any user)"),
                  *(f"pattern write {_writer(a, f)}" for f in a.filters())]
    return "\n".join(lines) + "\n"


def _writer(adapter: Adapter, topic_filter: str) -> str:
    """``topic_filter`` with ``%u`` at the ``+`` level the adapter takes the device id from, or
    as it is when no single ``+`` level names the device (it is then open to any user)."""
    if adapter.cfg.kind == "zigbee2mqtt" or adapter.cfg.device is not None:
        return topic_filter  # one bridge or one fixed device publishes for all
    levels = topic_filter.split("/")
    # each '+' replaced by a marker naming its level: the publisher the adapter reads is a marker
    probe = "/".join(f"\x00{i}" if lvl == "+" else lvl for i, lvl in enumerate(levels))
    publisher = adapter.publisher(probe)
    if publisher.startswith("\x00") and publisher[1:].isdigit():
        levels[int(publisher[1:])] = "%u"
    return "/".join(levels)
