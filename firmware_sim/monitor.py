"""A monitor that scores what the runtime publishes: prequential accuracy, alerts, errors, latency.

It subscribes (docs/protocol.md) to every device's readings, labels, predictions, drift alerts
and errors, and to the runtimes' status, metrics and errors. It learns the true label of a
reading from the reading itself (inline ``y``) or from a label message, and scores each
prediction once both are known: prequential (test-then-train) accuracy, since the runtime
predicts a reading before it learns it. A null ``y_pred`` (a model that has learned nothing
yet) counts as wrong.

Three latencies, each summarised as p50/p99 in milliseconds:
- ``latency_ms``: from the reading's arrival at the monitor to its prediction's arrival, on
  the monitor's clock alone: the runtime's own time plus the prediction's trip through the
  broker (the reading reaches the runtime and the monitor at about the same time);
- ``ts_latency_ms``: from the reading's ``ts`` (echoed in the prediction) to the prediction's
  arrival, by the wall clock: sampling to prediction, both trips included; meaningful only
  when the devices share the monitor's clock (the simulator on the same machine);
- ``runtime_latency_ms``: the runtime's own ``latency_ms`` from the predictions.

Readings are matched by ``(device, seq)``. A reading whose ``seq`` was already seen with the
same bytes is a duplicate; with other bytes, or a ``seq`` lower than the last one, the device
restarted its counter (a reboot): the monitor then keeps the previous records aside, so that
predictions of readings sent before the reboot still find theirs. Per device at most
``max_records`` unscored readings are kept (the oldest go first, counted as ``evicted``).
"""

from __future__ import annotations

import copy
import json
import logging
import math
import threading
import time
from array import array
from collections import deque

import numpy as np

from edgebayes.codec import DecodeError, decode
from firmware_sim.device import check_label_key, check_prefix
from firmware_sim.formats import MONITOR_TOPICS, read_back
from firmware_sim.mqtt import BrokerOptions, Connection, as_options

log = logging.getLogger(__name__)

MAX_ALERTS = 1000  # drift alerts kept for the summary (all are counted)

#: the per-device counts (see `Monitor.summary`)
COUNTS = (
    "readings", "duplicate_readings", "malformed_readings", "restarts", "labels",
    "duplicate_labels", "predictions", "duplicate_predictions", "scored", "correct",
    "drift_alerts", "warnings", "errors", "evicted",
)


class _Record:
    __slots__ = ("digest", "has_pred", "has_y", "models", "scored", "t_reading", "y", "y_pred")

    def __init__(self):
        self.t_reading = None  # monotonic arrival time of the reading
        self.digest = None  # hash of the reading's payload
        self.y = self.y_pred = self.models = None
        self.has_y = self.has_pred = self.scored = False


#: the latencies summarised (see the module docstring)
LATENCIES = ("latency_ms", "ts_latency_ms", "runtime_latency_ms")


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _percentiles(values) -> dict:
    if not len(values):
        return {"p50": None, "p99": None}
    p50, p99 = np.percentile(np.frombuffer(values, dtype=np.float64), [50, 99])
    return {"p50": float(p50), "p99": float(p99)}


