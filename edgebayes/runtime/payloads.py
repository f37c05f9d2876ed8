"""Every message the runtime publishes, built here (docs/protocol.md is the contract).

One function per message kind returns its payload as a dict, with the keys of its table in
docs/protocol.md: ``prediction``, ``drift_alert``, ``error_report``, ``metrics``,
``memory_alert``, ``session_alert``, ``durability_alert``; ``ONLINE`` and ``OFFLINE`` are the
plain-text status payloads. ``Outbox`` encodes them in ``[output] format`` (metrics always
JSON) and publishes each on its topic at its QoS through a ``Publisher``.
"""

from __future__ import annotations

import time
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
        "pending_labels": sum(len(p) for p in pending), "n_devices": len(devices),
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
    """

    def __init__(self, publisher: Publisher, topics: Topics, fmt: str, prediction_qos: int):
        self.publisher = publisher
        self.topics = topics
        self.fmt = fmt
        self.prediction_qos = prediction_qos

    def prediction(self, device: str, msg: dict) -> bytes:
        """Publish a ``prediction`` of ``device``; returns its encoded payload."""
        payload = encode(msg, self.fmt)
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
