"""Names that become one MQTT topic level: device ids, client ids, model names, HA node ids.

The bottom of the runtime's imports (names -> config -> messages -> ingest -> worker ->
service): everything that checks or makes such a name imports it from here.
"""

from __future__ import annotations

import re

#: device ids, client ids and model names: one safe MQTT topic level
NAME_RE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")

_BAD_ID = re.compile(r"[^A-Za-z0-9_-]")


def device_id(text: str) -> str:
    """A topic level made a device id: characters outside [A-Za-z0-9_-] become "_", at most 64."""
    return _BAD_ID.sub("_", text)[:64]
