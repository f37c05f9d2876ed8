"""The write-ahead journal: frames read back, torn tails and foreign journals, and the worker
acknowledging only what is durable and replaying exactly what its checkpoints miss."""

import json
import logging
import shutil
import struct
import time
import tracemalloc
import zlib

import msgpack
import pytest

from edgebayes.base import learner_from_state
from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import parse_config
from edgebayes.runtime.journal import FRAME, Journal, JournalError
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker
from tests.fakes import RecordingPublisher
from tests.runtime_client import FEATURES, blobs


def journal(tmp_path, features=FEATURES):
    return Journal(tmp_path, features, 65536)


def worker(tmp_path, features=FEATURES, **tables):
    """A worker journaling and checkpointing into ``tmp_path``, after the replay a start does;
    ``tables``: config tables beside (or over) the defaults."""
    cfg = parse_config({"schema": {"features": list(features)}, "output": {"format": "json", "error_interval_s": 0},
                        "checkpoint": {"dir": str(tmp_path)}, "models": [{"name": "nb", "kind": "gaussian_nb"}],
                        **tables})
    w = Worker(cfg, Topics("eb", "+", "rt"), CheckpointStore(tmp_path, tuple(features)), journal(tmp_path, features),
               session=RecordingPublisher())
    w.replay.recover()  # what start() does before the worker thread runs
    return w


def readings(w, data, first=0):
    """Readings seq ``first``.. with inline labels; message ids from ``first + 1``."""
    for i, (x, y) in enumerate(data, start=first):
        payload = json.dumps({"seq": i, "ts": 1000.0 + i, "x": x, "y": y}).encode()
        w.acks.handle("eb/d1/reading", payload, i + 1, 1, 0.0, w.session.n_connects)


def n_learned(w) -> int:
    return int(w.devices["d1"].slots[0].learner.state()["n"])


def test_frames_read_back_in_order_with_their_offsets(tmp_path):
    j = journal(tmp_path)
    j.rotate([("eb/d1/reading", b"kept", 1.7e9)])
    j.append("eb/d1/reading", b"\x81\xa3seq\x00")
    j.append("eb/d2/label", b"{}")
    j.sync()
    jid, entries = journal(tmp_path).recover()
    entries = list(entries)
    assert jid == j.id
    assert [(t, p) for _, t, p, _ in entries] == [("eb/d1/reading", b"kept"), ("eb/d1/reading", b"\x81\xa3seq\x00"),
                                               ("eb/d2/label", b"{}")]
    offsets = [o for o, _, _, _ in entries]
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
    last = j.size - (FRAME.size + len(b"\x93\xadeb/d1/reading\xc4\x14") + 20 + 9)  # + the time, a float64
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
    assert jid == j.id and [p for _, _, p, _ in entries] == [b"\x00" * 20, b"\x01" * 20]
    assert f"torn or corrupt entry at byte {last}" in caplog.text


def test_a_journal_of_another_schema_is_read_and_garbage_is_moved_aside(tmp_path, caplog):
    other = journal(tmp_path, ("a", "b"))
    other.rotate()
    other.append("eb/d1/reading", b"x")
    other.sync()
    j = journal(tmp_path)
    jid, entries = j.recover()
    assert (jid, [p for _, _, p, _ in entries], j.recovered_features) == (other.id, [b"x"], ["a", "b"])
    (tmp_path / "journal").write_bytes(b"\x00\x01not a journal")
    with caplog.at_level(logging.ERROR, logger="edgebayes.runtime.journal"):
        jid, entries = journal(tmp_path).recover()
        assert (jid, list(entries)) == (None, [])
    assert not (tmp_path / "journal").exists()
    assert len(list(tmp_path.glob("journal.corrupt-*"))) == 1 and "moved to" in caplog.text


def test_messages_are_acknowledged_only_after_the_journal_is_synced(tmp_path):
    w = worker(tmp_path)
    readings(w, blobs(5, seed=1))
    assert w.session.acked == [] and n_learned(w) == 5  # learned, not yet durable
    w.acks.commit()
    assert w.session.acked == [1, 2, 3, 4, 5]
    assert len(list(journal(tmp_path).recover()[1])) == 5


