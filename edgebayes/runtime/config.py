"""The runtime's TOML config: read with ``tomllib``, checked in full before anything starts.

Every problem found is reported, one line each naming the table, the key, the value and why
(unknown table or key, wrong type, value out of range, missing feature list, a model the
registry cannot build), in a single ``ConfigError``. Keys carry their units (``interval_s``,
``max_age_s``, ``model_budget_bytes``).

The schema is the table dataclasses below: each field made with ``config_schema.key`` is a key
with its type, default, check and one-line doc; `TABLES` lists the tables. docs/config.md is
generated from it (``edgebayes config-docs``). A new table is a dataclass of ``key`` fields, its
`Table` in `TABLES` and its `Config` field. What the input tables do:
``edgebayes.runtime.ingest`` ([[sources]], [assembler]) and ``edgebayes.runtime.discovery``
([homeassistant]).
"""

from __future__ import annotations

import dataclasses
import inspect
import os
import re
import socket
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edgebayes.base import learner_class, make_learner
from edgebayes.drift.adwin import ADWINShared
from edgebayes.runtime.config_schema import Context, OneOf, SubkeyErrors, Table, closest, key, unknown
from edgebayes.runtime.names import NAME_RE


class ConfigError(ValueError):
    """An invalid config. ``problems`` lists one message per problem found."""

    def __init__(self, problems: list[str], source: str = "config"):
        self.problems = problems
        super().__init__(f"{source}: " + "; ".join(problems) if len(problems) == 1
                         else f"{source}: {len(problems)} problems:\n  " + "\n  ".join(problems))


# --- checks: each returns why a value is refused, or None ------------------------------------

def _positive(v):
    """> 0"""
    return None if v > 0 else "must be > 0"


def _non_negative(v):
    """>= 0"""
    return None if v >= 0 else "must be >= 0"


def _non_empty(v):
    """not empty"""
    return None if v else "must not be empty"


def _name(v):
    """1 to 64 characters from [A-Za-z0-9_-]"""
    return None if NAME_RE.match(v) else "must be 1 to 64 characters from [A-Za-z0-9_-]"


def _port(v):
    """1..65535"""
    return None if 1 <= v <= 65535 else "must be in 1..65535"


def _levels(v):
    """topic levels without wildcards"""
    if not v or any(not lvl or "+" in lvl or "#" in lvl for lvl in v.split("/")):
        return "must be non-empty topic levels without wildcards, no leading or trailing '/'"
    return None


def _prefix(v):
    """topic levels without wildcards, not starting with $"""
    if v.startswith("$"):  # $share/..., $SYS: broker-reserved, incoming topics never carry them
        return ("must not start with '$' ($share/ shared subscriptions are not supported: "
                "each runtime serves the devices its [topics] devices names)")
    return _levels(v)


def _ws_path(v):
    """starting with /"""
    return None if v.startswith("/") else "must start with '/'"


def _devices(v):
    """a device id, or "+" (all)"""
    return None if v == "+" else _name(v)


def _features(v):
    """distinct non-empty names"""
    if not v:
        return "must list at least one feature name"
    if not all(isinstance(f, str) and f for f in v):
        return "must hold non-empty strings"
    if len(set(v)) != len(v):
        return "holds a name twice"
    return None


def _label(v):
    """not seq, ts or x"""
    return "must not be one of the reading's own keys (seq, ts, x)" if v in ("seq", "ts", "x") else None


def _window(v):
    """1..100000"""
    return None if 1 <= v <= 100000 else "must be in 1..100000"


def _receive_max(v):
    """1..65535"""
    return None if 1 <= v <= 65535 else "must be in 1..65535 (MQTT receive maximum)"


def _backlog(v):
    """>= 65536"""
    return None if v >= 65536 else "must be at least 65536 (a few messages)"


def _delta(v):
    """in (0, 1)"""
    return None if 0 < v < 1 else "must be in (0, 1)"


def _default_client_id() -> str:
    host = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname())[:40] or "host"
    return f"edgebayes-{host}"