class _Board:
    """One device's records and counts. Only used under the monitor's lock."""

    def __init__(self, max_records: int):
        self.max_records = max_records
        self.records: dict[int, _Record] = {}
        self.previous: dict[int, _Record] = {}
        self.last_seq: int | None = None
        self.n = dict.fromkeys(COUNTS, 0)
        self.errors_by_kind: dict[str, int] = {}
        self.models: dict[str, list[int]] = {}  # name -> [scored, correct]
        self.latencies = {name: array("d") for name in LATENCIES}
        # another --format (no seq): readings in arrival order, waiting for a prediction or a label
        self.awaiting_pred: deque[_Record] = deque()
        self.awaiting_y: deque[_Record] = deque()
        self.next_y: tuple | None = None  # an inline label message: for the next reading
        self.round: set[str] = set()  # ESPHome: the features of the reading being received
        self.last_payload: dict[str, int] = {}  # topic -> hash of its last payload

    def _new(self, seq: int) -> _Record:
        rec = self.records[seq] = _Record()
        if len(self.records) > self.max_records:
            del self.records[next(iter(self.records))]
            self.n["evicted"] += 1
        return rec

    def _restart(self) -> None:
        self.previous = self.records
        self.records = {}
        self.last_seq = None
        self.n["restarts"] += 1

    def reading(self, seq: int, digest: int, y, has_y: bool, now: float) -> None:
        rec = self.records.get(seq)
        if rec is not None and rec.t_reading is not None:
            if rec.digest == digest:
                self.n["duplicate_readings"] += 1
                return
            self._restart()
            rec = None
        elif rec is None and self.last_seq is not None and seq < self.last_seq:
            self._restart()
        self.n["readings"] += 1
        if rec is None:
            rec = self._new(seq)
        rec.t_reading, rec.digest = now, digest
        self.last_seq = seq if self.last_seq is None else max(seq, self.last_seq)
        if has_y:
            self._truth(rec, y)

    def label(self, seq: int, y) -> None:
        rec = self.records.get(seq)
        if rec is None:
            rec = self._new(seq)  # a label ahead of its reading
        self._truth(rec, y)

    # -- another --format: matched by arrival order ------------------------------------------

    def seen_reading(self, topic: str, digest: int, part: str | None, y, has_y: bool, inline: bool,
                     now: float) -> None:
        """A reading in another format: a repeat of its topic's last payload is a duplicate
        (the runtime drops it too); an ESPHome value starts a new reading when its feature is
        already in the current one."""
        if self.last_payload.get(topic) == digest:
            self.n["duplicate_readings"] += 1
            return
        if len(self.last_payload) >= 4096:
            self.last_payload.clear()
        self.last_payload[topic] = digest
        if part is not None:
            if self.round and part not in self.round:
                self.round.add(part)
                return  # one more value of the reading being received
            self.round = {part}
        rec = _Record()
        rec.t_reading = now
        self.n["readings"] += 1
        for waiting in (self.awaiting_pred, self.awaiting_y):
            waiting.append(rec)
            if len(waiting) > self.max_records:
                waiting.popleft()
                self.n["evicted"] += 1
        if has_y:
            self._truth_in_order(y)
        elif inline and self.next_y is not None:
            self._truth_in_order(self.next_y[0])
        self.next_y = None

    def seen_label(self, y, inline: bool) -> None:
        """A label message in another format: inline, for the next reading; delayed, for the
        oldest reading without one."""
        if inline:
            self.next_y = (y,)
        else:
            self._truth_in_order(y)

    def _truth_in_order(self, y) -> None:
        if not self.awaiting_y:
            self.n["labels"] += 1  # no reading for it (lost, or evicted)
            return
        self._truth(self.awaiting_y.popleft(), y)

    def prediction_in_order(self, y_pred, models, latency_ms, ts_latency_ms, now: float) -> None:
        """A prediction in another format: for the oldest reading without one."""
        rec = self.awaiting_pred.popleft() if self.awaiting_pred else _Record()
        self._predicted(rec, y_pred, models, latency_ms, ts_latency_ms, now)

    def _truth(self, rec: _Record, y) -> None:
        if rec.has_y:
            self.n["duplicate_labels"] += 1
            return
        self.n["labels"] += 1
        rec.y, rec.has_y = y, True
        self._score(rec)

    def prediction(self, seq: int, y_pred, models, latency_ms, ts_latency_ms, now: float) -> None:
        rec = self.records.get(seq)
        if rec is None or rec.has_pred:
            older = self.previous.get(seq)  # a reading sent before the device restarted
            if older is not None and not older.has_pred:
                rec = older
        if rec is None:
            rec = self._new(seq)
        if rec.has_pred:
            self.n["duplicate_predictions"] += 1
            return
        self._predicted(rec, y_pred, models, latency_ms, ts_latency_ms, now)

    def _predicted(self, rec: _Record, y_pred, models, latency_ms, ts_latency_ms, now: float) -> None:
        self.n["predictions"] += 1
        rec.y_pred, rec.models, rec.has_pred = y_pred, models, True
        if rec.t_reading is not None:
            self.latencies["latency_ms"].append((now - rec.t_reading) * 1000.0)
        if ts_latency_ms is not None:
            self.latencies["ts_latency_ms"].append(ts_latency_ms)
        if _number(latency_ms):
            self.latencies["runtime_latency_ms"].append(float(latency_ms))
        self._score(rec)

    def _score(self, rec: _Record) -> None:
        if rec.scored or not (rec.has_y and rec.has_pred):
            return
        rec.scored = True
        self.n["scored"] += 1
        self.n["correct"] += rec.y_pred is not None and rec.y_pred == rec.y
        if isinstance(rec.models, dict):
            for name, y_pred in rec.models.items():
                counts = self.models.setdefault(str(name), [0, 0])
                counts[0] += 1
                counts[1] += y_pred is not None and y_pred == rec.y

    def error(self, kind) -> None:
        self.n["errors"] += 1
        kind = str(kind)
        self.errors_by_kind[kind] = self.errors_by_kind.get(kind, 0) + 1

    def summary(self) -> dict:
        out = dict(self.n)
        out["accuracy"] = out["correct"] / out["scored"] if out["scored"] else None
        out["errors_by_kind"] = dict(self.errors_by_kind)
        out["models"] = {
            name: {"scored": s, "correct": c, "accuracy": c / s if s else None}
            for name, (s, c) in self.models.items()
        }
        for name, values in self.latencies.items():
            out[name] = _percentiles(values)
        return out