def test_messages_of_an_earlier_connection_are_not_acknowledged_on_the_new_one(tmp_path):
    """After a reconnect a packet id may name another message: acknowledging the old one would
    acknowledge that one unprocessed. The resumed session sends the old one again instead."""
    w = worker(tmp_path)
    w.session.n_connects = 1
    data = blobs(2, seed=4)
    readings(w, data[:1])  # mid 1, received on connection 1
    w.session.n_connects = 2  # the broker went away and came back before the journal's sync
    payload = json.dumps({"seq": 1, "ts": 1001.0, "x": data[1][0], "y": data[1][1]}).encode()
    w.acks.handle("eb/d1/reading", payload, 2, 1, 0.0, 2)
    w.acks.commit()
    assert w.session.acked == [2] and n_learned(w) == 2


def test_after_a_crash_the_journal_is_replayed_silently_and_exactly(tmp_path):
    data = blobs(30, seed=2)
    w = worker(tmp_path)
    readings(w, data[:10])
    w.checkpoint()  # readings 0..9 in the checkpoint, the journal starts over
    readings(w, data[10:], first=10)
    w.acks.commit()
    assert w.session.acked == list(range(1, 31))
    expected = w.devices["d1"].slots[0].learner.state()
    # the process dies here: no final checkpoint
    again = worker(tmp_path)
    assert again.replay.n_replayed == 20 and again.reports.errors == {} and again.session.published == []
    assert again.devices["d1"].slots[0].learner.state() == expected  # same learning, same order
    assert again.devices["d1"].last_seq == 29
    assert list(journal(tmp_path).recover()[1]) == []  # checkpointed after the replay: not replayed again
    assert worker(tmp_path).replay.n_replayed == 0


def test_a_crash_between_a_checkpoint_and_the_new_journal_learns_nothing_twice(tmp_path):
    w = worker(tmp_path)
    readings(w, blobs(10, seed=3))
    w.acks.commit()
    old = tmp_path / "old-journal"
    shutil.copy(tmp_path / "journal", old)
    w.checkpoint()  # writes d1 with the journal position, then starts a new journal
    shutil.copy(old, tmp_path / "journal")  # as if the process died before the new journal
    again = worker(tmp_path)
    assert again.replay.n_replayed == 0 and again.reports.errors == {}  # skipped by position, not refused as duplicates
    assert n_learned(again) == 10
    assert learner_from_state(again.devices["d1"].slots[0].learner.state()).state() == \
        w.devices["d1"].slots[0].learner.state()


def test_a_corrupt_entry_in_the_middle_is_skipped_and_the_entries_after_it_kept(tmp_path, caplog):
    """A bad frame used to end the journal: every entry after it was dropped as a torn tail."""
    j = journal(tmp_path)
    j.rotate()
    for i in range(5):
        j.append("eb/d1/reading", bytes([i]) * 20)
    j.sync()
    path = tmp_path / "journal"
    offsets = [o for o, _, _, _ in journal(tmp_path).recover()[1]]
    data = bytearray(path.read_bytes())
    data[offsets[2] + 2] ^= 0x40  # the third entry's length
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="edgebayes.runtime.journal"):
        entries = list(journal(tmp_path).recover()[1])
    assert [(o, p) for o, _, p, _ in entries] == [(offsets[i], bytes([i]) * 20) for i in (0, 1, 3, 4)]
    assert f"{offsets[3] - offsets[2]} unreadable bytes at byte {offsets[2]} skipped" in caplog.text
    assert "torn or corrupt entry" not in caplog.text


def test_an_entry_longer_than_the_reader_takes_is_never_written(tmp_path):
    j = journal(tmp_path)
    j.rotate()
    with pytest.raises(JournalError, match="longer than a journal reader accepts"):
        j.append("eb/d1/reading", b"x" * (65536 + 65535 + 33))
    j.append("eb/d1/reading", b"ok")
    j.sync()
    assert [p for _, _, p, _ in journal(tmp_path).recover()[1]] == [b"ok"]


def test_an_oversize_reading_is_refused_acknowledged_and_not_journaled(tmp_path):
    w = worker(tmp_path)
    readings(w, blobs(2, seed=5))
    w.acks.handle("eb/d2/reading", b"{" + b" " * 70_000 + b"}", 9, 1, 0.0, 0)
    readings(w, blobs(2, seed=6), first=2)
    w.acks.commit()
    assert w.session.acked == [1, 2, 9, 3, 4] and w.reports.errors == {"oversize": 1}
    assert [t for _, t, _, _ in journal(tmp_path).recover()[1]] == ["eb/d1/reading"] * 4


