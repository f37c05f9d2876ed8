"""Serving one validated reading or label: seq and label checks, predict, publish, learn.

A reading is checked against its device's ``seq`` and ``ts`` bounds (``Device.check_seq``)
and its inline label against the device's label type, predicted by every model, published,
then learned (inline label) or kept pending for its delayed label; a label is learned with
the predictions made when its reading came (prequential, test-then-train). A label whose
reading may still come is held for it (``PendingLabels.hold``) and learned when it does. A
refusal, an internal error and a model that raised are each counted and reported
(``ErrorReports``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from edgebayes.runtime.device import Device
from edgebayes.runtime.ingest.intake import Intake
from edgebayes.runtime.messages import ErrorKind, Label, ProtocolError, Reading, Refusal
from edgebayes.runtime.payloads import Outbox
from edgebayes.runtime.pending import Early, Pending
from edgebayes.runtime.registry import DeviceRegistry
from edgebayes.runtime.reports import ErrorReports

log = logging.getLogger(__name__)


class Serving:
    """Serves readings and labels into the devices of ``registry`` (worker thread).

    Args:
        intake: turns a message into readings, labels and refusals.
        registry: the devices served (and checkpointed: a reboot is saved at once).
        reports: where refusals are counted and reported.
        out: where the messages of live input are published.

    Attributes:
        replayed_at: during a journal replay, when the entry replayed was received (unix
            seconds): the seq and ts bounds decide as they did then. None otherwise.
        n_readings, n_labels, n_predictions, n_learned, n_drift_alerts, n_late,
        n_internal_errors: counters (docs/protocol.md "Metrics").
    """

    def __init__(self, intake: Intake, registry: DeviceRegistry, reports: ErrorReports, out: Outbox):
        self.intake = intake
        self.registry = registry
        self.reports = reports
        self.out = out
        self.replayed_at: float | None = None
        self.n_readings = self.n_labels = self.n_predictions = self.n_learned = 0
        self.n_drift_alerts = self.n_late = self.n_internal_errors = 0

    def now(self) -> float:
        """Unix time now, or, in a journal replay, when the message replayed came."""
        t = self.replayed_at
        return time.time() if t is None else t

    def process(self, topic: str, payload: bytes, t_recv: float, out: Outbox | None = None,
                skip: Callable[[Reading | Label | Refusal], bool] | None = None) -> set[str | None]:
        """Serve what a message makes through ``out`` (None: the live ``Outbox``), but not the
        items ``skip`` says; returns the devices served. An exception is logged and counted
        (``n_internal_errors``), the message skipped."""
        served = set()
        try:
            for item, where in self.intake.handle(topic, payload):
                if skip is None or not skip(item):
                    self.serve(item, where, t_recv, out)
                    served.add(item.device)
        except Exception:
            self.n_internal_errors += 1
            log.exception("error processing a message on %s (skipped; %d so far)", topic, self.n_internal_errors)
            return set()
        return served

    def serve(self, item: Reading | Label | Refusal, topic: str, t_recv: float, out: Outbox | None = None) -> None:
        """Predict and learn from a reading, learn from a label, or report a refusal, publishing
        through ``out`` (None: the live ``Outbox``; ``topic``: where the item came from;
        ``t_recv``: ``perf_counter`` at its arrival)."""
        out = self.out if out is None else out
        if type(item) is Refusal:
            self.reports.report(item.error, topic, item.device, out)
            return
        device = item.device
        try:
            if isinstance(item, Reading):
                if device not in self.registry.devices:
                    self.registry.check_new(device, topic, item.seq)
                self._reading(item, t_recv, out)
            else:
                self._label(item, topic, out)
        except ProtocolError as exc:
            self.reports.report(exc, topic, device, out)
        except Exception as exc:
            self.n_internal_errors += 1
            log.exception("internal error processing seq %d on %s (skipped; %d so far)", item.seq, topic,
                          self.n_internal_errors)
            self.reports.report(ProtocolError(ErrorKind.INTERNAL, f"{type(exc).__name__}: {exc}", item.seq),
                                topic, device, out, logged=True)
        finally:
            dev = self.registry.devices.get(device)
            if dev is not None and dev.model_errors:
                # Device logged them and kept the models: class_limit or learner_error
                for kind, why in dev.model_errors:
                    self.reports.report(ProtocolError(kind, why, item.seq), topic, device, out, logged=True)
                dev.model_errors.clear()

    def _reading(self, r: Reading, t_recv: float, out: Outbox) -> None:
        dev = self.registry.get(r.device, create=True)
        now = self.now()
        how = dev.check_seq(r.seq, r.ts, now)  # refused: duplicate, seq_jump, ts_ahead
        y = _check_label(dev, r.y, r.seq) if r.y is not None else None  # refused: the whole reading
        self._unmatched(dev, dev.pending.expire_early(now), "its reading did not come in time", out)
        if how == "late":
            self.n_late += 1
        elif how == "reboot":
            n = dev.reboot()
            log.info("device %s restarted its seq at %d after %d (reboot %d); %d pending readings "
                     "dropped", r.device, r.seq, dev.last_seq, dev.n_reboots, n)
            self._unmatched(dev, dev.pending.drop_early(), "the device restarted its seq", out)
        self.n_readings += 1
        y_preds, best, proba = dev.predict(r.x)
        # discovery publishes it again after HA restarts
        dev.last_prediction = out.prediction(r.device, r.seq, r.ts, y_preds, best, proba,
                                             (time.perf_counter() - t_recv) * 1000.0)
        self.n_predictions += 1
        dev.accept(r.seq, r.ts, now, how)
        self.registry.dirty.add(r.device)
        held = dev.pending.take(r.seq)
        if held is not None and y is None:
            y = held.y
            self.n_labels += 1
        elif held is not None:
            self._unmatched(dev, [(r.seq, held)], "the reading came with its own label", out)
        if y is not None:
            self._learn(dev, r.seq, r.x, y, y_preds, out)
        else:
            dev.pending.add(r.seq, Pending(now, r.x, y_preds))
        if how == "reboot" and self.registry.store is not None and not self.registry.replaying:
            # a reboot told by the arrival times (Device.check_seq) is not told again by a replay
            self.registry.save(r.device)

    def _label(self, lab: Label, topic: str, out: Outbox) -> None:
        dev = self.registry.get(lab.device, create=False)
        if dev is not None:
            self._unmatched(dev, dev.pending.expire_early(self.now()), "its reading did not come in time", out)
        entry = dev.pending.get(lab.seq) if dev is not None else None
        if entry is None:
            if dev is not None and dev.pending.held(lab.seq):
                raise ProtocolError(ErrorKind.UNKNOWN_SEQ, f"a label for seq {lab.seq} waits for its reading "
                                    "already (this one is not kept)", lab.seq)
            if dev is None or not dev.may_come(lab.seq):
                raise ProtocolError(ErrorKind.UNKNOWN_SEQ, f"no pending reading with seq {lab.seq} (never seen, "
                                    "already labelled, or fallen out of the pending buffer)", lab.seq)
            y = _check_label(dev, lab.y, lab.seq)
            # its reading may come after it (another topic, resent after a failover): held for it
            self._unmatched(dev, dev.pending.hold(lab.seq, Early(self.now(), y, topic)),
                            "more labels wait for their readings than [labels] max_pending", out)
            self.registry.dirty.add(lab.device)
            return
        y = _check_label(dev, lab.y, lab.seq)  # refused: the reading stays pending
        dev.pending.pop(lab.seq)
        self.n_labels += 1
        self.registry.dirty.add(lab.device)
        self._learn(dev, lab.seq, entry.x, y, entry.y_preds, out)

    def _unmatched(self, dev: Device, dropped: list[tuple[int, Early]], why: str, out: Outbox) -> None:
        """Report each held label of ``dropped`` as ``unknown_seq``: never learned, because ``why``."""
        for seq, label in dropped:
            self.reports.report(ProtocolError(ErrorKind.UNKNOWN_SEQ, f"the label for seq {seq} waited for its "
                                              f"reading and was dropped: {why}", seq), label.topic, dev.device, out)

    def _learn(self, dev: Device, seq: int, x: list[float], y, y_preds: list, out: Outbox) -> None:
        alerts = dev.learn(seq, x, y, y_preds, self.now())
        self.n_learned += 1
        for alert in alerts:
            self.n_drift_alerts += 1
            log.info("%s", describe_alert(dev.device, alert))
            out.drift(dev.device, alert)


def _check_label(dev: Device, y, seq: int):
    """``y`` as ``dev`` learns it (``Device.check_label``); raises ProtocolError label_type."""
    y, why = dev.check_label(y)
    if why is not None:
        raise ProtocolError(ErrorKind.LABEL_TYPE, why, seq)
    return y


def describe_alert(device: str, alert: dict) -> str:
    """One readable log line for a drift alert (docs/protocol.md "Drift alert"), e.g.
    ``device sim-0: model srp member 8 warning (adwin), accuracy 0.91 -> 0.72 at seq 223``."""
    member = "" if alert["member"] is None else f" member {alert['member']}"
    before, after = (f"{a:.2f}" if a is not None else "?"
                     for a in (alert["accuracy_before"], alert["accuracy_after"]))
    return (f"device {device}: model {alert['model']}{member} {alert['level']} ({alert['detector']}), "
            f"accuracy {before} -> {after} at seq {alert['seq']}")
