"""Check Home Assistant discovery configs with Home Assistant's own MQTT schemas.

Run with the Python of a venv holding ``homeassistant`` (``pip install homeassistant==2024.1.6``;
not a dependency of edgebayes), on a JSON file ``{topic: payload}`` of the retained configs
a runtime published under ``homeassistant/``::

    /tmp/ha-venv/bin/python bench/ha_discovery_check.py configs.json [--json report.json]

Each ``<component>/[<node_id>/]<object_id>/config`` payload goes through what HA's MQTT
discovery does to it (``homeassistant/components/mqtt/discovery.py``: the topic pattern and
supported components, JSON, the abbreviations of the payload, its ``device``, ``origin`` and
``availability`` entries expanded, the ``origin`` schema, ``~`` expanded, ``platform: mqtt``
added), then through the component's ``DISCOVERY_SCHEMA`` (what discovery validates with: keys
this HA does not know are dropped, silently) and its ``PLATFORM_SCHEMA_MODERN`` (the same
schema without dropping: it names those keys). A config passes when ``DISCOVERY_SCHEMA``
accepts it; the keys only the strict schema refuses are listed as unknown to this HA version.
A device-based config (``configs = "device"``, HA 2024.11+) is first split into the
per-component configs HA makes of it (``split_device``), so an older HA checks its components.
Exit 0 when every config passes, 1 otherwise, 2 when there is no config to check.
"""

from __future__ import annotations

import argparse
import json
import sys

# importing the mqtt component first runs into a circular import inside HA 2024.1
# (websocket_api <-> persistent_notification); this one resolves it
import homeassistant.components.persistent_notification  # noqa: F401
import voluptuous as vol
from homeassistant.components.mqtt import binary_sensor, event, sensor
from homeassistant.components.mqtt.abbreviations import (
    ABBREVIATIONS,
    DEVICE_ABBREVIATIONS,
    ORIGIN_ABBREVIATIONS,
)
from homeassistant.components.mqtt.discovery import (
    MQTT_ORIGIN_INFO_SCHEMA,
    SUPPORTED_COMPONENTS,
    TOPIC_MATCHER,
)
from homeassistant.const import __version__ as HA_VERSION

PLATFORMS = {"sensor": sensor, "binary_sensor": binary_sensor, "event": event}


def expand(payload: dict) -> dict:
    """The payload as HA's discovery hands it to the platform (abbreviations, ``~``)."""
    p = {ABBREVIATIONS.get(k, k): v for k, v in payload.items()}
    if isinstance(p.get("device"), dict):
        p["device"] = {DEVICE_ABBREVIATIONS.get(k, k): v for k, v in p["device"].items()}
    if isinstance(p.get("origin"), dict):
        p["origin"] = {ORIGIN_ABBREVIATIONS.get(k, k): v for k, v in p["origin"].items()}
        MQTT_ORIGIN_INFO_SCHEMA(p["origin"])  # HA drops the whole config when this fails
    if "availability" in p:
        avail = p["availability"] if isinstance(p["availability"], list) else [p["availability"]]
        p["availability"] = [
            {ABBREVIATIONS.get(k, k): v for k, v in a.items()} if isinstance(a, dict) else a
            for a in avail
        ]
    if "~" in p:
        base = p.pop("~")
        for key, value in list(p.items()):
            if isinstance(value, str) and value and key.endswith("topic"):
                if value[0] == "~":
                    p[key] = base + value[1:]
                if value[-1] == "~":
                    p[key] = value[:-1] + base
        for a in p.get("availability", []):
            if isinstance(a, dict) and isinstance(a.get("topic"), str) and a["topic"]:
                if a["topic"][0] == "~":
                    a["topic"] = base + a["topic"][1:]
                if a["topic"][-1] == "~":
                    a["topic"] = a["topic"][:-1] + base
    p["platform"] = "mqtt"
    return p


