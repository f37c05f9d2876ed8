"""``edgebayes acl --config FILE``: the Mosquitto ACL file for a runtime config, on stdout.

    edgebayes acl --config /etc/edgebayes/edgebayes.toml > /etc/mosquitto/edgebayes.acl

Grants, and nothing else (Mosquitto denies what an ACL file does not grant):

- the runtime (user ``[broker] username``): read ``<prefix>/<devices>/reading`` and ``label``,
  write every device's ``prediction``, ``drift`` and ``error`` and its own
  ``<prefix>/runtime/#``; read every topic its ``[[sources]]`` subscribe to (data and
  availability); with ``[homeassistant] discovery``, write its discovery configs
  ``<ha prefix>/+/<node_id>/#`` (read and write: node ``edgebayes`` without ``node_id``, and the
  client id's, where older releases put them) and each device's ``availability`` and ``attributes``, and read
  ``<ha prefix>/status``;
- Home Assistant (user ``--ha-user``, default ``homeassistant``; ``--ha-user ''`` leaves it
  out): read its discovery prefix ``<ha prefix>/#`` (``[homeassistant] prefix``, default
  ``homeassistant``), write its birth message ``<ha prefix>/status``, read the runtime's outputs;
- user ``monitor`` (a dashboard, the firmware-sim monitor): read ``<prefix>/#``;
- every device, logged in with its device id as user name (``%u``): write its own readings and
  labels, read its own outputs; for each ``[[sources]]`` topic whose device id is a ``+``
  level, write that topic with its own id there (``tele/%u/SENSOR``);
- a topic no ``+`` level of which names the device is written by one user only: a zigbee2mqtt
  bridge's topics by the bridge's user (``--bridge-user``, default ``zigbee2mqtt``), a fixed
  ``device``'s by that device id, a fixed topic (ESPHome's ``node1/sensor/t/state``) by the
  device it names.

No line is granted twice. Deploy/install.sh puts this output between the markers of the
generated block of /etc/mosquitto/edgebayes.acl (or of the broker's own acl_file), where the
user's lines outside the block are kept; deploy/mosquitto/edgebayes.acl is this command's output
for deploy/edgebayes.toml. Exit 0, or 2 for a bad config or a config without
``[broker] username`` (one line on stderr).
"""

from __future__ import annotations

import argparse
import sys

from edgebayes.runtime.config import Config, ConfigError, load_config
from edgebayes.runtime.discovery import DEFAULT_NODE
from edgebayes.runtime.ingest.adapter import Adapter
from edgebayes.runtime.ingest.adapters import make_adapter

#: the read-only user of dashboards and the firmware-sim monitor
MONITOR_USER = "monitor"
#: Home Assistant's user name (its MQTT integration's default in the add-on and most guides)
HA_USER = "homeassistant"
#: the user a zigbee2mqtt bridge logs in with (its configuration.yaml ``mqtt: user:``)
BRIDGE_USER = "zigbee2mqtt"
#: the runtime's outputs a reader such as Home Assistant reads, per device
OUTPUTS = ("prediction", "drift", "error", "availability", "attributes")

