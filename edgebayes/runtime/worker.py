"""The worker: the one thread that owns every model, pending label and counter.

The MQTT network thread only calls ``submit`` (enqueue; under the ``block`` policy it stops
reading while ``can_take`` says the queue is full, so it never waits on model work). The worker
waits for the network thread when too much output is queued (``wait_for_room``), so both run at
the broker's pace. The worker takes messages in arrival order, has its ``Intake``
(``edgebayes.runtime.ingest``) turn each into validated readings and labels, or refusals, then
predicts, publishes, learns, raises drift alerts, reports refusals (``report``), and
acknowledges the message to the broker. With checkpoints on, a reading or label (a
``[[sources]]`` message too) is first appended to the write-ahead journal
(``edgebayes.runtime.journal``) and acknowledged only once it is durable: after the journal's
group ``fdatasync`` (when ``min(1000, [queue] max_size)`` messages wait, or the oldest has
waited ``[checkpoint] sync_interval_s``) and a check that the journal's path still names it,
or after a checkpoint round, which then starts a new journal (holding the entries of devices
whose checkpoint failed). Faults are told once per episode (``Durability``); a journal that
cannot be started at all leaves the worker acknowledging what it processed, not durable. At start
the journal left by the last run is replayed without publishing anything: each device learns,
in order, the entries its checkpoint does not include. Readings and labels the broker sent as retained are
stale and skipped (kind ``retained``). Any other exception while processing a message is
logged, counted and reported on the device's error topic (kind ``internal``); a model that
raises skips that reading, keeps its state and is reported (kinds ``learner_error``,
``class_limit``; see ``Device``). Every ``TICK_S`` it also expires old pending labels,
writes due checkpoints, publishes due metrics, serves the readings the intake's assembler has
due, and calls the ``watchers`` (``tick(devices)``: Home Assistant discovery) and ``tick_hooks``.

The devices served, their checkpoints, admission and eviction are its ``DeviceRegistry``
(``edgebayes.runtime.registry``). ``tick_hooks`` are called from this loop at least every
``TICK_S`` seconds (a systemd watchdog fed from here restarts a hung worker).
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence

from edgebayes.codec import encode
from edgebayes.runtime.admission import Admission
from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import Config
from edgebayes.runtime.device import Device
from edgebayes.runtime.durability import Durability
from edgebayes.runtime.ingest.intake import Intake
from edgebayes.runtime.journal import Journal, JournalError
from edgebayes.runtime.memory import MemoryGuard, plan_memory, rss_bytes
from edgebayes.runtime.messages import Label, ProtocolError, Reading, Refusal, Retained
from edgebayes.runtime.pending import Pending
from edgebayes.runtime.registry import DeviceRegistry
from edgebayes.runtime.topics import Topics

log = logging.getLogger(__name__)

TICK_S = 0.2
#: error topics whose last report time is remembered at once (about 260 bytes each); quiet ones
#: are forgotten after error_interval_s
MAX_ERROR_TOPICS = 4096
#: most messages in one journal fsync (fewer when ``[queue] max_size``, the broker's receive
#: maximum, is smaller: the broker sends no more until some are acknowledged)
COMMIT_MAX = 1000
#: error kinds counted as malformed input (the others are protocol-level refusals)
MALFORMED = frozenset({"oversize", "decode", "not_a_map", "field", "vector_length", "not_finite",
                       "out_of_range", "unknown_feature", "device_id"})


class Worker:
    """Owns all model state; fed by ``submit`` from the network thread.

    Args:
        config: the validated config.
        topics: the runtime's topics.
        store: checkpoint store, or None for no checkpoints.
        journal: the write-ahead journal, or None to acknowledge each message once processed
            (what is learned since the last checkpoint is then lost by a crash).
        client: an ``MqttClient``-like object (``publish``, ``ack``, ``wait_for_room``); needed
            by ``start``.
        intake: what turns messages into readings, labels and refusals (default: an
            ``Intake`` of ``config`` and ``topics``).
        tick_hooks: called from the worker loop at least every ``TICK_S`` seconds.
        watchers: objects whose ``tick(devices)`` is called as often, with the devices served.

    Raises:
        ConfigError: ``[memory] model_budget_bytes`` cannot hold the models (``plan_memory``).
    """

    def __init__(self, config: Config, topics: Topics, store: CheckpointStore | None,
                 journal: Journal | None = None, *, client=None, intake: Intake | None = None,
                 tick_hooks: Sequence[Callable[[], None]] = (), watchers: Sequence = ()):
        self.config = config
        self.topics = topics
        self.store = store
        self.journal = journal
        self.intake = intake if intake is not None else Intake(config, topics)
        self.queue: queue.Queue = queue.Queue(maxsize=config.queue.max_size)
        self.client = client
        self.tick_hooks: list[Callable[[], None]] = list(tick_hooks)
        self.watchers = tuple(watchers)
        self.memory = plan_memory(config)  # models built with their max_size_bytes share
        self.durability = Durability(lambda msg: self.client.publish(topics.alert, encode(msg, self._fmt), qos=1))
        self.registry = DeviceRegistry(
            config, store, self.memory,
            Admission(topics, self.intake.filters, config.memory.new_devices_per_min, config.memory.evict_idle_s),
            self.durability, lambda: self.journal.position() if self.journal is not None else None,
            self._catch_up)
        self.devices = self.registry.devices  # the same dict: watchers and metrics read it
        self._dirty = self.registry.dirty
        self.guard = None
        if config.memory.rss_limit_mb is not None:
            self.guard = MemoryGuard(
                int(config.memory.rss_limit_mb * 2**20),
                lambda: [s.learner for d in self.devices.values() for s in d.slots],
                lambda msg: self.client.publish(topics.alert, encode(msg, self._fmt), qos=1),
                lambda: self.checkpoint(all_devices=True), lambda: setattr(self, "_closed", True),
                shed=self.registry.sizes.changed_all)
        self._drop_oldest = config.queue.policy == "drop_oldest"
        self._fmt = config.output.format
        self._pred_qos = config.output.prediction_qos
        self._names = [m.name for m in config.models]
        self._unacked: list[tuple[int, int, int]] = []  # (mid, qos, connection) waiting for the journal
        self._unacked_since = 0.0
        self._commit_max = min(COMMIT_MAX, config.queue.max_size)
        self._journal_failed = False  # an append or sync failed: acknowledge after a full checkpoint
        self._journal_off = False  # no journal could be started: acknowledge once processed, not durable
        self._source_devices: dict[int, frozenset[str]] = {}  # [[sources]] entries of the journal -> their devices
        self._handling: int | None = None  # journal offset of the message being processed
        self._replayed_at: float | None = None  # when the journal entry being replayed was received
        self._last_error: dict[str | None, float] = {}  # at most MAX_ERROR_TOPICS + 1 (see report)
        self._suppressed: Counter = Counter()
        self._closed = False
        self._drain_until = float("inf")  # set by stop
        self._thread = threading.Thread(target=self._run, name="edgebayes-worker", daemon=True)
        # counters (docs/protocol.md "Metrics")
        self.errors: Counter = Counter()  # error kind -> count
        self.n_readings = self.n_labels = self.n_predictions = self.n_learned = 0
        self.n_dropped = self.n_errors_suppressed = self.n_internal_errors = self.n_drift_alerts = 0
        self.n_replayed = 0  # journal entries learned again at start
        self.n_late = 0  # readings taken below their device's last seq (Device.check_seq)
        self.n_saved_at_stop = 0  # devices the final checkpoint round wrote (stop)
        self.started_at = time.time()
        now = time.monotonic()
        self._next_tick = now + TICK_S
        self._next_checkpoint = now + config.checkpoint.interval_s
        self._next_metrics = now + config.output.metrics_interval_s
        self._metrics_mark = (now, 0)

    # --- network thread -------------------------------------------------------------------
    def submit(self, topic: str, payload: bytes, mid: int, qos: int) -> None:
        """Enqueue one incoming message (network thread). After ``stop`` nothing is taken: the
        message stays unacknowledged and the broker delivers it again to the next session."""
        if self._closed:
            return
        item = (topic, payload, mid, qos, time.perf_counter(), getattr(self.client, "n_connects", 0))
        if not self._drop_oldest:
            self.queue.put(item)  # full only past can_take (another feed): waits for the worker
            return
        while True:
            try:
                self.queue.put_nowait(item)
                return
            except queue.Full:
                try:
                    old = self.queue.get_nowait()
                except queue.Empty:
                    continue
                self.n_dropped += 1
                self._ack(old[2], old[3], old[5])

    def can_take(self) -> bool:
        """Whether ``submit`` takes a message now without waiting (network thread). Under the
        ``block`` policy a full queue says no, and the network loop stops reading until the
        worker has taken one (the broker holds the rest)."""
        return self._drop_oldest or not self.queue.full()

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Replay the journal left by the last run (if any), then start the worker thread."""
        if self.journal is not None:
            self._recover()
        self._thread.start()

    def is_alive(self) -> bool:
        return self._thread.is_alive()

    def stop(self, timeout_s: float | None = None) -> None:
        """Take no more messages, process what is queued for at most half of ``timeout_s``
        (None: all of it), checkpoint every device, acknowledge what was processed, return.
        What is still queued then stays
        unacknowledged: the broker delivers it again to the next session (a slow model with a
        full queue took longer than the whole timeout, and the checkpoint was never written)."""
        if timeout_s is not None:
            self._drain_until = time.monotonic() + timeout_s / 2
        self._closed = True
        self._thread.join(timeout_s)

    def _run(self) -> None:
        get, Empty = self.queue.get, queue.Empty
        while not (self._closed and time.monotonic() >= self._drain_until):
            try:
                item = get(timeout=TICK_S)
            except Empty:
                if self._closed:
                    break
                item = None
            while item is not None and not self.client.wait_for_room(TICK_S):  # backlog full, broker away
                if time.monotonic() >= self._next_tick:
                    self._tick()
                if self._closed and time.monotonic() >= self._drain_until:
                    item = None  # stopping: unacknowledged, the broker delivers it again
            if item is not None:
                self._handle(*item)
            if self._unacked and (len(self._unacked) >= self._commit_max or time.monotonic() - self._unacked_since
                                  >= self.config.checkpoint.sync_interval_s):
                self._commit()
            if time.monotonic() >= self._next_tick:
                self._tick()
        if not self.queue.empty():
            log.warning("stopping with %d messages queued and not processed: the broker delivers "
                        "them again to the next session", self.queue.qsize())
        self.n_saved_at_stop = self.checkpoint(all_devices=True)
        if self._unacked:  # the checkpoint failed: what the journal holds is still durable
            self._commit()

    # --- messages -------------------------------------------------------------------------
    def _handle(self, topic: str, payload: bytes, mid: int, qos: int, t_recv: float, conn: int = 0) -> None:
        """Journal, process and (once durable) acknowledge one message received on connection
        number ``conn`` (``MqttClient.n_connects`` then)."""
        journal = self.journal
        if journal is None or self._journal_off:
            self._process(topic, payload, t_recv)
            self._ack(mid, qos, conn)
            return
        offset = self._handling = None
        # a payload over max_payload_bytes is refused by the intake whatever the journal says:
        # not journaled, so the journal holds only frames its reader takes
        if (type(payload) is not Retained and len(payload) <= self.config.queue.max_payload_bytes
                and self.intake.journaled(topic)):
            offset = self._handling = journal.size
            try:
                journal.append(topic, payload, time.time())
            except Exception as exc:  # noqa: BLE001 (any failure: the acknowledgements wait)
                self._journal_fault("journal append", exc)
        devices = self._process(topic, payload, t_recv)
        self._handling = None
        if offset is not None and devices and not self._native(topic):
            self._source_devices[offset] = frozenset(devices - {None})  # carried forward with them (checkpoint)
        if not self._unacked:
            self._unacked_since = time.monotonic()
        self._unacked.append((mid, qos, conn))

    def _now(self) -> float:
        """Unix time now, or, in a journal replay, when the message replayed came."""
        t = self._replayed_at
        return time.time() if t is None else t

    def _native(self, topic: str) -> bool:
        """Whether ``topic`` is a reading or label topic of the edgebayes protocol."""
        try:
            return self.topics.route(topic) is not None
        except ProtocolError:
            return False

    def _process(self, topic: str, payload: bytes, t_recv: float, skip=None) -> set[str]:
        """Serve what a message makes (``skip(item)`` true: not served); the devices served."""
        try:
            return self._dispatch(topic, payload, t_recv, skip)
        except Exception:
            self.n_internal_errors += 1
            log.exception("error processing a message on %s (skipped; %d so far)", topic, self.n_internal_errors)
            return set()

    def _journal_fault(self, what: str, exc: BaseException) -> None:
        self._journal_failed = True
        self.durability.fault(what, exc, "messages are acknowledged after the next checkpoint round that "
                              "writes every device and a new journal")

    def _commit(self) -> None:
        """Make the journal durable and acknowledge the messages processed since the last
        commit, once its path still names it; after a failed append, sync or check they wait
        for a checkpoint round instead (at once when the folder was deleted: re-created)."""
        if self._journal_failed:
            return
        try:
            self.journal.sync()
            self.journal.check()
        except JournalError as exc:  # deleted or replaced underneath: write everything again
            self._journal_fault("journal check", exc)
            self._dirty.update(self.devices)
            self.checkpoint()
            return
        except Exception as exc:  # noqa: BLE001 (any failure: the acknowledgements wait)
            self._journal_fault("journal sync", exc)
            return
        self._ack_processed()

    def _ack_processed(self) -> None:
        for mid, qos, conn in self._unacked:
            self._ack(mid, qos, conn)
        self._unacked.clear()

    def _ack(self, mid: int, qos: int, conn: int) -> None:
        """Acknowledge a message unless it came on an earlier connection: its packet id may now
        name another message, and the broker sends it again in the resumed session anyway."""
        if conn == getattr(self.client, "n_connects", 0):
            self.client.ack(mid, qos)

    # --- replay at start ------------------------------------------------------------------
    def _recover(self) -> None:
        """Replay the journal of the last run (``edgebayes.runtime.journal``), one entry at a
        time: each device learns, in order, the entries after the journal position of its
        checkpoint. The entries replayed are copied to a new journal as they are (``[[sources]]``
        messages all: they rebuild the assembler), so a crash during replay replays them again,
        and the devices they changed are checkpointed after it; nothing is published (their
        predictions went out before the crash, or were never wanted). A journal written under
        other ``[schema] features`` has its readings replayed by name (``Intake.replay_as``);
        its protocol entries are then not copied (the new journal's header names the new
        features), their devices being checkpointed right after. A journal that cannot be
        written (a full or read-only disk) leaves the runtime serving without durability."""
        live, self.client, self.registry.replaying = self.client, _Muted(), True
        counts = [0, 0]  # entries read, entries replayed
        failed = None
        try:
            jid, entries = self._old_journal()
            written = self.journal.recovered_features
            edited = jid is not None and list(written) != list(self.config.schema.features)
            if edited:
                log.info("journal written under features %s: its readings are replayed into %s by name",
                         written, list(self.config.schema.features))
                self.intake.replay_as(written)
            replay = self._replay(jid, entries, counts, copy_native=not edited)
            try:
                self.journal.rotate(replay)
            except OSError as exc:
                failed = exc
                for _ in replay:  # the rest replayed, nothing written
                    pass
        finally:
            self.client, self.registry.replaying = live, False
            self.intake.replay_as(None)
        self.n_replayed = counts[1]
        if counts[0]:
            log.info("journal: %d messages replayed, %d already in their device's checkpoint",
                     counts[1], counts[0] - counts[1])
        if failed is not None:
            self._journal_off = True
            self.durability.fault("starting the journal", failed, "serving without durability: messages are "
                                  "acknowledged once processed (a crash loses what is not checkpointed); "
                                  "retried at each checkpoint interval")
        self.checkpoint()  # so the next start does not replay them again
        if self.store is not None:
            self.registry.fit()  # the replay admitted every device it named, past max_devices

    def _catch_up(self, device: str) -> None:
        """Learn, in order and publishing nothing, the journal's protocol entries of ``device``
        that its checkpoint does not include: those refused while the checkpoint could not be
        read (kept by every rotation meanwhile), up to the message being handled now."""
        journal = self.journal
        if journal is None or self._journal_off or journal.id is None:
            return
        live, self.client = self.client, _Muted()
        n = 0
        try:
            for offset, topic, payload, t in list(journal.entries()):
                route = self._native(topic) and self.topics.route(topic)
                if not route or route[1] != device or offset == self._handling:
                    continue
                self._replayed_at = t
                n += bool(self._process(topic, payload, time.perf_counter(),
                                        lambda item: item.device != device
                                        or self._included(device, journal.id, offset)))
        finally:
            self.client, self._replayed_at = live, None
        if n:
            log.info("device %s: %d journal messages it was refused while its checkpoint could not be read "
                     "are learned now", device, n)

    def _old_journal(self):
        """``Journal.recover()``; a journal that cannot be read (EACCES, EIO) is moved aside for
        the operator (not overwritten by the next journal), its entries not replayed."""
        try:
            return self.journal.recover()
        except OSError as exc:
            with contextlib.suppress(OSError):  # the folder cannot be written either: the new journal fails too
                self.journal.move_aside(f"cannot read it: {type(exc).__name__}: {exc}")
            return None, iter(())

    def _replay(self, jid: str | None, entries, counts: list[int], copy_native: bool = True):
        """Serve each journal entry's items its device's checkpoint does not include; yields the
        entries to keep in the new journal (``counts``: entries read, entries replayed)."""
        for offset, topic, payload, t in entries:
            counts[0] += 1
            self._replayed_at = t  # the decisions of the time it came (seq and ts bounds)
            served = self._process(topic, payload, time.perf_counter(),
                                   lambda item: self._included(item.device, jid, offset))
            counts[1] += bool(served)
            self._replayed_at = None
            if not self._native(topic) or (served and copy_native):
                yield topic, payload, t

    def _included(self, device: str | None, jid: str | None, offset: int) -> bool:
        """Whether the journal entry at ``offset`` of journal ``jid`` is in ``device``'s checkpoint."""
        if device is None:
            return False
        try:
            dev = self.registry.get(device, create=False)
        except ProtocolError:
            return False
        pos = dev.journal_pos if dev is not None else None
        return pos is not None and pos[0] == jid and offset < pos[1]

    def _dispatch(self, topic: str, payload: bytes, t_recv: float, skip=None) -> set[str]:
        served = set()
        for item, where in self.intake.handle(topic, payload):
            if skip is None or not skip(item):
                self.serve(item, where, t_recv)
                served.add(item.device)
        return served

    def serve(self, item: Reading | Label | Refusal, topic: str, t_recv: float) -> None:
        """Predict and learn from a validated reading, learn from a label, or report a refusal
        (``topic``: where the item came from). A refusal, an internal error and a model that
        raised are each counted and reported on the device's error topic."""
        if type(item) is Refusal:
            self.report(item.error, topic, item.device)
            return
        device = item.device
        try:
            if isinstance(item, Reading):
                if device not in self.devices:
                    self.registry.check_new(device, topic, item.seq)
                self._reading(item, t_recv)
            else:
                self._label(item)
        except ProtocolError as exc:
            self.report(exc, topic, device)
        except Exception as exc:
            self.n_internal_errors += 1
            log.exception("internal error processing seq %d on %s (skipped; %d so far)", item.seq, topic,
                          self.n_internal_errors)
            self.report(ProtocolError("internal", f"{type(exc).__name__}: {exc}", item.seq), topic, device, logged=True)
        finally:
            dev = self.devices.get(device)
            if dev is not None and dev.model_errors:
                self._report_model_errors(dev, topic, item.seq)

    def _report_model_errors(self, dev: Device, topic: str, seq: int | None) -> None:
        """Count and report each model that raised (kind ``class_limit`` or ``learner_error``);
        ``Device`` logged them and kept the models."""
        for kind, why in dev.model_errors:
            self.report(ProtocolError(kind, why, seq), topic, dev.device, logged=True)
        dev.model_errors.clear()

    def _reading(self, r: Reading, t_recv: float) -> None:
        dev = self.registry.get(r.device, create=True)
        now = self._now()
        how = dev.check_seq(r.seq, r.ts, now)  # refused: duplicate, seq_jump, ts_ahead
        y = self._check_label(dev, r.y, r.seq) if r.y is not None else None  # refused: the whole reading
        if how == "late":
            self.n_late += 1
        elif how == "reboot":
            n = dev.reboot()
            log.info("device %s restarted its seq at %d after %d (reboot %d); %d pending readings "
                     "dropped", r.device, r.seq, dev.last_seq, dev.n_reboots, n)
        self.n_readings += 1
        y_preds, best, proba = dev.predict(r.x)
        # str keys: JSON has no others, and msgpack's default decoder refuses int map keys
        msg = {"seq": r.seq, "ts": r.ts, "y_pred": y_preds[best],
               "proba": {str(c): p for c, p in proba.items()}, "model": self._names[best],
               "models": dict(zip(self._names, y_preds)),
               "latency_ms": (time.perf_counter() - t_recv) * 1000.0}
        payload = encode(msg, self._fmt)
        self.client.publish(self.topics.device_topic(r.device, "prediction"), payload, qos=self._pred_qos)
        dev.last_prediction = payload  # Home Assistant discovery publishes it again after HA restarts
        self.n_predictions += 1
        dev.accept(r.seq, r.ts, now, how)
        self._dirty.add(r.device)
        if y is not None:
            self._learn(dev, r.seq, r.x, y, y_preds)
        else:
            dev.pending.add(r.seq, Pending(now, r.x, y_preds))
        if how == "reboot" and self.store is not None and not self.registry.replaying:
            # a reboot told by the arrival times (Device.check_seq) is not told again by a replay
            self.registry.save(r.device)

    def _label(self, lab: Label) -> None:
        dev = self.registry.get(lab.device, create=False)
        entry = dev.pending.get(lab.seq) if dev is not None else None
        if entry is None:
            raise ProtocolError("unknown_seq", f"no pending reading with seq {lab.seq} (never seen, "
                                "already labelled, or fallen out of the pending buffer)", lab.seq)
        y = self._check_label(dev, lab.y, lab.seq)  # refused: the reading stays pending
        dev.pending.pop(lab.seq)
        self.n_labels += 1
        self._dirty.add(lab.device)
        self._learn(dev, lab.seq, entry.x, y, entry.y_preds)

    @staticmethod
    def _check_label(dev: Device, y, seq: int):
        """``y`` as ``dev`` learns it (``Device.check_label``); raises ProtocolError label_type."""
        y, why = dev.check_label(y)
        if why is not None:
            raise ProtocolError("label_type", why, seq)
        return y

    def _learn(self, dev: Device, seq: int, x: list[float], y, y_preds: list) -> None:
        alerts = dev.learn(seq, x, y, y_preds, self._now())
        self.n_learned += 1
        for alert in alerts:
            self.n_drift_alerts += 1
            log.info("%s", describe_alert(dev.device, alert))
            self.client.publish(self.topics.device_topic(dev.device, "drift"), encode(alert, self._fmt), qos=1)

    def report(self, exc: ProtocolError, topic: str, device: str | None = None, logged: bool = False) -> None:
        """Count a problem with a message on ``topic``; publish it on ``device``'s error topic
        (None: the runtime's) unless that topic had a report under error_interval_s ago (error
        topics beyond the first `MAX_ERROR_TOPICS` remembered share one such limit).
        ``logged``: already logged by the caller."""
        out_topic = self.topics.device_topic(device, "error") if device else self.topics.runtime_error
        self.errors[exc.kind] += 1
        now = time.monotonic()
        last_error = self._last_error
        # past MAX_ERROR_TOPICS topics the others share one rate limit (None), so junk ids cannot grow memory
        key = out_topic if out_topic in last_error or len(last_error) < MAX_ERROR_TOPICS else None
        last = last_error.get(key)
        if last is not None and now - last < self.config.output.error_interval_s:
            self._suppressed[key] += 1
            self.n_errors_suppressed += 1
            return
        last_error[key] = now
        if not logged:
            log.warning("%s on %s: %s", exc.kind, topic, exc)
        msg = {"ts": time.time(), "topic": topic, "seq": exc.seq, "kind": exc.kind, "error": str(exc),
               "n_suppressed": self._suppressed.pop(key, 0)}
        self.client.publish(out_topic, encode(msg, self._fmt), qos=0)

    # --- periodic work --------------------------------------------------------------------
    def _tick(self) -> None:
        now = time.monotonic()
        self._next_tick = now + TICK_S
        try:
            wall = time.time()
            for dev in self.devices.values():
                dev.pending.expire(wall)
            if self.store is not None and now >= self._next_checkpoint:
                self._next_checkpoint = now + self.config.checkpoint.interval_s
                self.checkpoint()
            if now >= self._next_metrics:
                self._next_metrics = now + self.config.output.metrics_interval_s
                self.client.publish(self.topics.metrics, encode(self.metrics(), "json"), qos=0)
            horizon = now - self.config.output.error_interval_s  # forget quiet error topics
            for t in [t for t, last in self._last_error.items() if last < horizon and not self._suppressed[t]]:
                del self._last_error[t]
            if self.guard is not None:
                self.guard.tick()
            t_recv = time.perf_counter()
            for item, where in self.intake.tick():
                self.serve(item, where, t_recv)
            for watcher in self.watchers:
                watcher.tick(self.devices)
            for hook in self.tick_hooks:
                hook()
        except Exception:
            self.n_internal_errors += 1
            log.exception("error in the worker's periodic work")

    def checkpoint(self, all_devices: bool = False) -> int:
        """Write the checkpoints of devices changed since the last write (or all); returns count.
        Then the journal starts over: empty when every changed device was written, else holding
        the entries of the devices whose checkpoint failed (so one failing device does not make
        the journal grow with the others' messages); the messages processed so far are then
        acknowledged. After a journal fault (a failed append or sync: the journal may miss
        entries) only a round that wrote every device starts it over."""
        if self.store is None:
            return 0
        journal = self.journal
        names = list(self.devices) if all_devices else list(self._dirty)
        if self._journal_failed or self._journal_off:
            with contextlib.suppress(OSError):  # the folder deleted underneath: made again
                self.store.dir.mkdir(parents=True, exist_ok=True)
        pos = journal.position() if journal is not None else None
        n = 0
        for name in names:
            n += self.registry.save(name, pos)
        if journal is None or (self._dirty and (self._journal_failed or self._journal_off)):
            return n
        # their entries are in no checkpoint (an open journal only: none is open while it is off)
        held = self._dirty | self.registry.unreadable() if not self._journal_off else set()
        try:
            if held:
                self._rotate_keeping(held)
            elif journal.n_entries or self._journal_failed or self._journal_off:
                journal.rotate()
                self._source_devices.clear()
        except Exception as exc:  # noqa: BLE001 (any failure: retried at the next checkpoint)
            self.durability.fault("starting a new journal", exc, "retried at the next checkpoint")
            return n
        self._journal_failed = self._journal_off = False
        self._ack_processed()
        if not self._dirty:
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
                route = self._native(topic) and self.topics.route(topic)
                devices = frozenset((route[1],)) if route else self._source_devices.get(offset, frozenset())
                if any(d in failing and not self._included(d, jid, offset) for d in devices):
                    if not route:
                        kept_sources.append((n_kept, devices))
                    n_kept += 1
                    yield topic, payload, t

        journal.rotate(keep())
        self._source_devices = {}
        if kept_sources:  # their offsets in the new journal
            index = dict(kept_sources)
            for i, (offset, *_) in enumerate(journal.entries()):
                if i in index:
                    self._source_devices[offset] = index[i]
        log.debug("journal started over keeping %d entries of %d devices whose checkpoint failed",
                  n_kept, len(failing))

    def metrics(self) -> dict:
        """The metrics message (docs/protocol.md "Metrics")."""
        now = time.monotonic()
        t0, n0 = self._metrics_mark
        self._metrics_mark = (now, self.n_readings)
        models = {}
        nbytes = self.registry.sizes.slot_bytes(self.devices)
        for i, name in enumerate(self._names):
            correct = seen = 0
            for dev in self.devices.values():
                slot = dev.slots[i]
                correct += slot.n_window_correct
                seen += len(slot.window)
            models[name] = {"accuracy": correct / seen if seen else None, "bytes": nbytes[i] if nbytes else 0}
        pending = [dev.pending for dev in self.devices.values()]
        return {
            "ts": time.time(), "uptime_s": time.time() - self.started_at,
            "readings_per_s": (self.n_readings - n0) / (now - t0) if now > t0 else 0.0,
            "queue_depth": self.queue.qsize(), "n_readings": self.n_readings, "n_labels": self.n_labels,
            "n_predictions": self.n_predictions, "n_learned": self.n_learned,
            "n_malformed": sum(n for k, n in self.errors.items() if k in MALFORMED),
            "n_dropped": self.n_dropped, "n_duplicates": self.errors["duplicate"],
            "n_unknown_labels": self.errors["unknown_seq"], "n_devices_refused": self.errors["device_limit"],
            "n_pending_dropped": sum(p.n_dropped for p in pending),
            "n_reboots": sum(dev.n_reboots for dev in self.devices.values()),
            "n_publish_failed": getattr(self.client, "n_publish_failed", 0),
            "n_errors_suppressed": self.n_errors_suppressed, "n_internal_errors": self.n_internal_errors,
            "n_replayed": self.n_replayed, "n_late": self.n_late, "n_evicted": self.registry.n_evicted,
            "journal_bytes": self.journal.size if self.journal is not None else 0,
            "n_journal_syncs": self.journal.n_syncs if self.journal is not None else 0,
            "durable": self.journal is not None and self.durability.durable and not self._journal_off,
            "n_journal_errors": self.durability.n_journal_errors,
            "n_checkpoints_failing": len(self.durability.failing),
            "n_drift_alerts": self.n_drift_alerts, "errors": dict(self.errors),
            "pending_labels": sum(len(p) for p in pending), "n_devices": len(self.devices),
            "rss_bytes": rss_bytes(), "models": models,
            **self.intake.metrics(),
        }


class _Muted:
    """The client during journal replay: publishes nothing, acknowledges nothing."""

    def publish(self, topic, payload, qos=0, retain=False):
        return None

    def ack(self, mid, qos):
        pass

    def wait_for_room(self, timeout_s):
        pass


def describe_alert(device: str, alert: dict) -> str:
    """One readable log line for a drift alert (docs/protocol.md "Drift alert"), e.g.
    ``device sim-0: model srp member 8 warning (adwin), accuracy 0.91 -> 0.72 at seq 223``."""
    member = "" if alert["member"] is None else f" member {alert['member']}"
    before, after = (f"{a:.2f}" if a is not None else "?"
                     for a in (alert["accuracy_before"], alert["accuracy_after"]))
    return (f"device {device}: model {alert['model']}{member} {alert['level']} ({alert['detector']}), "
            f"accuracy {before} -> {after} at seq {alert['seq']}")
