"""Whether what the runtime acknowledges is on disk, told once per fault episode.

A fault (the journal or a checkpoint cannot be written, the checkpoint folder was deleted or
replaced, the journal cannot be started at all) starts an episode: one ERROR in the log and
one ``durability`` alert (docs/protocol.md "Durability alert"); further faults of the episode
are only counted (``n_journal_errors``) and logged at DEBUG (a device's first failed checkpoint
at WARNING), so a full disk makes one ERROR, not one per message or device. The episode ends
when a checkpoint round has written every device and a new journal: one INFO and an alert with ``durable`` true.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from edgebayes.runtime.payloads import durability_alert

log = logging.getLogger(__name__)


class Durability:
    """The durability state of one runtime (worker thread).

    Args:
        alert: publishes an alert message (a dict) on the runtime's alert topic.

    Attributes:
        durable: False during a fault episode.
        n_journal_errors: faults seen since start (journal appends, syncs, path checks,
            rotations, checkpoint writes).
        failing: devices whose last checkpoint write failed (their journal entries are kept).
        reason: what started the current episode (None when durable).
    """

    def __init__(self, alert: Callable[[dict], None]):
        self._alert = alert
        self.durable = True
        self.n_journal_errors = 0
        self.reason: str | None = None
        self.failing: set[str] = set()  # devices whose last checkpoint write failed

    def fault(self, what: str, exc: BaseException, consequence: str) -> None:
        """Count a fault of ``what`` (e.g. "journal sync"); the first of an episode is logged
        at ERROR with ``consequence`` (what the runtime does meanwhile) and alerted."""
        self.n_journal_errors += 1
        why = f"{what}: {type(exc).__name__}: {exc}"
        if not self.durable:
            log.debug("durability fault during the episode: %s", why)
            return
        told = self._told()
        self.durable, self.reason = False, why
        log.log(logging.WARNING if told else logging.ERROR, "not durable: %s; %s", why, consequence)
        self._alert(durability_alert(False, why, consequence, self.n_journal_errors))

    def recovered(self, how: str) -> None:
        """End the episode, if there is one (``how``: what made the runtime durable again)."""
        if self.durable:
            return
        log.info("durable again: %s (the fault was %s; %d faults)", how, self.reason, self.n_journal_errors)
        self.durable, self.reason = True, None
        self._alert(durability_alert(True, how, "", self.n_journal_errors))

    def checkpoint_failed(self, device: str, exc: BaseException) -> None:
        """Count a failed checkpoint write of ``device``; the first of a run is one WARNING, or
        the episode's one ERROR when no other fault stands."""
        self.n_journal_errors += 1
        if device in self.failing:
            return
        told = self._told()
        self.failing.add(device)
        log.log(logging.WARNING if told else logging.ERROR, "checkpoint of device %s failed: %s: %s; its journal "
                "entries are kept, retried at the next interval", device, type(exc).__name__, exc)

    def _told(self) -> bool:
        """Whether a fault standing now was logged at ERROR already (one full disk, one ERROR)."""
        return not self.durable or bool(self.failing)

    def checkpoint_written(self, device: str) -> None:
        """A checkpoint of ``device`` was written: one INFO if its last write had failed."""
        if device in self.failing:
            self.failing.discard(device)
            log.info("checkpoint of device %s written again", device)
