"""The ``SourceRouter``: messages of the ``[[sources]]`` topics through their adapters and the
assembler, out as readings, labels and refusals (``edgebayes.runtime.ingest``)."""

from __future__ import annotations

import logging
import math
import time
from collections import Counter
from collections.abc import Callable

from paho.mqtt.client import topic_matches_sub

from edgebayes.runtime.config import AssemblerConfig
from edgebayes.runtime.ingest.adapter import Adapter, Extract
from edgebayes.runtime.ingest.adapters import make_adapter
from edgebayes.runtime.ingest.assembler import FIRST_READING_S, Assembler, Incomplete
from edgebayes.runtime.ingest.ids import DeviceIds, check_literal_ids
from edgebayes.runtime.ingest.native import Parser
from edgebayes.runtime.messages import ErrorKind, Label, ProtocolError, Reading, Refusal, Retained
from edgebayes.runtime.names import NAME_RE

log = logging.getLogger(__name__)

#: data messages of a source mapping nothing, none before them mapping anything, before a warning
HINT_AFTER = 10


class SourceRouter:
    """Turns messages of the ``[[sources]]`` topics into readings, labels and refusals.

    Args:
        config: the runtime ``Config`` (``sources``, ``assembler``, ``schema``, ``queue``).
        on_offline: ``on_offline(device, seq)``, called (worker thread) for each device left
            with no value when a publisher its values came from is offline by its source's
            availability topic (a
            Tasmota LWT ``Offline``, a zigbee2mqtt ``{"state": "offline"}``): Home Assistant
            discovery marks it unavailable at once, not after ``offline_after_s``, until a
            reading after ``seq`` (the last one assembled for it) is served.

    ``handle`` and ``tick`` return ``(item, topic)`` pairs: a ``Reading``, a ``Label`` or a
    ``Refusal``, and the topic it came from, for the worker.

    ``counts`` (a Counter, in the metrics as ``sources``): ``retained``, ``repeated``,
    ``ignored`` (topics that are not data, such as zigbee2mqtt ``bridge/devices``: dropped
    before the payload size check, whatever their size), ``unchanged`` (zigbee2mqtt
    republishes of the mapped values and label: no reading), ``no_feature``, ``offline``,
    ``online``, ``readings``, ``labels``, ``no_value`` (values a sensor reported as "no value
    now" or left out of a snapshot message), ``missing_values`` (NaN features in the readings
    served), and one entry per refusal kind (``too_few_values``: a reading with fewer than ``[assembler] min_features``
    present features, not served; ``device_id_taken``: a topic name making a device id another
    name holds, ``ids.DeviceIds``).

    Raises:
        ConfigError: two literal ``[[sources]]`` topics make one device id from distinct names.
    """

    def __init__(self, config, on_offline: Callable[[str, int], None] | None = None):
        acfg = config.assembler or AssemblerConfig()
        self.acfg = acfg
        self.adapters = [make_adapter(i, s) for i, s in enumerate(config.sources)]
        check_literal_ids(self.adapters)
        self.ids = DeviceIds(config.checkpoint.dir, max(4096, 4 * config.memory.max_devices))
        self.assembler = Assembler(config.schema.features, acfg.interval_s, acfg.max_age_s,
                                   max((s.label_window_before_s for s in config.sources), default=0.0),
                                   min_features=acfg.min_features)
        self.parser = Parser(config.schema.features, config.schema.label, config.queue.max_payload_bytes)
        self.max_payload_bytes = config.queue.max_payload_bytes
        self.on_offline = on_offline
        self.counts: Counter = Counter()
        self._unmatched: Counter = Counter()  # source index -> messages mapping nothing, until one did
        self._last_payload: dict[str, tuple[bytes, float]] = {}
        self._told: set[str] = set()  # devices whose wait for features was logged
        self._last_mapped: dict[tuple, tuple] = {}  # origin -> its last message's mapped values and label
        self._routes: dict[str, list[Adapter]] = {}
        self._out: list[tuple] = []  # what the message being handled made
        self._unseen = dict.fromkeys(config.schema.features)  # features no source reading had a value for yet
        self._n_assembled = 0  # source readings served, counted up to HINT_AFTER
        self.filters = list(dict.fromkeys(f for a in self.adapters for f in a.filters()))

    def _match(self, topic: str) -> list[Adapter]:
        found = self._routes.get(topic)
        if found is None:
            found = [a for a in self.adapters if any(topic_matches_sub(f, topic) for f in a.filters())]
            if len(self._routes) >= 4096:
                self._routes.clear()
            self._routes[topic] = found
        return found

    def reads(self, topic: str) -> bool:
        """Whether a message on ``topic`` is data or availability of some source."""
        return any(a.classify(topic) != "ignored" for a in self._match(topic))

    def handle(self, topic: str, payload: bytes) -> list[tuple] | None:
        """What a message of a source topic makes (worker thread): ``(item, topic)`` pairs, in
        order; None if no source reads the topic."""
        adapters = self._match(topic)
        if not adapters:
            return None
        out = self._out = []
        if all(a.classify(topic) == "ignored" for a in adapters):
            # before the size check: a large retained zigbee2mqtt/bridge/devices is not an error
            self.counts["ignored"] += len(adapters)
            return out
        now = time.time()
        if len(payload) > self.max_payload_bytes:
            self._refuse(None, topic, ErrorKind.OVERSIZE,
                         f"payload of {len(payload)} bytes exceeds {self.max_payload_bytes}")
            return out
        for adapter in adapters:
            self._one(adapter, topic, payload, now)
        return out

    def _one(self, adapter: Adapter, topic: str, payload: bytes, now: float) -> None:
        if adapter.classify(topic) == "data" and self._skipped(adapter, topic, payload, now):
            return
        if adapter.cfg.kind == "edgebayes":
            self._protocol(topic, payload)
            return
        ex = adapter.extract(topic, payload)
        if ex.kind == "availability":
            self._availability(adapter, ex, now)
            return
        if ex.kind == "ignored" or ex.reason == "no_feature":
            self.counts[ex.kind if ex.kind == "ignored" else "no_feature"] += 1
            if ex.reason == "no_feature":
                self._hint(adapter, topic, ex.explanation)
            return
        if ex.kind == "rejected":
            self._refuse(ex.device, topic, ex.reason, ex.explanation)
            return
        taken = self.ids.claim(adapter.cfg.device or ex.origin[1], ex.device,
                               f"[[sources]] #{adapter.index + 1} ({adapter.cfg.kind})")
        if taken:
            self._refuse(None, topic, ErrorKind.DEVICE_ID_TAKEN, taken)
            return
        self._unmatched[adapter.index] = -1  # a source that matched once is not hinted at
        cfg = adapter.cfg
        if ex.has_label:
            for lab in self.assembler.label(ex.device, ex.label, now, cfg.label_window_before_s,
                                            cfg.label_window_after_s):
                self._deliver(lab, topic)
        if ex.values or ex.left_out:
            values = {**ex.values, **dict.fromkeys(ex.left_out, math.nan)} if ex.left_out else ex.values
            if adapter.republishes_state and self._unchanged(ex, values):
                self.counts["unchanged"] += 1
                self.assembler.refresh(ex.device, values, ex.origin, now)
                return
            n_null = sum(map(math.isnan, values.values()))
            if n_null:
                self.counts["no_value"] += n_null
            out = self.assembler.update(ex.device, values, ex.origin, now)
            if out is None:
                self._tell_waiting(ex.device)
            if isinstance(out, Incomplete):
                self._refuse(ex.device, topic, ErrorKind.TOO_FEW_VALUES,
                             f"no value for {', '.join(out.missing)}: fewer than [assembler] "
                             f"min_features = {self.acfg.min_features} present, no reading")
            elif out is not None:
                self._deliver(out, topic)

    def _skipped(self, adapter: Adapter, topic: str, payload: bytes, now: float) -> bool:
        """Whether a data message is skipped (counted): retained, or the same payload on the
        same topic within ``[assembler] dedupe_s``."""
        if type(payload) is Retained and not self.acfg.accept_retained:
            self.counts["retained"] += 1  # stale: no way to tell how old
            return True
        if self.acfg.dedupe_s > 0:
            key = f"{adapter.index}\0{topic}"
            last = self._last_payload.get(key)
            if last is not None and last[0] == payload and now - last[1] < self.acfg.dedupe_s:
                self.counts["repeated"] += 1
                return True
            if len(self._last_payload) >= 4096:
                self._last_payload.clear()
            self._last_payload[key] = (bytes(payload), now)
        return False

    def _availability(self, adapter: Adapter, ex: Extract, now: float) -> None:
        """A device's online/offline message: offline ends its pending readings."""
        self.counts["online" if ex.online else "offline"] += 1
        if not ex.online:
            devices = self.assembler.offline(ex.origin, now)
            adapter.offline(ex.origin[1])
            self._forget_mapped(ex.origin)
            if self.on_offline is not None:
                for device, seq in devices:
                    self.on_offline(device, seq)

    def _tell_waiting(self, device: str) -> None:
        """Log once per device what its first reading waits for: the features none of its
        sensors has reported yet (a silent wait looks like a broken setup)."""
        waiting = self.assembler.waiting(device)
        if not waiting or device in self._told or len(self._told) >= 4096:
            return
        self._told.add(device)
        interval = self.acfg.interval_s
        when = (f"first reading once every feature is reported or within {min(interval, FIRST_READING_S):g} s, "
                f"then every {interval:g} s" if interval > 0 else
                "a reading once every feature is reported, or one is reported again")
        log.info("assembling device %s: waiting for features [%s] (%s)", device, ", ".join(waiting), when)

    def _unchanged(self, ex: Extract, values: dict[str, float]) -> bool:
        """Whether ``values`` and the label of ``ex`` are those of its publisher's previous
        message (a zigbee2mqtt republish of the cached state: linkquality, last_seen, battery,
        another cluster's report); this message's are remembered for the next."""
        mapped = (ex.device, tuple((k, None if math.isnan(v) else v) for k, v in sorted(values.items())),
                  ex.has_label, ex.label)
        before = self._last_mapped.get(ex.origin)
        if len(self._last_mapped) >= 4096:
            self._last_mapped.clear()  # bounded: at worst one more reading per publisher
        self._last_mapped[ex.origin] = mapped
        return before == mapped

    def _forget_mapped(self, origin: tuple) -> None:
        """Drop what ``_unchanged`` remembers of ``origin`` (``(source, "")``: all of that source)."""
        src, pub = origin
        for key in [k for k in self._last_mapped if k[0] == src and (not pub or k[1] == pub)]:
            del self._last_mapped[key]

    def _hint(self, adapter: Adapter, topic: str, explanation: str) -> None:
        """Log once when a source's first ``HINT_AFTER`` data messages all map nothing: its key
        paths likely do not match what its devices send (a few may be other messages, such as
        Tasmota's STATE under ``tele/+/+``)."""
        n = self._unmatched[adapter.index]
        if n < 0:
            return
        self._unmatched[adapter.index] = n + 1
        if n + 1 == HINT_AFTER:
            log.warning("[[sources]] #%d (%s): %d messages and none holds a mapped feature or the "
                        "label; the last, on %s: %s. Check the key paths (counted in the metrics as "
                        "sources.no_feature)", adapter.index + 1, adapter.cfg.kind, HINT_AFTER, topic,
                        explanation)

    def _protocol(self, topic: str, payload: bytes) -> None:
        device, kind = topic.split("/")[-2:]
        try:
            if not NAME_RE.match(device):
                raise ProtocolError(ErrorKind.DEVICE_ID,
                                    f"device id {device[:80]!r} is not 1-64 characters from [A-Za-z0-9_-]")
            parse = self.parser.parse_reading if kind == "reading" else self.parser.parse_label
            item = parse(device, payload)
        except ProtocolError as exc:
            self._refuse(device if NAME_RE.match(device) else None, topic, exc.kind, str(exc), exc.seq)
            return
        self._deliver(item, topic, assembled=False)

    def _deliver(self, item: Reading | Label, topic: str, assembled: bool = True) -> None:
        if isinstance(item, Reading):
            self.counts["readings"] += 1
            n_missing = sum(map(math.isnan, item.x))
            if n_missing:
                self.counts["missing_values"] += n_missing
            if assembled and self._n_assembled < HINT_AFTER:
                self._hint_unseen(item.x)
        else:
            self.counts["labels"] += 1
        self._out.append((item, topic))

    def _hint_unseen(self, x: list[float]) -> None:
        """Log once when the first ``HINT_AFTER`` readings assembled from the sources had no value
        for a feature: its key path likely does not match what the devices send (a typo there is
        otherwise only a count in ``sources.missing_values``)."""
        for name, v in zip(self.parser.features, x):
            if name in self._unseen and not math.isnan(v):
                del self._unseen[name]
        self._n_assembled += 1
        if self._n_assembled == HINT_AFTER and self._unseen:
            log.warning("[[sources]]: no value for feature(s) %s in the first %d readings; check where the config "
                        "takes them from (counted in the metrics as sources.missing_values)",
                        ", ".join(self._unseen), HINT_AFTER)

    def _refuse(self, device: str | None, topic: str, kind: str, explanation: str, seq: int | None = None) -> None:
        self.counts[kind] += 1
        self._out.append((Refusal(device, ProtocolError(kind, explanation, seq)), topic))

    def tick(self) -> list[tuple]:
        """The cadence readings due now, as ``(reading, "(assembler)")`` (worker loop)."""
        out = self._out = []
        for reading in self.assembler.due(time.time()):
            self._deliver(reading, "(assembler)")
        self.ids.save()
        return out