def test_reading_a_journal_back_holds_two_frames_not_the_file(tmp_path):
    """The reader used to hold the whole file and a list of every entry (200,000 entries:
    138 MB); now it holds what it reads at once and about two of the longest frames."""
    j = journal(tmp_path)
    j.rotate()
    for i in range(50_000):
        j.append("eb/d1/reading", b"%08d" % i * 8)
    j.sync()
    assert j.size > 4_400_000
    tracemalloc.start()
    try:
        n = sum(1 for _ in journal(tmp_path).recover()[1])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert n == 50_000 and peak < 2_000_000  # the reads: 256 KiB at a time, plus the longest frame


def test_a_journal_deleted_underneath_fails_its_check(tmp_path):
    j = journal(tmp_path)
    j.rotate()
    j.check()
    (tmp_path / "journal").unlink()
    with pytest.raises(JournalError, match="is gone"):
        j.check()
    (tmp_path / "journal").write_bytes(b"another file")
    with pytest.raises(JournalError, match="deleted or replaced"):
        j.check()


def test_a_device_whose_checkpoint_fails_keeps_only_its_entries_and_loses_nothing(tmp_path):
    w = worker(tmp_path)
    (tmp_path / "d2.ckpt.tmp").mkdir()  # d2's checkpoint cannot be written
    data = blobs(12, seed=7)
    readings(w, data[:6])
    for i, (x, y) in enumerate(data[6:]):
        payload = json.dumps({"seq": i, "ts": 1000.0 + i, "x": x, "y": y}).encode()
        w.acks.handle("eb/d2/reading", payload, 100 + i, 1, 0.0, 0)
    w.checkpoint()
    assert w.session.acked == [*range(1, 7), *range(100, 106)]  # all durable: d1 checkpointed, d2 journaled
    assert [t for _, t, _, _ in journal(tmp_path).recover()[1]] == ["eb/d2/reading"] * 6
    readings(w, data[:3], first=6)
    w.checkpoint()  # again: d2's entries carried forward once more, d1's rotated away
    assert [t for _, t, _, _ in journal(tmp_path).recover()[1]] == ["eb/d2/reading"] * 6
    expected = {d: w.devices[d].slots[0].learner.state() for d in ("d1", "d2")}
    (tmp_path / "d2.ckpt.tmp").rmdir()
    again = worker(tmp_path)  # the crash: d2 learns its 6 entries again, d1 nothing
    assert again.replay.n_replayed == 6 and again.reports.errors == {}
    assert {d: again.registry.get(d, create=False).slots[0].learner.state() for d in ("d1", "d2")} == expected


def test_a_journal_that_cannot_be_read_is_moved_aside_not_overwritten(tmp_path, caplog):
    """Reading it used to raise out of the start (a traceback, a restart loop under systemd)."""
    (tmp_path / "journal").mkdir()  # read as root too: EISDIR, as EACCES or EIO would be
    with caplog.at_level(logging.ERROR):
        w = worker(tmp_path)
    assert w.metrics()["durable"] is True and (tmp_path / "journal").is_file()
    assert [p.is_dir() for p in tmp_path.glob("journal.corrupt-*")] == [True]
    assert "cannot read it: IsADirectoryError" in caplog.text


def test_source_entries_of_a_failing_device_are_carried_and_replayed_through_the_assembler(tmp_path):
    source = {"kind": "tasmota", "topic": "tele/+/SENSOR", "features": {f: f"SIM.{f}" for f in FEATURES},
              "label": "SIM.y"}
    w = worker(tmp_path, sources=[source])
    (tmp_path / "t1.ckpt.tmp").mkdir()  # t1's checkpoint cannot be written
    for i, (x, y) in enumerate(blobs(8, seed=9)):
        doc = {"Time": i, "SIM": {**dict(zip(FEATURES, x)), "y": y}}
        w.acks.handle(f"tele/{'t1' if i % 2 else 't2'}/SENSOR", json.dumps(doc).encode(), i + 1, 1, 0.0, 0)
    for _ in range(2):  # carried forward twice: the offsets of the kept entries follow them
        w.checkpoint()
        assert [t for _, t, _, _ in journal(tmp_path).recover()[1]] == ["tele/t1/SENSOR"] * 4
    assert w.session.acked == list(range(1, 9))
    assert n_learned_of(w, "t1") == 4 and n_learned_of(w, "t2") == 4
    (tmp_path / "t1.ckpt.tmp").rmdir()
    again = worker(tmp_path, sources=[source])  # the crash: t1 learns its 4 readings again, t2 nothing
    assert n_learned_of(again, "t1") == 4 and n_learned_of(again, "t2") == 4


