"""The per-reading path: the worker's inbox, the JSON prediction written directly, and a burst
handed over at once served exactly as the same messages one by one."""

from __future__ import annotations

import json
import math
import threading

import numpy as np
import pytest

from edgebayes.codec import encode
from edgebayes.runtime import payloads
from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import parse_config
from edgebayes.runtime.inbox import Inbox
from edgebayes.runtime.journal import Journal
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker
from tests.fakes import RecordingPublisher
from tests.runtime_client import FEATURES, wait_for

# --- the inbox ---------------------------------------------------------------------------------


def test_the_inbox_is_a_bounded_fifo():
    box = Inbox(3)
    assert box.take() is None and box.empty()
    for i in range(3):
        box.put(i)
    assert box.full() and box.qsize() == 3
    assert box.drop_oldest() == 0
    box.put(3)
    assert [box.take() for _ in range(4)] == [1, 2, 3, None]


def test_a_full_inbox_makes_put_wait_until_the_consumer_takes_one():
    box = Inbox(1)
    box.put("a")
    done = threading.Event()
    producer = threading.Thread(target=lambda: (box.put("b"), done.set()))
    producer.start()
    assert not done.wait(0.3)  # waits: the inbox is full
    assert box.take() == "a"
    assert done.wait(5)
    producer.join()
    assert box.take() == "b"


def test_wait_returns_when_another_thread_puts():
    box = Inbox(10)
    assert not box.wait(0.01)
    t = threading.Timer(0.1, box.put, ("x",))
    t.start()
    assert box.wait(10)
    assert box.take() == "x"
    t.join()


def test_puts_without_wake_wake_a_sleeping_consumer_once_after_the_round_or_at_wake_after():
    from edgebayes.runtime.inbox import WAKE_AFTER

    box = Inbox(1000)
    woke = threading.Event()
    consumer = threading.Thread(target=lambda: box.wait(30) and woke.set())
    consumer.start()
    wait_for(lambda: box._sleeping, timeout_s=10, what="the consumer asleep")
    for i in range(WAKE_AFTER - 1):
        box.put(i, wake=False)
    assert not woke.wait(0.3)  # a round in progress: not woken per message
    box.wake()  # the round's end
    assert woke.wait(10)
    consumer.join()
    woke.clear()
    consumer = threading.Thread(target=lambda: box.wait(30) and woke.set())
    while box.take() is not None:
        pass
    consumer.start()
    wait_for(lambda: box._sleeping, timeout_s=10, what="the consumer asleep")
    for i in range(WAKE_AFTER):
        box.put(i, wake=False)
    assert woke.wait(10)  # a long round: woken at WAKE_AFTER, not left idle
    consumer.join()


# --- predictions written directly ----------------------------------------------------------------

CASES = [
    (3, 1.5, [1, 2], 0, {1: 0.25, 2: 0.75}, ["nb", "srp"], 0.2),
    (0, None, [None], 0, {}, ["nb"], 0.0),
    (7, 2.0, ["caf\u00e9 \"a\"\n", "b"], 1, {"caf\u00e9 \"a\"\n": 0.5, "b": 0.5}, ["m\u00e9", "x\\y"], 1e-7),
    (9, 3.0, [-5, 2**60], 0, {-5: math.nan, 2**60: math.inf, 3: -math.inf}, ["a", "b"], 123456.789),
    (1, 1.0, [np.int64(2)], 0, {np.int64(2): np.float32(0.5)}, ["nb"], 0.1),  # numpy: the encoder's way
    (2, 1.0, [True], 0, {True: 1.0}, ["nb"], 0.1),
    (4, 1.0, [1], 0, {1: 0.5, "1": 0.5}, ["nb"], 0.1),  # equal as str: one key, as the dict has it
]


