"""One device's model set: predict with every model, score, learn, and raise drift alerts.

Each configured model gets a ``ModelSlot`` per device: the learner, its prequential accuracy
over the last ``accuracy_window`` labelled readings (test-then-train: the prediction made at
reading time is scored when the label arrives, before learning), and a drift signal. A learner
with its own detectors (SRP) reports them after ``learn_one`` in ``last_events``, a list of dicts
``{level, member, detector, accuracy_before, accuracy_after}`` (level "warning" or "drift",
member the ensemble index; see ``SRPClassifier``); every
other learner gets an ``ErrorDetector(ADWIN(delta))`` over its 0/1 error stream (1 = wrong),
which signals only a rise of the error (docs/design.md 2.4). The prediction published is the one
of the model with the best recent accuracy (first configured on ties and before any label)
among those that predicted.

A model that raises in ``predict_proba_one`` or ``learn_one`` keeps everything it learned: input
was validated before it got here (`edgebayes.base.to_floats`, ``check_label``), so the exception
is a bug or a limit, never a reason to throw months of learning away. The reading is skipped for
that model only: its prediction is None (scored as wrong), and a failed ``learn_one`` is not
fed to its drift detector. Each failure is recorded in ``Device.model_errors`` for the worker to
report: kind ``class_limit`` for ``ClassLimitError`` (a new class its ``max_size_bytes`` cannot
hold; logged without a traceback), else ``learner_error`` (logged at ERROR with its traceback);
each kind is logged at most once per `LOG_INTERVAL_S` per device.
A device takes labels of one type (all int or all str): in JSON ``1`` and ``"1"`` are one key.

Only the runtime's worker thread touches these objects (no locks).
"""

from __future__ import annotations

import logging
import math
import sys
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from edgebayes.base import ClassLimitError, check_count, learner_from_state
from edgebayes.drift.base import ErrorDetector, detector_from_state
from edgebayes.runtime.checkpoint import STATE_VERSION, migrate_device_state
from edgebayes.runtime.config import ModelConfig
from edgebayes.runtime.messages import (
    SEQ_JUMP,
    SEQ_LIMIT,
    SEQ_PER_S,
    TS_AHEAD_S,
    ProtocolError,
)
from edgebayes.runtime.payloads import drift_alert
from edgebayes.runtime.pending import PendingLabels
from edgebayes.runtime.remap import model_inputs, pending_items
from edgebayes.runtime.seqs import SeqRuns

log = logging.getLogger(__name__)


#: a model error of one kind is logged at most this often per device (seconds); all are reported
LOG_INTERVAL_S = 60.0
#: readings in a row past the ``seq_jump`` bound, each within that bound of the one before,
#: after which the last of them is accepted (a broker dropped the middle of a backlog)
JUMP_CONFIRM = 3
#: seconds of duplicates refused in a row, taken in real time on a clock behind the last
#: accepted ``ts``, after which the next of them starts a new seq epoch (a reboot without RTC)
CLOCK_CONFIRM_S = 30.0
#: how far (seconds) arrival time minus ``ts`` may wander within such a run of readings
CLOCK_TOL_S = 10.0


