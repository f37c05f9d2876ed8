"""A device's clock stepping back and a broker dropping the middle of a backlog, through a
real Mosquitto: later readings are refused for a bounded while only (docs/protocol.md "Seq and
ts bounds"), not for a day (the clock step) or until the seq bound caught up (the gap)."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from edgebayes.runtime.config import load_config
from edgebayes.runtime.device import CLOCK_CONFIRM_S, JUMP_CONFIRM
from edgebayes.runtime.service import Runtime
from tests.broker import REQUIRE_ENV
from tests.runtime_client import Device, blobs, wait_for, write_config

ROOT = Path(__file__).resolve().parents[1]
#: the runtime's clock runs this many times faster under faketime
SPEED = 10


def test_readings_after_a_dropped_middle_are_refused_for_a_bounded_count(broker, tmp_path):
    """200,000 seqs missing (the broker dropped them): the first JUMP_CONFIRM - 1 readings after
    the gap are refused as seq_jump, the rest are served (before: every one for ~13 s)."""
    rt = Runtime(load_config(write_config(tmp_path / "rt.toml", broker)))
    rt.start()
    wait_for(rt.client.subscribed.is_set, what="runtime subscription")
    dev = Device(broker)
    try:
        data = blobs(100, seed=4)
        seqs = [*range(50), *range(200_000, 200_050)]
        for seq, (x, y) in zip(seqs, data):
            dev.publish("d1", "reading", {"seq": seq, "x": x, "y": y})
        wait_for(lambda: len(dev.got("prediction")) + rt.worker.reports.errors["seq_jump"] == 100, timeout_s=20,
                 what="100 readings served or refused")
        assert rt.worker.reports.errors["seq_jump"] == JUMP_CONFIRM - 1 == 2
        assert sorted(p["seq"] for p in dev.got("prediction")) == seqs[:50] + seqs[50 + JUMP_CONFIRM - 1:]
    finally:
        dev.close()
        rt.stop(timeout_s=5)


def test_a_device_whose_clock_steps_back_a_day_is_served_again_within_the_bound(broker, tmp_path):
    """A reboot without RTC: seq starts at 0 again, ts a day behind. The runtime runs under
    faketime at SPEED x, so CLOCK_CONFIRM_S (30 s) of its time pass in a few real seconds; the
    device's ts follow the runtime's clock, less a day."""
    if shutil.which("faketime") is None:
        missing = "faketime is not installed (apt-get install -y faketime): clock-step test skipped"
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{missing}, but {REQUIRE_ENV}=1 requires it")
        pytest.skip(missing)
    cfg = write_config(tmp_path / "rt.toml", broker, checkpoint_dir=tmp_path / "ck")
    cfg.write_text(cfg.read_text().replace("interval_s = 0.3", "interval_s = 3600"))  # the journal only
    log = tmp_path / "rt.log"
    dev = Device(broker)
    t0 = time.time()
    proc = subprocess.Popen(["faketime", "-f", f"+0 x{SPEED}", sys.executable, "-m", "edgebayes", "run",
                             "--config", str(cfg), "--log-level", "INFO"],
                            cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)  # faketime runs the runtime as its child: killed as a group

    def runtime_now():  # faketime starts from the real time the process started
        return t0 + SPEED * (time.time() - t0)

    try:
        wait_for(lambda: any(t.endswith("/status") and p == b"online" for t, p, _ in list(dev.raw)),
                 timeout_s=20, what="the runtime online")
        data = blobs(140, seed=5)
        for seq, (x, y) in enumerate(data[:100]):
            dev.publish("d1", "reading", {"seq": seq, "ts": runtime_now(), "x": x, "y": y})
        wait_for(lambda: len(dev.got("prediction")) == 100, timeout_s=20, what="100 predictions")
        n_before = 100
        for seq, (x, y) in enumerate(data[100:]):  # rebooted: seq from 0, the clock a day behind
            dev.publish("d1", "reading", {"seq": seq, "ts": runtime_now() - 86_400, "x": x, "y": y})
            time.sleep(0.2)  # 2 s of the runtime's time: one reading every 2 s
        wait_for(lambda: len(dev.got("prediction")) + len(dev.got("error")) >= 140, timeout_s=20,
                 what="the 40 readings after the step served or refused")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # what it learned is in the journal, acknowledged
        proc.wait(15)
    refused = [e["seq"] for e in dev.got("error")]
    assert {e["kind"] for e in dev.got("error")} == {"duplicate"}
    assert refused == list(range(len(refused)))  # the first ones after the step, then none
    # CLOCK_CONFIRM_S of readings every 2 s (+- one for the real-time pacing), out of 40
    assert CLOCK_CONFIRM_S / 2 - 1 <= len(refused) <= CLOCK_CONFIRM_S / 2 + 1, refused
    print("refused after the clock step:", len(refused), "of 40")
    served = [p["seq"] for p in dev.got("prediction")][n_before:]
    assert served == list(range(len(refused), 40))
    assert "restarted its seq at" in log.read_text()
    # the replay after the kill, in a burst and on the real clock, learns what was learned live
    rt = Runtime(load_config(cfg))
    rt.start()
    try:
        d1 = rt.worker.devices["d1"]
        assert (d1.slots[0].n_labels, d1.last_seq, d1.n_reboots) == (100 + len(served), 39, 1)
    finally:
        rt.stop(timeout_s=5)
