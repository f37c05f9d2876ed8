"""The adapter of each ``[[sources]] kind`` (``edgebayes.runtime.config.SOURCE_KINDS``)."""

from __future__ import annotations

from edgebayes.runtime.config import SourceConfig
from edgebayes.runtime.ingest.adapter import Adapter
from edgebayes.runtime.ingest.esphome import ESPHome
from edgebayes.runtime.ingest.native import EdgebayesProtocol
from edgebayes.runtime.ingest.shelly import Shelly
from edgebayes.runtime.ingest.tasmota import Tasmota
from edgebayes.runtime.ingest.zigbee2mqtt import Zigbee2Mqtt

ADAPTERS = {"json": Adapter, "zigbee2mqtt": Zigbee2Mqtt, "tasmota": Tasmota, "esphome": ESPHome,
            "shelly": Shelly, "edgebayes": EdgebayesProtocol}


def make_adapter(index: int, cfg: SourceConfig) -> Adapter:
    """The adapter of ``[[sources]]`` table number ``index`` (from 0) for its ``kind``
    (``ADAPTERS``; the kind was checked when the config was read)."""
    return ADAPTERS[cfg.kind](index, cfg)
