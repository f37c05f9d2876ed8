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
    [[models]]    name=- kind=- (a ``edgebayes.base.KINDS`` name) previous_name=None (restore the
                  checkpointed model of that name and kind under this one), then the learner's own
                  parameters under their API names (learning_rate, n_models, ...)
    [memory]      model_budget_bytes=None rss_limit_mb=None max_devices=64
                  evict_idle_s=10 (with checkpoints: a device idle this long may be
                  checkpointed and evicted for a new one) new_devices_per_min=60 (per source)
    [checkpoint]  enabled=true (false: no checkpoints, no journal: everything learned is
                  lost at restart) dir=<state dir> (the systemd unit's $STATE_DIRECTORY, else
                  $XDG_STATE_HOME/edgebayes/<[broker] client_id>, XDG_STATE_HOME defaulting to
                  ~/.local/state; see ``default_checkpoint_dir``) interval_s=60
                  sync_interval_s=1 (most seconds a processed message waits for the
                  journal's group fsync before it is acknowledged)
    [labels]      max_pending=1000 (per device) max_age_s=3600
    [output]      format="json" ("json" | "msgpack") prediction_qos=0 metrics_interval_s=10
                  error_interval_s=1 max_backlog_bytes=1048576 (outgoing messages not yet
                  written or acknowledged; at the bound the runtime stops taking readings)
    [queue]       max_size=10000 policy="block" ("block" | "drop_oldest")
                  max_payload_bytes=65536
    [evaluation]  accuracy_window=200 (labelled readings per model and device)
    [drift]       delta=0.002 (ADWIN confidence for models without their own detectors)
    [[sources]]   kind=- ("edgebayes" | "zigbee2mqtt" | "tasmota" | "esphome" | "shelly" | "json")
                  topic=None (filter of the messages whose JSON payload holds the features;
                      for "edgebayes": the protocol prefix)
                  device=None (a fixed device id for everything this source reads) or
                  device_level=<per kind> (index of the topic level naming the device; negative
                      counts from the end; the level is made a device id by turning characters
                      outside [A-Za-z0-9_-] into "_")
                  availability_topic=None (an extra availability filter; "json" has no other)
                  features={} (feature name -> where its value lives, see below)
                  label=None (where the label lives, same forms as a feature)
                  label_values={} (wire value as text -> label: "ON", "true", "1", "idle")
                  label_window_before_s=0 (readings up to this long before a label get it as a
                      delayed label, by seq) label_window_after_s=60 (readings assembled up to
                      this long after it get it inline)
    [assembler]   interval_s=0 (0: a reading when every feature was reported since the last
                      reading, a value or "no value now", or one is reported again before
                      that; > 0: a reading every interval_s s from the latest values, the
                      first once every feature was reported, at most 5 s after the first value)
                  max_age_s=600 (older values are missing: NaN) dedupe_s=1 (a byte-identical
                  publish on the same topic within this is a repeat, dropped)
                  accept_retained=false (retained values delivered on subscribe are stale)
                  min_features=1 (a reading with fewer present features is not served:
                      counted and reported as ``too_few_values``; at most the schema's count)
    [homeassistant]  discovery=false prefix="homeassistant" node_id=None (the configs' node
                     level is "edgebayes"; a node_id also goes into every unique_id)
                     drift="event" ("event" | "binary_sensor") drift_off_delay_s=600
                     offline_after_s=3600 retire_after_s=None (never)
                     configs="entity" (one config per entity; "device": one per device with
                     ``cmps``, Home Assistant 2024.11+) entity_ids=true (false: no
                     default_entity_id or object_id, HA's own entity-id format applies)

Where a value lives: ``"BME280.Temperature"`` (a key path into the JSON payload of a message on
``topic``; quote keys holding dots: ``'PMS5003."PM2.5"'``), a list of such paths (the first
present wins: translated firmware, ``["BME280.Temperature", "BME280.Temperatur"]``), or a
topic: a string with a ``/`` (``"livingroom/sensor/temperature/state"``, wildcards allowed)
whose plain payload is the value, or ``{topic = "...", path = "..."}`` for JSON on that topic.
A path element ``NAME[KEY=VALUE]`` picks a block by what it holds: the block named ``NAME`` or
``NAME-<n>`` whose ``KEY`` is ``VALUE`` (as text). Several Tasmota DS18B20 probes are
``DS18B20-1``, ``DS18B20-2``, ... in bus order, renumbered when one is removed (``DS18B20``
alone when one is left), so name each by its 1-Wire ``Id``:
``"DS18B20[Id=01144A0CB8AA].Temperature"``; a probe that is gone is missing (NaN), never
another probe's value. Quote a key holding ``[`` (``'"a[1]".b'``).

What the input tables do: ``edgebayes.runtime.ingest`` ([[sources]], [assembler]) and
``edgebayes.runtime.discovery`` ([homeassistant]).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import socket
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebayes.base import make_learner
from edgebayes.runtime.names import NAME_RE


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
    previous_name: str | None = None  # a checkpoint's model of this name and kind is restored as this one

    def build(self):
        """A fresh learner of this kind with these parameters."""
        return make_learner(self.kind, **self.params)


@dataclass(frozen=True)
class MemoryConfig:
    model_budget_bytes: int | None = None
    rss_limit_mb: float | None = None
    max_devices: int = 64
    evict_idle_s: float = 10.0
    new_devices_per_min: int = 60


@dataclass(frozen=True)
class CheckpointConfig:
    """``dir`` None: no checkpoints and no journal. ``parse_config`` fills in
    ``default_checkpoint_dir`` unless the document says ``enabled = false``."""

    dir: Path | None = None
    enabled: bool = True
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
    max_backlog_bytes: int = 2**20


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
    # input adapters (edgebayes.runtime.ingest) and HA discovery (edgebayes.runtime.discovery)
    sources: tuple[SourceConfig, ...] = ()
    assembler: AssemblerConfig | None = None
    homeassistant: DiscoveryConfig | None = None

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
        "evict_idle_s": (NUM, _non_negative),
        "new_devices_per_min": (INT, _positive),
    }),
    "checkpoint": (CheckpointConfig, {"enabled": (BOOL, None), "dir": (STR, None), "interval_s": (NUM, _positive),
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
        previous = params.pop("previous_name", None)
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
        if previous is not None and (not isinstance(previous, str) or _name(previous) or previous == name):
            problems.append(f"{where}: previous_name must be another model name, got {previous!r}")
            continue
        model = ModelConfig(name, kind, params, previous)
        try:
            model.build()  # the learner checks its own parameters
        except ModuleNotFoundError as exc:
            problems.append(f"{where}: kind {kind!r} is not available in this installation ({exc.name})")
            continue
        except (ValueError, TypeError) as exc:
            problems.append(f"{where}: {exc}")
            continue
        models.append(model)
    problems.extend(f"[[models]] {m.name!r}: previous_name {m.previous_name!r} is a configured model (it keeps "
                    "its own checkpoint)" for m in models if m.previous_name in names)
    return tuple(models)


# --- [[sources]] and [assembler] ------------------------------------------------------------

#: ``[[sources]] kind`` values (one ``edgebayes.runtime.ingest`` adapter each)
SOURCE_KINDS = ("edgebayes", "zigbee2mqtt", "tasmota", "esphome", "shelly", "json")


@dataclass(frozen=True)
class Spec:
    """Where one value lives: on ``topic`` (plain payload unless ``paths``), else at one of
    ``paths`` (key tuples, first present wins) in the JSON of the source's ``topic``."""

    topic: str | None
    paths: tuple[tuple[str | Select, ...], ...]


@dataclass(frozen=True)
class SourceConfig:
    kind: str
    topic: str | None = None
    device: str | None = None
    device_level: int | None = None
    availability_topic: str | None = None
    features: tuple[tuple[str, Spec], ...] = ()
    label: Spec | None = None
    label_values: tuple[tuple[str, Any], ...] = ()
    label_window_before_s: float = 0.0
    label_window_after_s: float = 60.0


@dataclass(frozen=True)
class AssemblerConfig:
    interval_s: float = 0.0
    max_age_s: float = 600.0
    dedupe_s: float = 1.0
    accept_retained: bool = False
    min_features: int = 1


@dataclass(frozen=True)
class Select:
    """A key path element choosing a block by what it holds rather than by its name: the first
    block named ``name`` or ``name-<n>`` (Tasmota numbers several sensors of one kind, and
    renumbers them when one is removed) whose ``key`` is ``value`` as text
    (``DS18B20[Id=01144A0CB8AA]``)."""

    name: str
    key: str
    value: str

    def named(self, name: str) -> bool:
        """Whether a block key is ``name`` or ``name-<n>``."""
        n = len(self.name)
        return name == self.name or (name[:n] == self.name and name[n:n + 1] == "-" and name[n + 1:].isdigit())

    def holds(self, v: Any) -> bool:
        """Whether a block's ``key`` value ``v`` is ``value`` as text."""
        return type(v) in (str, int) and str(v) == self.value


def parse_path(text: str) -> tuple[str | Select, ...]:
    """``'a.b'`` -> ``("a", "b")``; ``'PMS5003."PM2.5"'`` -> ``("PMS5003", "PM2.5")``;
    ``'DS18B20[Id=01144A0CB8AA].Temperature'`` -> ``(Select("DS18B20", "Id", "01144A0CB8AA"),
    "Temperature")``.

    Raises:
        ValueError: an empty key, an unclosed quote or ``[``, a selector that is not
            ``[key=value]``, or text after a closing quote or ``]``.
    """
    keys: list[str | Select] = []
    i, n = 0, len(text)
    while True:
        key, i = _path_key(text, i)
        if i < n and text[i] == "[":
            key, i = _path_select(text, key, i)
        keys.append(key)
        if i == n:
            return tuple(keys)
        if text[i] != ".":
            raise ValueError(f"path {text!r}: expected '.' after a quoted key or a selector")
        i += 1


def _path_key(text: str, i: int) -> tuple[str, int]:
    """The key starting at ``i`` (quoted, or up to the next ``.`` or ``[``) and where it ends."""
    if i < len(text) and text[i] == '"':
        j = text.find('"', i + 1)
        if j < 0:
            raise ValueError(f"path {text!r}: unclosed quote")
        return text[i + 1:j], j + 1
    j = next((k for k in range(i, len(text)) if text[k] in ".["), len(text))
    if j == i:
        raise ValueError(f"path {text!r}: empty key")
    return text[i:j], j


def _path_select(text: str, name: str, i: int) -> tuple[Select, int]:
    """The ``[key=value]`` selector at ``i`` (after the block ``name``) and where it ends."""
    j = text.find("]", i)
    if j < 0:
        raise ValueError(f"path {text!r}: unclosed '['")
    key, eq, value = text[i + 1:j].partition("=")
    if not key or not eq or not value:
        raise ValueError(f"path {text!r}: a selector is [key=value], e.g. DS18B20[Id=01144A0CB8AA]")
    return Select(name, key, value), j + 1


def _topic_filter(v: str) -> str | None:
    levels = v.split("/")
    if not v or any(("#" in lvl and (lvl != "#" or i != len(levels) - 1)) or ("+" in lvl and lvl != "+")
                    for i, lvl in enumerate(levels)):
        return "is not a valid MQTT topic filter"
    return None


def _spec(value: Any, where: str, problems: list[str]) -> Spec | None:
    try:
        if isinstance(value, str):
            if "/" in value:
                bad = _topic_filter(value)
                if bad:
                    raise ValueError(f"topic {value!r} {bad}")
                return Spec(value, ())
            return Spec(None, (parse_path(value),))
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return Spec(None, tuple(parse_path(v) for v in value))
        if isinstance(value, dict) and isinstance(value.get("topic"), str) and set(value) <= {"topic", "path"}:
            bad = _topic_filter(value["topic"])
            if bad:
                raise ValueError(f"topic {value['topic']!r} {bad}")
            path = value.get("path")
            if path is not None and not isinstance(path, str):
                raise ValueError("path must be a string")
            return Spec(value["topic"], (parse_path(path),) if path else ())
        raise ValueError("must be a key path, a list of key paths, a topic, or {topic, path}")
    except ValueError as exc:
        problems.append(f"{where}: {exc}")
        return None


_SOURCE_KEYS = ("kind", "topic", "device", "device_level", "availability_topic", "features", "label",
                "label_values", "label_window_before_s", "label_window_after_s")


def _source(i: int, raw: Any, features: tuple[str, ...], problems: list[str]) -> SourceConfig | None:
    where = f"[[sources]] #{i + 1}"
    if not isinstance(raw, dict):
        problems.append(f"{where}: must be a table")
        return None
    n_before = len(problems)
    for key in raw:
        if key not in _SOURCE_KEYS:
            problems.append(f"{where}: unknown key {key!r}; known: {', '.join(_SOURCE_KEYS)}")
    kind = raw.get("kind")
    if kind == "sparkplug":
        problems.append(f"{where}: kind 'sparkplug' is not supported (Sparkplug B payloads are protobuf)")
        return None
    if kind not in SOURCE_KINDS:
        problems.append(f"{where}: kind = {kind!r}: must be one of {', '.join(map(repr, SOURCE_KINDS))}")
        return None
    where = f"[[sources]] #{i + 1} ({kind})"
    values: dict[str, Any] = {"kind": kind}
    for key in ("topic", "availability_topic"):
        if key in raw:
            v = raw[key]
            bad = "must be a string" if not isinstance(v, str) else _topic_filter(v)
            if bad:
                problems.append(f"{where}: {key} = {v!r} {bad}")
            values[key] = v
    if "device" in raw:
        if not isinstance(raw["device"], str) or not NAME_RE.match(raw["device"]):
            problems.append(f"{where}: device = {raw['device']!r} must be 1 to 64 characters from [A-Za-z0-9_-]")
        values["device"] = raw["device"]
    if "device_level" in raw:
        if type(raw["device_level"]) is not int:
            problems.append(f"{where}: device_level = {raw['device_level']!r} must be an integer")
        values["device_level"] = raw["device_level"]
    specs = []
    fmap = raw.get("features", {})
    if not isinstance(fmap, dict):
        problems.append(f"{where}: features must be a table (feature name -> where its value lives)")
        fmap = {}
    for name, value in fmap.items():
        if name not in features:
            problems.append(f"{where}: feature {name!r} is not in [schema] features")
            continue
        spec = _spec(value, f"{where} features.{name}", problems)
        if spec is not None:
            specs.append((name, spec))
    values["features"] = tuple(specs)
    if "label" in raw:
        values["label"] = _spec(raw["label"], f"{where} label", problems)
    lmap = raw.get("label_values", {})
    if not isinstance(lmap, dict) or not all(type(v) in (str, int) for v in lmap.values()):
        problems.append(f"{where}: label_values must map wire values to str or int labels")
        lmap = {}
    values["label_values"] = tuple(lmap.items())
    for key in ("label_window_before_s", "label_window_after_s"):
        if key in raw:
            v = raw[key]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
                problems.append(f"{where}: {key} = {v!r} must be a number >= 0")
                continue
            values[key] = float(v)
    if kind == "edgebayes":
        if specs or "label" in raw:
            problems.append(f"{where}: features and label come from the protocol itself; give only topic (the prefix)")
        if "topic" not in raw:
            problems.append(f"{where}: topic (the protocol prefix) is required")
    elif not specs and values.get("label") is None and len(problems) == n_before:
        problems.append(f"{where}: maps no feature and no label")
    if kind == "json" and "device" not in raw and "device_level" not in raw:
        problems.append(f"{where}: give device (a fixed id) or device_level (the topic level naming the device)")
    paths_only = any(s.topic is None for _, s in specs) or (values.get("label") and values["label"].topic is None)
    if paths_only and "topic" not in raw:
        problems.append(f"{where}: key paths need topic (the filter of the JSON messages)")
    if len(problems) > n_before:
        return None
    return SourceConfig(**values)


def _assembler(raw: Any, features: tuple[str, ...] | None, problems: list[str]) -> AssemblerConfig:
    if not isinstance(raw, dict):
        problems.append("[assembler] must be a table")
        return AssemblerConfig()
    values = {}
    for key, v in raw.items():
        if key == "min_features":
            n = len(features) if features else 1
            if type(v) is not int or not 1 <= v <= n:
                problems.append(f"[assembler] min_features = {v!r}: must be an integer in 1..{n} "
                                "(the number of [schema] features)")
                continue
            values[key] = v
        elif key == "accept_retained":
            if not isinstance(v, bool):
                problems.append(f"[assembler] accept_retained = {v!r}: expected true or false")
            values[key] = v
        elif key in ("interval_s", "max_age_s", "dedupe_s"):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v < math.inf:
                problems.append(f"[assembler] {key} = {v!r}: must be a number >= 0")
            elif key == "max_age_s" and v == 0:
                problems.append("[assembler] max_age_s = 0: must be > 0")
            values[key] = float(v) if not isinstance(v, bool) and isinstance(v, (int, float)) else v
        else:
            problems.append(f"[assembler] unknown key {key!r}; known: interval_s, max_age_s, dedupe_s, "
                            "accept_retained, min_features")
    return AssemblerConfig(**values)


# --- [homeassistant] -------------------------------------------------------------------------

@dataclass(frozen=True)
class DiscoveryConfig:
    discovery: bool = False
    prefix: str = "homeassistant"
    node_id: str | None = None
    drift: str = "event"
    drift_off_delay_s: float = 600.0
    offline_after_s: float = 3600.0
    retire_after_s: float | None = None
    configs: str = "entity"
    entity_ids: bool = True


def parse_homeassistant(raw: Any, output_format: str, problems: list[str]) -> DiscoveryConfig | None:
    """The ``[homeassistant]`` table; problems appended to ``problems``."""
    if not isinstance(raw, dict):
        problems.append("[homeassistant] must be a table")
        return None
    n = len(problems)
    for key, v in raw.items():
        if key in ("discovery", "entity_ids"):
            ok = isinstance(v, bool)
        elif key == "prefix":
            ok = isinstance(v, str) and bool(v) and all(
                lvl and "+" not in lvl and "#" not in lvl for lvl in v.split("/"))
        elif key == "node_id":
            ok = isinstance(v, str) and bool(NAME_RE.match(v))
        elif key == "drift":
            ok = v in ("event", "binary_sensor")
        elif key == "configs":
            ok = v in ("entity", "device")
        elif key in ("drift_off_delay_s", "offline_after_s", "retire_after_s"):
            ok = not isinstance(v, bool) and isinstance(v, (int, float)) and 0 < v < math.inf
        else:
            problems.append(f"[homeassistant] unknown key {key!r}; known: discovery, prefix, node_id, "
                            "drift, drift_off_delay_s, offline_after_s, retire_after_s, configs, entity_ids")
            continue
        if not ok:
            problems.append(f"[homeassistant] {key} = {v!r} is not valid")
    if raw.get("discovery") is True and output_format != "json":
        problems.append('[homeassistant] discovery needs [output] format = "json" (HA templates read JSON)')
    return DiscoveryConfig(**raw) if len(problems) == n else None


#: tables parsed apart from ``SPEC``: their keys depend on each other or on [schema]
EXTRA_TABLES = ("sources", "assembler", "homeassistant", "cluster")  # cluster: edgebayes.cluster.config


def _extra_tables(raw: dict, features: tuple[str, ...] | None, output_format: str,
                  problems: list[str]) -> dict:
    """The ``Config`` fields ``sources``, ``assembler``, ``homeassistant`` from a decoded TOML
    document; every problem is appended to ``problems``."""
    out: dict[str, Any] = {}
    if "sources" in raw:
        if not isinstance(raw["sources"], list) or not raw["sources"]:
            problems.append("[[sources]] must be an array of tables")
        elif features is not None:
            out["sources"] = tuple(s for i, t in enumerate(raw["sources"])
                                   if (s := _source(i, t, features, problems)) is not None)
    if "assembler" in raw:
        out["assembler"] = _assembler(raw["assembler"], features, problems)
    if "homeassistant" in raw:
        out["homeassistant"] = parse_homeassistant(raw["homeassistant"], output_format, problems)
    return out


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
    schema, output = tables.get("schema"), tables.get("output") or OutputConfig()
    tables.update(_extra_tables(raw, schema and schema.features, output.format, problems))
    models = _models(raw.get("models"), problems)
    broker = tables.get("broker")
    if broker and broker.reconnect_min_s > broker.reconnect_max_s:
        problems.append("[broker] reconnect_min_s must not exceed reconnect_max_s")
    if broker and (broker.tls_cert_file is None) != (broker.tls_key_file is None):
        problems.append("[broker] tls_cert_file and tls_key_file go together")
    if broker and "ws_path" in raw.get("broker", {}) and broker.transport != "websockets":
        problems.append('[broker] ws_path needs transport = "websockets"')
    checkpoint = tables.get("checkpoint") or CheckpointConfig()
    if not checkpoint.enabled and checkpoint.dir is not None:
        problems.append("[checkpoint] dir is set but enabled = false: remove one of them")
    if problems:
        raise ConfigError(problems, source)
    if checkpoint.enabled and checkpoint.dir is None:
        client_id = (broker or BrokerConfig()).client_id
        tables["checkpoint"] = dataclasses.replace(checkpoint, dir=default_checkpoint_dir(client_id))
    return Config(models=models, **dict(tables.items()))


def default_checkpoint_dir(client_id: str) -> Path:
    """Where a config that names no ``[checkpoint] dir`` keeps its checkpoints and journal: the
    systemd unit's state directory (``$STATE_DIRECTORY``, set by ``StateDirectory=``; its first
    entry), else ``$XDG_STATE_HOME/edgebayes/<client_id>`` (XDG Base Directory Specification
    0.8; ``~/.local/state`` when unset or relative), one folder per runtime identity."""
    state = os.environ.get("STATE_DIRECTORY", "").split(":")[0]
    if state:
        return Path(state)
    base = os.environ.get("XDG_STATE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".local" / "state"
    return root / "edgebayes" / client_id


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
        at = f"byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
        raise ConfigError([f"cannot read: not UTF-8 text ({at})"], str(path)) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError([f"invalid TOML: {exc}"], str(path)) from None
    return parse_config(raw, str(path))