class Monitor:
    """Subscribe to a broker and score the runtime's predictions, per device.

    Args:
        broker: `BrokerOptions` or ``"HOST:PORT"``.
        prefix: the topic prefix (``[topics] prefix``).
        client_id: the monitor's MQTT client id.
        qos: subscription QoS.
        max_records: per device, readings kept while waiting for a label or prediction.
        label_key: the key of the label in readings and label messages (``[schema] label``;
            not ``seq``, ``ts`` or ``x``).
        format: the devices' payload shape (``firmware-sim run --format``): "edgebayes", or
            "tasmota", "zigbee2mqtt", "esphome", "shelly": the monitor then reads the readings
            and labels on their own topics (`firmware_sim.formats.read_back`) and, as they
            carry no ``seq``, matches each device's predictions to its readings in arrival
            order (a reading the runtime does not serve shifts the match).
        labels: with another format, "inline" (a label message labels the device's next
            reading, as ``run --labels inline`` sends it) or "delayed" (its oldest reading
            without a label).
        switch: with "tasmota", the switch whose ``ON``/``OFF`` in the reading is its label.
        label_values: wire label (as text) -> class, as the runtime's ``label_values`` maps it
            (default with ``switch``: ``ON`` = 1, ``OFF`` = 0, as ``run --switch`` sends them).

    Raises:
        ValueError: ``max_records`` < 1, a prefix that is empty or holds ``+`` or ``#``, a
            label key that is empty or one of the reading's own keys.

    Use as a context manager, or ``start()`` / ``stop()``; ``summary()`` at any time.

    Example::

        with Monitor("127.0.0.1:1883") as mon:
            run_devices("127.0.0.1:1883", "synth:AGR_A", limit=1000, rate_hz=200)
            mon.wait_until(lambda t: t["predictions"] >= 1000, timeout_s=10)
            print(mon.summary()["totals"]["accuracy"])
    """

    def __init__(
        self,
        broker: BrokerOptions | str,
        *,
        prefix: str = "edgebayes",
        client_id: str = "firmware-sim-monitor",
        qos: int = 1,
        max_records: int = 100_000,
        label_key: str = "y",
        format: str = "edgebayes",
        labels: str = "inline",
        switch: str | None = None,
        label_values: dict[str, object] | None = None,
    ):
        if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 1:
            raise ValueError(f"max_records must be an integer >= 1, got {max_records!r}")
        check_prefix(prefix)  # before paho: a wildcard would fail in its network thread
        check_label_key(label_key)
        if format != "edgebayes" and format not in MONITOR_TOPICS:
            raise ValueError(f"format must be one of edgebayes, {', '.join(MONITOR_TOPICS)}, got {format!r}")
        if labels not in ("inline", "delayed"):
            raise ValueError(f"labels must be 'inline' or 'delayed', got {labels!r}")
        if switch is not None and format != "tasmota":
            raise ValueError("switch applies to format 'tasmota' only")
        self.format = format
        self.inline = labels == "inline"
        self.switch = switch
        self.label_values = dict(label_values or ({"ON": 1, "OFF": 0} if switch else {}))
        self.prefix = prefix
        self.label_key = label_key
        self.max_records = max_records
        self._lock = threading.Lock()
        self._boards: dict[str, _Board] = {}
        self._runtimes: dict[str, dict] = {}
        self._alerts: deque = deque(maxlen=MAX_ALERTS)
        self.n_messages = 0
        self.n_callback_errors = 0
        self.last_message_t: float | None = None
        self._started = time.monotonic()
        p = prefix
        subscriptions = [
            (f"{p}/+/{kind}", qos) for kind in ("reading", "label", "prediction", "drift", "error")
        ] + [(f"{p}/runtime/+/{kind}", qos) for kind in ("status", "metrics", "error")]
        subscriptions += [(f, qos) for f in MONITOR_TOPICS.get(format, ())]
        self.connection = Connection(as_options(broker), client_id, self._on_message, subscriptions)

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self, timeout_s: float = 10.0) -> Monitor:
        """Connect and wait until the subscriptions are acknowledged.

        Raises:
            ConnectionError, OSError: as `firmware_sim.mqtt.Connection.connect`.
        """
        self.connection.connect(timeout_s)
        self._started = time.monotonic()
        return self

    def stop(self) -> None:
        self.connection.disconnect()

    def __enter__(self) -> Monitor:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- incoming messages (paho's network thread) ----------------------------------------------

    def _on_message(self, client, userdata, msg) -> None:
        try:
            self._handle(msg.topic, msg.payload, time.monotonic())
        except Exception:  # docs/cases.md C31: logged with its traceback and counted, never silent
            self.n_callback_errors += 1
            log.exception("monitor: failed on a message on %s", msg.topic)

    def _board(self, device: str) -> _Board:
        board = self._boards.get(device)
        if board is None:
            board = self._boards[device] = _Board(self.max_records)
        return board

    def _handle(self, topic: str, payload: bytes, now: float) -> None:
        parts = topic[len(self.prefix) + 1:].split("/")
        with self._lock:
            self.n_messages += 1
            self.last_message_t = now
            if self.format != "edgebayes" and not topic.startswith(self.prefix + "/"):
                self._seen(topic, payload, now)
            elif len(parts) == 3 and parts[0] == "runtime":
                self._runtime(parts[1], parts[2], payload)
            elif len(parts) == 2:
                self._device(parts[0], parts[1], payload, now)

    def _runtime(self, runtime_id: str, kind: str, payload: bytes) -> None:
        rt = self._runtimes.setdefault(runtime_id, {"status": None, "metrics": None, "errors": 0})
        if kind == "status":
            rt["status"] = payload.decode("utf-8", "replace")
        elif kind == "metrics":
            try:
                rt["metrics"] = json.loads(payload)
            except ValueError:
                log.warning("monitor: runtime %s sent metrics that are not JSON", runtime_id)
        else:
            rt["errors"] += 1

    def _seen(self, topic: str, payload: bytes, now: float) -> None:
        """A reading or label message of another format (``format``)."""
        seen = read_back(self.format, topic, payload, self.switch)
        if seen is None:
            return
        board = self._board(seen.device)
        y = self.label_values.get(str(seen.y), seen.y) if seen.has_y else None
        if seen.kind == "malformed":
            board.n["malformed_readings"] += 1
        elif seen.kind == "label":
            board.seen_label(y, self.inline)
        else:
            board.seen_reading(topic, hash(bytes(payload)), seen.part, y, seen.has_y, self.inline, now)

    def _device(self, device: str, kind: str, payload: bytes, now: float) -> None:
        board = self._board(device)
        try:
            body = decode(payload)
        except DecodeError:
            body = None
        if not isinstance(body, dict):
            if kind == "reading":
                board.n["malformed_readings"] += 1
            else:
                log.warning("monitor: undecodable %s from %s", kind, device)
            return
        seq = body.get("seq")
        valid_seq = isinstance(seq, int) and not isinstance(seq, bool)
        if kind == "prediction" and self.format != "edgebayes":
            ts = body.get("ts")
            board.prediction_in_order(body.get("y_pred"), body.get("models"), body.get("latency_ms"),
                                      (time.time() - ts) * 1000.0 if _number(ts) else None, now)
        elif kind == "reading":
            if not valid_seq:
                board.n["malformed_readings"] += 1
                return
            y = body.get(self.label_key)
            board.reading(seq, hash(payload), y, y is not None, now)
        elif kind == "label" and valid_seq:
            board.label(seq, body.get(self.label_key))
        elif kind == "prediction" and valid_seq:
            ts = body.get("ts")
            ts_latency_ms = (time.time() - ts) * 1000.0 if _number(ts) else None
            board.prediction(
                seq, body.get("y_pred"), body.get("models"), body.get("latency_ms"),
                ts_latency_ms, now,
            )
        elif kind == "drift":
            board.n["drift_alerts" if body.get("level") == "drift" else "warnings"] += 1
            alert = {k: body.get(k) for k in ("seq", "model", "level", "detector", "member")}
            self._alerts.append({"device": device, "t_s": now - self._started, **alert})
        elif kind == "error":
            board.error(body.get("kind"))

    # -- results -------------------------------------------------------------------------------

    @property
    def elapsed_s(self) -> float:
        """Seconds since the monitor started."""
        return time.monotonic() - self._started

    @property
    def idle_s(self) -> float:
        """Seconds since the last message (since the start when none came)."""
        last = self.last_message_t
        return time.monotonic() - (self._started if last is None else last)

    def totals(self) -> dict:
        """Counts summed over devices (no percentiles: cheap enough to poll)."""
        with self._lock:
            out = dict.fromkeys(COUNTS, 0)
            for board in self._boards.values():
                for k, v in board.n.items():
                    out[k] += v
        return out

    def wait_until(self, condition, timeout_s: float, poll_s: float = 0.02) -> bool:
        """Poll ``condition(totals())`` until it holds; False after ``timeout_s`` seconds."""
        deadline = time.monotonic() + timeout_s
        while not condition(self.totals()):
            if time.monotonic() >= deadline:
                return False
            time.sleep(poll_s)
        return True

    def summary(self) -> dict:
        """Everything the monitor knows, JSON-ready.

        Keys: ``elapsed_s``; ``totals`` (readings, duplicate_readings, malformed_readings,
        restarts, labels, predictions, scored, correct, ``accuracy`` (correct / scored, null
        before any), drift_alerts, warnings, errors, ``latency_ms``, ``ts_latency_ms`` and
        ``runtime_latency_ms`` as ``{p50, p99}`` in milliseconds, ...); ``models`` (name ->
        scored, correct, accuracy); ``devices`` (id -> the same as totals, plus
        ``errors_by_kind``); ``drift_alerts`` (the last 1000); ``runtimes`` (id -> status,
        last metrics, error count); ``n_messages``; ``n_callback_errors``.
        """
        with self._lock:
            devices = {d: b.summary() for d, b in sorted(self._boards.items())}
            latencies = {name: array("d") for name in LATENCIES}
            for b in self._boards.values():
                for name, values in b.latencies.items():
                    latencies[name].extend(values)
            models: dict[str, list[int]] = {}
            for b in self._boards.values():
                for name, (s, c) in b.models.items():
                    m = models.setdefault(name, [0, 0])
                    m[0] += s
                    m[1] += c
            out = {
                "elapsed_s": time.monotonic() - self._started,
                "drift_alerts": list(self._alerts),
                "runtimes": copy.deepcopy(self._runtimes),
                "n_messages": self.n_messages,
                "n_callback_errors": self.n_callback_errors,
            }
        totals = self.totals()
        totals["accuracy"] = totals["correct"] / totals["scored"] if totals["scored"] else None
        for name, values in latencies.items():
            totals[name] = _percentiles(values)
        out["totals"] = totals
        out["models"] = {
            name: {"scored": s, "correct": c, "accuracy": c / s if s else None}
            for name, (s, c) in sorted(models.items())
        }
        out["devices"] = devices
        return out

    def table(self) -> str:
        """The live table: one line per device and a total line."""
        s = self.summary()
        head = (
            f"{'device':<16}{'readings':>9}{'preds':>8}{'scored':>8}{'acc':>7}{'drift':>6}"
            f"{'warn':>6}{'errors':>7}{'p50 ms':>8}{'p99 ms':>8}"
        )
        lines = [head, "-" * len(head)]

        def row(name, d):
            acc = "-" if d["accuracy"] is None else f"{d['accuracy']:.3f}"
            lat = d["latency_ms"]
            p50 = "-" if lat["p50"] is None else f"{lat['p50']:.1f}"
            p99 = "-" if lat["p99"] is None else f"{lat['p99']:.1f}"
            return (
                f"{name[:15]:<16}{d['readings']:>9}{d['predictions']:>8}{d['scored']:>8}{acc:>7}"
                f"{d['drift_alerts']:>6}{d['warnings']:>6}{d['errors']:>7}{p50:>8}{p99:>8}"
            )

        lines += [row(name, d) for name, d in s["devices"].items()]
        lines.append(row("total", s["totals"]))
        for rid, rt in sorted(s["runtimes"].items()):
            lines.append(f"runtime {rid}: {rt['status']}, {rt['errors']} errors")
        return "\n".join(lines)
