"""``edgebayes run`` as a real process: SIGKILL then restart resumes from the checkpoint;
SIGTERM drains, checkpoints, leaves ``offline`` retained and exits 0."""

import logging
import os
import signal
import subprocess
import sys
from pathlib import Path

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion

from edgebayes.base import learner_from_state
from edgebayes.naive_bayes import GaussianNB
from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.journal import Journal
from tests.runtime_client import FEATURES, Device, blobs, wait_for, write_config

ROOT = Path(__file__).resolve().parents[1]


def _run(config: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(config), "--log-level", "INFO"],
                            cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT)


def _checkpoint(path: Path) -> dict | None:
    try:
        return CheckpointStore(path.parent, FEATURES).read(path.name.removesuffix(".ckpt"))
    except (OSError, ValueError):
        return None


def _retained_status(broker) -> bytes:
    got = []
    c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="status-reader")
    c.on_message = lambda cl, u, msg: got.append(msg.payload)
    c.connect(broker.host, broker.port)
    c.subscribe("eb/runtime/rt-test/status", qos=1)
    c.loop_start()
    wait_for(lambda: got, what="the retained status")
    c.loop_stop()
    c.disconnect()
    return got[0]


def _wait_online(dev, n_before=0):
    wait_for(lambda: sum(1 for t, p, _ in list(dev.raw) if t.endswith("/status") and p == b"online") > n_before,
             timeout_s=15, what="the runtime online")


def test_sigkill_then_restart_resumes_from_the_last_checkpoint(broker, tmp_path):
    ck = tmp_path / "ck"
    cfg = write_config(tmp_path / "rt.toml", broker, checkpoint_dir=ck)
    log = tmp_path / "rt.log"
    dev = Device(broker)
    proc = _run(cfg, log)
    try:
        _wait_online(dev)
        data = blobs(80, seed=5)
        for i, (x, y) in enumerate(data[:50]):
            dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
        wait_for(lambda: len(dev.predictions()) == 50, what="50 predictions")
        wait_for(lambda: (_checkpoint(ck / "d1.ckpt") or {}).get("last_seq") == 49, what="a checkpoint at seq 49")
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(10) == -signal.SIGKILL
        saved = _checkpoint(ck / "d1.ckpt")
        proc = _run(cfg, log)
        _wait_online(dev, 1)
        dev.publish("d1", "reading", {"seq": 49, "x": data[49][0], "y": data[49][1]})  # a replay
        for i, (x, y) in enumerate(data[50:], start=50):
            dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
        wait_for(lambda: len(dev.predictions()) == 80, what="80 predictions")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    off = GaussianNB()
    for x, y in data[:50]:
        off.learn_one(x, y)
    assert learner_from_state(saved["models"][0]["learner"]).state() == off.state()
    preds = dev.predictions()
    for i, (x, y) in enumerate(data[50:], start=50):
        assert preds[i]["proba"] == off.predict_proba_one(x), i  # the restored model, not a fresh one
        off.learn_one(x, y)
    assert [e["kind"] for e in dev.got("error")] == ["duplicate"]
    assert "restored from its checkpoint (last seq 49)" in log.read_text()


def test_sigterm_drains_checkpoints_and_leaves_offline_retained(broker, tmp_path):
    ck = tmp_path / "ck"
    cfg = write_config(tmp_path / "rt.toml", broker, checkpoint_dir=ck)
    cfg.write_text(cfg.read_text().replace("interval_s = 0.3", "interval_s = 3600"))
    log = tmp_path / "rt.log"
    dev = Device(broker)
    proc = _run(cfg, log)
    _wait_online(dev)
    assert _retained_status(broker) == b"online"
    data = blobs(40, seed=6)
    for i, (x, y) in enumerate(data):
        dev.publish("d1", "reading", {"seq": i, "x": x, "y": y if i < 30 else None})
    wait_for(lambda: len(dev.predictions()) == 40, what="40 predictions")
    assert not (ck / "d1.ckpt").exists()  # the interval has not come yet
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    saved = _checkpoint(ck / "d1.ckpt")
    off = GaussianNB()
    for x, y in data[:30]:
        off.learn_one(x, y)
    assert saved["last_seq"] == 39 and learner_from_state(saved["models"][0]["learner"]).state() == off.state()
    assert [item[0] for item in saved["pending"]["items"]] == list(range(30, 40))
    assert _retained_status(broker) == b"offline"
    assert sorted(os.listdir(ck)) == ["d1.ckpt", "journal"]
    assert list(Journal(ck, FEATURES, 65536).recover()[1]) == []  # every message is in the checkpoint
    assert "stopped" in log.read_text()


