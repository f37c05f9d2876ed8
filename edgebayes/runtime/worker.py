"""The worker: the one thread that owns every model, pending label and counter.

The MQTT network thread only calls ``submit`` (enqueue; under the ``block`` policy it stops
reading while ``can_take`` says the queue is full, so it never waits on model work). The worker
waits for the network thread when too much output is queued (``Session.wait_for_room``), so
both run at the broker's pace. It takes messages in arrival order and hands each to its owners:

- ``Acks`` (``edgebayes.runtime.acks``): journal the message, have it processed, acknowledge
  it once durable; checkpoint rounds that start the journal over.
- ``Serving`` (``edgebayes.runtime.serving``): the ``Intake`` (``edgebayes.runtime.ingest``)
  turns the message into validated readings and labels, or refusals; readings are checked
  (seq, ts, label type), predicted, published, learned; labels learned.
- ``ErrorReports`` (``edgebayes.runtime.reports``): refusals counted and reported, rate-limited.
- ``Outbox`` (``edgebayes.runtime.payloads``): every message published, built in one module.
- ``Replay`` (``edgebayes.runtime.replay``): at start, the journal left by the last run is
  replayed through a muted ``Outbox``: each device learns, in order, the entries its checkpoint
  does not include.
- ``DeviceRegistry`` (``edgebayes.runtime.registry``): the devices served, their checkpoints,
  admission and eviction.
- ``Periodic`` (``edgebayes.runtime.periodic``): every ``TICK_S`` it expires old pending labels,
  writes due checkpoints, publishes due metrics, forgets quiet error topics, checks the memory
  guard, serves the readings the intake's assembler has due and calls the ``watchers``
  (``tick(devices)``: Home Assistant discovery), each in its own ``try``; then the
  ``tick_hooks`` (a systemd watchdog fed from here restarts a hung worker).

Readings and labels the broker sent as retained are stale and skipped (kind ``retained``); a
model that raises skips that reading, keeps its state and is reported (kinds
``learner_error``, ``class_limit``; see ``Device``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from edgebayes.runtime import payloads
from edgebayes.runtime.acks import Acks
from edgebayes.runtime.admission import Admission
from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import Config
from edgebayes.runtime.durability import Durability
from edgebayes.runtime.inbox import Inbox
from edgebayes.runtime.ingest.intake import Intake
from edgebayes.runtime.journal import Journal
from edgebayes.runtime.memory import MemoryGuard, plan_memory, rss_bytes
from edgebayes.runtime.messages import MALFORMED
from edgebayes.runtime.payloads import Outbox
from edgebayes.runtime.periodic import Periodic
from edgebayes.runtime.publisher import Muted, Session
from edgebayes.runtime.registry import DeviceRegistry
from edgebayes.runtime.replay import Replay
from edgebayes.runtime.reports import ErrorReports
from edgebayes.runtime.serving import Serving
from edgebayes.runtime.topics import Topics

log = logging.getLogger(__name__)

TICK_S = 0.2


class Worker:
    """Owns all model state; fed by ``submit`` from the network thread.

    Args:
        config: the validated config.
        topics: the runtime's topics.
        store: checkpoint store, or None for no checkpoints.
        journal: the write-ahead journal, or None to acknowledge each message once processed
            (what is learned since the last checkpoint is then lost by a crash).
        session: the broker connection it publishes through and acknowledges to (a
            ``Session``: ``MqttClient``, or a ``RecordingPublisher`` in tests).
        intake: what turns messages into readings, labels and refusals (default: an
            ``Intake`` of ``config`` and ``topics``).
        tick_hooks: called from the worker loop at least every ``TICK_S`` seconds, after the
            periodic tasks, whatever they raised.
        watchers: objects whose ``tick(devices)`` is called as often, with the devices served.

    Attributes:
        stop_reason: why the worker stopped by itself (the memory guard), None otherwise.

    Raises:
        ConfigError: ``[memory] model_budget_bytes`` cannot hold the models (``plan_memory``).
    """

    def __init__(self, config: Config, topics: Topics, store: CheckpointStore | None,
                 journal: Journal | None = None, *, session: Session, intake: Intake | None = None,
                 tick_hooks: Sequence[Callable[[], None]] = (), watchers: Sequence = ()):
        self.config = config
        self.store = store
        self.journal = journal
        self.session = session
        self.intake = intake if intake is not None else Intake(config, topics)
        self.queue = Inbox(config.queue.max_size)
        self.memory = plan_memory(config)  # models built with their max_size_bytes share
        names = [m.name for m in config.models]
        self.out = Outbox(session, topics, config.output.format, config.output.prediction_qos, names)
        durability = self.durability = Durability(self.out.alert)
        self.registry = DeviceRegistry(
            config, store, self.memory,
            Admission(topics, self.intake.filters, config.memory.new_devices_per_min, config.memory.evict_idle_s),
            durability, lambda: journal.position() if journal is not None else None,
            lambda device: self.replay.catch_up(device))  # noqa: PLW0108 (the replay is made below)
        self.devices = self.registry.devices  # the same dict: watchers and metrics read it
        self.reports = ErrorReports(config.output.error_interval_s)
        self.serving = Serving(self.intake, self.registry, self.reports, self.out)
        self.acks = Acks(config, topics, journal, store, self.registry, durability, self.intake, session,
                         self.serving.process)
        self.replay = Replay(config, topics, self.acks, self.serving, self.registry, self.intake, durability,
                             Outbox(Muted(), topics, config.output.format, config.output.prediction_qos, names))
        self.guard = None
        if config.memory.rss_limit_mb is not None:
            self.guard = MemoryGuard(
                int(config.memory.rss_limit_mb * 2**20),
                lambda: [s.learner for d in self.devices.values() for s in d.slots],
                self.out.alert, lambda: self.checkpoint(all_devices=True), self.stop_at_memory_limit,
                shed=self.registry.sizes.changed_all)
        watching = [(f"watcher {type(w).__name__}", lambda w=w: w.tick(self.devices)) for w in watchers]
        self.periodic = Periodic([
            ("pending expiry", self._expire_pending), ("checkpoint", self._checkpoint_due),
            ("metrics", self._metrics_due), ("error topics", self.reports.forget_quiet),
            *([("memory guard", self.guard.tick)] if self.guard is not None else []),
            ("assembler", self._assembled), *watching], tick_hooks)
        self.stop_reason: str | None = None
        self._names = names
        self._drop_oldest = config.queue.policy == "drop_oldest"
        self._closed = False
        self._drain_until = float("inf")  # set by stop
        self._thread = threading.Thread(target=self._run, name="edgebayes-worker", daemon=True)
        self.n_dropped = 0  # queue overflow (drop_oldest)
        self.n_saved_at_stop = 0  # devices the final checkpoint round wrote (stop)
        self.started_at = time.time()
        now = time.monotonic()
        self._next_tick = now + TICK_S
        self._next_checkpoint = now + config.checkpoint.interval_s
        self._next_metrics = now + config.output.metrics_interval_s
        self._metrics_mark = (now, 0)

    # --- network thread -------------------------------------------------------------------
    def submit(self, topic: str, payload: bytes, mid: int, qos: int, wake: bool = True) -> None:
        """Enqueue one incoming message (network thread). After ``stop`` nothing is taken: the
        message stays unacknowledged and the broker delivers it again to the next session.
        ``wake=False``: more follow at once, and the caller calls ``wake`` after them."""
        if self._closed:
            return
        item = (topic, payload, mid, qos, time.perf_counter(), self.session.n_connects)
        inbox = self.queue
        if self._drop_oldest:
            while inbox.full():
                old = inbox.drop_oldest()
                if old is not None:
                    self.n_dropped += 1
                    self.acks.ack(old[2], old[3], old[5])
        inbox.put(item, wake)  # full only past can_take (another feed): waits for the worker

    def wake(self) -> None:
        """Wake the worker for the messages submitted with ``wake=False`` (network thread)."""
        self.queue.wake()

    def can_take(self) -> bool:
        """Whether ``submit`` takes a message now without waiting (network thread). Under the
        ``block`` policy a full queue says no, and the network loop stops reading until the
        worker has taken one (the broker holds the rest)."""
        return self._drop_oldest or not self.queue.full()

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Replay the journal left by the last run (if any), then start the worker thread."""
        if self.journal is not None:
            self.replay.recover()
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float | None = None) -> None:
        """Take no more messages, process what is queued for at most half of ``timeout_s``
        (None: all of it), checkpoint every device, acknowledge what was processed, return.
        What is still queued then stays unacknowledged: the broker delivers it again to the
        next session (a slow model with a full queue took longer than the whole timeout, and
        the checkpoint was never written)."""
        if timeout_s is not None:
            self._drain_until = time.monotonic() + timeout_s / 2
        self._closed = True
        self._thread.join(timeout_s)

    def stop_at_memory_limit(self) -> None:
        """The memory guard's stop (it checkpointed every device first): the worker ends its
        loop, and ``stop_reason`` says why for the process's last line."""
        limit = self.config.memory.rss_limit_mb
        self.stop_reason = f"RSS reached [memory] rss_limit_mb = {limit:g} after shedding; every device checkpointed"
        self._closed = True

    def _run(self) -> None:
        take, wait, wait_for_room = self.queue.take, self.queue.wait, self.session.wait_for_room
        while not (self._closed and time.monotonic() >= self._drain_until):
            item = take()
            if item is None:
                if self.acks.commit_due(idle=True):
                    self.acks.commit()
                if wait(TICK_S):
                    item = take()
                elif self._closed:
                    break
            while item is not None and not wait_for_room(TICK_S):  # backlog full, broker away
                self._tick_if_due()
                if self._closed and time.monotonic() >= self._drain_until:
                    item = None  # stopping: unacknowledged, the broker delivers it again
            if item is not None:
                self.acks.handle(*item)
            if self.acks.commit_due():
                self.acks.commit()
            self._tick_if_due()
        if not self.queue.empty():
            log.warning("stopping with %d messages queued and not processed: the broker delivers "
                        "them again to the next session", self.queue.qsize())
        self.n_saved_at_stop = self.checkpoint(all_devices=True)
        if self.acks.n_unacked:  # the checkpoint failed: what the journal holds is still durable
            self.acks.commit()

    def checkpoint(self, all_devices: bool = False) -> int:
        """A checkpoint round (``Acks.checkpoint``); returns the devices written."""
        return self.acks.checkpoint(all_devices)

    # --- periodic work --------------------------------------------------------------------
    def _tick_if_due(self) -> None:
        now = time.monotonic()
        if now >= self._next_tick:
            self._next_tick = now + TICK_S
            self.periodic.run()

    def _expire_pending(self) -> None:
        wall = time.time()
        for dev in self.devices.values():
            dev.pending.expire(wall)

    def _checkpoint_due(self) -> None:
        now = time.monotonic()
        if self.store is not None and now >= self._next_checkpoint:
            self._next_checkpoint = now + self.config.checkpoint.interval_s
            self.checkpoint()

    def _metrics_due(self) -> None:
        now = time.monotonic()
        if now >= self._next_metrics:
            self._next_metrics = now + self.config.output.metrics_interval_s
            self.out.metrics(self.metrics())

    def _assembled(self) -> None:
        t_recv = time.perf_counter()
        for item, where in self.intake.tick():
            self.serving.serve(item, where, t_recv)

    def metrics(self) -> dict:
        """The metrics message (docs/protocol.md "Metrics")."""
        now = time.monotonic()
        t0, n0 = self._metrics_mark
        s = self.serving
        self._metrics_mark = (now, s.n_readings)
        counts = {"n_readings": s.n_readings, "n_labels": s.n_labels, "n_predictions": s.n_predictions,
                  "n_learned": s.n_learned, "n_dropped": self.n_dropped,
                  "n_errors_suppressed": self.reports.n_errors_suppressed,
                  "n_internal_errors": self.n_internal_errors, "n_replayed": self.replay.n_replayed,
                  "n_late": s.n_late, "n_drift_alerts": s.n_drift_alerts}
        devices = list(self.devices.values())
        return payloads.metrics(
            started_at=self.started_at, readings_per_s=(s.n_readings - n0) / (now - t0) if now > t0 else 0.0,
            queue_depth=self.queue.qsize(), counts=counts, errors=self.reports.errors, malformed=MALFORMED,
            devices=devices, journal=self.journal, durable=self.acks.durable,
            n_journal_errors=self.durability.n_journal_errors,
            n_checkpoints_failing=len(self.durability.failing), n_evicted=self.registry.n_evicted,
            n_publish_failed=self.session.n_publish_failed, rss_bytes=rss_bytes(),
            models=payloads.model_metrics(self._names, devices, self.registry.sizes.slot_bytes(self.devices)),
            sources=self.intake.metrics())

    @property
    def n_internal_errors(self) -> int:
        """Messages and periodic tasks that raised (a bug: logged with its traceback)."""
        return self.serving.n_internal_errors + self.periodic.n_failures