def _signature_default(callee: Any, name: str) -> Any:
    """The default of parameter ``name`` in ``callee``'s signature: the key's default is the
    callee's own."""
    return inspect.signature(callee).parameters[name].default


# --- the tables -------------------------------------------------------------------------------

@dataclass(frozen=True)
class BrokerConfig:
    host: str = key("127.0.0.1", "the broker's host name or address", _non_empty)
    port: int = key(1883, "the broker's port", _port)
    client_id: str = key(doc="the MQTT client id: names the persistent session and the status topic", check=_name,
                         factory=_default_client_id, shown='"edgebayes-<hostname>"')
    keepalive_s: int = key(60, "MQTT keep-alive, seconds", _positive)
    username: str | None = key(None, "the MQTT user name")
    password_file: str | None = key(None, "a file whose first line is the MQTT password")
    tls_ca_file: str | None = key(None, "the CA certificates that verify the broker (any tls_* key turns TLS on; "
                                  "unset: the system's CAs)")
    tls_cert_file: str | None = key(None, "the client certificate, for mutual TLS (with tls_key_file)")
    tls_key_file: str | None = key(None, "the client certificate's private key (with tls_cert_file)")
    tls_server_name: str | None = key(None, "the name the broker's certificate must hold; unset: host", _non_empty)
    tls_insecure: bool = key(False, "true: the broker's certificate is not verified, for test brokers")
    transport: str = key("tcp", "MQTT over TCP or over WebSockets", OneOf("tcp", "websockets"))
    ws_path: str = key("/mqtt", "the WebSocket path (with transport = \"websockets\")", _ws_path)
    protocol: str = key("mqttv5", "the MQTT protocol version", OneOf("mqttv5", "mqttv311"))
    session_expiry_s: int = key(604800, "how long the broker keeps the session and its unread messages, seconds",
                                _non_negative)
    reconnect_min_s: float = key(1.0, "the first wait before reconnecting, seconds (doubled up to reconnect_max_s)",
                                 _positive)
    reconnect_max_s: float = key(60.0, "the longest wait before reconnecting, seconds", _positive)

    @property
    def tls(self) -> bool:
        """Whether the connection uses TLS: any ``tls_*`` key is set."""
        return bool(self.tls_ca_file or self.tls_cert_file or self.tls_server_name or self.tls_insecure)


def _broker_checks(b: BrokerConfig, raw: dict, _: Context) -> Iterator[str]:
    if b.reconnect_min_s > b.reconnect_max_s:
        yield (f"reconnect_min_s = {b.reconnect_min_s!r} must not exceed reconnect_max_s = "
               f"{b.reconnect_max_s!r}")
    if (b.tls_cert_file is None) != (b.tls_key_file is None):
        given, other = ("tls_cert_file", "tls_key_file")[::1 if b.tls_key_file is None else -1]
        yield f"{given} = {getattr(b, given)!r} needs {other}: give both (mutual TLS) or neither"
    if "ws_path" in raw and b.transport != "websockets":
        yield 'ws_path needs transport = "websockets"'


@dataclass(frozen=True)
class TopicsConfig:
    prefix: str = key("edgebayes", "the first topic levels of the protocol: <prefix>/<device>/reading, ...",
                      _prefix)
    devices: str = key("+", 'the device served: a device id, or "+" for all', _devices)


@dataclass(frozen=True)
class SchemaConfig:
    features: tuple[str, ...] = key(doc="the ordered list of feature names", check=_features)
    label: str = key("y", "the payload key of the true label in readings and label messages", _label)


def _kind(v):
    """a kind below"""
    try:
        learner_class(v)
    except ModuleNotFoundError as exc:
        return f"is not available in this installation ({exc.name})"
    except ValueError as exc:
        return str(exc)
    return None


