"""Disk-fault and odd-input attacks on the no-loss guarantee, with figures (issue 29, findings 1,
6 and 8): a real Mosquitto, the runtime of ``--tree`` (default: this checkout) killed by
SIGKILL, then restarted and counted.

``python -m bench.durability [--tree DIR] [ATTACK ...]``, attacks:

- ``oversize``: 50 readings of d2, one 140 kB reading of d1, 50 more of d2; SIGKILL; restart.
- ``deleted``: the checkpoint folder deleted, then 300 readings; SIGKILL; restart.
- ``tasmota``: 100 Tasmota SENSOR messages through ``[[sources]]``; SIGKILL; restart.
- ``failing``: bad.ckpt.tmp a folder (bad's checkpoint fails), 20 readings of bad, then good
  at 20/s for 30 s: the journal's size every 5 s.
- ``replay``: the peak RSS of replaying a journal of 200,000 readings at start.
- ``fulldisk``: a start on a full 64 KiB tmpfs (root only): alive after 5 s, tracebacks.
- ``fills``: a 256 KiB tmpfs filled while running, 280 readings, 3 s, room again (root only):
  tracebacks and ERROR lines logged, alerts, then SIGKILL and restart as above.

Each kill attack prints sent, acknowledged (sent less what the broker delivered again to the
restarted runtime: its ``n_readings`` less ``n_replayed``), learned after the restart (the
checkpoint at SIGTERM), lost, learned twice, the runtime's RSS before the kill, and the
seconds from the restart until the count was reached (None: never within 20 s).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from edgebayes.runtime.journal import Journal
from tests.broker import Broker
from tests.runtime_client import FEATURES, Device, blobs, wait_for, write_config
from tests.test_durability import SYNC_S, fill, n_learned, predicted, publish

TASMOTA = ('[[sources]]\nkind = "tasmota"\ntopic = "tele/+/SENSOR"\n'
           'features = { f0 = "SIM.f0", f1 = "SIM.f1", f2 = "SIM.f2" }\nlabel = "SIM.y"\n')


class Run:
    def __init__(self, tree: Path, work: Path, broker: Broker, dev: Device, extra: str = ""):
        self.tree, self.work, self.broker, self.dev, self.extra = tree, work, broker, dev, extra
        self.ck, self.log = work / "ck", work / "rt.log"
        self.proc: subprocess.Popen | None = None

    def start(self, interval_s: float) -> None:
        cfg = write_config(self.work / "rt.toml", self.broker, checkpoint_dir=self.ck,
                           extra="[output]\nmetrics_interval_s = 0.2\n" + self.extra)
        cfg.write_text(cfg.read_text().replace("interval_s = 0.3", f"interval_s = {interval_s}\n"
                                               f"sync_interval_s = {SYNC_S}"))
        n = self.log.read_text().count("connected to") if self.log.exists() else 0
        env = {**os.environ, "PYTHONPATH": str(self.tree)}
        self.proc = subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(cfg)], cwd=self.tree,
                                     env=env, stdout=self.log.open("ab"), stderr=subprocess.STDOUT)
        wait_for(lambda: self.log.read_text().count("connected to") > n or self.proc.poll() is not None,
                 timeout_s=20, what="the runtime connected")

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def kill_and_count(self, sent: dict[str, int]) -> dict:
        time.sleep(1.0)  # everything processed is acknowledged by now (sync every 0.05 s)
        rss = self.rss_mb()
        self.proc.kill()
        self.proc.wait()
        t0 = time.monotonic()
        self.start(0.3)
        recovery = None
        with contextlib.suppress(AssertionError):
            wait_for(lambda: all((n_learned(self.ck, d) or 0) >= n for d, n in sent.items()), timeout_s=20)
            recovery = round(time.monotonic() - t0, 2)
        n = len(self.dev.got("metrics"))
        wait_for(lambda: len(self.dev.got("metrics")) > n + 1, what="metrics of the restarted runtime")
        last = self.dev.got("metrics")[-1]
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(15)
        learned = sum(n_learned(self.ck, d) or 0 for d in sent)
        total = sum(sent.values())
        # what the broker sent again after the kill was not acknowledged; the rest was
        redelivered = last["n_readings"] - last["n_replayed"]
        return {"sent": total, "acknowledged": total - redelivered, "learned": learned, "lost": max(0, total - learned),
                "learned_twice": max(0, learned - total), "rss_mb": round(rss, 1), "recovery_s": recovery}


def oversize(run: Run, dev: Device) -> dict:
    run.start(3600)
    data = blobs(100, seed=5)
    publish(dev, "d2", data[:50])
    dev.publish("d1", "reading", {"seq": 0, "x": [0.0, 0.0, 0.0], "pad": "z" * 140_000})
    publish(dev, "d2", data[50:], first=50)
    predicted(dev, "d2", 100)
    return run.kill_and_count({"d2": 100})


def deleted(run: Run, dev: Device) -> dict:
    run.start(3600)
    shutil.rmtree(run.ck)
    publish(dev, "d1", blobs(300, seed=7))
    predicted(dev, "d1", 300)
    return run.kill_and_count({"d1": 300})


def tasmota(run: Run, dev: Device) -> dict:
    run.extra = TASMOTA
    run.start(3600)
    for i, (x, y) in enumerate(blobs(100, seed=12)):
        doc = {"Time": f"2026-01-01T00:{i // 60:02d}:{i % 60:02d}", "SIM": {"f0": x[0], "f1": x[1], "f2": x[2], "y": y}}
        dev.client.publish("tele/t1/SENSOR", json.dumps(doc), qos=1)
        time.sleep(0.01)
    predicted(dev, "t1", 100)
    return run.kill_and_count({"t1": 100})


def failing(run: Run, dev: Device) -> dict:
    run.ck.mkdir()
    (run.ck / "bad.ckpt.tmp").mkdir()
    run.start(1.0)
    publish(dev, "bad", blobs(20, seed=8))
    sizes, data, t0 = {}, blobs(600, seed=9), time.monotonic()
    for seq, (x, y) in enumerate(data):
        dev.publish("good", "reading", {"seq": seq, "ts": 1.7e9 + seq, "x": x, "y": y})
        if seq % 100 == 0:
            sizes[f"{seq // 20}s"] = (run.ck / "journal").stat().st_size
        time.sleep(max(0.0, t0 + (seq + 1) / 20 - time.monotonic()))
    sizes["30s"] = (run.ck / "journal").stat().st_size
    run.proc.send_signal(signal.SIGTERM)
    run.proc.wait(15)
    return {"journal_bytes": sizes}


def replay(run: Run, dev: Device) -> dict:
    run.ck.mkdir()
    j = Journal(run.ck, FEATURES, 65536)
    j.rotate()
    for seq, (x, y) in enumerate(blobs(200_000, seed=13)):
        j.append("eb/d1/reading", json.dumps({"seq": seq, "ts": 1.7e9 + seq, "x": x, "y": y}).encode())
    j.sync()
    j.close()
    cfg = write_config(run.work / "rt.toml", run.broker, checkpoint_dir=run.ck)
    # VmHWM, not ru_maxrss: Linux keeps ru_maxrss across exec (the forked copy of this process)
    code = ("import time; from edgebayes.runtime.config import load_config; "
            "from edgebayes.runtime.service import Runtime; "
            f"r = Runtime(load_config({str(cfg)!r})); t = time.monotonic(); r.worker.replay.recover(); "
            "hwm = open('/proc/self/status').read().split('VmHWM:')[1].split()[0]; "
            "print(int(hwm) / 1024, time.monotonic() - t, r.worker.replay.n_replayed)")
    out = subprocess.run([sys.executable, "-c", code], cwd=run.tree, env={**os.environ, "PYTHONPATH": str(run.tree)},
                         capture_output=True, text=True, check=True).stdout.split()
    return {"journal_mb": round(j.size / 2**20, 1), "peak_rss_mb": round(float(out[0]), 1),
            "replay_s": round(float(out[1]), 1), "n_replayed": int(out[2])}


def fulldisk(run: Run, dev: Device) -> dict:
    run.ck.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(run.ck)], check=True)
    try:
        fd = os.open(run.ck / "filler", os.O_WRONLY | os.O_CREAT)
        for chunk in (4096, 1):
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * chunk)
        os.close(fd)
        run.start(1.0)
        publish(dev, "d1", blobs(10, seed=10))
        time.sleep(5)
        alive = run.proc.poll() is None
        if alive:
            run.proc.send_signal(signal.SIGTERM)
        rc = run.proc.wait(15)
    finally:
        subprocess.run(["umount", str(run.ck)], check=False)
    text = run.log.read_text()
    return {"alive_after_5s": alive, "exit": rc, "tracebacks": text.count("Traceback"),
            "errors_logged": text.count(" ERROR "), "durability_alerts": [a["durable"] for a in dev.got("alert")]}


def fills(run: Run, dev: Device) -> dict:
    run.ck.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(run.ck)], check=True)
    try:
        run.start(1.0)
        data = blobs(300, seed=14)
        publish(dev, "d1", data[:20])
        wait_for(lambda: n_learned(run.ck, "d1") == 20, what="d1 checkpointed")
        fill(run.ck / "filler")
        publish(dev, "d1", data[20:], first=20, per_s=100)
        time.sleep(3)
        text = run.log.read_text()
        told = {"tracebacks": text.count("Traceback"), "errors_logged": text.count(" ERROR "),
                "alerts_while_full": [a["durable"] for a in dev.got("alert")]}
        (run.ck / "filler").unlink()
        return {**told, **run.kill_and_count({"d1": 300})}
    finally:
        subprocess.run(["umount", "-l", str(run.ck)], check=False)


ATTACKS = {f.__name__: f for f in (oversize, deleted, tasmota, failing, replay, fulldisk, fills)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tree", type=Path, default=ROOT, help="the source tree whose runtime runs")
    ap.add_argument("attacks", nargs="*", metavar="ATTACK", help=f"of {', '.join(ATTACKS)} (default: all)")
    args = ap.parse_args()
    if set(args.attacks) - set(ATTACKS):  # not choices=: argparse checks an empty list against them
        ap.error(f"unknown attack: {', '.join(sorted(set(args.attacks) - set(ATTACKS)))}")
    for name in args.attacks or list(ATTACKS):
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            broker = Broker(work / "broker").start()
            dev = Device(broker)
            run = Run(args.tree.resolve(), work, broker, dev)
            try:
                print(name, ATTACKS[name](run, dev), flush=True)
            finally:
                if run.proc is not None and run.proc.poll() is None:
                    run.proc.kill()
                    run.proc.wait()
                dev.close()
                broker.stop()


if __name__ == "__main__":
    main()