def unknown_keys(schema, config: dict) -> list[str]:
    """Keys the strict schema refuses as extra (``extra keys not allowed``), as paths."""
    try:
        schema(json.loads(json.dumps(config)))
    except vol.MultipleInvalid as exc:
        return sorted(
            "/".join(map(str, e.path)) for e in exc.errors if "extra keys not allowed" in e.msg
        )
    except vol.Invalid as exc:
        return ["/".join(map(str, exc.path))] if "extra keys not allowed" in exc.msg else []
    return []


def check(topic: str, raw: str, prefix: str = "homeassistant") -> dict:
    """One config: {topic, component, ok, error, unknown_keys, keys}."""
    out = {"topic": topic, "component": None, "ok": False, "error": None, "unknown_keys": []}
    trimmed = topic.replace(f"{prefix}/", "", 1)
    match = TOPIC_MATCHER.match(trimmed)
    if not match:
        out["error"] = "not a discovery topic HA accepts (<component>/[<node_id>/]<object_id>/config)"
        return out
    component = out["component"] = match.group("component")
    if component not in SUPPORTED_COMPONENTS:
        out["error"] = f"component {component} not supported by HA's MQTT discovery"
        return out
    if component not in PLATFORMS:
        out["error"] = f"no schema loaded for {component} in this check"
        return out
    try:
        payload = json.loads(raw)
        if not isinstance(payload, dict):
            raise ValueError("not a JSON object")
        config = expand(payload)
        platform = PLATFORMS[component]
        platform.DISCOVERY_SCHEMA(json.loads(json.dumps(config)))
    except (ValueError, vol.Invalid) as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
        return out
    out["ok"] = True
    out["keys"] = sorted(config)
    strict = {k: v for k, v in config.items() if k != "platform"}
    out["unknown_keys"] = unknown_keys(platform.PLATFORM_SCHEMA_MODERN, strict)
    return out


def split_device(topic: str, raw: str) -> dict[str, str]:
    """A device-based config (``<prefix>/device/[<node_id>/]<object_id>/config``, HA 2024.11+)
    as the per-component configs HA makes of it: each ``cmps`` entry with the shared keys
    (``dev``, ``o``, availability) and its platform ``p`` as the component, on the topic
    ``<prefix>/<p>/<node_id>/<object_id>_<key>/config``; so an older HA's platform schemas
    check them. Any other config is returned as it is."""
    head, _, rest = topic.rpartition("/device/")
    if not head or not rest.endswith("/config"):
        return {topic: raw}
    payload = json.loads(raw)
    if not isinstance(payload, dict) or not isinstance(payload.get("cmps"), dict):
        return {topic: raw}
    shared = {k: v for k, v in payload.items() if k != "cmps"}
    path = rest[: -len("/config")]
    out = {}
    for key, cmp in payload["cmps"].items():
        component = cmp.get("p", cmp.get("platform")) if isinstance(cmp, dict) else None
        body = {k: v for k, v in cmp.items() if k not in ("p", "platform")} if component else cmp
        out[f"{head}/{component}/{path}_{key}/config"] = json.dumps({**shared, **body})
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("configs", help="JSON file: {topic: payload} of the retained configs")
    parser.add_argument("--prefix", default="homeassistant", help="discovery prefix")
    parser.add_argument("--json", metavar="PATH", help="write the report here too")
    args = parser.parse_args(argv)
    with open(args.configs) as f:
        configs = {t: p for t, p in json.load(f).items() if t.endswith("/config") and p}
    configs = {t: p for topic, raw in configs.items() for t, p in split_device(topic, raw).items()}
    if not configs:
        print("no discovery config to check", file=sys.stderr)
        return 2
    results = [check(t, p, args.prefix) for t, p in sorted(configs.items())]
    for r in results:
        verdict = "ok  " if r["ok"] else "FAIL"
        extra = f"; keys unknown to HA {HA_VERSION}: {', '.join(r['unknown_keys'])}" if r["unknown_keys"] else ""
        print(f"{verdict} {r['topic']}" + (f": {r['error']}" if r["error"] else "") + extra)
    n_ok = sum(r["ok"] for r in results)
    print(f"Home Assistant {HA_VERSION} MQTT discovery schemas: {n_ok} of {len(results)} configs valid")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"homeassistant": HA_VERSION, "results": results}, f, indent=2)
    return 0 if n_ok == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())