@dataclass(frozen=True)
class ModelConfig:
    name: str = key(doc="the model's name, in predictions and checkpoints", check=_name)
    kind: str = key(doc="the learner (an edgebayes.base.KINDS name, below)", check=_kind)
    params: dict[str, Any] = field(default_factory=dict)
    previous_name: str | None = key(None, "restore the checkpointed model of that name and kind as this one "
                                    "(a model no longer configured)", _name)

    def build(self):
        """A fresh learner of this kind with these parameters."""
        return make_learner(self.kind, **self.params)


def _model_checks(m: ModelConfig, raw: dict, _: Context) -> Iterator[str]:
    if m.previous_name == m.name:
        yield f"previous_name = {m.previous_name!r}: must be another model's name, not its own"
    accepted = inspect.signature(learner_class(m.kind)).parameters
    known = [*TABLES["models"].all_keys(), *accepted]
    bad = [p for p in m.params if p not in accepted]
    yield from (f"unknown key {p!r}{closest(p, accepted)}; known: {', '.join(known)}" for p in bad)
    if not bad:
        try:
            m.build()  # the learner checks its own parameters
        except (ValueError, TypeError) as exc:
            yield str(exc)


def _model_names(models: list[ModelConfig | None]) -> Iterator[str]:
    seen = set()
    for m in filter(None, models):
        if m.name in seen:
            yield f"[[models]] {m.name!r} name = {m.name!r}: the name is used twice"
        seen.add(m.name)
    for m in filter(None, models):
        if m.previous_name in seen:
            yield (f"[[models]] {m.name!r} previous_name = {m.previous_name!r}: is a configured model (it keeps "
                   "its own checkpoint)")


def _model_title(i: int, raw: dict) -> str:
    name = raw.get("name")
    return f"[[models]] {name!r}" if isinstance(name, str) and not _name(name) else f"[[models]] #{i + 1}"


@dataclass(frozen=True)
class MemoryConfig:
    model_budget_bytes: int | None = key(None, "the bound of all models of all devices, bytes", _positive)
    rss_limit_mb: float | None = key(None, "the bound of the process's resident memory, MB", _positive)
    max_devices: int = key(64, "the most devices served at once", _positive)
    evict_idle_s: float = key(10.0, "with checkpoints: a device idle this long may be checkpointed and evicted "
                              "for a new one, seconds", _non_negative)
    new_devices_per_min: int = key(60, "the most new devices admitted per minute, per source", _positive)


@dataclass(frozen=True)
class CheckpointConfig:
    """``dir`` None: no checkpoints and no journal. ``parse_config`` fills in
    ``default_checkpoint_dir`` unless the document says ``enabled = false``."""

    dir: Path | None = key(None, "the checkpoints and journal folder; unset: the systemd unit's $STATE_DIRECTORY, "
                           "else $XDG_STATE_HOME/edgebayes/<[broker] client_id> (~/.local/state when unset)",
                           shown="the state folder")
    enabled: bool = key(True, "false: no checkpoints, no journal: everything learned is lost at restart")
    interval_s: float = key(60.0, "seconds between checkpoints (and one at every clean stop)", _positive)
    sync_interval_s: float = key(1.0, "the most seconds a processed message waits for the journal's group fsync "
                                 "before it is acknowledged (with protocol = \"mqttv311\" also no longer "
                                 "than until the queue empties: the broker's inflight window is unknown)", _positive)


def _checkpoint_checks(c: CheckpointConfig, raw: dict, _: Context) -> Iterator[str]:
    if not c.enabled and c.dir is not None:
        yield f"dir is set but enabled = false: remove one of them (dir = {raw['dir']!r})"


@dataclass(frozen=True)
class LabelsConfig:
    max_pending: int = key(1000, "readings per device waiting for a delayed label", _non_negative)
    max_age_s: float = key(3600.0, "the longest a reading waits for its delayed label, seconds", _positive)


