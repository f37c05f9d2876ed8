"""The runtime's TOML config: read with ``tomllib``, checked in full before anything starts.

Every problem found is reported, one line each (unknown table or key, wrong type, value out of
range, missing feature list, a model the registry cannot build), in a single ``ConfigError``.
Keys carry their units (``interval_s``, ``max_age_s``, ``model_budget_bytes``). Tables and keys,
with defaults (``-`` = no default, ``None`` = unset)::

    [broker]      host="127.0.0.1" port=1883 client_id="edgebayes-<hostname>" keepalive_s=60
                  username=None password_file=None tls_ca_file=None tls_cert_file=None
                  tls_key_file=None tls_server_name=None (the name the broker's certificate
                  must hold; default host) tls_insecure=false (true: the certificate is not
                  verified, for test brokers) (any tls_* key turns TLS on; without
                  tls_ca_file the system's CAs verify) transport="tcp" ("tcp" | "websockets")
                  ws_path="/mqtt" protocol="mqttv5" ("mqttv5" | "mqttv311")
                  session_expiry_s=604800 reconnect_min_s=1 reconnect_max_s=60
    [topics]      prefix="edgebayes" devices="+" (a device id, or "+" for all)
    [schema]      features=- (ordered feature names) label="y" (payload key of the label)
    [[models]]    name=- kind=- (a ``edgebayes.base.KINDS`` name), then the learner's own
                  parameters under their API names (learning_rate, n_models, ...)
    [memory]      model_budget_bytes=None rss_limit_mb=None max_devices=64
    [checkpoint]  dir=None (no checkpoints, no journal) interval_s=60 sync_interval_s=1
                  (most seconds a processed message waits for the journal's group fsync
                  before it is acknowledged)
    [labels]      max_pending=1000 (per device) max_age_s=3600
    [output]      format="json" ("json" | "msgpack") prediction_qos=0 metrics_interval_s=10
                  error_interval_s=1 max_backlog_bytes=8388608 (outgoing messages not yet
                  written or acknowledged; at the bound the runtime stops taking readings)
    [queue]       max_size=10000 policy="block" ("block" | "drop_oldest")
                  max_payload_bytes=65536
    [evaluation]  accuracy_window=200 (labelled readings per model and device)
    [drift]       delta=0.002 (ADWIN confidence for models without their own detectors)
"""

from __future__ import annotations

import dataclasses
import math
import re
import socket
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebayes.base import make_learner

#: device ids, client ids and model names: one safe MQTT topic level
NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")


class ConfigError(ValueError):
    """An invalid config. ``problems`` lists one message per problem found."""

    def __init__(self, problems: list[str], source: str = "config"):
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems) if len(problems) == 1
                         else f"{source}: {len(problems)} problems:\n  " + "\n  ".join(problems))


def _default_client_id() -> str:
    host = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname())[:40] or "host"
    return f"edgebayes-{host}"


@dataclass(frozen=True)
class BrokerConfig:
    host: str = "127.0.0.1"
    port: int = 1883
    client_id: str = field(default_factory=_default_client_id)
    keepalive_s: int = 60
    username: str | None = None
    password_file: str | None = None
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    tls_server_name: str | None = None
    tls_insecure: bool = False
    transport: str = "tcp"
    ws_path: str = "/mqtt"
    protocol: str = "mqttv5"
    session_expiry_s: int = 604800
    reconnect_min_s: float = 1.0
    reconnect_max_s: float = 60.0

    @property
    def tls(self) -> bool:
        """Whether the connection uses TLS: any ``tls_*`` key is set."""
        return bool(self.tls_ca_file or self.tls_cert_file or self.tls_server_name or self.tls_insecure)


@dataclass(frozen=True)
class TopicsConfig:
    prefix: str = "edgebayes"
    devices: str = "+"


@dataclass(frozen=True)
class SchemaConfig:
    features: tuple[str, ...]
    label: str = "y"


@dataclass(frozen=True)
class ModelConfig:
    name: str
    kind: str
    params: dict[str, Any]

    def build(self):
        """A fresh learner of this kind with these parameters."""
        return make_learner(self.kind, **self.params)


@dataclass(frozen=True)
class MemoryConfig:
    model_budget_bytes: int | None = None
    rss_limit_mb: float | None = None
    max_devices: int = 64


