"""The Tasmota adapter (``[[sources]] kind = "tasmota"``): units normalised to °C and hPa."""

from __future__ import annotations

from edgebayes.runtime.ingest.adapter import Adapter

#: Tasmota keys whose unit the message declares (English and German builds)
_TEMP_KEYS = frozenset({"temperature", "dewpoint", "temperatur", "taupunkt"})
_PRESSURE_KEYS = frozenset({"pressure", "seapressure", "druck"})
_HPA_PER = {"mmHg": 1.33322387415, "inHg": 33.8638866667}  # hPa per unit


class Tasmota(Adapter):
    """``.../<Topic>/SENSOR``, ``STATE``, ``ENERGY`` JSON (matched on the last level: FullTopic
    is user-defined); ``LWT`` is availability; the device is the level before the last, or the
    one before ``tele``/``stat`` when FullTopic puts the prefix after the topic."""

    DATA = frozenset({"SENSOR", "STATE", "ENERGY", "RESULT"})

    def availability_filters(self):
        out = super().availability_filters()
        for f in self.data_filters():
            head, _, last = f.rpartition("/")
            if last in self.DATA or last == "+":
                out.append(f"{head}/LWT")
        return out

    def kind_of(self, topic):
        last = topic.rsplit("/", 1)[-1]
        if last == "LWT":
            return "availability"
        return "data" if last in self.DATA else "ignored"

    def snapshot(self, topic):
        return topic.endswith("/SENSOR")  # every TelePeriod: all the board's sensors that read

    def publisher(self, topic):
        if self.level is not None:
            return super().publisher(topic)
        levels = topic.split("/")
        if len(levels) < 2:
            return ""
        if levels[-2] in ("tele", "stat") and len(levels) >= 3:
            return levels[-3]
        return levels[-2]

    def convert(self, doc, path, value):
        if not isinstance(doc, dict) or type(value) not in (int, float) or type(path[-1]) is not str:
            return value
        key = path[-1].lower()
        if key in _TEMP_KEYS and doc.get("TempUnit") == "F":
            return (value - 32.0) / 1.8
        unit = doc.get("PressureUnit")
        if key in _PRESSURE_KEYS and type(unit) is str and unit in _HPA_PER:  # a map is unhashable
            return value * _HPA_PER[unit]
        return value
