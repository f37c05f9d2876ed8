"""The write-ahead journal: frames read back, torn tails and foreign journals, and the worker
acknowledging only what is durable and replaying exactly what its checkpoints miss."""

import json
import logging
import shutil

import pytest

from edgebayes.base import learner_from_state
from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import parse_config
from edgebayes.runtime.journal import FRAME, Journal
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker
from tests.runtime_client import FEATURES, blobs
from tests.test_runtime_robustness import Recorder


class AckRecorder(Recorder):
    def __init__(self):
        super().__init__()
        self.acked = []

    def ack(self, mid, qos):
        self.acked.append(mid)


def journal(tmp_path, features=FEATURES):
    return Journal(tmp_path, features, 65536)


def worker(tmp_path):
    cfg = parse_config({"schema": {"features": list(FEATURES)}, "output": {"format": "json", "error_interval_s": 0},
                        "checkpoint": {"dir": str(tmp_path)}, "models": [{"name": "nb", "kind": "gaussian_nb"}]})
    w = Worker(cfg, Topics("eb", "+", "rt"), CheckpointStore(tmp_path, FEATURES), journal(tmp_path),
               client=AckRecorder())
    w._recover()  # what start() does before the worker thread runs
    return w


def readings(w, data, first=0):
    """Readings seq ``first``.. with inline labels; message ids from ``first + 1``."""
    for i, (x, y) in enumerate(data, start=first):
        payload = json.dumps({"seq": i, "ts": 1000.0 + i, "x": x, "y": y}).encode()
        w._handle("eb/d1/reading", payload, i + 1, 1, 0.0, getattr(w.client, "n_connects", 0))


def n_learned(w) -> int:
    return int(w.devices["d1"].slots[0].learner.state()["n"])


def test_frames_read_back_in_order_with_their_offsets(tmp_path):
    j = journal(tmp_path)
    j.rotate([("eb/d1/reading", b"kept")])
    j.append("eb/d1/reading", b"\x81\xa3seq\x00")
    j.append("eb/d2/label", b"{}")
    j.sync()
    jid, entries = journal(tmp_path).recover()
    entries = list(entries)
    assert jid == j.id
    assert [(t, p) for _, t, p in entries] == [("eb/d1/reading", b"kept"), ("eb/d1/reading", b"\x81\xa3seq\x00"),
                                               ("eb/d2/label", b"{}")]
    offsets = [o for o, _, _ in entries]
    assert offsets == sorted(offsets) and j.position() == [j.id, j.size] and j.size == (tmp_path / "journal").stat().st_size


@pytest.mark.parametrize("spoil", ["truncate", "checksum", "length"])
def test_a_torn_last_entry_is_dropped_and_the_rest_replayed(tmp_path, spoil, caplog):
    j = journal(tmp_path)
    j.rotate()
    for i in range(3):
        j.append("eb/d1/reading", bytes([i]) * 20)
    j.sync()
    path = tmp_path / "journal"
    data = bytearray(path.read_bytes())
    last = j.size - (FRAME.size + len(b"\x92\xadeb/d1/reading\xc4\x14") + 20)
    if spoil == "truncate":
        data = data[:-5]  # the power went mid-write
    elif spoil == "checksum":
        data[-1] ^= 0xFF
    else:
        data[last:last + 4] = (2**31).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="edgebayes.runtime.journal"):
        jid, entries = journal(tmp_path).recover()
        entries = list(entries)
    assert jid == j.id and [p for _, _, p in entries] == [b"\x00" * 20, b"\x01" * 20]
    assert f"torn or corrupt entry at byte {last}" in caplog.text


@pytest.mark.parametrize("spoil", ["features", "garbage"])
def test_a_journal_of_another_schema_or_garbage_is_moved_aside(tmp_path, spoil, caplog):
    if spoil == "features":
        other = journal(tmp_path, ("a", "b"))
        other.rotate()
        other.append("eb/d1/reading", b"x")
        other.sync()
    else:
        (tmp_path / "journal").write_bytes(b"\x00\x01not a journal")
    with caplog.at_level(logging.ERROR, logger="edgebayes.runtime.journal"):
        jid, entries = journal(tmp_path).recover()
        assert (jid, list(entries)) == (None, [])
    assert not (tmp_path / "journal").exists()
    assert len(list(tmp_path.glob("journal.corrupt-*"))) == 1 and "moved to" in caplog.text


def test_messages_are_acknowledged_only_after_the_journal_is_synced(tmp_path):
    w = worker(tmp_path)
    readings(w, blobs(5, seed=1))
    assert w.client.acked == [] and n_learned(w) == 5  # learned, not yet durable
    w._commit()
    assert w.client.acked == [1, 2, 3, 4, 5]
    assert len(list(journal(tmp_path).recover()[1])) == 5


def test_messages_of_an_earlier_connection_are_not_acknowledged_on_the_new_one(tmp_path):
    """After a reconnect a packet id may name another message: acknowledging the old one would
    acknowledge that one unprocessed. The resumed session sends the old one again instead."""
    w = worker(tmp_path)
    w.client.n_connects = 1
    data = blobs(2, seed=4)
    readings(w, data[:1])  # mid 1, received on connection 1
    w.client.n_connects = 2  # the broker went away and came back before the journal's sync
    payload = json.dumps({"seq": 1, "ts": 1001.0, "x": data[1][0], "y": data[1][1]}).encode()
    w._handle("eb/d1/reading", payload, 2, 1, 0.0, 2)
    w._commit()
    assert w.client.acked == [2] and n_learned(w) == 2


def test_after_a_crash_the_journal_is_replayed_silently_and_exactly(tmp_path):
    data = blobs(30, seed=2)
    w = worker(tmp_path)
    readings(w, data[:10])
    w.checkpoint()  # readings 0..9 in the checkpoint, the journal starts over
    readings(w, data[10:], first=10)
    w._commit()
    assert w.client.acked == list(range(1, 31))
    expected = w.devices["d1"].slots[0].learner.state()
    # the process dies here: no final checkpoint
    again = worker(tmp_path)
    assert again.n_replayed == 20 and again.errors == {} and again.client.published == []
    assert again.devices["d1"].slots[0].learner.state() == expected  # same learning, same order
    assert again.devices["d1"].last_seq == 29
    assert list(journal(tmp_path).recover()[1]) == []  # checkpointed after the replay: not replayed again
    assert worker(tmp_path).n_replayed == 0


def test_a_crash_between_a_checkpoint_and_the_new_journal_learns_nothing_twice(tmp_path):
    w = worker(tmp_path)
    readings(w, blobs(10, seed=3))
    w._commit()
    old = tmp_path / "old-journal"
    shutil.copy(tmp_path / "journal", old)
    w.checkpoint()  # writes d1 with the journal position, then starts a new journal
    shutil.copy(old, tmp_path / "journal")  # as if the process died before the new journal
    again = worker(tmp_path)
    assert again.n_replayed == 0 and again.errors == {}  # skipped by position, not refused as duplicates
    assert n_learned(again) == 10
    assert learner_from_state(again.devices["d1"].slots[0].learner.state()).state() == \
        w.devices["d1"].slots[0].learner.state()
