"""The zigbee2mqtt adapter (``[[sources]] kind = "zigbee2mqtt"``)."""

from __future__ import annotations

from edgebayes.runtime.ingest.adapter import Adapter


class Zigbee2Mqtt(Adapter):
    """``<base>/<friendly name>`` JSON; ``<base>/bridge/state`` and ``<name>/availability``
    are availability; other ``bridge/...`` topics and ``/set``, ``/get`` are ignored. The
    device is the whole friendly name (it may hold '/', spaces, ':')."""

    republishes_state = True  # cache_state (the default): any Zigbee message repeats every attribute

    def availability_filters(self):
        out = super().availability_filters()
        for f in self.data_filters():
            base = f.split("/")[0]
            out.append(f"{base}/bridge/state")
            if not f.endswith("#"):
                out.append(f"{f}/availability")
        return out

    def kind_of(self, topic):
        levels = topic.split("/")
        if len(levels) >= 2 and levels[1] == "bridge":
            return "availability" if levels[2:] == ["state"] else "ignored"
        if levels[-1] == "availability":
            return "availability"
        if levels[-1] in ("set", "get"):
            return "ignored"
        return super().kind_of(topic)

    def publisher(self, topic):
        if self.level is not None:
            return super().publisher(topic)
        levels = topic.split("/")
        if levels[1:] == ["bridge", "state"]:
            return ""  # the bridge: every device of this source
        if levels[-1] == "availability":
            levels = levels[:-1]
        return "/".join(levels[1:])
