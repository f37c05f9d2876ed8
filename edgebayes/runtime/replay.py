"""Replaying the journal: what the checkpoints miss is learned again, publishing nothing.

At start each device learns, in order, the journal entries after the journal position of its
checkpoint (``recover``); later, a device whose checkpoint could not be read learns the
entries it was refused meanwhile once it can (``catch_up``). Both serve through an ``Outbox``
on a ``Muted`` session: the predictions went out before the crash, or were never wanted.
"""

from __future__ import annotations

import contextlib
import logging
import time

from edgebayes.runtime.acks import Acks
from edgebayes.runtime.config import Config
from edgebayes.runtime.durability import Durability
from edgebayes.runtime.ingest.intake import Intake
from edgebayes.runtime.payloads import Outbox
from edgebayes.runtime.registry import DeviceRegistry
from edgebayes.runtime.serving import Serving
from edgebayes.runtime.topics import Topics

log = logging.getLogger(__name__)


class Replay:
    """Replays the journal of ``acks`` into ``serving`` through the muted ``out``.

    Args:
        config: the validated config (``[schema] features`` now).
        topics: the runtime's topics.
        acks: the journal and its acknowledgements (its offsets, checkpoint rounds).
        serving: where the entries are served.
        registry: the devices served.
        intake: turns the entries into readings and labels.
        durability: where a journal that cannot be started is told.
        out: an ``Outbox`` on a ``Muted`` session.

    Attributes:
        n_replayed: journal entries learned again at start.
    """

    def __init__(self, config: Config, topics: Topics, acks: Acks, serving: Serving, registry: DeviceRegistry,
                 intake: Intake, durability: Durability, out: Outbox):
        self.config = config
        self.topics = topics
        self.acks = acks
        self.serving = serving
        self.registry = registry
        self.intake = intake
        self.durability = durability
        self.out = out
        self.n_replayed = 0

    def recover(self) -> None:
        """Replay the journal of the last run (``edgebayes.runtime.journal``), one entry at a
        time: each device learns, in order, the entries after the journal position of its
        checkpoint. The entries replayed are copied to a new journal as they are (``[[sources]]``
        messages all: they rebuild the assembler), so a crash during replay replays them again,
        and the devices they changed are checkpointed after it. A journal written under other
        ``[schema] features`` has its readings replayed by name (``Intake.replay_as``); its
        protocol entries are then not copied (the new journal's header names the new features),
        their devices being checkpointed right after. A journal that cannot be written (a full
        or read-only disk) leaves the runtime serving without durability."""
        journal = self.acks.journal
        self.registry.replaying = True
        counts = [0, 0]  # entries read, entries replayed
        failed = None
        try:
            jid, entries = self._old_journal()
            written = journal.recovered_features
            edited = jid is not None and list(written) != list(self.config.schema.features)
            if edited:
                log.info("journal written under features %s: its readings are replayed into %s by name",
                         written, list(self.config.schema.features))
                self.intake.replay_as(written)
            replay = self._replay(jid, entries, counts, copy_native=not edited)
            try:
                journal.rotate(replay)
            except OSError as exc:
                failed = exc
                for _ in replay:  # the rest replayed, nothing written
                    pass
        finally:
            self.registry.replaying = False
            self.intake.replay_as(None)
        self.n_replayed = counts[1]
        if counts[0]:
            log.info("journal: %d messages replayed, %d already in their device's checkpoint",
                     counts[1], counts[0] - counts[1])
        if failed is not None:
            self.acks.off = True
            self.durability.fault("starting the journal", failed, "serving without durability: messages are "
                                  "acknowledged once processed (a crash loses what is not checkpointed); "
                                  "retried at each checkpoint interval")
        self.acks.checkpoint()  # so the next start does not replay them again
        if self.acks.store is not None:
            self.registry.fit()  # the replay admitted every device it named, past max_devices

    def catch_up(self, device: str) -> None:
        """Learn, in order and publishing nothing, the journal's protocol entries of ``device``
        that its checkpoint does not include: those refused while the checkpoint could not be
        read (kept by every rotation meanwhile), up to the message being handled now."""
        acks, journal = self.acks, self.acks.journal
        if journal is None or acks.off or journal.id is None:
            return
        n = 0
        try:
            for offset, topic, payload, t in list(journal.entries()):
                route = acks.native(topic) and self.topics.route(topic)
                if not route or route[1] != device or offset == acks.handling:
                    continue
                self.serving.replayed_at = t
                n += bool(self.serving.process(topic, payload, time.perf_counter(), self.out,
                                               lambda item: item.device != device
                                               or acks.included(device, journal.id, offset)))
        finally:
            self.serving.replayed_at = None
        if n:
            log.info("device %s: %d journal messages it was refused while its checkpoint could not be read "
                     "are learned now", device, n)

    def _old_journal(self):
        """``Journal.recover()``; a journal that cannot be read (EACCES, EIO) is moved aside for
        the operator (not overwritten by the next journal), its entries not replayed."""
        journal = self.acks.journal
        try:
            return journal.recover()
        except OSError as exc:
            with contextlib.suppress(OSError):  # the folder cannot be written either: the new journal fails too
                journal.move_aside(f"cannot read it: {type(exc).__name__}: {exc}")
            return None, iter(())

    def _replay(self, jid: str | None, entries, counts: list[int], copy_native: bool = True):
        """Serve each journal entry's items its device's checkpoint does not include; yields the
        entries to keep in the new journal (``counts``: entries read, entries replayed)."""
        for offset, topic, payload, t in entries:
            counts[0] += 1
            self.serving.replayed_at = t  # the decisions of the time it came (seq and ts bounds)
            served = self.serving.process(topic, payload, time.perf_counter(), self.out,
                                          lambda item: self.acks.included(item.device, jid, offset))
            counts[1] += bool(served)
            self.serving.replayed_at = None
            if not self.acks.native(topic) or (served and copy_native):
                yield topic, payload, t