def test_a_config_without_a_checkpoint_table_keeps_its_learning_across_a_restart(broker, tmp_path):
    cfg = write_config(tmp_path / "rt.toml", broker)  # no [checkpoint]: the default state folder
    where = Path(os.environ["XDG_STATE_HOME"]) / "edgebayes" / "rt-test"
    log = tmp_path / "rt.log"
    dev = Device(broker)
    proc = _run(cfg, log)
    data = blobs(31, seed=8)
    try:
        _wait_online(dev)
        for i, (x, y) in enumerate(data[:30]):
            dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
        wait_for(lambda: len(dev.predictions()) == 30, what="30 predictions")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
        assert f"stopped; 1 of 1 devices saved in {where}" in log.read_text()
        proc = _run(cfg, log)
        _wait_online(dev, 1)
        n_before = len(dev.raw)
        dev.publish("d1", "reading", {"seq": 30, "x": data[30][0]})
        try:
            wait_for(lambda: len(dev.predictions()) == 31, what="the 31st prediction")
        except AssertionError as exc:  # what the device got after the restart, and the runtime's log
            got = [(t, bytes(pl[:120])) for t, pl, _ in list(dev.raw)[n_before:]]
            raise AssertionError(f"{exc}; the device got {got}; log: {log.read_text()[-1500:]}") from None
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    off = GaussianNB()
    for x, y in data[:30]:
        off.learn_one(x, y)
    assert dev.predictions()[30]["proba"] == off.predict_proba_one(data[30][0])
    text = log.read_text()
    assert f"checkpoints and journal in {where}: learning is kept across restarts; devices saved there: 0 " in text
    assert "devices saved there: 1 (d1) (each restored at its first message)" in text
    assert "restored from its checkpoint (last seq 29)" in text


def test_checkpoints_turned_off_are_warned_of_at_start_and_at_stop(broker, tmp_path):
    cfg = write_config(tmp_path / "rt.toml", broker, extra="[checkpoint]\nenabled = false\n")
    log = tmp_path / "rt.log"
    dev = Device(broker)
    proc = _run(cfg, log)
    _wait_online(dev)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    warnings = [line.split(" WARNING ", 1)[1] for line in log.read_text().splitlines() if " WARNING " in line]
    assert warnings == [
        "edgebayes.runtime: checkpoints are off ([checkpoint] enabled = false): everything learned is lost when "
        "the runtime stops; remove that line to keep learning across restarts",
        "edgebayes.runtime: stopped; checkpoints are off: nothing learned was saved"]
    assert not (Path(os.environ["XDG_STATE_HOME"]) / "edgebayes").exists()