@dataclass(frozen=True)
class OutputConfig:
    format: str = key("json", "the encoding of predictions (metrics are always JSON)", OneOf("json", "msgpack"))
    prediction_qos: int = key(0, "the MQTT QoS of predictions", OneOf(0, 1))
    metrics_interval_s: float = key(10.0, "seconds between metrics messages", _positive)
    error_interval_s: float = key(1.0, "the least seconds between two error reports on one topic", _non_negative)
    max_backlog_bytes: int = key(2**20, "outgoing messages not yet written or acknowledged, bytes: at the bound "
                                 "the runtime stops taking readings", _backlog)


@dataclass(frozen=True)
class QueueConfig:
    max_size: int = key(10000, "incoming messages queued (the MQTT receive maximum)", _receive_max)
    policy: str = key("block", 'a full queue: "block" holds the broker back, "drop_oldest" drops',
                      OneOf("block", "drop_oldest"))
    max_payload_bytes: int = key(65536, "the largest payload taken, bytes", _positive)


@dataclass(frozen=True)
class EvaluationConfig:
    accuracy_window: int = key(200, "labelled readings per model and device in the accuracy that picks the "
                               "published prediction", _window)


@dataclass(frozen=True)
class DriftConfig:
    delta: float = key(_signature_default(ADWINShared, "delta"), "ADWIN's confidence for the models without their "
                       "own detectors, in (0, 1)", _delta)


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
    """an MQTT topic filter"""
    levels = v.split("/")
    if not v or any(("#" in lvl and (lvl != "#" or i != len(levels) - 1)) or ("+" in lvl and lvl != "+")
                    for i, lvl in enumerate(levels)):
        return "is not a valid MQTT topic filter"
    return None




def _spec(value: Any) -> Spec:
    """Where a value lives, from its config form (see docs/config.md, [[sources]]).

    Raises:
        ValueError: why the form is refused.
    """
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


def _feature_specs(fmap: dict) -> tuple[tuple[str, Spec], ...]:
    """``features`` -> ``(name, Spec)`` pairs; raises `SubkeyErrors` naming each refused one."""
    specs, errors = [], []
    for name, value in fmap.items():
        try:
            specs.append((name, _spec(value)))
        except ValueError as exc:
            errors.append((name, value, str(exc)))
    if errors:
        raise SubkeyErrors(errors)
    return tuple(specs)


def _label_values(v):
    """labels are strings or integers"""
    return None if all(type(x) in (str, int) for x in v.values()) else "must map wire values to str or int labels"


@dataclass(frozen=True)
class SourceConfig:
    kind: str = key(doc="the payload format (one edgebayes.runtime.ingest adapter each)", check=OneOf(
        *SOURCE_KINDS, refused={"sparkplug": "not supported (Sparkplug B payloads are protobuf)"}))
    topic: str | None = key(None, 'the filter of the messages whose JSON payload holds the features; for '
                            '"edgebayes": the protocol prefix', _topic_filter)
    device: str | None = key(None, "a fixed device id for everything this source reads", _name)
    device_level: int | None = key(None, "the index of the topic level naming the device (negative: from the end; "
                                   "characters outside [A-Za-z0-9_-] become _)", shown="per kind")
    availability_topic: str | None = key(None, 'an extra availability filter ("json" has no other)', _topic_filter)
    features: tuple[tuple[str, Spec], ...] = key((), "feature name -> where its value lives (the forms above)",
                                                 types=(dict,), convert=_feature_specs)
    label: Spec | None = key(None, "where the label lives, same forms as a feature", types=(str, list, dict),
                             convert=_spec)
    label_values: tuple[tuple[str, Any], ...] = key((), 'wire value as text -> label ("ON", "true", "1", "idle")',
                                                    _label_values, types=(dict,), convert=lambda v: tuple(v.items()))
    label_window_before_s: float = key(0.0, "readings up to this long before a label get it as a delayed label "
                                       "(by seq), seconds", _non_negative, convert=float)
    label_window_after_s: float = key(60.0, "readings assembled up to this long after a label get it inline, "
                                      "seconds", _non_negative, convert=float)


