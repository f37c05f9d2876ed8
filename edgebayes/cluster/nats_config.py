"""``edgebayes nats-config --config FILE [--device ID ...]``: the NATS server's part of a
cluster deployment, on stdout, for ``include`` in each node's config (deploy/nats/node.conf).

    edgebayes nats-config --config runtime.toml --device sim-0 --device sim-1 > edgebayes-nats.conf

It holds, made from the runtime config's ``[topics] prefix`` and ``[cluster] partitions``:

- ``mappings``: ``<prefix>.*.reading`` and ``.label`` to
  ``ebin.{{partition(P,1)}}.{{wildcard(1)}}.<kind>``, and the MQTT gateway's store request of
  those to ``ebpart.<P>.<device>.<kind>`` (``edgebayes.cluster.subjects``): each device's
  messages on one partition subject, always the same, acknowledged once the stream holds them;
- ``authorization``: the users of the Mosquitto ACL (``edgebayes acl``), as NATS permissions on
  the same topics as subjects. The runtime (``[cluster] username``, else ``[broker] username``)
  may use JetStream's API, its lease bucket, checkpoint heads and checkpoint store, and publish every device's
  ``prediction``, ``drift``, ``error`` and its own ``<prefix>.runtime.>``, and with
  ``[homeassistant] discovery`` write and read its configs (``<ha prefix>.*.<node_id>.*.config``)
  and write each device's ``availability`` and ``attributes`` and read Home Assistant's birth
  message ``<ha prefix>.status``; Home Assistant (``--ha-user``) reads the outputs and its
  discovery prefix and writes its birth message, ``monitor`` reads the outputs; each
  ``--device`` writes its own readings and labels
  (the server checks the mapped subject: its partition's) and reads its own outputs (a static
  NATS config has no ``%u`` pattern: one user per device id), and ``--gateway-user`` every
  device's (a gateway, firmware-sim), over MQTT or as JetStream publishes on
  ``ebpart.<P>.>``; each ``--leaf-user`` is a site's leaf node (deploy/nats/leaf.conf) joining
  the cluster: it forwards its devices' readings and labels into the partition stream (checked
  per device at the site, whose nodes include this same file) and reads the outputs and Home
  Assistant's discovery prefix for the site. Every password is a variable the server reads from its
  environment: ``$EDGEBAYES_NATS_PASSWORD_<USER>`` (the name upper-cased, ``-`` as ``_``).

``[[sources]]`` topics are not partitioned (not built). Exit 0, or 2 for a bad config, a config
without ``[cluster]`` or without a runtime user name (one line on stderr).
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from edgebayes.acl import HA_USER, MONITOR_USER, OUTPUTS
from edgebayes.cluster.config import CHECKPOINTS, GATEWAY_SUBJECT, HEADS, LEASES, PARTITION_SUBJECT, ClusterConfig
from edgebayes.cluster.subjects import KINDS, mappings, partition_of, subject
from edgebayes.runtime.config import Config, ConfigError, load_config
from edgebayes.runtime.discovery import DEFAULT_NODE
from edgebayes.runtime.names import NAME_RE

HEADER = """\
# NATS subject mappings and users for edgebayes (docs/scale-out.md), made from the runtime's
# config by `edgebayes nats-config --config FILE`: run it again after changing [topics] prefix,
# [cluster] partitions or the devices. Included by every node (deploy/nats/node.conf)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE", help="the runtime's TOML config, with [cluster]")
    parser.add_argument("--device", action="append", default=[], metavar="ID",
                        help="a device id that logs in as its own user (repeat for each)")
    parser.add_argument("--gateway-user", metavar="NAME",
                        help="a user that publishes for every device (a gateway, firmware-sim)")
    parser.add_argument("--leaf-user", action="append", default=[], metavar="NAME",
                        help="the user a site's leaf node joins the cluster as (repeat for each site)")
    parser.add_argument("--ha-user", default=HA_USER, metavar="NAME",
                        help=f"Home Assistant's user name (default {HA_USER}; '' for no Home Assistant)")


def main(args: argparse.Namespace) -> int:
    try:
        config = load_config(args.config)
        cluster = config.cluster
        if cluster is None:
            raise ConfigError(["[cluster]: missing (partitions, servers)"], args.config)
        bad = [d for d in args.device if not NAME_RE.match(d)]
        if bad:
            raise ConfigError([f"--device {bad[0]!r}: not 1-64 characters from [A-Za-z0-9_-]"], "command line")
        text = nats_config_text(config, cluster, args.device, args.ha_user or None, args.config,
                                args.gateway_user, args.leaf_user)
    except ConfigError as exc:
        print(f"edgebayes nats-config: {exc}", file=sys.stderr)
        return 2
    sys.stdout.write(text)
    return 0


