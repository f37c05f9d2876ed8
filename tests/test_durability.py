"""Disk faults and odd input against the no-loss guarantee, with real processes: a real
Mosquitto, the runtime killed by SIGKILL, real faults underneath it (an oversize message, a
flipped byte, the checkpoint folder deleted, a device whose checkpoint cannot be written, a
full tmpfs, a [[sources]] reading). Each test counts what the checkpointed models learned
after the restart against what was published and acknowledged."""

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.journal import Journal
from tests.broker import Broker
from tests.runtime_client import FEATURES, Device, blobs, wait_for, write_config

ROOT = Path(__file__).resolve().parents[1]
#: the runtime's group fsync interval in these tests; the test waits well past it before a kill
SYNC_S = 0.05


#: runtimes started by the running test, killed at its end whatever happened
_PROCS: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _kill_runtimes():
    yield
    while _PROCS:
        proc = _PROCS.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _run(config: Path, log: Path) -> subprocess.Popen:
    n = log.read_text().count("connected to") if log.exists() else 0
    proc = subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(config)],
                            cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT)
    _PROCS.append(proc)
    wait_for(lambda: log.read_text().count("connected to") > n or proc.poll() is not None, timeout_s=20,
             what="the runtime connected")
    return proc


V311 = 'protocol = "mqttv311"\n'  # a [broker] line


def _config(tmp_path, broker, ck, interval_s: float, extra: str = "", broker_extra: str = "") -> Path:
    cfg = write_config(tmp_path / f"rt-{interval_s}.toml", broker, checkpoint_dir=ck, extra=extra)
    cfg.write_text(cfg.read_text().replace("interval_s = 0.3", f"interval_s = {interval_s}\nsync_interval_s = {SYNC_S}")
                   .replace("[broker]\n", "[broker]\n" + broker_extra))
    return cfg


def n_learned(ck: Path, device: str) -> int | None:
    """Readings the checkpointed naive Bayes of ``device`` has learned (None: no checkpoint)."""
    try:
        state = CheckpointStore(ck, FEATURES).read(device)
    except (OSError, ValueError):
        return None
    return None if state is None else int(state["models"][0]["learner"]["n"])


def publish(dev: Device, device: str, data, first: int = 0, per_s: float = 0.0) -> None:
    for seq, (x, y) in enumerate(data, start=first):
        dev.publish(device, "reading", {"seq": seq, "ts": 1.7e9 + seq, "x": x, "y": y})
        if per_s:
            time.sleep(1.0 / per_s)


def predicted(dev: Device, device: str, n: int) -> None:
    wait_for(lambda: sum(1 for t, _, _ in list(dev.raw) if t == f"eb/{device}/prediction") >= n, timeout_s=20,
             what=f"{n} predictions of {device}")


def kill_and_count(proc, tmp_path, broker, ck, log, expected: dict[str, int], before_restart=None,
                   extra: str = "", broker_extra: str = "") -> dict:
    """SIGKILL the runtime, restart it (checkpoints every 0.3 s), wait for ``expected``
    (device -> readings learned), stop it with SIGTERM; what each device's checkpoint holds."""
    time.sleep(20 * SYNC_S)  # every reading processed is fsynced and acknowledged by now
    proc.kill()
    assert proc.wait(10) == -signal.SIGKILL
    if before_restart is not None:
        before_restart()
    proc = _run(_config(tmp_path, broker, ck, 0.3, extra, broker_extra), log)
    try:
        with contextlib.suppress(AssertionError):  # asserted by the caller, with the counts
            wait_for(lambda: all(n_learned(ck, d) == n for d, n in expected.items()), timeout_s=15,
                     what="the readings learned after the restart")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    return {d: n_learned(ck, d) for d in expected}


@pytest.fixture
def broker(tmp_path):
    b = Broker(tmp_path / "broker").start()
    yield b
    b.stop()