def _source_checks(s: SourceConfig, raw: dict, context: Context) -> Iterator[str]:
    fmap = raw.get("features")
    if context.features is not None and isinstance(fmap, dict):
        yield from (f"features.{name} = {v!r}: feature {name!r} is not in [schema] features "
                    f"({', '.join(context.features)})" for name, v in fmap.items() if name not in context.features)
    if s.kind == "edgebayes":
        if "features" in raw or "label" in raw:
            yield "features and label come from the protocol itself; give only topic (the prefix)"
        if "topic" not in raw:
            yield "topic: missing (the protocol prefix)"
    elif not fmap and "label" not in raw:
        yield "maps no feature and no label: give features or label"
    if s.kind == "json" and "device" not in raw and "device_level" not in raw:
        yield "give device (a fixed id) or device_level (the topic level naming the device)"
    paths_only = any(f.topic is None for _, f in s.features) or (s.label and s.label.topic is None)
    if paths_only and "topic" not in raw:
        yield "key paths need topic (the filter of the JSON messages)"


def _source_title(i: int, raw: dict) -> str:
    kind = raw.get("kind")
    return f"[[sources]] #{i + 1}" + (f" ({kind})" if kind in SOURCE_KINDS else "")


@dataclass(frozen=True)
class AssemblerConfig:
    interval_s: float = key(0.0, "0: a reading when every feature was reported since the last one (a value or "
                            '"no value now") or one is reported again; > 0: a reading every interval_s seconds from '
                            "the latest values, the first once every feature was reported, at most 5 s after the "
                            "first value", _non_negative, convert=float)
    max_age_s: float = key(600.0, "older values are missing (NaN), seconds", _positive, convert=float)
    dedupe_s: float = key(1.0, "a byte-identical publish on the same topic within this is a repeat, dropped, "
                          "seconds", _non_negative, convert=float)
    accept_retained: bool = key(False, "true: retained values delivered on subscribe are taken (they may be stale)")
    min_features: int = key(1, "a reading with fewer present features is not served (counted as too_few_values); "
                            "at most the [schema] features' count")


def _assembler_checks(a: AssemblerConfig, raw: dict, context: Context) -> Iterator[str]:
    n = len(context.features) if context.features else 1
    if not 1 <= a.min_features <= n:
        yield f"min_features = {a.min_features!r}: must be an integer in 1..{n} (the number of [schema] features)"


# --- [homeassistant] -------------------------------------------------------------------------

@dataclass(frozen=True)
class DiscoveryConfig:
    discovery: bool = key(False, "true: publish Home Assistant MQTT discovery configs")
    prefix: str = key("homeassistant", "Home Assistant's discovery prefix", _levels)
    node_id: str | None = key(None, 'the configs\' node level (unset: "edgebayes"); also goes into every unique_id',
                              _name)
    drift: str = key("event", "the entity that reports drift", OneOf("event", "binary_sensor"))
    drift_off_delay_s: float = key(600.0, "a drift binary_sensor turns off this long after the alert, seconds",
                                   _positive)
    offline_after_s: float = key(3600.0, "a device without a reading this long is offline, seconds", _positive)
    retire_after_s: float | None = key(None, "a device without a reading this long loses its configs, seconds; "
                                       "unset: never", _positive)
    configs: str = key("entity", '"entity": one config per entity; "device": one per device with cmps (Home '
                       "Assistant 2024.11+)", OneOf("entity", "device"))
    entity_ids: bool = key(True, "false: no default_entity_id or object_id, Home Assistant's own entity-id format "
                           "applies")


def _discovery_checks(d: DiscoveryConfig, raw: dict, context: Context) -> Iterator[str]:
    if d.discovery and context.output_format != "json":
        yield 'discovery needs [output] format = "json" (HA templates read JSON)'


def _urls(v):
    """non-empty, each nats://host:port"""
    ok = v and all(isinstance(u, str) and "://" in u for u in v)
    return None if ok else 'must be a non-empty list of URLs like "nats://host:4222"'


def _partitions(v):
    """1..1024"""
    return None if 1 <= v <= 1024 else "must be in 1..1024"