@dataclass(frozen=True)
class CheckpointConfig:
    dir: Path | None = None
    interval_s: float = 60.0
    sync_interval_s: float = 1.0


@dataclass(frozen=True)
class LabelsConfig:
    max_pending: int = 1000
    max_age_s: float = 3600.0


@dataclass(frozen=True)
class OutputConfig:
    format: str = "json"
    prediction_qos: int = 0
    metrics_interval_s: float = 10.0
    error_interval_s: float = 1.0
    max_backlog_bytes: int = 8 * 2**20


@dataclass(frozen=True)
class QueueConfig:
    max_size: int = 10000
    policy: str = "block"
    max_payload_bytes: int = 65536


@dataclass(frozen=True)
class EvaluationConfig:
    accuracy_window: int = 200


@dataclass(frozen=True)
class DriftConfig:
    delta: float = 0.002


@dataclass(frozen=True)
class Config:
    schema: SchemaConfig
    models: tuple[ModelConfig, ...]
    broker: BrokerConfig = field(default_factory=BrokerConfig)
    topics: TopicsConfig = field(default_factory=TopicsConfig)
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    labels: LabelsConfig = field(default_factory=LabelsConfig)
    output: OutputConfig = field(default_factory=OutputConfig)
    queue: QueueConfig = field(default_factory=QueueConfig)
    evaluation: EvaluationConfig = field(default_factory=EvaluationConfig)
    drift: DriftConfig = field(default_factory=DriftConfig)
    # input adapters and HA discovery (edgebayes.runtime.sources, .discovery)
    sources: tuple = ()
    assembler: Any = None
    homeassistant: Any = None

    def with_overrides(self, broker: str | None = None, checkpoint_dir: str | None = None) -> Config:
        """A copy with the command line's ``--broker HOST:PORT`` / ``--checkpoint-dir`` applied.

        Raises:
            ConfigError: ``broker`` is not HOST:PORT with a port in 1..65535.
        """
        cfg = self
        if broker is not None:
            host, sep, port = broker.rpartition(":")
            if not (sep and host and port.isdigit()):
                raise ConfigError([f"--broker {broker!r}: expected HOST:PORT"], "command line")
            if not 1 <= int(port) <= 65535:
                raise ConfigError([f"--broker {broker!r}: port {port} is out of range 1..65535"], "command line")
            cfg = dataclasses.replace(cfg, broker=dataclasses.replace(cfg.broker, host=host, port=int(port)))
        if checkpoint_dir is not None:
            cfg = dataclasses.replace(
                cfg, checkpoint=dataclasses.replace(cfg.checkpoint, dir=Path(checkpoint_dir)))
        return cfg


#: what to do about a missing file named by a [broker] key
_FILE_HINTS = {"password_file": " (create it, see deploy/install.sh, or remove username/password_file)"}


def check_files(config: Config, source: str = "config") -> None:
    """Check that the files the config names (``[broker] password_file``, ``tls_*_file``) can be
    read now, at start, rather than failing on the first connection attempt.

    Raises:
        ConfigError: one line per file: the key, the path and why it cannot be read.
    """
    problems = []
    for key in ("password_file", "tls_ca_file", "tls_cert_file", "tls_key_file"):
        path = getattr(config.broker, key)
        if path is None:
            continue
        try:
            with open(path, "rb"):
                pass
        except FileNotFoundError:
            problems.append(f"[broker] {key} {path}: no such file{_FILE_HINTS.get(key, '')}")
        except IsADirectoryError:
            problems.append(f"[broker] {key} {path}: a folder, not a file")
        except OSError as exc:
            problems.append(f"[broker] {key} {path}: cannot read ({exc.strerror})")
    if problems:
        raise ConfigError(problems, source)


# --- checks: each returns an error message or None -------------------------------------------

def _positive(v):
    return None if v > 0 else "must be > 0"


def _non_negative(v):
    return None if v >= 0 else "must be >= 0"


def _one_of(*choices):
    return lambda v: None if v in choices else f"must be one of {', '.join(map(repr, choices))}"


def _name(v):
    return None if NAME_RE.match(v) else "must be 1 to 64 characters from [A-Za-z0-9_-]"


def _port(v):
    return None if 1 <= v <= 65535 else "must be in 1..65535"


