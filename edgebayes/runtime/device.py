"""One device's model set: predict with every model, score, learn, and raise drift alerts.

Each configured model gets a ``ModelSlot`` per device: the learner, its prequential accuracy
over the last ``accuracy_window`` labelled readings (test-then-train: the prediction made at
reading time is scored when the label arrives, before learning), and a drift signal. A learner
with its own detectors (SRP) reports them after ``learn_one`` in ``last_events``, a list of dicts
``{level, member, detector, accuracy_before, accuracy_after}`` (level "warning" or "drift",
member the ensemble index; see ``SRPClassifier``); every
other learner gets an ``ErrorDetector(ADWIN(delta))`` over its 0/1 error stream (1 = wrong),
which signals only a rise of the error (DESIGN.md 2.4). The prediction published is the one
of the model with the best recent accuracy (first configured on ties and before any label).

A model that raises in ``predict_proba_one`` or ``learn_one`` (its state went bad: input was
validated before it got here) is replaced by a fresh learner of its config, logged at ERROR and
recorded in ``Device.resets`` for the worker to report: a model never fails a device for good.
A device takes labels of one type (all int or all str): in JSON ``1`` and ``"1"`` are one key.

Only the runtime's worker thread touches these objects (no locks).
"""

from __future__ import annotations

import logging
import math
import sys
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from edgebayes.base import learner_from_state
from edgebayes.drift.base import ErrorDetector, detector_from_state
from edgebayes.runtime.config import ModelConfig
from edgebayes.runtime.pending import PendingLabels

log = logging.getLogger(__name__)


class ModelSlot:
    """A learner with its recent-accuracy window and (unless it has its own) its detector."""

    __slots__ = (
        "build",
        "detector",
        "drift_delta",
        "kind",
        "learner",
        "n_correct",
        "n_labels",
        "n_resets",
        "n_window_correct",
        "name",
        "window",
    )

    def __init__(self, name: str, kind: str, build: Callable[[], Any], accuracy_window: int, drift_delta: float):
        self.name = name
        self.kind = kind
        self.build = build
        self.drift_delta = drift_delta
        self.window: deque[int] = deque(maxlen=accuracy_window)
        self.n_resets = 0
        self._fresh()

    def _fresh(self) -> None:
        self.learner = learner = self.build()
        self.window.clear()
        self.n_window_correct = 0
        self.detector = None if hasattr(learner, "last_events") else _error_detector(self.drift_delta)
        self.n_labels = 0
        self.n_correct = 0

    def reset(self) -> None:
        """Replace the learner by a fresh one; its accuracy window and detector start over."""
        self._fresh()
        self.n_resets += 1

    @property
    def accuracy(self) -> float | None:
        """Accuracy over the window (0..1), None before any label."""
        return self.n_window_correct / len(self.window) if self.window else None

    def score(self, correct: int) -> None:
        window = self.window
        if len(window) == window.maxlen:
            self.n_window_correct -= window[0]
        window.append(correct)
        self.n_window_correct += correct
        self.n_labels += 1
        self.n_correct += correct

    def memory_bytes(self) -> int:
        """The learner's bytes, plus the detector's and the window's."""
        extra = self.detector.memory_bytes() if self.detector is not None else 0
        return self.learner.memory_bytes() + extra + sys.getsizeof(self.window)

    def state(self) -> dict:
        return {
            "name": self.name, "kind": self.kind, "learner": self.learner.state(),
            "window": list(self.window), "n_labels": self.n_labels, "n_correct": self.n_correct,
            "detector": self.detector.state() if self.detector is not None else None,
        }

    def load_state(self, state: dict) -> None:
        self.learner = learner_from_state(state["learner"])
        self.window.clear()
        self.window.extend(int(c) for c in state["window"][-self.window.maxlen:])
        self.n_window_correct = sum(self.window)
        self.n_labels, self.n_correct = int(state["n_labels"]), int(state["n_correct"])
        if self.detector is not None and state["detector"] is not None:
            self.detector = detector_from_state(state["detector"])

    def check(self, n_features: int) -> None:
        """A smoke prediction on an all-zero reading: finite probabilities in [0, 1] summing
        to 1 (or none before learning), else ``ValueError`` (a restored state is unusable)."""
        proba = self.learner.predict_proba_one([0.0] * n_features)
        ps = list(proba.values())
        if not all(isinstance(p, float | int) and math.isfinite(p) and 0.0 <= p <= 1.0 for p in ps) or (
                ps and abs(sum(ps) - 1.0) > 1e-6):
            raise ValueError(f"model {self.name!r} predicts {proba!r} from a zero reading")