HEADER = """\
# Mosquitto ACL for edgebayes (acl_file in edgebayes.conf; topics in docs/protocol.md), made
# from the runtime's config by `edgebayes acl --config FILE`: run it again after changing
# [topics], [[sources]] or [homeassistant]. Installed as /etc/mosquitto/edgebayes.acl.
# Anything not granted here is denied."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE", help="the runtime's TOML config")
    parser.add_argument("--ha-user", default=HA_USER, metavar="NAME",
                        help=f"Home Assistant's user name (default {HA_USER}; '' for no Home Assistant)")
    parser.add_argument("--bridge-user", default=BRIDGE_USER, metavar="NAME",
                        help=f"the zigbee2mqtt bridge's user name (default {BRIDGE_USER})")


def main(args: argparse.Namespace) -> int:
    try:
        text = acl_text(load_config(args.config), args.config, args.ha_user or None, args.bridge_user)
    except ConfigError as exc:
        print(f"edgebayes acl: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


def acl_text(config: Config, source: str = "config", ha_user: str | None = HA_USER,
             bridge_user: str = BRIDGE_USER) -> str:
    """The ACL file for ``config`` (see the module docstring); ``ha_user`` None leaves Home
    Assistant out.

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
        # its own node (read too: an earlier run's retained configs), and the client id's (older releases)
        nodes = dict.fromkeys([ha.node_id or DEFAULT_NODE, *([] if ha.node_id else [config.broker.client_id])])
        lines += ["# [homeassistant] discovery: its config messages, each device's availability and",
                  "# attributes, and Home Assistant's birth message",
                  *(f"topic readwrite {ha.prefix}/+/{node}/#" for node in nodes),
                  *(f"topic write {prefix}/+/{kind}" for kind in ("availability", "attributes")),
                  f"topic read {ha.prefix}/status"]
    if ha_user is not None:
        ha_prefix = ha.prefix if ha is not None else "homeassistant"
        lines += ["", (f"# Home Assistant (user \"{ha_user}\"): its discovery prefix, its birth message and "
                       "the runtime's outputs"),
                  f"user {ha_user}", f"topic read {ha_prefix}/#", f"topic write {ha_prefix}/status",
                  *(f"topic read {prefix}/+/{kind}" for kind in OUTPUTS), f"topic read {prefix}/runtime/#"]
    lines += ["",
              (f"# A dashboard or the firmware-sim monitor (user \"{MONITOR_USER}\"): reads everything, "
               "writes nothing."),
              f"user {MONITOR_USER}", f"topic read {prefix}/#"]
    lines += _publishers(adapters, bridge_user)
    lines += ["",
              ("# Every sensor device logs in with its device id as user name (%u): it writes its own "
               "readings"),
              "# and labels only, and reads its own predictions, drift alerts and error reports; it can",
              "# neither publish as another device nor read another device's outputs.",
              f"pattern write {prefix}/%u/reading", f"pattern write {prefix}/%u/label",
              *(f"pattern read {prefix}/%u/{kind}" for kind in ("prediction", "drift", "error"))]
    for a in adapters:
        patterns = [f"pattern write {w}" for f in a.filters() if "%u" in (w := _writer(a, f))]
        if patterns:
            lines += [f"# [[sources]] #{a.index + 1} ({a.cfg.kind}): each device its own topics (%u: its id)",
                      *patterns]
    return "\n".join(_unique(lines)) + "\n"


def _publishers(adapters: list[Adapter], bridge_user: str) -> list[str]:
    """``user`` sections for the topics no ``+`` level of which names the device: each written
    by the one user that publishes it (the bridge, the fixed device, the device the topic names)."""
    by_user: dict[str, list[str]] = {}
    for a in adapters:
        for f in a.filters():
            if "%u" in _writer(a, f):
                continue
            if a.cfg.kind == "zigbee2mqtt":
                owner = bridge_user
            elif a.cfg.device is not None:
                owner = a.cfg.device
            else:
                owner = a.publisher(f)
            by_user.setdefault(owner, []).append(f"topic write {f}")
    lines = []
    for owner, grants in by_user.items():
        lines += ["", f"# [[sources]]: topics that user \"{owner}\" alone publishes (a bridge for its devices, "
                      "or one fixed device)",
                  f"user {owner}", *grants]
    return lines


def _unique(lines: list[str]) -> list[str]:
    """``lines`` without a grant repeated in the same ``user`` section (or among the patterns)."""
    seen: set[tuple[str, str]] = set()
    out, section = [], ""
    for line in lines:
        if line.startswith("user "):
            section = line
        key = ("pattern" if line.startswith("pattern ") else section, line)
        if line.startswith(("topic ", "pattern ")):
            if key in seen:
                continue
            seen.add(key)
        out.append(line)
    return out


def _writer(adapter: Adapter, topic_filter: str) -> str:
    """``topic_filter`` with ``%u`` at the ``+`` level the adapter takes the device id from, or
    as it is when no single ``+`` level names the device (one user publishes it: ``_publishers``)."""
    if adapter.cfg.kind == "zigbee2mqtt" or adapter.cfg.device is not None:
        return topic_filter  # one bridge or one fixed device publishes for all
    levels = topic_filter.split("/")
    # each '+' replaced by a marker naming its level: the publisher the adapter reads is a marker
    probe = "/".join(f"\x00{i}" if lvl == "+" else lvl for i, lvl in enumerate(levels))
    publisher = adapter.publisher(probe)
    if publisher.startswith("\x00") and publisher[1:].isdigit():
        levels[int(publisher[1:])] = "%u"
    return "/".join(levels)