def _prefix(v):
    if v.startswith("$"):  # $share/..., $SYS: broker-reserved, incoming topics never carry them
        return ("must not start with '$' ($share/ shared subscriptions are not supported: "
                "each runtime serves the devices its [topics] devices names)")
    levels = v.split("/")
    if not v or any(not lvl or "+" in lvl or "#" in lvl for lvl in levels):
        return "must be non-empty topic levels without wildcards, no leading or trailing '/'"
    return None


def _ws_path(v):
    return None if v.startswith("/") else "must start with '/'"


def _devices(v):
    return None if v == "+" else _name(v)


def _features(v):
    if not v:
        return "must list at least one feature name"
    if not all(isinstance(f, str) and f for f in v):
        return "must hold non-empty strings"
    if len(set(v)) != len(v):
        return "holds a name twice"
    return None


def _label(v):
    return "must not be one of the reading's own keys (seq, ts, x)" if v in ("seq", "ts", "x") else None


def _window(v):
    return None if 1 <= v <= 100000 else "must be in 1..100000"


def _receive_max(v):
    return None if 1 <= v <= 65535 else "must be in 1..65535 (MQTT receive maximum)"


def _backlog(v):
    return None if v >= 65536 else "must be at least 65536 (a few messages)"


def _delta(v):
    return None if 0 < v < 1 else "must be in (0, 1)"


INT, NUM, STR, LIST, BOOL = (int,), (int, float), (str,), (list,), (bool,)

#: table -> key -> (accepted types, check or None, dataclass field); missing = dataclass default
SPEC: dict[str, tuple[type, dict[str, tuple[tuple[type, ...], Callable | None]]]] = {
    "broker": (BrokerConfig, {
        "host": (STR, lambda v: None if v else "must not be empty"),
        "port": (INT, _port),
        "client_id": (STR, _name),
        "keepalive_s": (INT, _positive),
        "username": (STR, None),
        "password_file": (STR, None),
        "tls_ca_file": (STR, None),
        "tls_cert_file": (STR, None),
        "tls_key_file": (STR, None),
        "tls_server_name": (STR, lambda v: None if v else "must not be empty"),
        "tls_insecure": (BOOL, None),
        "transport": (STR, _one_of("tcp", "websockets")),
        "ws_path": (STR, _ws_path),
        "protocol": (STR, _one_of("mqttv5", "mqttv311")),
        "session_expiry_s": (INT, _non_negative),
        "reconnect_min_s": (NUM, _positive),
        "reconnect_max_s": (NUM, _positive),
    }),
    "topics": (TopicsConfig, {"prefix": (STR, _prefix), "devices": (STR, _devices)}),
    "schema": (SchemaConfig, {"features": (LIST, _features), "label": (STR, _label)}),
    "memory": (MemoryConfig, {
        "model_budget_bytes": (INT, _positive),
        "rss_limit_mb": (NUM, _positive),
        "max_devices": (INT, _positive),
    }),
    "checkpoint": (CheckpointConfig, {"dir": (STR, None), "interval_s": (NUM, _positive),
                                      "sync_interval_s": (NUM, _positive)}),
    "labels": (LabelsConfig, {"max_pending": (INT, _non_negative), "max_age_s": (NUM, _positive)}),
    "output": (OutputConfig, {
        "format": (STR, _one_of("json", "msgpack")),
        "prediction_qos": (INT, _one_of(0, 1)),
        "metrics_interval_s": (NUM, _positive),
        "error_interval_s": (NUM, _non_negative),
        "max_backlog_bytes": (INT, _backlog),
    }),
    "queue": (QueueConfig, {
        "max_size": (INT, _receive_max),
        "policy": (STR, _one_of("block", "drop_oldest")),
        "max_payload_bytes": (INT, _positive),
    }),
    "evaluation": (EvaluationConfig, {"accuracy_window": (INT, _window)}),
    "drift": (DriftConfig, {"delta": (NUM, _delta)}),
}


def _type_ok(value, types) -> bool:
    if isinstance(value, bool):  # TOML true is not a number
        return bool in types
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, types)