def test_a_new_client_id_beside_a_default_folder_with_checkpoints_is_warned_of(broker, tmp_path):
    log = tmp_path / "rt.log"
    dev = Device(broker)
    proc = _run(write_config(tmp_path / "a.toml", broker, client_id="rt-test"), log)
    (x, y), = blobs(1, seed=3)
    _wait_online(dev)
    dev.publish("d1", "reading", {"seq": 0, "x": x, "y": y})
    wait_for(lambda: len(dev.predictions()) == 1, what="a prediction")
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0
    proc = _run(write_config(tmp_path / "b.toml", broker, client_id="rt-renamed"), log)
    try:
        wait_for(lambda: "no checkpoint in" in log.read_text(), what="the warning")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(15)
    state = Path(os.environ["XDG_STATE_HOME"]) / "edgebayes"
    assert (f"WARNING edgebayes.runtime: no checkpoint in {state / 'rt-renamed'}, the default folder for client_id "
            f"'rt-renamed', but {state / 'rt-test'} holds some (another [broker] client_id?): set [checkpoint] "
            f'dir = "{state / "rt-test"}" to go on learning from them') in log.read_text()


def test_a_runtime_stopped_by_its_memory_guard_says_why_and_exits_1(broker, tmp_path):
    cfg = write_config(tmp_path / "rt.toml", broker, checkpoint_dir=tmp_path / "ck",
                       extra='[memory]\nrss_limit_mb = 1\n[output]\nformat = "json"\n')
    log = tmp_path / "rt.log"
    dev = Device(broker)
    proc = _run(cfg, log)
    try:
        _wait_online(dev)
        dev.publish("d1", "reading", {"seq": 0, "x": [0.0, 1.0, 2.0], "y": "a"})
        assert proc.wait(30) == 1
    finally:
        if proc.poll() is None:
            proc.kill()
        dev.close()
    last = [line for line in log.read_text().splitlines() if " CRITICAL " in line][-1]
    assert last.endswith("RSS reached [memory] rss_limit_mb = 1 after shedding; every device checkpointed; "
                         "exiting"), last
    assert "the worker thread died" not in log.read_text()
    assert [a["action"] for a in dev.got("alert")][-1] == "exit"


def test_a_checkpoint_folder_that_cannot_be_made_is_not_said_to_keep_learning(tmp_path, caplog):
    """The start log said ERROR "cannot create it", then INFO "learning is kept across restarts"."""
    from edgebayes.runtime.cli import _say_where
    from edgebayes.runtime.config import parse_config
    (tmp_path / "a-file").write_text("")
    where = tmp_path / "a-file" / "ckpt"
    config = parse_config({"schema": {"features": list(FEATURES)}, "checkpoint": {"dir": str(where)},
                           "models": [{"name": "nb", "kind": "gaussian_nb"}]})
    with caplog.at_level(logging.INFO, logger="edgebayes"):
        _say_where(config, CheckpointStore(where, FEATURES))
    said = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in said] == ["ERROR"] and "cannot create it" in said[0][1]


def test_the_objects_made_at_start_are_left_out_of_later_garbage_collections(broker, tmp_path):
    """A full collection of a serving runtime walks what serving made, not the modules and
    config made at start (``gc.freeze``), so its pause of the readings in flight stays short."""
    cfg = write_config(tmp_path / "rt.toml", broker, checkpoint_dir=tmp_path / "ck")
    report = tmp_path / "gc.txt"
    wrapper = ("import atexit, gc, sys\n"
               f"atexit.register(lambda: open({str(report)!r}, 'w').write(f'{{gc.get_freeze_count()}} "
               "{len(gc.get_objects())}'))\n"
               "from edgebayes.cli import main\n"
               "sys.exit(main(sys.argv[1:]))\n")
    dev = Device(broker)
    with (tmp_path / "rt.log").open("ab") as log:
        proc = subprocess.Popen([sys.executable, "-c", wrapper, "run", "--config", str(cfg)], cwd=ROOT,
                                stdout=log, stderr=subprocess.STDOUT)
    try:
        _wait_online(dev)
        for i, (x, y) in enumerate(blobs(20, seed=3)):
            dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})
        wait_for(lambda: len(dev.predictions()) == 20, what="20 predictions")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    frozen, tracked = map(int, report.read_text().split())
    assert frozen > 10_000  # the interpreter, numpy, paho and edgebayes's modules at least
    assert tracked < frozen  # what serving made since is the smaller part
