"""Single-bit flips of a real checkpoint: what a restart makes of each.

A worker (the runtime's, without a broker) serves ``--readings`` labelled readings of one
device (3 features, a GaussianNB and a Hoeffding tree) and checkpoints it twice, after 2/3 of
them and at the end, so two generations exist where the release keeps them. Then, for each of
``--flips`` bit positions drawn over the newest file, one bit is flipped in a copy of the folder
and a new worker restores the device. Its last seq and its class probabilities on 30 fixed
probes say which state it holds:

- ``newest``: the state written last (the flip changed nothing that matters);
- ``previous``: the generation before it (the flip was detected and it fell back);
- ``fresh``: a new model (the checkpoint was moved aside);
- ``changed``: any other state: it loaded with silently changed predictions;
- ``refused``: the device was not served (its checkpoint left alone).

    python bench/checkpoint_bitflips.py [--flips 1500] [--readings 120] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import logging
import random
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import parse_config
from edgebayes.runtime.messages import ProtocolError
from edgebayes.runtime.publisher import Muted
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker

FEATURES = ("a", "b", "c")



def _worker(directory: Path) -> Worker:
    cfg = parse_config({"schema": {"features": list(FEATURES)}, "output": {"format": "json"},
                        "models": [{"name": "nb", "kind": "gaussian_nb"},
                                   {"name": "ht", "kind": "hoeffding_tree", "grace_period": 20}]})
    return Worker(cfg, Topics("eb", "+", "rt"), CheckpointStore(directory, FEATURES), session=Muted())


def _fingerprint(dev, probes) -> tuple:
    return dev.last_seq, [json.dumps(dev.predict(list(x))[2], sort_keys=True) for x in probes]


def run(n_flips: int, n_readings: int, seed: int) -> dict:
    """The counts of each outcome (see the module docstring) and the file's size."""
    rng = random.Random(seed)
    probes = [[rng.uniform(-3, 8) for _ in FEATURES] for _ in range(30)]
    base = Path(tempfile.mkdtemp())
    try:
        w = _worker(base)
        prints = []
        for seq in range(n_readings):
            y = seq % 3
            x = [y * 2 + rng.gauss(0, 1), rng.gauss(y, 1), rng.gauss(0, 1)]
            w.acks.handle("eb/d1/reading", json.dumps({"seq": seq, "x": x, "y": y}).encode(), 0, 1, 0.0)
            if seq in (n_readings * 2 // 3 - 1, n_readings - 1):
                w.checkpoint(all_devices=True)
                prints.append(_fingerprint(w.devices["d1"], probes))
        previous, newest = prints
        data = (base / "d1.ckpt").read_bytes()
        counts = dict.fromkeys(("newest", "previous", "fresh", "changed", "refused"), 0)
        for bit in rng.sample(range(len(data) * 8), min(n_flips, len(data) * 8)):
            copy = Path(tempfile.mkdtemp())
            shutil.copytree(base, copy, dirs_exist_ok=True)
            spoilt = bytearray(data)
            spoilt[bit // 8] ^= 1 << (bit % 8)
            (copy / "d1.ckpt").write_bytes(bytes(spoilt))
            try:
                dev = _worker(copy).registry.get("d1", create=True)
            except ProtocolError:
                counts["refused"] += 1
            else:
                got = _fingerprint(dev, probes)
                kind = ("newest" if got == newest else "previous" if got == previous
                        else "fresh" if dev.last_seq == -1 else "changed")
                counts[kind] += 1
            shutil.rmtree(copy)
        return {"file_bytes": len(data), "flips": sum(counts.values()), **counts}
    finally:
        shutil.rmtree(base)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flips", type=int, default=1500)
    ap.add_argument("--readings", type=int, default=120)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    logging.disable(logging.CRITICAL)  # each flip logs what it found; the counts say it
    print(json.dumps(run(args.flips, args.readings, args.seed)))


if __name__ == "__main__":
    main()