@pytest.mark.parametrize("args", CASES)
def test_a_json_prediction_is_the_bytes_the_encoder_makes_of_the_dict(args):
    seq, ts, y_preds, best, proba, names, latency = args
    pub = RecordingPublisher()
    out = payloads.Outbox(pub, Topics("eb", "+", "rt"), "json", 0, names)
    payload = out.prediction("d1", seq, ts, y_preds, best, proba, latency)
    assert payload == encode(payloads.prediction(seq, ts, y_preds, best, proba, names, latency), "json")
    assert pub.published == [("eb/d1/prediction", payload, 0, False)]


def test_a_msgpack_prediction_is_the_encoded_dict():
    out = payloads.Outbox(RecordingPublisher(), Topics("eb", "+", "rt"), "msgpack", 0, ["nb"])
    args = (3, 1.5, [1], 0, {1: 0.25, 2: 0.75}, ["nb"], 0.2)
    assert out.prediction("d1", *args[:5], args[6]) == encode(payloads.prediction(*args), "msgpack")


# --- a burst in one handoff ----------------------------------------------------------------------


class JournalCheckingSession(RecordingPublisher):
    """Records, with each acknowledgement, how many entries the journal file holds on disk."""

    def __init__(self):
        super().__init__()
        self.journal: Journal | None = None
        self.on_disk_at_ack: list[int] = []

    def ack(self, mid: int, qos: int) -> None:
        id_, entries = Journal(self.journal.dir, FEATURES, 65536).recover()
        self.on_disk_at_ack.append(sum(1 for _ in entries) if id_ == self.journal.id else -1)
        super().ack(mid, qos)


def _worker(tmp_path, name):
    cfg = parse_config({"schema": {"features": list(FEATURES)}, "output": {"format": "json"},
                        "models": [{"name": "nb", "kind": "gaussian_nb"}],
                        "checkpoint": {"interval_s": 3600}})
    folder = tmp_path / name
    folder.mkdir()
    session = JournalCheckingSession()
    journal = Journal(folder, FEATURES, cfg.queue.max_payload_bytes)
    journal.rotate()
    session.journal = journal
    return Worker(cfg, Topics("eb", "+", "rt"), CheckpointStore(folder, FEATURES), journal, session=session)


def _messages(n):
    rng = np.random.default_rng(1)
    out = []
    for i in range(n):
        dev = f"d{i % 3}"
        x = (rng.normal(0, 1, len(FEATURES)) + i % 2).tolist()
        out.append((f"eb/{dev}/reading", json.dumps({"seq": i // 3, "ts": 1e9 + i, "x": x, "y": i % 2}).encode(),
                    i + 1))
    return out


def _served(w):
    preds = [(t, json.loads(p)) for t, p, _, _ in w.session.published if t.endswith("/prediction")]
    return [(t, p["seq"], p["y_pred"], p["proba"]) for t, p in preds]


def test_a_burst_in_one_handoff_is_served_as_the_same_messages_one_by_one(tmp_path):
    msgs = _messages(60)
    one = _worker(tmp_path, "one")
    for topic, payload, mid in msgs:
        one.acks.handle(topic, payload, mid, 1, 0.0)
        one.acks.commit()
    burst = _worker(tmp_path, "burst")
    for topic, payload, mid in msgs:  # all queued before the worker runs: taken in one go
        burst.submit(topic, payload, mid, 1)
    burst.start()
    wait_for(lambda: len(burst.session.acked) == len(msgs), timeout_s=30, what="every message acknowledged")
    entries = [list(Journal(w.journal.dir, FEATURES, 65536).recover()[1]) for w in (one, burst)]
    burst.stop(10)
    assert _served(burst) == _served(one)
    assert burst.session.acked == one.session.acked == [mid for *_, mid in msgs]
    assert [(t, p) for _, t, p, _ in entries[1]] == [(t, p) for _, t, p, _ in entries[0]]
    # nothing acknowledged before its journal entry was on disk
    assert all(n >= i + 1 for i, n in enumerate(burst.session.on_disk_at_ack))