def n_learned_of(w, device: str) -> int:
    return int(w.registry.get(device, create=False).slots[0].learner.state()["n"])


def test_a_replay_naming_more_devices_than_max_devices_learns_them_all(tmp_path):
    """Devices evicted live to make room were refused at replay (device_limit): their entries
    were dropped with the new journal, acknowledged readings lost (20 of 40 here)."""
    tables = {"memory": {"max_devices": 2, "evict_idle_s": 0}, "checkpoint": {"dir": str(tmp_path), "interval_s": 3600}}
    w = worker(tmp_path, **tables)
    data = blobs(10, seed=11)
    for d in ("a", "b", "c", "d"):  # a and b evicted (checkpointed) for c and d
        for i, (x, y) in enumerate(data):
            w.acks.handle(f"eb/{d}/reading", json.dumps({"seq": i, "ts": 1000.0 + i, "x": x, "y": y}).encode(),
                      i + 1, 1, 0.0, 0)
    w.acks.commit()
    assert w.registry.n_evicted == 2 and sorted(w.devices) == ["c", "d"]
    again = worker(tmp_path, **tables)  # the crash: c and d have only the journal
    assert again.reports.errors == {} and len(again.devices) <= 2
    assert {d: int(again.registry.get(d, create=True).slots[0].learner.state()["n"]) for d in "abcd"} == \
        dict.fromkeys("abcd", 10)


def _plain_frame(body: bytes) -> bytes:
    return struct.pack("<II", len(body), zlib.crc32(body)) + body


def test_a_frame_written_inside_a_payload_is_never_replayed_as_an_entry(tmp_path):
    """A client's payload holding a well-formed frame for another device's topic, then damage:
    the reader used to resynchronise onto that inner frame and replay it as d1's reading."""
    forged = msgpack.packb(["eb/d1/reading", json.dumps({"seq": 1000, "x": [9e9] * 3, "y": "EVIL"}).encode()],
                           use_bin_type=True)
    for damage in ("length", "torn"):
        j = journal(tmp_path / damage)
        (tmp_path / damage).mkdir()
        j.rotate()
        j.append("eb/d1/reading", b"good-1")
        at = j.size
        j.append("eb/mallory/reading", b"junk " + _plain_frame(forged) + b" junk")
        j.append("eb/d1/reading", b"good-2")
        j.sync()
        data = bytearray((tmp_path / damage / "journal").read_bytes())
        if damage == "length":
            data[at] ^= 0x40  # the outer frame's length: the reader scans on from there
        else:
            inner = data.find(_plain_frame(forged))
            data = data[:inner + len(_plain_frame(forged)) + 3]  # cut inside the outer frame, after the inner one
        (tmp_path / damage / "journal").write_bytes(bytes(data))
        topics = [t for _, t, _, _ in journal(tmp_path / damage).recover()[1]]
        assert topics == (["eb/d1/reading", "eb/d1/reading"] if damage == "length" else ["eb/d1/reading"]), damage


def test_a_version_1_journal_of_an_earlier_release_is_still_replayed(tmp_path):
    header = msgpack.packb({"format": "edgebayes-journal", "version": 1, "features": list(FEATURES),
                            "id": "00112233aabbccdd"}, use_bin_type=True)
    entry = msgpack.packb(["eb/d1/reading", b"{}"], use_bin_type=True)
    (tmp_path / "journal").write_bytes(_plain_frame(header) + _plain_frame(entry) * 2)
    jid, entries = journal(tmp_path).recover()
    assert jid == "00112233aabbccdd" and [t for _, t, _, _ in entries] == ["eb/d1/reading"] * 2