def _replicas(v):
    """1..5"""
    return None if 1 <= v <= 5 else "must be in 1..5"


def _lease(v):
    """> 1"""
    return None if v > 1 else "must be > 1 (seconds; renewed every third of it)"


def _own(v):
    """"all" or a list of partition numbers"""
    if v == "all" or (isinstance(v, list) and v and all(type(i) is int and i >= 0 for i in v)):
        return None
    return 'must be "all" or a non-empty list of partition numbers'


@dataclass(frozen=True)
class ClusterConfig:
    """The ``[cluster]`` table: a pool of runtimes over a NATS cluster (docs/scale-out.md)."""

    servers: tuple[str, ...] = key(("nats://127.0.0.1:4222",), "NATS URLs, any nodes of the cluster", _urls)
    partitions: int = key(64, "P, the fixed key groups of the deployment; the server's mapping uses the same",
                          _partitions)
    own: tuple[int, ...] = key((), 'the partitions this runtime may own ("all": 0..P-1)', _own, shown='"all"',
                               types=(str, list), convert=lambda v: () if v == "all" else tuple(sorted(set(v))))
    lease_ttl_s: float = key(6.0, "seconds after its last renewal at which a partition's lease is free "
                             "(renewed every third of it)", _lease)
    checkpoint_interval_s: float = key(5.0, "seconds between two checkpoint uploads of a changed partition",
                                       _positive)
    replicas: int = key(3, "JetStream replicas of the partition stream, the leases and the checkpoints",
                        _replicas)
    username: str | None = key(None, "the NATS user (edgebayes nats-config)", _non_empty)
    password_file: Path | None = key(None, "a file whose first line is the NATS password")

    @property
    def owned(self) -> tuple[int, ...]:
        """The partitions this runtime may own, sorted."""
        return self.own or tuple(range(self.partitions))

    def password(self) -> str | None:
        """The first line of ``password_file`` (None without one). Raises OSError."""
        if self.password_file is None:
            return None
        lines = self.password_file.read_text(encoding="utf-8").splitlines()
        return lines[0] if lines else ""


def _cluster_checks(c: ClusterConfig, raw: dict, _: Context) -> Iterator[str]:
    beyond = [i for i in c.own if i >= c.partitions]
    if beyond:
        yield (f"own = {list(c.own)!r}: partitions {beyond} are beyond partitions = {c.partitions} "
               f"(0..{c.partitions - 1})")


def parse_homeassistant(raw: Any, output_format: str, problems: list[str]) -> DiscoveryConfig | None:
    """The ``[homeassistant]`` table, None when it holds a problem; problems appended to ``problems``."""
    return TABLES["homeassistant"].parse(raw, Context(output_format=output_format), problems)


#: where a [[sources]] value lives, the forms (Markdown)
VALUE_FORMS = """\
Where a value lives: `"BME280.Temperature"` (a key path into the JSON payload of a message on
`topic`; quote keys holding dots: `'PMS5003."PM2.5"'`), a list of such paths (the first present
wins: translated firmware, `["BME280.Temperature", "BME280.Temperatur"]`), or a topic: a string
with a `/` (`"livingroom/sensor/temperature/state"`, wildcards allowed) whose plain payload is the
value, or `{topic = "...", path = "..."}` for JSON on that topic. A path element
`NAME[KEY=VALUE]` picks a block by what it holds: the block named `NAME` or `NAME-<n>` whose
`KEY` is `VALUE` (as text). Several Tasmota DS18B20 probes are `DS18B20-1`, `DS18B20-2`, ... in
bus order, renumbered when one is removed (`DS18B20` alone when one is left), so name each by its
1-Wire `Id`: `"DS18B20[Id=01144A0CB8AA].Temperature"`; a probe that is gone is missing (NaN),
never another probe's value. Quote a key holding `[` (`'"a[1]".b'`)."""