def _table(name: str, raw: Any, problems: list[str]) -> Any:
    cls, keys = SPEC[name]
    if not isinstance(raw, dict):
        problems.append(f"[{name}] must be a table")
        return None
    values = {}
    for key, value in raw.items():
        if key not in keys:
            problems.append(f"[{name}] unknown key {key!r}; known: {', '.join(keys)}")
            continue
        types, check = keys[key]
        if not _type_ok(value, types):
            problems.append(f"[{name}] {key} = {value!r}: expected {' or '.join(t.__name__ for t in types)}")
            continue
        message = check(value) if check else None
        if message:
            problems.append(f"[{name}] {key} = {value!r}: {message}")
            continue
        values[key] = value
    if name == "schema":
        if "features" not in raw:
            problems.append("[schema] features: missing (the ordered list of feature names)")
            return None
        if "features" not in values:
            return None
        values["features"] = tuple(values["features"])
    if name == "checkpoint" and "dir" in values:
        values["dir"] = Path(values["dir"])
    return cls(**values)


def _models(raw: Any, problems: list[str]) -> tuple[ModelConfig, ...]:
    if not isinstance(raw, list) or not raw:
        problems.append("[[models]]: at least one model is required")
        return ()
    models, names = [], set()
    for i, table in enumerate(raw):
        where = f"[[models]] #{i + 1}"
        if not isinstance(table, dict):
            problems.append(f"{where}: must be a table")
            continue
        params = dict(table)
        name, kind = params.pop("name", None), params.pop("kind", None)
        if not isinstance(name, str) or _name(name):
            problems.append(f"{where}: name must be 1 to 64 characters from [A-Za-z0-9_-], got {name!r}")
            continue
        where = f"[[models]] {name!r}"
        if name in names:
            problems.append(f"{where}: the name is used twice")
            continue
        names.add(name)
        if not isinstance(kind, str):
            problems.append(f"{where}: kind must be a string, got {kind!r}")
            continue
        model = ModelConfig(name, kind, params)
        try:
            model.build()  # the learner checks its own parameters
        except ModuleNotFoundError as exc:
            problems.append(f"{where}: kind {kind!r} is not available in this installation ({exc.name})")
            continue
        except (ValueError, TypeError) as exc:
            problems.append(f"{where}: {exc}")
            continue
        models.append(model)
    return tuple(models)


EXTRA_TABLES = ("sources", "assembler", "homeassistant")  # parsed by edgebayes.runtime.sources


def parse_config(raw: dict, source: str = "config") -> Config:
    """Validate a decoded TOML document and return the ``Config``.

    Raises:
        ConfigError: listing every problem found, one per line.
    """
    problems: list[str] = []
    for name in raw:
        if name not in SPEC and name not in ("models", *EXTRA_TABLES):
            problems.append(f"unknown table [{name}]; known: {', '.join([*SPEC, 'models', *EXTRA_TABLES])}")
    if "schema" not in raw:
        problems.append("[schema]: missing (features = the ordered list of feature names)")
    tables = {name: _table(name, raw[name], problems) for name in SPEC if name in raw}
    from edgebayes.runtime.sources import parse_tables  # imports this module

    schema, output = tables.get("schema"), tables.get("output") or OutputConfig()
    tables.update(parse_tables(raw, schema and schema.features, output.format, problems))
    models = _models(raw.get("models"), problems)
    broker = tables.get("broker")
    if broker and broker.reconnect_min_s > broker.reconnect_max_s:
        problems.append("[broker] reconnect_min_s must not exceed reconnect_max_s")
    if broker and (broker.tls_cert_file is None) != (broker.tls_key_file is None):
        problems.append("[broker] tls_cert_file and tls_key_file go together")
    if broker and "ws_path" in raw.get("broker", {}) and broker.transport != "websockets":
        problems.append('[broker] ws_path needs transport = "websockets"')
    if problems:
        raise ConfigError(problems, source)
    return Config(models=models, **{k: v for k, v in tables.items()})


def load_config(path: str | Path) -> Config:
    """Read and validate a TOML config file.

    Raises:
        ConfigError: unreadable file, invalid TOML, or invalid content (every problem listed).
    """
    path = Path(path)
    try:
        raw = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError([f"cannot read: {exc.strerror}"], str(path)) from None
    except UnicodeDecodeError as exc:
        raise ConfigError([f"cannot read: not UTF-8 text (byte 0x{exc.object[exc.start]:02x} at offset "
                           f"{exc.start})"], str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"invalid TOML: {exc}"], str(path)) from None
    return parse_config(raw, str(path))