def test_a_journal_written_before_the_features_were_edited_is_replayed_by_name(tmp_path):
    """A crash, then [schema] features reordered and extended before the restart: the journal
    used to be moved aside as made for other features, its acknowledged readings lost."""
    w = worker(tmp_path)
    data = blobs(20, seed=13)
    readings(w, data)  # list readings in FEATURES order, journaled, no checkpoint yet
    w.acks.commit()
    edited = ("f2", "f0", "f3", "f1")
    again = worker(tmp_path, edited)
    live = worker(tmp_path / "live", edited)
    for i, (x, y) in enumerate(data):  # the same readings sent by name under the edited schema
        live.acks.handle("eb/d1/reading", json.dumps({"seq": i, "ts": 1000.0 + i, "x": dict(zip(FEATURES, x)),
                                                  "y": y}).encode(), i + 1, 1, 0.0, 0)
    assert again.replay.n_replayed == 20 and again.reports.errors == {} and not list(tmp_path.glob("journal.corrupt-*"))
    assert again.devices["d1"].slots[0].learner.state() == live.devices["d1"].slots[0].learner.state()
    assert list(journal(tmp_path, edited).recover()[1]) == []  # checkpointed: not replayed again


def test_entries_refused_while_a_checkpoint_cannot_be_read_are_learned_once_it_can(tmp_path):
    """A read error (EISDIR here, as EACCES or EIO) at the restart: the device's replayed entries
    and the readings refused meanwhile were acknowledged, then dropped with the next journal."""
    w = worker(tmp_path)
    data = blobs(20, seed=14)
    readings(w, data[:10])
    w.checkpoint()  # d1 at seq 9; the journal starts over
    readings(w, data[10:15], first=10)
    w.acks.commit()  # the crash: 5 readings in the journal only
    (tmp_path / "d1.ckpt").rename(tmp_path / "kept")
    (tmp_path / "d1.ckpt").mkdir()
    again = worker(tmp_path)
    readings(again, data[15:18], first=15)  # refused: checkpoint_unreadable, acknowledged
    again.acks.commit()
    again.checkpoint()  # the journal starts over keeping d1's 8 entries
    assert again.reports.errors["checkpoint_unreadable"] == 8 and "d1" not in again.devices
    assert len(list(journal(tmp_path).recover()[1])) == 8
    (tmp_path / "d1.ckpt").rmdir()
    (tmp_path / "kept").rename(tmp_path / "d1.ckpt")
    again.registry._unreadable["d1"] = (0.0, "")  # the retry is due
    readings(again, data[18:19], first=18)
    assert n_learned(again) == 19 and [p["seq"] for p in again.session.on("prediction")] == [18]
    expected = again.devices["d1"].slots[0].learner.state()
    again.acks.commit()
    third = worker(tmp_path)  # a crash before the next checkpoint: the journal again, once
    assert third.registry.get("d1", create=False).slots[0].learner.state() == expected


def test_a_replay_refuses_what_was_refused_when_it_came(tmp_path, monkeypatch):
    """A seq jump refused live (seq_jump) fitted the bound at a replay 1,000 s later, measured on
    the replay's clock: it was learned then, a reading no live run learned."""
    w = worker(tmp_path)
    data = blobs(20, seed=15)
    readings(w, data[:10])
    w.checkpoint()
    w.acks.handle("eb/d1/reading", json.dumps({"seq": 200_000, "ts": 1011.0, "x": data[10][0], "y": "EVIL"}).encode(),
              50, 1, 0.0, 0)
    readings(w, data[10:20], first=10)
    w.acks.commit()
    assert w.reports.errors == {"seq_jump": 1} and n_learned(w) == 20
    expected = w.devices["d1"].slots[0].learner.state()
    real = time.time
    monkeypatch.setattr("edgebayes.runtime.worker.time.time", lambda: real() + 1000.0)  # restarted later
    again = worker(tmp_path)
    assert again.registry.get("d1", create=False).slots[0].learner.state() == expected
    assert again.devices["d1"].last_seq == 19