#: every table of the config, in the order of the docs and of the problems reported
TABLES: dict[str, Table] = {t.name: t for t in (
    Table("broker", BrokerConfig, "The MQTT broker and how the runtime logs in.", (_broker_checks,)),
    Table("topics", TopicsConfig, "The topics of the edgebayes protocol (docs/protocol.md)."),
    Table("schema", SchemaConfig, "What a reading holds. Required.",
          missing="[schema]: missing (features = the ordered list of feature names)"),
    Table("models", ModelConfig, "One table per model; every device gets the whole set. The other keys are the "
          "learner's own parameters under their API names (below). Required.", (_model_checks,), array=True,
          array_check=_model_names, missing="[[models]]: at least one model is required", title=_model_title,
          rest="params"),
    Table("memory", MemoryConfig, "Memory bounds and device admission."),
    Table("checkpoint", CheckpointConfig, "Checkpoints and the write-ahead journal.", (_checkpoint_checks,)),
    Table("labels", LabelsConfig, "Delayed labels."),
    Table("output", OutputConfig, "Predictions, metrics and errors the runtime publishes."),
    Table("queue", QueueConfig, "Incoming messages waiting for the worker."),
    Table("evaluation", EvaluationConfig, "Prequential accuracy."),
    Table("drift", DriftConfig, "Drift detection on each model's error stream."),
    Table("sources", SourceConfig, "Other firmware's payloads (edgebayes.runtime.ingest): one table per input."
          "\n\n" + VALUE_FORMS, (_source_checks,), array=True, title=_source_title),
    Table("assembler", AssemblerConfig, "How [[sources]] values become readings.", (_assembler_checks,)),
    Table("homeassistant", DiscoveryConfig, "Home Assistant MQTT discovery (edgebayes.runtime.discovery).",
          (_discovery_checks,)),
    Table("cluster", ClusterConfig, "A pool of runtimes over a NATS cluster, each partition of devices owned by "
          "one (`edgebayes cluster`, docs/scale-out.md); absent: a single runtime.", (_cluster_checks,)),
)}


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
    cluster: ClusterConfig | None = None

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
    for name in ("password_file", "tls_ca_file", "tls_cert_file", "tls_key_file"):
        path = getattr(config.broker, name)
        if path is None:
            continue
        try:
            with open(path, "rb"):
                pass
        except FileNotFoundError:
            problems.append(f"[broker] {name} {path}: no such file{_FILE_HINTS.get(name, '')}")
        except IsADirectoryError:
            problems.append(f"[broker] {name} {path}: a folder, not a file")
        except OSError as exc:
            problems.append(f"[broker] {name} {path}: cannot read ({exc.strerror})")
    if problems:
        raise ConfigError(problems, source)


#: the tables the others' checks read, parsed first
_FIRST = ("schema", "output")


def parse_config(raw: dict, source: str = "config") -> Config:
    """Validate a decoded TOML document and return the ``Config``.

    Raises:
        ConfigError: listing every problem found, one per line, in the order of `TABLES`.
    """
    found: dict[str, list[str]] = {name: [] for name in TABLES}
    parsed: dict[str, Any] = {}
    context = Context()
    for name in sorted(TABLES, key=lambda n: n not in _FIRST):
        if name not in raw:
            found[name] += [TABLES[name].missing] if TABLES[name].missing else []
            continue
        parsed[name] = TABLES[name].parse(raw[name], context, found[name])
        context = Context(getattr(parsed.get("schema"), "features", None),
                          getattr(parsed.get("output"), "format", context.output_format))
    problems = [unknown("table", name, TABLES) for name in raw if name not in TABLES]
    problems += [p for name in TABLES for p in found[name]]
    if problems:
        raise ConfigError(problems, source)
    checkpoint = parsed.get("checkpoint") or CheckpointConfig()
    if checkpoint.enabled and checkpoint.dir is None:
        client_id = (parsed.get("broker") or BrokerConfig()).client_id
        parsed["checkpoint"] = dataclasses.replace(checkpoint, dir=default_checkpoint_dir(client_id))
    return Config(**parsed)


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