def _error_detector(delta: float) -> ErrorDetector:
    from edgebayes.drift.adwin import ADWIN

    return ErrorDetector(ADWIN(delta=delta))


class Device:
    """The model set, pending labels, last accepted ``seq`` and ``ts``, and reboots of one device.

    Args:
        device: the device id.
        models: the configured models; each gets a fresh learner from ``ModelConfig.build``.
        accuracy_window: labelled readings in each model's recent accuracy.
        drift_delta: ADWIN delta for models without their own detectors.
        pending: this device's delayed-label buffer.
    """

    def __init__(self, device: str, models: Sequence[ModelConfig], accuracy_window: int,
                 drift_delta: float, pending: PendingLabels):
        self.device = device
        self.slots = [ModelSlot(m.name, m.kind, m.build, accuracy_window, drift_delta) for m in models]
        self.pending = pending
        self.label_type: type | None = None  # int or str, from the first label (one per device)
        self.resets: list[tuple[str, str]] = []  # (model, why) reset since the worker last looked
        self.last_seq = -1
        self.last_ts: float | None = None  # ts of the last accepted reading
        self.n_reboots = 0  # seq restarts (docs/protocol.md "Reboots")
        self.best = 0  # index of the slot with the best recent accuracy
        self.journal_pos: tuple[str, int] | None = None  # journal position its restored checkpoint includes

    def restarted(self, ts: float | None) -> bool:
        """Whether a reading whose ``seq`` is not above ``last_seq`` starts a new seq epoch (the
        device rebooted and counts again) rather than being a duplicate: its ``ts`` is later than
        the last accepted reading's. A QoS 1 redelivery or a replay carries its original ``ts``,
        so it stays a duplicate; without ``ts`` on both, a reboot cannot be told from a
        redelivery (a broker restart resends ``seq`` 0 too), so it is a duplicate."""
        last_ts = self.last_ts
        return ts is not None and last_ts is not None and ts > last_ts

    def reboot(self) -> int:
        """Start a new seq epoch: pending readings of the old one are dropped (counted), since a
        label's ``seq`` now names a new reading. Returns how many were dropped."""
        n = len(self.pending)
        self.pending.clear()
        self.n_reboots += 1
        return n

    def check_label(self, y: Any) -> str | None:
        """Why label ``y`` cannot be learned by this device (None: it can): its type (int or str)
        differs from the device's earlier labels. Accepting ``y`` fixes the type if unset."""
        t = type(y)
        if self.label_type is None:
            self.label_type = t
        elif t is not self.label_type:
            return (f"label {str(y)[:40]!r} is a {t.__name__}, this device's labels are "
                    f"{self.label_type.__name__}s (in JSON 1 and \"1\" are one key)")
        return None

    def predict(self, x: list[float]) -> tuple[list[Any], dict]:
        """Every model's prediction for ``x`` (None before it learned, or when the model raised
        and was reset), and the best one's proba."""
        y_preds, best_proba = [], {}
        best = self.best
        for i, slot in enumerate(self.slots):
            try:
                proba = slot.learner.predict_proba_one(x)
                y_pred = max(proba, key=proba.get) if proba else None
            except Exception as exc:
                self._reset(slot, "predict_proba_one", exc)
                proba, y_pred = {}, None
            y_preds.append(y_pred)
            if i == best:
                best_proba = proba
        return y_preds, best_proba

    def _reset(self, slot: ModelSlot, where: str, exc: Exception) -> None:
        why = f"{where} raised {type(exc).__name__}: {exc}"
        log.error("device %s: model %r %s; it is reset to a fresh learner", self.device, slot.name, why,
                  exc_info=exc)
        slot.reset()
        self.resets.append((slot.name, why))

    def learn(self, seq: int, x: list[float], y: Any, y_preds: list[Any], now: float) -> list[dict]:
        """Score each model's reading-time prediction against ``y``, learn, and return alerts.

        A model that raises is reset (see the module docstring); its fresh learner learns the
        sample, and if that raises too the sample is skipped for this model.

        Returns:
            Drift alerts (docs/protocol.md "Drift alert" payloads, ``ts`` = ``now``).
        """
        alerts = []
        for slot, y_pred in zip(self.slots, y_preds):
            correct = 1 if y_pred is not None and y_pred == y else 0
            slot.score(correct)
            try:
                slot.learner.learn_one(x, y)
            except Exception as exc:
                self._reset(slot, "learn_one", exc)
                try:
                    slot.learner.learn_one(x, y)
                except Exception:
                    log.exception("device %s: fresh model %r cannot learn seq %d either; skipped",
                                  self.device, slot.name, seq)
                continue  # a fresh model has no drift to report
            det = slot.detector
            if det is None:
                for ev in slot.learner.last_events:
                    alerts.append(_alert(seq, now, slot.name, ev["level"], ev["detector"],
                                         ev["member"], ev["accuracy_before"], ev["accuracy_after"]))
            elif det.update(1.0 - correct):
                adwin = det.detector
                alerts.append(_alert(seq, now, slot.name, "drift", "adwin", None,
                                     1.0 - adwin.estimation_before_drift, 1.0 - adwin.estimation))
        self._choose_best()
        return alerts

    def _choose_best(self) -> None:
        best, best_acc = 0, -1.0
        for i, slot in enumerate(self.slots):
            acc = slot.accuracy
            if acc is not None and acc > best_acc:
                best, best_acc = i, acc
        self.best = best

    def state(self, journal_pos: list | None = None) -> dict:
        """Plain-data state of the whole device, for checkpoints; ``journal_pos`` is the
        journal position (``Journal.position()``, ``[id, offset]``) this state includes."""
        return {"device": self.device, "last_seq": self.last_seq, "last_ts": self.last_ts,
                "journal": journal_pos,
                "n_reboots": self.n_reboots, "models": [s.state() for s in self.slots],
                "pending": self.pending.state(),
                "label_type": None if self.label_type is None else self.label_type.__name__}

    def load_state(self, state: dict, n_features: int) -> None:
        """Restore ``state()``. A configured model absent from it (by name and kind) stays fresh.
        Every model restored must pass a smoke prediction (``ModelSlot.check``).

        Raises:
            Exception: a malformed state, one of another device, or a model failing its smoke
                prediction (the caller treats any exception as a corrupt checkpoint).
        """
        if state["device"] != self.device:
            raise ValueError(f"the checkpoint holds device {state['device']!r}")
        saved = {(m["name"], m["kind"]): m for m in state["models"]}
        for slot in self.slots:
            m = saved.get((slot.name, slot.kind))
            if m is None:
                log.warning("device %s: model %r has no checkpoint; it starts fresh", self.device, slot.name)
            else:
                slot.load_state(m)
                slot.check(n_features)
        self.pending.load_state(state["pending"])
        self.last_seq = int(state["last_seq"])
        last_ts = state.get("last_ts")  # absent in older checkpoints
        self.last_ts = None if last_ts is None else float(last_ts)
        self.n_reboots = int(state.get("n_reboots", 0))
        journal = state.get("journal")  # absent in older checkpoints: replay the whole journal
        self.journal_pos = None if journal is None else (str(journal[0]), int(journal[1]))
        if "label_type" in state:
            self.label_type = {None: None, "int": int, "str": str}[state["label_type"]]
        else:  # an older checkpoint: the type of the labels its models learned
            classes = [c for slot in self.slots for c in getattr(slot.learner, "classes_", ())]
            self.label_type = type(classes[0]) if classes else None
        self._choose_best()


def _alert(seq, ts, model, level, detector, member, acc_before, acc_after) -> dict:
    return {"seq": seq, "ts": ts, "model": model, "level": level, "detector": detector,
            "member": member, "accuracy_before": acc_before, "accuracy_after": acc_after}