def test_an_oversize_reading_between_others_costs_no_acknowledged_reading(tmp_path, broker):
    """A frame longer than the reader accepts used to be journaled: at the restart the reader
    took it for a torn tail and dropped every entry after it (50 of 100 here)."""
    ck, log = tmp_path / "ck", tmp_path / "rt.log"
    # MQTT 3.1.1: no Maximum Packet Size in CONNECT, so the broker delivers the oversize reading
    proc = _run(_config(tmp_path, broker, ck, 3600, broker_extra=V311), log)
    dev = Device(broker)
    data = blobs(100, seed=5)
    publish(dev, "d2", data[:50])
    dev.publish("d1", "reading", {"seq": 0, "x": [0.0, 0.0, 0.0], "pad": "z" * 140_000})
    publish(dev, "d2", data[50:], first=50)
    predicted(dev, "d2", 100)
    wait_for(lambda: any(e["kind"] == "oversize" for e in dev.got("error")), what="the oversize refusal")
    learned = kill_and_count(proc, tmp_path, broker, ck, log, {"d2": 100}, broker_extra=V311)
    assert learned == {"d2": 100}  # none lost, none learned twice
    assert "messages replayed" in log.read_text()


def test_a_flipped_byte_in_the_middle_of_the_journal_costs_only_its_entry(tmp_path, broker):
    ck, log = tmp_path / "ck", tmp_path / "rt.log"
    proc = _run(_config(tmp_path, broker, ck, 3600), log)
    dev = Device(broker)
    publish(dev, "d1", blobs(100, seed=6))
    predicted(dev, "d1", 100)

    def flip():
        path = ck / "journal"
        data = bytearray(path.read_bytes())
        data[len(data) // 2] ^= 0x01
        path.write_bytes(bytes(data))

    learned = kill_and_count(proc, tmp_path, broker, ck, log, {"d1": 99}, before_restart=flip)
    assert learned == {"d1": 99}  # the entry with the flipped byte, and only it
    text = log.read_text()
    assert "unreadable bytes at byte" in text and "the entries after them are replayed" in text


def test_the_checkpoint_folder_deleted_while_running_is_made_again(tmp_path, broker):
    """The runtime used to go on acknowledging into the unlinked journal: every reading since
    the last checkpoint lost at the next crash."""
    ck, log = tmp_path / "ck", tmp_path / "rt.log"
    dev = Device(broker)
    proc = _run(_config(tmp_path, broker, ck, 3600), log)
    data = blobs(100, seed=7)
    publish(dev, "d1", data[:50])
    predicted(dev, "d1", 50)
    time.sleep(20 * SYNC_S)
    shutil.rmtree(ck)
    publish(dev, "d1", data[50:], first=50)
    predicted(dev, "d1", 100)
    wait_for((ck / "journal").exists, what="the journal made again")
    learned = kill_and_count(proc, tmp_path, broker, ck, log, {"d1": 100})
    assert learned == {"d1": 100}
    alerts = [a for a in dev.got("alert") if a.get("alert") == "durability"]
    assert [a["durable"] for a in alerts] == [False, True]
    assert log.read_text().count("ERROR edgebayes.runtime.durability: not durable") == 1


def test_a_device_whose_checkpoint_fails_does_not_stop_the_journal_starting_over(tmp_path, broker):
    """One device whose checkpoint cannot be written used to stop every rotation: the journal
    grew with every device's messages. Now it holds that device's entries only."""
    ck, log = tmp_path / "ck", tmp_path / "rt.log"
    ck.mkdir()
    (ck / "bad.ckpt.tmp").mkdir()  # open(..., "wb") of the temporary file fails: IsADirectoryError
    proc = _run(_config(tmp_path, broker, ck, 0.3), log)
    dev = Device(broker)
    publish(dev, "bad", blobs(20, seed=8))
    publish(dev, "good", blobs(300, seed=9), per_s=200)
    predicted(dev, "good", 300)
    journal = Journal(ck, FEATURES, 65536)

    def topics():
        return [t for _, t, _, _ in journal.recover()[1]]

    # good's last 4 entries may still be in the journal's buffer when their predictions are out
    wait_for(lambda: topics() == ["eb/bad/reading"] * 20 and n_learned(ck, "good") == 300, timeout_s=10,
             what="good checkpointed and a journal of bad's 20 entries only")
    learned = kill_and_count(proc, tmp_path, broker, ck, log, {"bad": 20, "good": 300},
                             before_restart=(ck / "bad.ckpt.tmp").rmdir)
    assert learned == {"bad": 20, "good": 300}
    assert log.read_text().count("checkpoint of device bad failed") == 1  # not one per interval


needs_root = pytest.mark.skipif(os.geteuid() != 0 or shutil.which("mount") is None, reason="mounting a tmpfs needs root")


@contextlib.contextmanager
def tmpfs(path: Path, options: str):
    """A tmpfs mounted on the new folder ``path`` (``options``: mount's ``-o``), unmounted after."""
    path.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def killed(proc) -> None:
    """``proc`` killed, if it still runs (a failed test's runtime)."""
    if proc is not None and proc.poll() is None:
        proc.kill()
        proc.wait()


@needs_root
def test_a_full_disk_at_start_serves_without_durability_and_says_so(tmp_path, broker):
    """The runtime used to exit with a traceback (a crash loop under systemd)."""
    ck, log, proc = tmp_path / "ck", tmp_path / "rt.log", None
    with tmpfs(ck, "size=64k"):
        try:
            fill(ck / "filler")
            cfg = _config(tmp_path, broker, ck, 0.3, extra="[output]\nmetrics_interval_s = 0.2\n")
            dev = Device(broker)  # subscribed before the runtime starts: the first alert goes out at its connect
            proc = _run(cfg, log)
            publish(dev, "d1", blobs(10, seed=10))
            predicted(dev, "d1", 10)
            wait_for(lambda: any(m.get("durable") is False for m in dev.got("metrics")), what="metrics durable false")
            assert proc.poll() is None
            metrics = [m for m in dev.got("metrics") if m["n_readings"] == 10][-1]
            assert metrics["durable"] is False and metrics["n_journal_errors"] >= 1
            (ck / "filler").unlink()
            wait_for(lambda: [a["durable"] for a in dev.got("alert") if a.get("alert") == "durability"]
                     == [False, True], what="the durability alerts")
            wait_for(lambda: n_learned(ck, "d1") == 10, what="d1 checkpointed once the disk has room")
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(15) == 0
        finally:
            killed(proc)
    text = log.read_text()
    assert "Traceback" not in text and text.count("not durable: starting the journal") == 1
    assert "durable again" in text


@needs_root
def test_a_checkpoint_folder_that_cannot_be_made_at_start_serves_without_durability(tmp_path, broker):
    """The runtime used to exit 2 (a restart loop under systemd) when the folder could not be made."""
    ro, log, proc = tmp_path / "ro", tmp_path / "rt.log", None
    with tmpfs(ro, "ro,size=256k"):
        try:
            ck = ro / "ck"
            cfg = _config(tmp_path, broker, ck, 0.3, extra="[output]\nmetrics_interval_s = 0.2\n")
            dev = Device(broker)
            proc = _run(cfg, log)
            publish(dev, "d1", blobs(10, seed=12))
            predicted(dev, "d1", 10)
            wait_for(lambda: any(m.get("durable") is False for m in dev.got("metrics")), what="metrics durable false")
            subprocess.run(["mount", "-o", "remount,rw", str(ro)], check=True)
            wait_for(lambda: n_learned(ck, "d1") == 10, what="d1 checkpointed once the folder can be made")
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(15) == 0
        finally:
            killed(proc)
    text = log.read_text()
    assert "Traceback" not in text and "cannot create it (Read-only file system)" in text


def test_a_tasmota_reading_acknowledged_before_a_kill_is_learned_after_the_restart(tmp_path, broker):
    """[[sources]] messages used to bypass the journal: acknowledged, then lost by a crash."""
    ck, log = tmp_path / "ck", tmp_path / "rt.log"
    source = ('[[sources]]\nkind = "tasmota"\ntopic = "tele/+/SENSOR"\n'
              'features = { f0 = "SIM.f0", f1 = "SIM.f1", f2 = "SIM.f2" }\nlabel = "SIM.y"\n')
    cfg = _config(tmp_path, broker, ck, 3600, extra=source)
    proc = _run(cfg, log)
    dev = Device(broker)
    for i, (x, y) in enumerate(blobs(40, seed=12)):
        doc = {"Time": f"2026-01-01T00:00:{i:02d}", "SIM": {"f0": x[0], "f1": x[1], "f2": x[2], "y": y}}
        dev.client.publish("tele/t1/SENSOR", json.dumps(doc), qos=1)
        time.sleep(0.01)
    predicted(dev, "t1", 40)
    learned = kill_and_count(proc, tmp_path, broker, ck, log, {"t1": 40}, extra=source)
    assert learned == {"t1": 40}


@needs_root
def test_a_disk_that_fills_while_running_is_told_once_and_costs_no_acknowledged_reading(tmp_path, broker):
    """Each failed append used to log a traceback, and nothing in metrics or alerts told it."""
    ck, log = tmp_path / "ck", tmp_path / "rt.log"
    with tmpfs(ck, "size=256k"):
        dev = Device(broker)
        proc = _run(_config(tmp_path, broker, ck, 0.3, extra="[output]\nmetrics_interval_s = 0.2\n"), log)
        data = blobs(300, seed=14)
        publish(dev, "d1", data[:20])
        wait_for(lambda: n_learned(ck, "d1") == 20, what="d1 checkpointed")
        fill(ck / "filler")
        publish(dev, "d1", data[20:], first=20)
        predicted(dev, "d1", 300)
        wait_for(lambda: any(m.get("durable") is False for m in dev.got("metrics")), what="metrics durable false")
        (ck / "filler").unlink()
        wait_for(lambda: [a["durable"] for a in dev.got("alert") if a.get("alert") == "durability"] == [False, True],
                 what="the durability alerts")
        learned = kill_and_count(proc, tmp_path, broker, ck, log, {"d1": 300})
    assert learned == {"d1": 300}
    text = log.read_text()
    assert "Traceback" not in text and text.count(" ERROR ") == 1, text


def fill(path: Path) -> None:
    """Write ``path`` until its file system has not one byte left."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    for chunk in (4096, 1):
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"\0" * chunk)
    os.close(fd)


@pytest.mark.parametrize("interval_s", [3600, 0.3], ids=["from-journal", "from-checkpoint"])
def test_labels_that_came_before_their_readings_are_learned_across_a_kill(tmp_path, broker, interval_s):
    """A label ahead of its reading (two topics; a failover resends the reading later) is
    held for it, in the journal and in the checkpoint: readings sent while the runtime is
    down, after the kill, are learned with the labels it had acknowledged."""
    ck, log = tmp_path / "ck", tmp_path / "rt.log"
    proc = _run(_config(tmp_path, broker, ck, interval_s), log)
    dev = Device(broker)
    data = blobs(14, seed=21)
    publish(dev, "d1", data[:10])
    predicted(dev, "d1", 10)
    for seq in (10, 11, 12, 13):
        dev.publish("d1", "label", {"seq": seq, "y": data[seq][1]})
    time.sleep(1.0)  # acknowledged, and with interval_s 0.3 in a checkpoint
    held = [{"seq": seq, "ts": 1.7e9 + seq, "x": data[seq][0]} for seq in (10, 11, 12, 13)]
    learned = kill_and_count(proc, tmp_path, broker, ck, log, {"d1": 14},
                             before_restart=lambda: [dev.publish("d1", "reading", r) for r in held])
    assert learned == {"d1": 14}
    assert "unknown_seq" not in log.read_text()
