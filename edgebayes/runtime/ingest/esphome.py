"""The ESPHome adapter (``[[sources]] kind = "esphome"``)."""

from __future__ import annotations

from edgebayes.runtime.ingest.adapter import Adapter


class ESPHome(Adapter):
    """``<topic_prefix>/<component>/<object_id>/state`` plain text (climate entities one level
    deeper); ``<topic_prefix>/status`` availability (``online``/``offline``). The prefix, the
    node's name by default, may have several levels (``home/livingroom/esp1``): it is found
    from the right, before the component level, and each prefix is one device."""

    def availability_filters(self):
        out = super().availability_filters()
        for f in self.data_filters():
            prefix = _esphome_prefix(f.split("/"))
            if prefix:  # a filter ending in '#' with no component level already holds <prefix>/status
                out.append("/".join(prefix) + "/status")
        return out

    def kind_of(self, topic):
        levels = topic.split("/")
        if len(levels) >= 2 and levels[-1] == "status":
            return "availability"
        return "data" if levels[-1] == "state" or self.cfg.topic else "ignored"

    def publisher(self, topic):
        prefix = _esphome_prefix(topic.split("/")) if self.level is None else None
        return "/".join(prefix) if prefix else super().publisher(topic)


#: ESPHome entity types: the level after the node's topic_prefix in its state topics
_ESPHOME_COMPONENTS = frozenset({
    "sensor", "binary_sensor", "text_sensor", "switch", "light", "fan", "cover", "climate", "number",
    "select", "text", "button", "lock", "valve", "alarm_control_panel", "event", "update", "datetime",
    "date", "time", "water_heater", "media_player"})


def _esphome_prefix(levels: list[str]) -> list[str] | None:
    """The ``topic_prefix`` levels of an ESPHome topic or filter: for a state topic, those
    before its component level (``<component>/<object_id>/state``, a climate entity one level
    deeper; a filter's trailing ``#`` may stand for what follows the component); for another
    topic (``status``, a custom will topic), those before its last level. None for a one-level
    topic, or a ``#`` with no component level before it.

    The component is searched from the right because a prefix level may be named like one.
    """
    if levels[-1] not in ("state", "#"):
        return levels[:-1] or None
    wild = levels[-1] == "#"
    for i in range(len(levels) - (2 if wild else 3), 0, -1):
        if levels[i] in _ESPHOME_COMPONENTS:
            return levels[:i]
    if wild or len(levels) < 4:
        return None
    return levels[:-3]  # a component type newer than this list
