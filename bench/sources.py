"""Cost of one ``[[sources]]`` message through the worker: Tasmota ``SENSOR`` messages of the
docs/examples/tasmota-bme280.toml config (adapter, assembler, prediction and learning), all
present or with one probe null in every second message. Its naive Bayes only: SRP's cost per
reading would hide the path's.

    python -m bench.sources [--n 20000] [--seed 0]

Prints µs per message and readings served per case; no broker (the worker's client records).
"""

from __future__ import annotations

import argparse
import json
import random
import time
import tomllib
from pathlib import Path

from edgebayes.runtime.config import parse_config
from edgebayes.runtime.publisher import Muted
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker

CONFIG = Path(__file__).resolve().parents[1] / "docs" / "examples" / "tasmota-bme280.toml"



def _messages(n: int, seed: int, null_every: int) -> list[bytes]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        switch = rng.random() < 0.5
        t = 20.0 + 3.0 * switch + rng.gauss(0, 1)
        block = {"Temperature": t, "Humidity": 50.0 - 5.0 * switch + rng.gauss(0, 2),
                 "Pressure": 1000.0 + rng.gauss(0, 3)}
        if null_every and i % null_every == 0:
            block["Temperature"] = None
        out.append(json.dumps({"BME280": block, "Switch1": "ON" if switch else "OFF"}).encode())
    return out


def run(n: int, seed: int, null_every: int) -> tuple[float, int]:
    raw = tomllib.loads(CONFIG.read_text())
    raw["models"] = raw["models"][:1]
    cfg = parse_config(raw, str(CONFIG))
    w = Worker(cfg, Topics("edgebayes", "+", "bench"), None, session=Muted())
    msgs = _messages(n, seed, null_every)
    t0 = time.perf_counter()
    for i, payload in enumerate(msgs):
        w.serving.process(f"tele/tas-{i % 4}/SENSOR", payload, 0.0)
    return (time.perf_counter() - t0) / n * 1e6, w.serving.n_readings


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=20000)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    for name, null_every in (("every value present", 0), ("temperature null in every 2nd", 2)):
        us, readings = run(args.n, args.seed, null_every)
        print(f"{name:32s} {us:8.1f} µs/message  {readings:6d} readings of {args.n} messages")


if __name__ == "__main__":
    main()
