"""The ``[cluster]`` table of a runtime config: partitions, which of them this runtime may own,
the NATS servers and the lease.

    [cluster]
    servers = ["nats://10.0.0.1:4222", "nats://10.0.0.2:4222", "nats://10.0.0.3:4222"]
    partitions = 64          # fixed key groups, chosen once per deployment (the mapping's P)
    own = "all"              # or a list of partition numbers this runtime may own
    lease_ttl_s = 6.0        # a partition whose owner stops renewing is free after this
    checkpoint_interval_s = 5.0
    username = "edgebayes"   # the NATS user (edgebayes nats-config), password in password_file
    password_file = "/etc/edgebayes/nats-password"

``load_cluster(path)`` reads it from the same TOML file as the runtime's config; a config
without the table is a single runtime (None).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field, fields
from pathlib import Path

from edgebayes.runtime.config import ConfigError

#: the subject the server's mapping puts readings and labels on: <subject>.<P>.<device>.<kind>
PARTITION_SUBJECT = "ebpart"
#: JetStream names: the stream of partition subjects, the lease bucket, the checkpoint store
STREAM, LEASES, CHECKPOINTS = "EDGEBAYES_PARTITIONS", "edgebayes_leases", "edgebayes_checkpoints"


@dataclass(frozen=True)
class ClusterConfig:
    """The ``[cluster]`` table (see the module docstring).

    Attributes:
        servers: NATS URLs (``nats://host:port``), any node of the cluster.
        partitions: P, the number of partitions (1..1024); the server's mapping must use the same.
        own: the partitions this runtime may own, sorted (default: all of 0..P-1).
        lease_ttl_s: seconds after the last renewal at which a lease is free (> 1); renewed
            every third of it.
        checkpoint_interval_s: seconds between two checkpoint uploads of each changed partition.
        replicas: JetStream replicas of the stream, the leases and the checkpoints (1..5).
        username, password_file: the NATS user and a file whose first line is its password.
    """

    servers: tuple[str, ...] = ("nats://127.0.0.1:4222",)
    partitions: int = 64
    own: tuple[int, ...] = field(default=())
    lease_ttl_s: float = 6.0
    checkpoint_interval_s: float = 5.0
    replicas: int = 3
    username: str | None = None
    password_file: Path | None = None

    def password(self) -> str | None:
        """The first line of ``password_file`` (None without one). Raises OSError."""
        if self.password_file is None:
            return None
        lines = self.password_file.read_text(encoding="utf-8").splitlines()
        return lines[0] if lines else ""


def parse_cluster(raw: dict, source: str = "config") -> ClusterConfig:
    """The ``[cluster]`` table ``raw`` (a decoded TOML table) checked in full.

    Raises:
        ConfigError: every problem, one line each (unknown key, wrong type, out of range).
    """
    problems: list[str] = []
    known = {f.name for f in fields(ClusterConfig)}
    problems += [f"[cluster] unknown key {k!r}; known: {', '.join(sorted(known))}" for k in raw if k not in known]
    out: dict = {}
    servers = raw.get("servers", list(ClusterConfig.servers))
    if not (isinstance(servers, list) and servers and all(isinstance(s, str) and "://" in s for s in servers)):
        problems.append('[cluster] servers must be a non-empty list of URLs like "nats://host:4222"')
    out["servers"] = tuple(servers) if isinstance(servers, list) else ()
    p = raw.get("partitions", ClusterConfig.partitions)
    if type(p) is not int or not 1 <= p <= 1024:
        problems.append(f"[cluster] partitions must be an integer in 1..1024, got {p!r}")
        p = 1
    out["partitions"] = p
    own = raw.get("own", "all")
    if own == "all":
        out["own"] = tuple(range(p))
    elif isinstance(own, list) and own and all(type(i) is int and 0 <= i < p for i in own):
        out["own"] = tuple(sorted(set(own)))
    else:
        problems.append(f'[cluster] own must be "all" or a non-empty list of partitions in 0..{p - 1}')
    for key, low in (("lease_ttl_s", 1.0), ("checkpoint_interval_s", 0.0)):
        v = raw.get(key, getattr(ClusterConfig, key))
        if type(v) not in (int, float) or not v > low:
            problems.append(f"[cluster] {key} must be a number > {low:g}, got {v!r}")
        out[key] = float(v) if type(v) in (int, float) else 0.0
    replicas = raw.get("replicas", ClusterConfig.replicas)
    if type(replicas) is not int or not 1 <= replicas <= 5:
        problems.append(f"[cluster] replicas must be an integer in 1..5, got {replicas!r}")
    out["replicas"] = replicas
    for key in ("username", "password_file"):
        v = raw.get(key)
        if v is not None and (not isinstance(v, str) or not v):
            problems.append(f"[cluster] {key} must be a non-empty string")
        out[key] = Path(v) if key == "password_file" and isinstance(v, str) else v
    if problems:
        raise ConfigError(problems, source)
    return ClusterConfig(**out)


def load_cluster(path: str | Path) -> ClusterConfig | None:
    """The ``[cluster]`` table of the TOML file at ``path``; None when it has none.

    Raises:
        ConfigError: an unreadable file, invalid TOML or an invalid table.
    """
    try:
        raw = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError([f"cannot read: {exc}"], str(path)) from None
    if "cluster" not in raw:
        return None
    if not isinstance(raw["cluster"], dict):
        raise ConfigError(["[cluster] must be a table"], str(path))
    return parse_cluster(raw["cluster"], str(path))
