"""Memory of the worker's error bookkeeping: RSS before and after ``--n`` undecodable readings,
each on a device topic of its own (``[output] error_interval_s = 60``, so each topic's rate
limit would be remembered), fed straight to ``Acks.handle`` with a client that drops
publishes; no broker. Prints one JSON line: n, seconds, RSS before/after (MB), topics kept.

    PYTHONPATH=$PWD python bench/error_topics.py [--n 180000]
"""

from __future__ import annotations

import argparse
import json
import logging
import time

from edgebayes.runtime.config import parse_config
from edgebayes.runtime.memory import rss_bytes
from edgebayes.runtime.publisher import Muted
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=180_000, help="distinct device topics (default 180,000)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.ERROR)  # one warning per report published: not what is measured
    cfg = parse_config({"schema": {"features": ["a"]}, "output": {"error_interval_s": 60},
                        "memory": {"max_devices": 16}, "models": [{"name": "nb", "kind": "gaussian_nb"}]})
    w = Worker(cfg, Topics("eb", "+", "rt"), None, session=Muted())
    before = rss_bytes()
    t0 = time.perf_counter()
    for i in range(args.n):
        w.acks.handle(f"eb/dev{i}/reading", b"junk", 0, 1, 0.0)
    seconds = time.perf_counter() - t0
    print(json.dumps({"n": args.n, "seconds": round(seconds, 2), "rss_before_mb": round(before / 2**20, 1),
                      "rss_after_mb": round(rss_bytes() / 2**20, 1), "topics_kept": len(w.reports.last_error),
                      "decode_errors": w.reports.errors["decode"]}))


if __name__ == "__main__":
    main()