class ModelSlot:
    """A learner with its recent-accuracy window and (unless it has its own) its detector."""

    __slots__ = (
        "detector",
        "inputs",
        "kind",
        "learner",
        "n_correct",
        "n_labels",
        "n_window_correct",
        "name",
        "window",
    )

    def __init__(self, name: str, kind: str, build: Callable[[], Any], accuracy_window: int, drift_delta: float):
        self.name = name
        self.kind = kind
        self.window: deque[int] = deque(maxlen=accuracy_window)
        self.learner = learner = build()
        self.n_window_correct = 0
        self.detector = None if hasattr(learner, "last_events") else _error_detector(drift_delta)
        self.n_labels = 0
        self.n_correct = 0
        self.inputs: list[int] | None = None  # indices of the reading's values it takes (None: all)

    def view(self, x: list[float]) -> list[float]:
        """The values of reading ``x`` this learner takes, in its order (``remap``)."""
        inputs = self.inputs
        return x if inputs is None else [x[i] for i in inputs]

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
        """The learner's bytes, plus the detector's and the window's (`signal_bytes`)."""
        return self.learner.memory_bytes() + self.signal_bytes()

    def signal_bytes(self) -> int:
        """The bytes of the detector and the accuracy window."""
        extra = self.detector.memory_bytes() if self.detector is not None else 0
        return extra + sys.getsizeof(self.window)

    def state(self) -> dict:
        return {
            "name": self.name, "kind": self.kind, "learner": self.learner.state(),
            "window": list(self.window), "n_labels": self.n_labels, "n_correct": self.n_correct,
            "detector": self.detector.state() if self.detector is not None else None,
        }

    def load_state(self, state: dict) -> None:
        """Restore ``state()``: a learner of this slot's kind, 0/1 window, counters, detector.

        Raises:
            ValueError: a malformed state (KeyError, TypeError: a missing or mistyped part).
        """
        window = state["window"][-self.window.maxlen:]
        if any(type(c) is not int or c not in (0, 1) for c in window):
            raise ValueError(f"model {self.name!r}: accuracy window holds {window!r:.80}, not 0/1 ints")
        n_labels = check_count("n_labels", state["n_labels"])
        n_correct = check_count("n_correct", state["n_correct"])
        kind = state["learner"]["kind"]
        if kind != self.kind:
            raise ValueError(f"model {self.name!r}: a {kind!r:.40} learner, not {self.kind!r}")
        learner = learner_from_state(state["learner"])
        detector = self.detector
        if detector is not None and state["detector"] is not None:
            detector = detector_from_state(state["detector"])
            if type(detector) is not ErrorDetector:  # learn() reads its wrapped detector
                raise ValueError(f"model {self.name!r}: a {type(detector).__name__}, not an ErrorDetector")
        self.learner, self.detector = learner, detector
        self.window.clear()
        self.window.extend(window)
        self.n_window_correct = sum(self.window)
        self.n_labels, self.n_correct = n_labels, n_correct

    def restore(self, state: dict, takes: Sequence, features: Sequence, device: str) -> list[str]:
        """Restore ``state()`` of a learner that was fed the features ``takes``, fitted to the
        configured ``features`` (``remap.model_inputs``); a removed feature a ``gaussian_nb``
        takes is dropped from it (returned: the caller tells it once every model is restored),
        an added one it cannot hold within its ``max_size_bytes`` is ignored by it (logged).

        Raises:
            SchemaChange: ``takes`` has a feature ``features`` lacks; ValueError: as ``load_state``.
        """
        learner, self.inputs, dropped = model_inputs(self.kind, state["learner"], takes, features)
        self.load_state({**state, "learner": learner})
        bound = self.learner.max_size_bytes
        extended = len(self.view(list(features))) > len(takes) - len(dropped)
        if extended and bound is not None and self.learner.memory_bytes() > bound:
            log.warning("device %s: model %r: the added features do not fit its max_size_bytes %d; it ignores "
                        "them", device, self.name, bound)
            learner, self.inputs, _ = model_inputs(self.kind, state["learner"], takes, features, extend=False)
            self.load_state({**state, "learner": learner})
        return dropped

    def check(self, n_features: int) -> None:
        """A smoke prediction on an all-zero reading: finite probabilities in [0, 1] summing
        to 1 (or none before learning), else ``ValueError`` (a restored state is unusable)."""
        proba = self.learner.predict_proba_one(self.view([0.0] * n_features))
        ps = list(proba.values())
        if not all(isinstance(p, float | int) and math.isfinite(p) and 0.0 <= p <= 1.0 for p in ps) or (
                ps and abs(sum(ps) - 1.0) > 1e-6):
            raise ValueError(f"model {self.name!r} predicts {proba!r} from a zero reading")