def password_variable(user: str) -> str:
    """The environment variable the server reads ``user``'s password from."""
    return "EDGEBAYES_NATS_PASSWORD_" + re.sub(r"[^A-Za-z0-9]", "_", user).upper()


def nats_config_text(config: Config, cluster: ClusterConfig, devices: list[str] = (),
                     ha_user: str | None = HA_USER, source: str = "config", gateway_user: str | None = None,
                     leaf_users: list[str] = ()) -> str:
    """The include file (see the module docstring).

    Raises:
        ConfigError: neither ``[cluster] username`` nor ``[broker] username`` is set.
    """
    runtime = cluster.username or config.broker.username
    if runtime is None:
        raise ConfigError(["[cluster] username: not set (nor [broker] username); the runtime logs in "
                           "to NATS by its user name"], source)
    pre = subject(config.topics.prefix)
    lines = [HEADER, "", "mappings = {",
             *(f"  {json.dumps(src)}: {json.dumps(dst)}" for src, dst in
               mappings(config.topics.prefix, cluster.partitions).items()), "}", "",
             "authorization {", "  users = ["]
    ha = config.homeassistant
    ha_pre = subject(ha.prefix if ha is not None else "homeassistant")
    ha_pub, ha_sub = [], []  # the runtime's MQTT connection of [homeassistant] discovery
    if ha is not None and ha.discovery:
        configs = f"{ha_pre}.*.{subject(ha.node_id or DEFAULT_NODE)}.*.config"  # read back too
        ha_pub, ha_sub = [configs, f"{pre}.*.availability", f"{pre}.*.attributes"], [configs, f"{ha_pre}.status"]
    users = [(runtime, [f"{pre}.*.{k}" for k in ("prediction", "drift", "error")]
              + [f"{pre}.runtime.>", "$JS.API.>", "$JS.ACK.>", f"$KV.{LEASES}.>", f"$KV.{HEADS}.>",
                 f"$O.{CHECKPOINTS}.>", *ha_pub],
              ["_INBOX.>", f"$KV.{LEASES}.>", f"$KV.{HEADS}.>", f"$O.{CHECKPOINTS}.>", *ha_sub])]
    if ha_user is not None:
        # an MQTT subscription to <ha prefix>/# is one to the prefix's subject and to all below it
        users.append((ha_user, [f"{ha_pre}.status"],
                      [ha_pre, f"{ha_pre}.>"] + [f"{pre}.*.{k}" for k in OUTPUTS] + [f"{pre}.runtime.>"]))
    users.append((MONITOR_USER, [], [f"{pre}.>"]))
    # the server checks a publish against the mapped subject: the device's own partition subjects
    users += [(d, [f"{GATEWAY_SUBJECT}.{partition_of(d, cluster.partitions)}.{d}.{k}" for k in KINDS],
               [f"{pre}.{d}.{k}" for k in ("prediction", "drift", "error")]) for d in dict.fromkeys(devices)]
    if gateway_user is not None:
        # over MQTT (mapped), or straight into the stream with JetStream's acknowledgement
        users.append((gateway_user, [f"{base}.*.*.{k}" for base in (GATEWAY_SUBJECT, PARTITION_SUBJECT) for k in KINDS],
                      [f"{pre}.*.{k}" for k in ("prediction", "drift", "error")] + ["_INBOX.>"]))
    # a leaf node is sent the interest it may publish to: the stream's own ebpart.> (not per device)
    users += [(leaf, [f"{PARTITION_SUBJECT}.>", f"{ha_pre}.status"],
               [f"{pre}.*.{k}" for k in OUTPUTS] + [f"{pre}.runtime.>", ha_pre, f"{ha_pre}.>", "_INBOX.>"])
              for leaf in dict.fromkeys(leaf_users)]
    for user, pub, sub in users:
        perms = {"publish": {"allow": pub} if pub else {"deny": [">"]}, "subscribe": {"allow": sub}}
        lines.append(f"    {{user: {json.dumps(user)}, password: ${password_variable(user)}, "
                     f"permissions: {json.dumps(perms)}}}")
    lines += ["  ]", "}"]
    return "\n".join(lines) + "\n"
