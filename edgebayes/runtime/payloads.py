"""Every message the runtime publishes, built here (docs/protocol.md is the contract).

One function per message kind returns its payload as a dict, with the keys of its table in
docs/protocol.md: ``prediction``, ``drift_alert``, ``error_report``, ``metrics``,
``memory_alert``, ``session_alert``, ``durability_alert``; ``ONLINE`` and ``OFFLINE`` are the
plain-text status payloads. ``Outbox`` encodes them in ``[output] format`` (metrics always
JSON) and publishes each on its topic at its QoS through a ``Publisher``. A JSON prediction,
one per reading, is written directly by ``prediction_json``, the bytes ``encode`` makes of
``prediction``'s dict without that dict and its two nested ones.
"""

from __future__ import annotations

import math
import time
from json.encoder import encode_basestring_ascii
from typing import Any

from edgebayes.codec import encode
from edgebayes.runtime.messages import ErrorKind
from edgebayes.runtime.publisher import Publisher
from edgebayes.runtime.topics import Topics

#: the runtime's and a device's status payloads (retained, QoS 1; docs/protocol.md "Status")
ONLINE = b"online"
OFFLINE = b"offline"


def prediction(seq: int, ts: float | None, y_preds: list, best: int, proba: dict, names: list[str],
               latency_ms: float) -> dict:
    """docs/protocol.md "Prediction": model ``best`` of ``names`` gives ``y_pred`` and ``proba``
    (class -> probability; keys as str: JSON has no others, msgpack's decoder refuses int keys)."""
    return {"seq": seq, "ts": ts, "y_pred": y_preds[best], "proba": {str(c): p for c, p in proba.items()},
            "model": names[best], "models": dict(zip(names, y_preds)), "latency_ms": latency_ms}


def prediction_json(seq: int, ts: float | None, y_preds: list, best: int, proba: dict, names_json: list[str],
                    latency_ms: float) -> bytes:
    """``encode(prediction(...), "json")``, byte for byte, written directly (``names_json``:
    each model name as a JSON string, ``encode_basestring_ascii``).

    Raises:
        TypeError: a value of another type than float, int, str and None (a numpy scalar, a
            bool), or class names equal as strings (``1`` and ``"1"``): ``prediction``'s dict
            and ``encode`` write those.
    """
    keys = [encode_basestring_ascii(str(c)) for c in proba]
    if len(set(keys)) != len(keys):
        raise TypeError("class names equal as str")
    probas = ",".join([f"{k}:{_json(p)}" for k, p in zip(keys, proba.values())])
    models = ",".join([f"{n}:{_json(y)}" for n, y in zip(names_json, y_preds)])
    return (f'{{"seq":{_json(seq)},"ts":{_json(ts)},"y_pred":{_json(y_preds[best])},"proba":{{{probas}}},'
            f'"model":{names_json[best]},"models":{{{models}}},"latency_ms":{_json(latency_ms)}}}').encode()


def _json(v: Any) -> str:
    """A float, int, str or None as ``json.dumps(v, allow_nan=True)`` writes it; TypeError otherwise."""
    t = type(v)
    if t is float:
        return float.__repr__(v) if math.isfinite(v) else "NaN" if v != v else "Infinity" if v > 0 else "-Infinity"
    if t is int:
        return int.__repr__(v)
    if t is str:
        return encode_basestring_ascii(v)
    if v is None:
        return "null"
    raise TypeError(f"{t.__name__} is written by the JSON encoder")


def drift_alert(seq: int, ts: float, model: str, level: str, detector: str, member: int | None,
                accuracy_before: float | None, accuracy_after: float | None) -> dict:
    """docs/protocol.md "Drift alert" (``level``: "warning" or "drift"; ``ts`` unix seconds)."""
    return {"seq": seq, "ts": ts, "model": model, "level": level, "detector": detector,
            "member": member, "accuracy_before": accuracy_before, "accuracy_after": accuracy_after}


def error_report(topic: str, seq: int | None, kind: ErrorKind, error: str, n_suppressed: int) -> dict:
    """docs/protocol.md "Error report" for a message on ``topic``."""
    return {"ts": time.time(), "topic": topic, "seq": seq, "kind": kind.value, "error": error,
            "n_suppressed": n_suppressed}


def memory_alert(action: str, rss_bytes: int, rss_limit_bytes: int, n_shed: int, model_bytes: int) -> dict:
    """docs/protocol.md "Memory alert" (``action``: shed_background, shed_leaves, high_rss, exit)."""
    return {"ts": time.time(), "alert": "memory", "action": action, "rss_bytes": rss_bytes,
            "rss_limit_bytes": rss_limit_bytes, "n_shed": n_shed, "model_bytes": model_bytes}


def session_alert(client_id: str, reason: str, n_takeovers: int, retry_in_s: float) -> dict:
    """docs/protocol.md "Session alert": another client took the session of ``client_id``."""
    return {"ts": time.time(), "alert": "session_taken_over", "client_id": client_id, "reason": reason,
            "n_takeovers": n_takeovers, "retry_in_s": retry_in_s}


def durability_alert(durable: bool, reason: str, consequence: str, n_journal_errors: int) -> dict:
    """docs/protocol.md "Durability alert": a fault episode starts (``durable`` False) or ends."""
    return {"ts": time.time(), "alert": "durability", "durable": durable, "reason": reason,
            "consequence": consequence, "n_journal_errors": n_journal_errors}


