"""Crash durability with real processes: readings published at QoS 1 while the runtime is
SIGKILLed again and again (between checkpoints, half a second apart, each kill lands after
readings were acknowledged) and the broker is killed -9 once. At the end every reading the broker acknowledged
to the publisher has been learned exactly once by the model that resumes.

The publisher pauses from before the broker's kill until the broker is back: Mosquitto
acknowledges a message before its next save (a kill -9 in between loses it;
``bench/chaos.py`` measures it). It resumes before the runtime reconnects, so the broker can
deliver new readings before those it kept for the runtime: the runtime takes those late
readings once (its reorder window).
The runtime is killed with its unacknowledged messages in flight, as it is at every kill."""

import contextlib
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgebayes.runtime.checkpoint import CheckpointStore
from tests.broker import Broker
from tests.runtime_client import FEATURES, Device, Publisher, wait_for, write_config

ROOT = Path(__file__).resolve().parents[1]
#: keep every message the broker acknowledged across its kill -9: save after each change
PERSIST_EVERY_CHANGE = "autosave_interval 1\nautosave_on_changes true\n"


def _run(config: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(config), "--log-level", "INFO"],
                            cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT)


def n_learned(ck: Path) -> int | None:
    """Readings the checkpointed GaussianNB of device d1 has learned (None: no checkpoint yet)."""
    try:
        state = CheckpointStore(ck, FEATURES).read("d1")
    except (OSError, ValueError):
        return None
    if state is None:
        return None
    return int(state["models"][0]["learner"]["n"])


@pytest.mark.slow
def test_no_reading_acknowledged_by_the_broker_is_lost_or_learned_twice(tmp_path):
    broker = Broker(tmp_path / "broker", extra_config=PERSIST_EVERY_CHANGE).start()
    ck = tmp_path / "ck"
    cfg = write_config(tmp_path / "rt.toml", broker, checkpoint_dir=ck)
    cfg.write_text(cfg.read_text().replace("interval_s = 0.3", "interval_s = 0.5\nsync_interval_s = 0.05"))
    log = tmp_path / "rt.log"
    proc = _run(cfg, log)
    n = 2000
    rng = random.Random(7)
    try:
        watch = Device(broker, client_id="chaos-watch")  # the runtime's session exists once it is online
        wait_for(lambda: any(t.endswith("/status") and p == b"online" for t, p, _ in list(watch.raw)),
                 timeout_s=15, what="the runtime online")
        watch.close()
        pub = Publisher(broker, n, per_s=100.0)  # the runtime keeps up: its acknowledgements reach the broker
        pub.thread.start()
        kills = sorted(rng.uniform(1.0, 19.0) for _ in range(6))
        broker_kill = 10.0
        t0 = time.monotonic()
        for at in sorted([*kills, broker_kill]):
            time.sleep(max(0.0, t0 + at - time.monotonic()))
            if at == broker_kill:
                pub.go.clear()
                wait_for(lambda: len(pub.acked_mids) == pub.n_sent, what="the publisher's messages acknowledged")
                time.sleep(1.5)  # Mosquitto's save after the last change
                broker.proc.kill()  # kill -9: no chance to save its state
                broker.proc.wait()
                time.sleep(0.3)
                n_connects = log.read_text().count("connected to")
                broker.start()
                pub.go.set()  # new readings may reach the runtime before those the broker kept
                wait_for(lambda: log.read_text().count("connected to") > n_connects, timeout_s=15,
                         what="the runtime reconnected")
            else:
                proc.kill()
                assert proc.wait(10) == -signal.SIGKILL
                proc = _run(cfg, log)
        pub.thread.join(30)
        wait_for(lambda: len(pub.acked()) == n, timeout_s=30, what=f"the broker's acknowledgement of all {n} readings")
        with contextlib.suppress(AssertionError):  # asserted below, with the counts
            wait_for(lambda: (n_learned(ck) or 0) >= n, timeout_s=20, what=f"{n} readings learned")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(15) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
        broker.stop()
    assert n_learned(ck) == len(pub.acked()) == n  # none lost, none learned twice
    assert "messages replayed" in log.read_text()  # kills came between a journal fsync and a checkpoint