class _Refused(NamedTuple):
    """The last of a run of refused readings of one kind (`Device.check_seq`): how many, when
    the first arrived (unix s), the last one's ``seq``, ``ts`` and arrival, and the first's
    arrival minus ``ts``."""

    kind: str
    n: int
    first: float
    seq: int
    ts: float | None
    now: float
    offset: float | None


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
        features: the ``[schema] features`` names; a restored checkpoint is fitted to them by
            name (``edgebayes.runtime.remap``). Empty: by position.
    """

    def __init__(self, device: str, models: Sequence[ModelConfig], accuracy_window: int,
                 drift_delta: float, pending: PendingLabels, features: Sequence[str] = ()):
        self.device = device
        self.features = list(features)
        self.models = tuple(models)
        self.slots = [ModelSlot(m.name, m.kind, m.build, accuracy_window, drift_delta) for m in models]
        self.retired: list[dict] = []  # restored model states not configured: kept in the checkpoint
        self.pending = pending
        self.label_type: type | None = None  # int or str, from the first label (one per device)
        self.model_errors: list[tuple[str, str]] = []  # (kind, why) since the worker last looked
        self._log_state: dict[str, tuple[float, int]] = {}  # kind -> (next log time, not logged since)
        self.last_seq = -1
        self.last_ts: float | None = None  # ts of the last accepted reading
        self.last_recv: float | None = None  # when it arrived (unix s; None: unknown)
        self.accepted = SeqRuns()  # the seqs this epoch accepted
        # the refused readings in a row that may confirm a jump or a clock step (`_confirms`)
        self._run: _Refused | None = None
        self.n_reboots = 0  # seq restarts (docs/protocol.md "Reboots")
        self.best = 0  # index of the slot with the best recent accuracy
        self.journal_pos: tuple[str, int] | None = None  # journal position its restored checkpoint includes
        self.last_prediction: bytes | None = None  # the last prediction message (not checkpointed)

    def check_seq(self, seq: int, ts: float | None, now: float) -> str:
        """How reading ``seq`` (taken at ``ts``, unix s, arrived at ``now``, unix s) follows the
        accepted ones: ``"next"`` (above the last), ``"late"`` (below it and never accepted: a
        broker restart can deliver new readings before the ones it kept) or ``"reboot"`` (a new
        seq epoch); raises ``ProtocolError`` when it must be refused. No
        single reading can lock the device out (docs/protocol.md "Seq and ts bounds"):

        - ``ts_ahead``: ``ts`` is more than `TS_AHEAD_S` ahead of ``now`` (else no later reading
          could be "later" and so a reboot);
        - ``seq_jump``: ``seq`` is more than `SEQ_JUMP` + `SEQ_PER_S` per second since the last
          accepted reading arrived above its ``seq`` (else every later ``seq`` of a device without
          ``ts`` would be a duplicate); the first reading of a device sets where it starts;
        - ``duplicate``: ``seq`` was accepted already in this epoch (`SeqRuns`), and ``ts`` is
          not later than the last accepted reading's. A QoS 1
          redelivery or a replay carries its original ``ts``, so it stays a duplicate; without
          ``ts`` on both, a reboot cannot be told from a redelivery (a broker restart resends
          ``seq`` 0 too). A later ``ts`` is a reboot.

        Neither refusal lasts (docs/protocol.md "Seq and ts bounds"): the `JUMP_CONFIRM`-th
        ``seq_jump`` in a row, each within the bound of the one before, is ``"next"`` (the
        broker dropped the readings between); a duplicate, with ``ts``, that follows
        `CLOCK_CONFIRM_S` seconds of duplicates with rising ``seq`` and ``ts``, each arriving
        at the first one's ``now - ts`` within `CLOCK_TOL_S`, is a ``"reboot"`` (the device's
        clock stepped back: a reboot without RTC). A refused reading starts or extends that run.
        """
        if ts is not None and ts > now + TS_AHEAD_S:
            raise ProtocolError("ts_ahead", f"ts {ts:.6g} is more than {TS_AHEAD_S:g} s ahead of the runtime's "
                                f"clock ({now:.0f}); is the device's clock (or the runtime's) wrong?", seq)
        last_seq, last_ts = self.last_seq, self.last_ts
        if seq > last_seq:
            if self.last_recv is not None:
                limit = last_seq + SEQ_JUMP + int(SEQ_PER_S * max(0.0, now - self.last_recv))
                if seq > limit and not self._confirms("seq_jump", seq, ts, now):
                    raise ProtocolError("seq_jump", f"seq {seq} runs ahead of the last accepted seq {last_seq} "
                                        f"by more than {limit - last_seq} (at most {SEQ_JUMP} + {SEQ_PER_S} "
                                        "per second since it arrived)", seq)
            return "next"
        if ts is not None and last_ts is not None and ts > last_ts:
            return "reboot"
        if seq not in self.accepted:
            return "late"
        if ts is not None and last_ts is not None and self._confirms("clock", seq, ts, now):
            return "reboot"
        raise ProtocolError("duplicate", f"seq {seq} was accepted already (the last accepted seq is "
                            f"{last_seq}), and its ts is not later (not a reboot)", seq)

    def _confirms(self, kind: str, seq: int, ts: float | None, now: float) -> bool:
        """Record refused reading ``seq`` in the run of refusals of ``kind`` (``"seq_jump"`` or
        ``"clock"``) it follows, else start a run with it; whether the run now confirms it."""
        r = self._run
        if r is not None and r.kind == kind and seq > r.seq and (
                seq <= r.seq + SEQ_JUMP + int(SEQ_PER_S * max(0.0, now - r.now)) if kind == "seq_jump"
                else ts > r.ts and abs(now - ts - r.offset) <= CLOCK_TOL_S):
            r = _Refused(kind, r.n + 1, r.first, seq, ts, now, r.offset)
        else:
            r = _Refused(kind, 1, now, seq, ts, now, None if ts is None else now - ts)
        self._run = r
        if kind == "seq_jump":
            return r.n >= JUMP_CONFIRM
        return r.n > 1 and now - r.first >= CLOCK_CONFIRM_S

    def accept(self, seq: int, ts: float | None, now: float, how: str) -> None:
        """Record reading ``seq`` as accepted (``how`` from `check_seq`); a late one moves
        neither the last ``seq`` nor its ``ts``."""
        if how == "reboot":
            self.accepted = SeqRuns([seq, seq])
        else:
            self.accepted.add(seq)
        if how != "late":
            self.last_seq, self.last_ts, self.last_recv = seq, ts, now
            self._run = None

    def may_come(self, seq: int) -> bool:
        """Whether reading ``seq`` may still come, so a label for it can wait: not accepted
        in this epoch, and at most ``max_pending`` above the last accepted seq."""
        return seq not in self.accepted and seq <= self.last_seq + self.pending.max_pending

    def reboot(self) -> int:
        """Start a new seq epoch: pending readings of the old one are dropped (counted), since a
        label's ``seq`` now names a new reading. Returns how many were dropped."""
        n = len(self.pending)
        self.pending.clear()
        self.n_reboots += 1
        return n

    def check_label(self, y: Any) -> tuple[Any, str | None]:
        """Label ``y`` as this device learns it, and why it cannot (None: it can). Labels are
        compared as the JSON text they are: a label of the other type than the device's
        earlier ones with the same text (``"1"`` for ``1``, ``1`` for ``"1"``) is taken as that
        type; any other is refused. Accepting ``y`` fixes the type if unset."""
        t = type(y)
        if self.label_type is None:
            self.label_type = t
        elif t is not self.label_type:
            same = _same_label(y, self.label_type)
            if same is None:
                return y, (f"label {str(y)[:40]!r} is a {t.__name__}, this device's labels are "
                           f"{self.label_type.__name__}s (in JSON 1 and \"1\" are one key)")
            return same, None
        return y, None

    def predict(self, x: list[float]) -> tuple[list[Any], int, dict]:
        """Every model's prediction for ``x`` (None before it learned, or when it raised), the
        index of the model whose prediction is published, and that model's class probabilities.

        The published model is ``best`` (the best recent accuracy) if it predicted, else the
        most accurate of those that did (first configured on ties); if none did, ``best`` with
        no prediction. A model that raises is recorded in ``model_errors`` and keeps its state.
        """
        y_preds, probas, failed = [], [], False
        for slot in self.slots:
            try:
                proba = slot.learner.predict_proba_one(slot.view(x))
                y_pred = max(proba, key=proba.get) if proba else None
            except Exception as exc:  # noqa: BLE001 (a model that raises is reported and kept)
                self._model_error(slot, "predict_proba_one", exc)
                proba, y_pred, failed = None, None, True
            y_preds.append(y_pred)
            probas.append(proba)
        best = self.best
        if failed and probas[best] is None:
            ok = [i for i, p in enumerate(probas) if p is not None]
            if ok:
                accuracy = [-1.0 if s.accuracy is None else s.accuracy for s in self.slots]
                best = max(ok, key=accuracy.__getitem__)
        return y_preds, best, probas[best] or {}

    def _model_error(self, slot: ModelSlot, where: str, exc: Exception) -> None:
        """Record a model's exception as ``class_limit`` (``ClassLimitError``, logged at WARNING)
        or ``learner_error`` (a bug, logged at ERROR with its traceback). Each kind is logged at
        most once per `LOG_INTERVAL_S` per device, saying how many went unlogged; all are
        recorded. The model is left as it was."""
        kind = "class_limit" if isinstance(exc, ClassLimitError) else "learner_error"
        why = (f"model {slot.name!r}: {where} raised {type(exc).__name__}: {str(exc)[:200]}; "
               "the reading is skipped for it")
        self.model_errors.append((kind, why))
        now = time.monotonic()
        next_log, unlogged = self._log_state.get(kind, (0.0, 0))
        if now < next_log:
            self._log_state[kind] = (next_log, unlogged + 1)
            return
        self._log_state[kind] = (now + LOG_INTERVAL_S, 0)
        more = f" ({unlogged} more {kind} not logged since the last one)" if unlogged else ""
        if kind == "class_limit":
            log.warning("device %s: %s%s", self.device, why, more)
        else:
            log.error("device %s: %s%s", self.device, why, more, exc_info=exc)

    def learn(self, seq: int, x: list[float], y: Any, y_preds: list[Any], now: float) -> list[dict]:
        """Score each model's reading-time prediction against ``y``, learn, and return alerts.

        A model whose ``learn_one`` raises skips this sample and keeps its state (see the
        module docstring); its drift detector does not see the sample either.

        Returns:
            Drift alerts (docs/protocol.md "Drift alert" payloads, ``ts`` = ``now``).
        """
        alerts = []
        for slot, y_pred in zip(self.slots, y_preds):
            correct = 1 if y_pred is not None and y_pred == y else 0
            slot.score(correct)
            try:
                slot.learner.learn_one(slot.view(x), y)
            except Exception as exc:  # noqa: BLE001 (a model that raises is reported and kept)
                self._model_error(slot, "learn_one", exc)
                continue
            det = slot.detector
            if det is None:
                for ev in slot.learner.last_events:
                    alerts.append(drift_alert(seq, now, slot.name, ev["level"], ev["detector"],
                                         ev["member"], ev["accuracy_before"], ev["accuracy_after"]))
            elif det.update(1.0 - correct):
                adwin = det.detector
                alerts.append(drift_alert(seq, now, slot.name, "drift", "adwin", None,
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
        journal position (``Journal.position()``, ``[id, offset]``) this state includes. Each
        model records the features its learner takes (when the device has names); models
        restored but no longer configured follow the configured ones, unchanged."""
        models = [s.state() for s in self.slots]
        if self.features:
            for m, slot in zip(models, self.slots):
                m["features"] = slot.view(self.features)
        return {"version": STATE_VERSION, "device": self.device, "last_seq": self.last_seq, "last_ts": self.last_ts,
                "last_recv": self.last_recv, "journal": journal_pos,
                "accepted": self.accepted.state(),
                "n_reboots": self.n_reboots, "models": models + self.retired,
                "pending": self.pending.state(),
                "label_type": None if self.label_type is None else self.label_type.__name__}

    def load_state(self, state: dict, n_features: int, saved_features: Sequence[str] | None = None) -> None:
        """Restore ``state()`` written under ``[schema] features`` ``saved_features`` (None: this
        device's), fitted to this device's features by name (``edgebayes.runtime.remap``).
        A configured model is restored from the saved model of its name and kind, else of its
        ``previous_name`` and kind, else starts fresh; saved models no configured one takes are
        kept as they are (``retired``) for a config that names them again. Every model restored
        must pass a smoke prediction (``ModelSlot.check``). A state of an older version is first
        brought to the current one (``edgebayes.runtime.checkpoint.migrate_device_state``).

        Raises:
            SchemaChange: a restored model takes a feature the config no longer has.
            Exception: a malformed state, one of another device, or a model failing its smoke
                prediction.
        """
        state = migrate_device_state(state)
        if state["device"] != self.device:
            raise ValueError(f"the checkpoint holds device {state['device']!r}")
        features = self.features or list(range(n_features))
        saved_features = features if saved_features is None or not self.features else list(saved_features)
        sources = self._load_models(state["models"], n_features, features, saved_features)
        pending = state["pending"]
        if saved_features != features or sources != list(range(len(self.slots))):
            pending = {**pending, "items": pending_items(pending["items"], saved_features, features, sources)}
        self.pending.load_state(pending, n_features, len(self.slots))
        last_seq, last_ts = state["last_seq"], state["last_ts"]
        if type(last_seq) is not int or not -1 <= last_seq < SEQ_LIMIT:
            raise ValueError(f"last_seq must be an int in [-1, 2**53), got {last_seq!r:.80}")
        if last_ts is not None and not math.isfinite(last_ts):
            raise ValueError(f"last_ts must be finite, got {last_ts!r}")
        self.last_seq = last_seq
        self.last_ts = None if last_ts is None else float(last_ts)
        last_recv = state["last_recv"]
        if last_recv is not None and not math.isfinite(last_recv):
            raise ValueError(f"last_recv must be finite, got {last_recv!r}")
        self.last_recv = None if last_recv is None else float(last_recv)
        self.accepted = SeqRuns(state["accepted"])
        if self.accepted.runs[-1:].tolist() != ([last_seq] if last_seq >= 0 else []):
            raise ValueError(f"the accepted seqs must end at last_seq {last_seq}")
        self.n_reboots = check_count("n_reboots", state["n_reboots"])
        journal = state["journal"]
        self.journal_pos = None if journal is None else (str(journal[0]), check_count("journal position", journal[1]))
        self.label_type = {None: None, "int": int, "str": str}[state["label_type"]]
        self._choose_best()

    def _load_models(self, saved: list, n_features: int, features: list, saved_features: list) -> list[int | None]:
        """Restore each configured model from its saved model (see ``load_state``); keep the
        saved models none takes in ``retired``. Returns, per slot, its saved model's index."""
        index = {(m["name"], m["kind"]): i for i, m in enumerate(saved)}
        sources: list[int | None] = []
        dropped: list[tuple[str, list[str]]] = []  # told once every model is restored: not for a refused device
        for slot, model in zip(self.slots, self.models):
            i = index.get((slot.name, slot.kind))
            if i is None and model.previous_name is not None:
                i = index.get((model.previous_name, slot.kind))
                if i is not None:
                    log.info("device %s: model %r restored from the checkpoint's model %r (previous_name)",
                             self.device, slot.name, model.previous_name)
            sources.append(i)
            if i is None:
                log.warning("device %s: model %r has no checkpoint; it starts fresh", self.device, slot.name)
                continue
            fresh = slot.learner
            dropped.append((slot.name, slot.restore(saved[i], saved[i].get("features", saved_features), features,
                                                    self.device)))
            slot.check(n_features)
            _report_parameters(self.device, model, fresh, slot.learner)
        for name, gone in dropped:
            if gone:
                log.warning("device %s: model %r drops what it learned of %s, no longer in [schema] features",
                            self.device, name, ", ".join(map(repr, gone)))
        self.retired = [m if "features" in m or not self.features else {**m, "features": saved_features}
                        for i, m in enumerate(saved) if i not in sources]
        for m in self.retired:
            log.warning("device %s: the checkpoint's model %r (%s) is not configured; kept in its checkpoint "
                        "for a config that names it again", self.device, m["name"], m["kind"])
        return sources


def _same_label(y: Any, label_type: type) -> Any:
    """``y`` (int or str) as a ``label_type`` label of the same JSON text; None if there is none."""
    if label_type is str:
        return str(y)
    try:
        n = int(y)
    except ValueError:
        return None
    return n if str(n) == y and -2**63 <= n < 2**63 else None


def _report_parameters(device: str, model: ModelConfig, fresh: Any, learner: Any) -> None:
    """Log a WARNING for each configured parameter with a plain value (and the memory plan's
    ``max_size_bytes`` share) that a restored ``learner`` does not have as ``fresh`` (built from
    ``model``) does: it keeps the structure it was built with."""
    for name in sorted({*model.params, "max_size_bytes"}):
        want, have = getattr(fresh, name, None), getattr(learner, name, None)
        if want == have or not all(v is None or isinstance(v, int | float | str) for v in (want, have)):
            continue
        if name == "max_size_bytes":
            log.warning("device %s: model %r: max_size_bytes = %r (its share of the memory plan), the restored "
                        "model has %r: the plan does not bound it until it starts fresh", device, model.name,
                        want, have)
        else:
            log.warning("device %s: model %r: %s = %r in the config, the restored model has %r; it keeps its own "
                        "until it starts fresh", device, model.name, name, want, have)