def model_metrics(names: list[str], devices, nbytes: list[int]) -> dict:
    """The metrics' ``models``: name -> ``{accuracy, bytes}`` over every device's slots
    (accuracy over the recent windows, None before any label; ``nbytes[i]``: model ``i``'s
    slots' bytes summed, `edgebayes.runtime.memory.ModelBytes.slot_bytes`)."""
    models = {}
    for i, name in enumerate(names):
        correct = seen = 0
        for dev in devices:
            slot = dev.slots[i]
            correct += slot.n_window_correct
            seen += len(slot.window)
        models[name] = {"accuracy": correct / seen if seen else None, "bytes": nbytes[i] if nbytes else 0}
    return models


def metrics(*, started_at: float, readings_per_s: float, queue_depth: int, counts: dict[str, int],
            errors: dict, malformed: frozenset, devices: list, journal: Any, durable: bool,
            n_journal_errors: int, n_checkpoints_failing: int, n_evicted: int, n_publish_failed: int,
            rss_bytes: int, models: dict, sources: dict) -> dict:
    """docs/protocol.md "Metrics".

    Args:
        counts: the worker's counters by metric name (``n_readings``, ``n_labels``, ...).
        errors: error kind -> count; malformed: the kinds summed into ``n_malformed``.
        devices: the ``Device`` objects served; journal: the ``Journal`` or None.
        sources: the intake's own metrics (``sources``, with ``[[sources]]``).
    """
    pending = [dev.pending for dev in devices]
    now = time.time()
    return {
        "ts": now, "uptime_s": now - started_at, "readings_per_s": readings_per_s,
        "queue_depth": queue_depth, "n_readings": counts["n_readings"], "n_labels": counts["n_labels"],
        "n_predictions": counts["n_predictions"], "n_learned": counts["n_learned"],
        "n_malformed": sum(n for k, n in errors.items() if k in malformed),
        "n_dropped": counts["n_dropped"], "n_duplicates": errors.get(ErrorKind.DUPLICATE, 0),
        "n_unknown_labels": errors.get(ErrorKind.UNKNOWN_SEQ, 0),
        "n_devices_refused": errors.get(ErrorKind.DEVICE_LIMIT, 0),
        "n_pending_dropped": sum(p.n_dropped for p in pending),
        "n_reboots": sum(dev.n_reboots for dev in devices),
        "n_publish_failed": n_publish_failed,
        "n_errors_suppressed": counts["n_errors_suppressed"], "n_internal_errors": counts["n_internal_errors"],
        "n_replayed": counts["n_replayed"], "n_late": counts["n_late"], "n_evicted": n_evicted,
        "journal_bytes": journal.size if journal is not None else 0,
        "n_journal_syncs": journal.n_syncs if journal is not None else 0,
        "durable": durable, "n_journal_errors": n_journal_errors,
        "n_checkpoints_failing": n_checkpoints_failing,
        "n_drift_alerts": counts["n_drift_alerts"], "errors": {str(k): n for k, n in errors.items()},
        "pending_labels": sum(len(p) for p in pending), "early_labels": sum(p.n_early for p in pending),
        "n_devices": len(devices),
        "rss_bytes": rss_bytes, "models": models,
        **sources,
    }


class Outbox:
    """Publishes the runtime's messages on their topics (docs/protocol.md's table).

    Args:
        publisher: where they go.
        topics: the runtime's topics.
        fmt: ``[output] format`` ("json" or "msgpack"); metrics are always JSON.
        prediction_qos: ``[output] prediction_qos``.
        names: the models' names, in config order (a prediction's ``model`` and ``models``).
    """

    def __init__(self, publisher: Publisher, topics: Topics, fmt: str, prediction_qos: int, names: list[str]):
        self.publisher = publisher
        self.topics = topics
        self.fmt = fmt
        self.prediction_qos = prediction_qos
        self.names = list(names)
        self._names_json = [encode_basestring_ascii(n) for n in self.names]

    def prediction(self, device: str, seq: int, ts: float | None, y_preds: list, best: int, proba: dict,
                   latency_ms: float) -> bytes:
        """Publish the ``prediction`` of ``device``'s reading ``seq`` (arguments as ``prediction``
        takes them); returns its encoded payload."""
        payload = None
        if self.fmt == "json":
            try:
                payload = prediction_json(seq, ts, y_preds, best, proba, self._names_json, latency_ms)
            except TypeError:  # a numpy scalar, a bool: the encoder's way
                payload = None
        if payload is None:
            payload = encode(prediction(seq, ts, y_preds, best, proba, self.names, latency_ms), self.fmt)
        self.publisher.publish(self.topics.device_topic(device, "prediction"), payload, qos=self.prediction_qos)
        return payload

    def drift(self, device: str, alert: dict) -> None:
        self.publisher.publish(self.topics.device_topic(device, "drift"), encode(alert, self.fmt), qos=1)

    def error(self, device: str | None, report: dict) -> None:
        """Publish an ``error_report`` on ``device``'s error topic (None: the runtime's)."""
        self.publisher.publish(self.error_topic(device), encode(report, self.fmt), qos=0)

    def error_topic(self, device: str | None) -> str:
        return self.topics.device_topic(device, "error") if device else self.topics.runtime_error

    def metrics(self, msg: dict) -> None:
        self.publisher.publish(self.topics.metrics, encode(msg, "json"), qos=0)

    def alert(self, msg: dict) -> None:
        """Publish a memory, session or durability alert on the runtime's alert topic."""
        self.publisher.publish(self.topics.alert, encode(msg, self.fmt), qos=1)
