"""The Shelly adapter (``[[sources]] kind = "shelly"``): Gen1 plain values, Gen2+ JSON-RPC status."""

from __future__ import annotations

from edgebayes.runtime.ingest.adapter import Adapter


class Shelly(Adapter):
    """Gen1 ``shellies/<id>/...`` plain values; Gen2/3 ``<prefix>/events/rpc`` JSON-RPC
    (``NotifyStatus`` deltas overlaid on the kept component status, ``NotifyFullStatus``
    replacing it) and ``<prefix>/status/<component>``; ``shellies/<id>/online`` and
    ``<prefix>/online`` (``true``/``false``) are availability, and ``false`` drops the kept
    status. The Gen2 prefix (the device id by default) may have several levels. Key paths
    start at the component: ``temperature:0.tC``."""

    def __init__(self, index, cfg):
        super().__init__(index, cfg)
        self.state: dict[str, dict] = {}  # publisher -> component -> status

    def availability_filters(self):
        out = super().availability_filters()
        for f in self.data_filters():
            prefix = _shelly_prefix(f.split("/"))
            if prefix:  # a filter ending in '#' already holds <prefix>/online
                out.append("/".join(prefix) + "/online")
        return out

    def kind_of(self, topic):
        levels = topic.split("/")
        if levels[-1] == "online":
            return "availability"
        if levels[-1] == "announce":
            return "ignored"
        return "data"

    def publisher(self, topic):
        if self.level is not None:
            return super().publisher(topic)
        levels = topic.split("/")
        prefix = _shelly_prefix(levels)
        if prefix:
            return prefix[1] if prefix[0] == "shellies" else "/".join(prefix)
        return levels[1] if levels[0] == "shellies" and len(levels) > 1 else levels[0]

    def offline(self, publisher):
        if publisher:
            self.state.pop(publisher, None)
        else:
            self.state.clear()

    def document(self, topic, doc):
        pub = self.publisher(topic)
        kept = self.state.setdefault(pub, {})
        levels = topic.split("/")
        if levels[-2:] == ["events", "rpc"]:
            method = doc.get("method") if isinstance(doc, dict) else None
            params = doc.get("params") if isinstance(doc, dict) else None
            if method not in ("NotifyStatus", "NotifyFullStatus") or not isinstance(params, dict):
                return {}  # NotifyEvent and others carry no status
            if method == "NotifyFullStatus":
                kept.clear()
            for comp, status in params.items():
                if isinstance(status, dict):
                    _overlay(kept.setdefault(comp, {}), status)
            # only the components this message touched count as new values
            return {comp: kept[comp] for comp, s in params.items() if isinstance(s, dict)}
        if len(levels) >= 2 and levels[-2] == "status" and isinstance(doc, dict):
            kept[levels[-1]] = doc
            return {levels[-1]: doc}
        return doc


def _overlay(kept: dict, delta: dict) -> None:
    for key, value in delta.items():
        if isinstance(value, dict) and isinstance(kept.get(key), dict):
            _overlay(kept[key], value)
        else:
            kept[key] = value


def _shelly_prefix(levels: list[str]) -> list[str] | None:
    """The device's topic prefix in a Shelly topic or filter: ``shellies/<id>`` (Gen1), or the
    levels before ``events/rpc``, ``status/<component>`` or ``online`` (Gen2+); None when the
    topic has none of these shapes or the prefix would hold a ``#``."""
    if levels[0] == "shellies":
        ok = len(levels) > 2 and levels[1] not in ("#", "announce")
        return levels[:2] if ok else None
    if "#" in levels[-1]:
        return None
    if levels[-2:] == ["events", "rpc"] or (len(levels) >= 3 and levels[-2] == "status"):
        return levels[:-2]
    if len(levels) >= 2 and levels[-1] == "online":
        return levels[:-1]
    return None
