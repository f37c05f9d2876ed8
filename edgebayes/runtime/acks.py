"""Acknowledgements and the journal: a message is acknowledged only once it is durable.

With checkpoints on, a reading or label (a ``[[sources]]`` message too) is appended to the
write-ahead journal (``edgebayes.runtime.journal``) before it is processed, and acknowledged
after the journal's group ``fdatasync`` and a check that the journal's path still names it
(``commit``), or after a checkpoint round, which then starts a new journal holding only the
entries of devices whose checkpoint failed (``checkpoint``). A failed append or sync makes the
acknowledgements wait for a round that writes every device; a journal that cannot be started
at all (``off``) leaves each message acknowledged once processed, not durable. Faults are told
once per episode (``Durability``). Without a journal each message is acknowledged once
processed.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable

from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import Config
from edgebayes.runtime.durability import Durability
from edgebayes.runtime.ingest.intake import Intake
from edgebayes.runtime.journal import Journal, JournalError
from edgebayes.runtime.messages import ProtocolError, Retained
from edgebayes.runtime.publisher import Session
from edgebayes.runtime.registry import DeviceRegistry
from edgebayes.runtime.topics import Topics

log = logging.getLogger(__name__)

#: most messages in one journal fsync (fewer when ``[queue] max_size``, the broker's receive
#: maximum, is smaller: the broker sends no more until some are acknowledged)
COMMIT_MAX = 1000

#: process(topic, payload, t_recv) -> the devices the message served
Process = Callable[[str, bytes, float], set]


class Acks:
    """Journals, processes and acknowledges the incoming messages (worker thread).

    Args:
        config: the validated config.
        topics: the runtime's topics.
        journal: the write-ahead journal, or None (acknowledge once processed).
        store: the checkpoint store, or None (no checkpoint rounds).
        registry: the devices served.
        durability: where faults are told.
        intake: which topics are journaled.
        session: the broker connection acknowledgements go to.
        process: serves one message live.

    Attributes:
        failed: an append or sync failed: acknowledge after a round that writes every device.
        off: no journal could be started: acknowledge once processed, not durable.
        handling: journal offset of the message being processed (None between messages).
    """

    def __init__(self, config: Config, topics: Topics, journal: Journal | None, store: CheckpointStore | None,
                 registry: DeviceRegistry, durability: Durability, intake: Intake, session: Session,
                 process: Process):
        self.config = config
        self.topics = topics
        self.journal = journal
        self.store = store
        self.registry = registry
        self.durability = durability
        self.intake = intake
        self.session = session
        self.process = process
        self.failed = False
        self.off = False
        self.handling: int | None = None
        self.source_devices: dict[int, frozenset[str]] = {}  # [[sources]] entries of the journal -> their devices
        self._unacked: list[tuple[int, int, int]] = []  # (mid, qos, connection) waiting for the journal
        self._unacked_since = 0.0
        self._commit_max = min(COMMIT_MAX, config.queue.max_size)
        # MQTT 3.1.1 has no receive maximum: the broker's inflight window (Mosquitto's
        # max_inflight_messages, 20 by default) is unknown, and may be all that waits here
        self._commit_when_idle = config.broker.protocol != "mqttv5"

    def handle(self, topic: str, payload: bytes, mid: int, qos: int, t_recv: float, conn: int = 0) -> None:
        """Journal, process and (once durable) acknowledge one message received on connection
        number ``conn`` (``Session.n_connects`` then)."""
        journal = self.journal
        if journal is None or self.off:
            self.process(topic, payload, t_recv)
            self.ack(mid, qos, conn)
            return
        offset = self.handling = None
        # a payload over max_payload_bytes is refused by the intake whatever the journal says:
        # not journaled, so the journal holds only frames its reader takes
        if (type(payload) is not Retained and len(payload) <= self.config.queue.max_payload_bytes
                and self.intake.journaled(topic)):
            offset = self.handling = journal.size
            try:
                journal.append(topic, payload, time.time())
            except Exception as exc:  # noqa: BLE001 (any failure: the acknowledgements wait)
                self.fault("journal append", exc)
        devices = self.process(topic, payload, t_recv)
        self.handling = None
        if offset is not None and devices and not self.native(topic):
            self.source_devices[offset] = frozenset(devices - {None})  # carried forward with them (checkpoint)
        if not self._unacked:
            self._unacked_since = time.monotonic()
        self._unacked.append((mid, qos, conn))

    def commit_due(self, idle: bool = False) -> bool:
        """Whether ``commit`` is due: ``COMMIT_MAX`` messages wait, or the oldest has waited
        ``[checkpoint] sync_interval_s``, or (MQTT 3.1.1) the worker found its queue ``idle``."""
        return bool(self._unacked) and (
            len(self._unacked) >= self._commit_max
            or (idle and self._commit_when_idle)
            or time.monotonic() - self._unacked_since >= self.config.checkpoint.sync_interval_s)

    @property
    def n_unacked(self) -> int:
        return len(self._unacked)

    def native(self, topic: str) -> bool:
        """Whether ``topic`` is a reading or label topic of the edgebayes protocol."""
        try:
            return self.topics.route(topic) is not None
        except ProtocolError:
            return False

    def fault(self, what: str, exc: BaseException) -> None:
        """A failed append, sync or check: acknowledgements wait for a full checkpoint round."""
        self.failed = True
        self.durability.fault(what, exc, "messages are acknowledged after the next checkpoint round that "
                              "writes every device and a new journal")

    def commit(self) -> None:
        """Make the journal durable and acknowledge the messages processed since the last
        commit, once its path still names it; after a failed append, sync or check they wait
        for a checkpoint round instead (at once when the folder was deleted: re-created)."""
        if self.failed:
            return
        try:
            self.journal.sync()
            self.journal.check()
        except JournalError as exc:  # deleted or replaced underneath: write everything again
            self.fault("journal check", exc)
            self.registry.dirty.update(self.registry.devices)
            self.checkpoint()
            return
        except Exception as exc:  # noqa: BLE001 (any failure: the acknowledgements wait)
            self.fault("journal sync", exc)
            return
        self._ack_processed()

    def _ack_processed(self) -> None:
        for mid, qos, conn in self._unacked:
            self.ack(mid, qos, conn)
        self._unacked.clear()

    def ack(self, mid: int, qos: int, conn: int) -> None:
        """Acknowledge a message unless it came on an earlier connection: its packet id may now
        name another message, and the broker sends it again in the resumed session anyway."""
        if conn == self.session.n_connects:
            self.session.ack(mid, qos)

    def checkpoint(self, all_devices: bool = False) -> int:
        """Write the checkpoints of devices changed since the last write (or all); returns count.
        Then the journal starts over: empty when every changed device was written, else holding
        the entries of the devices whose checkpoint failed (so one failing device does not make
        the journal grow with the others' messages); the messages processed so far are then
        acknowledged. After a journal fault (a failed append or sync: the journal may miss
        entries) only a round that wrote every device starts it over."""
        if self.store is None:
            return 0
        journal, dirty = self.journal, self.registry.dirty
        names = list(self.registry.devices) if all_devices else list(dirty)
        if self.failed or self.off:
            with contextlib.suppress(OSError):  # the folder deleted underneath: made again
                self.store.dir.mkdir(parents=True, exist_ok=True)
        pos = journal.position() if journal is not None else None
        n = 0
        for name in names:
            n += self.registry.save(name, pos)
        if journal is None or (dirty and (self.failed or self.off)):
            return n
        # their entries are in no checkpoint (an open journal only: none is open while it is off)
        held = dirty | self.registry.not_restored() if not self.off else set()
        try:
            if held:
                self._rotate_keeping(held)
            elif journal.n_entries or self.failed or self.off:
                journal.rotate()
                self.source_devices.clear()
        except Exception as exc:  # noqa: BLE001 (any failure: retried at the next checkpoint)
            self.durability.fault("starting a new journal", exc, "retried at the next checkpoint")
            return n
        self.failed = self.off = False
        self._ack_processed()
        if not dirty:
            self.durability.recovered("every device checkpointed and a new journal started")
        return n

    def _rotate_keeping(self, failing: set[str]) -> None:
        """Start a new journal holding the entries of the ``failing`` devices their last
        checkpoint does not include (``[[sources]]`` entries by the devices they fed)."""
        journal, jid = self.journal, self.journal.id
        kept_sources: list[tuple[int, frozenset[str]]] = []  # (index among the kept, devices)
        n_kept = 0

        def keep():
            nonlocal n_kept
            for offset, topic, payload, t in journal.entries():
                route = self.native(topic) and self.topics.route(topic)
                devices = frozenset((route[1],)) if route else self.source_devices.get(offset, frozenset())
                if any(d in failing and not self.included(d, jid, offset) for d in devices):
                    if not route:
                        kept_sources.append((n_kept, devices))
                    n_kept += 1
                    yield topic, payload, t

        journal.rotate(keep())
        self.source_devices = {}
        if kept_sources:  # their offsets in the new journal
            index = dict(kept_sources)
            for i, (offset, *_) in enumerate(journal.entries()):
                if i in index:
                    self.source_devices[offset] = index[i]
        log.debug("journal started over keeping %d entries of %d devices whose checkpoint failed",
                  n_kept, len(failing))

    def included(self, device: str | None, jid: str | None, offset: int) -> bool:
        """Whether the journal entry at ``offset`` of journal ``jid`` is in ``device``'s checkpoint."""
        if device is None:
            return False
        try:
            dev = self.registry.get(device, create=False)
        except ProtocolError:
            return False
        pos = dev.journal_pos if dev is not None else None
        return pos is not None and pos[0] == jid and offset < pos[1]

    @property
    def durable(self) -> bool:
        """What is acknowledged is on disk: a journal, open, and no fault episode."""
        return self.journal is not None and self.durability.durable and not self.off