def test_durability_comes_back_while_a_device_checkpoint_cannot_be_read(tmp_path):
    (tmp_path / "journal.tmp").mkdir()  # no journal can be started: serving without durability
    (tmp_path / "d1.ckpt").mkdir()  # d1's checkpoint cannot be read (EISDIR, as EACCES or EIO)
    w = worker(tmp_path)
    readings(w, blobs(1, seed=16))
    assert w.reports.errors == {"checkpoint_unreadable": 1} and w.metrics()["durable"] is False
    (tmp_path / "journal.tmp").rmdir()
    w.checkpoint()
    assert w.metrics()["durable"] is True and (tmp_path / "journal").is_file()


def test_a_full_disk_is_one_error_however_many_writes_it_fails(caplog):
    """Journal appends and checkpoint writes of several devices failing on the same full disk
    are one fault episode: one ERROR, the rest counted (a checkpoint round used to add its own)."""
    from edgebayes.runtime.durability import Durability

    alerts = []
    d = Durability(alerts.append)
    full = OSError(28, "No space left on device")
    with caplog.at_level(logging.DEBUG, logger="edgebayes.runtime.durability"):
        d.checkpoint_failed("d1", full)
        d.fault("journal append", full, "acknowledged after the next checkpoint round")
        d.checkpoint_failed("d2", full)
        d.fault("journal sync", full, "acknowledged after the next checkpoint round")
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and "checkpoint of device d1 failed" in errors[0].getMessage()
    assert d.n_journal_errors == 4 and d.failing == {"d1", "d2"} and not d.durable
    assert [a["durable"] for a in alerts] == [False]
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("not durable: journal append" in m for m in warned)
    assert any("checkpoint of device d2 failed" in m for m in warned)


def test_readings_refused_while_a_removed_feature_is_missing_are_learned_once_it_is_back(tmp_path):
    """[schema] features lost one a restored tree takes: the device is refused (its checkpoint
    kept), and its readings meanwhile were acknowledged and then dropped with the next journal,
    so putting the feature back found them gone."""
    models = {"models": [{"name": "ht", "kind": "hoeffding_tree"}]}
    w = worker(tmp_path, **models)
    data = blobs(12, seed=16)
    readings(w, data[:10])
    w.checkpoint()  # d1 at seq 9
    edited = FEATURES[:-1]
    again = worker(tmp_path, edited, **models)
    for i, (x, y) in enumerate(data[10:], start=10):  # readings of the edited schema, by name
        again.acks.handle("eb/d1/reading", json.dumps({"seq": i, "ts": 1000.0 + i, "x": dict(zip(edited, x)),
                                                       "y": y}).encode(), i + 1, 1, 0.0, 0)
    again.checkpoint(all_devices=True)  # a clean stop: the journal starts over
    assert again.reports.errors == {"checkpoint_refused": 2} and "d1" not in again.devices
    assert len(list(journal(tmp_path, edited).recover()[1])) == 2  # kept, with the checkpoint
    third = worker(tmp_path)  # the feature put back
    assert third.replay.n_replayed == 2
    assert third.devices["d1"].last_seq == 11


@pytest.mark.parametrize("kinds", [("gaussian_nb",), ("gaussian_nb", "hoeffding_tree")])
def test_a_removed_feature_is_told_dropped_only_when_the_device_is_served(tmp_path, caplog, kinds):
    """naive Bayes drops a removed feature; a tree beside it refuses the device. The WARNING
    that naive Bayes dropped what it learned came before the refusal, though nothing was."""
    models = {"models": [{"name": k, "kind": k} for k in kinds]}
    w = worker(tmp_path, **models)
    readings(w, blobs(10, seed=17))
    w.checkpoint()
    edited = FEATURES[:-1]
    again = worker(tmp_path, edited, **models)
    with caplog.at_level(logging.WARNING, logger="edgebayes.runtime"):
        again.acks.handle("eb/d1/reading", json.dumps({"seq": 10, "ts": 1010.0, "x": [0.5, 0.5], "y": "a"}).encode(),
                          11, 1, 0.0, 0)
    told = [r.getMessage() for r in caplog.records if "drops what it learned" in r.getMessage()]
    refused = [r.getMessage() for r in caplog.records if "is not served" in r.getMessage()]
    if len(kinds) == 1:
        assert len(told) == 1 and not refused and "d1" in again.devices
    else:
        assert not told and len(refused) == 1 and "d1" not in again.devices
