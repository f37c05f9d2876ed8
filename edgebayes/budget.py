"""``edgebayes budget``: run a config's models over a stream as the runtime would, against the budget.

    edgebayes budget --config FILE --data SOURCE --samples N [--every K] [--seed S]

No broker: one device's model set is built exactly as ``edgebayes run`` builds it (the
``[memory]`` plan of `edgebayes.runtime.memory`: each model's share of
``model_budget_bytes / max_devices``, passed down as ``max_size_bytes`` where the kind takes
it), and learns every sample test-then-train (labels inline). Prints, per model, the peak of
``memory_bytes()`` (read every ``--every`` samples and at the end) against its share, the peak
of all models together ("device total") against the device's share (the model shares plus any
part no model was given, "unassigned"), the process's peak RSS against ``rss_limit_mb``, and the
verdict. Exit 0 within budget, 1 over it (also when the budget cannot even hold the models),
2 for a bad config or unreadable data. A progress bar goes to stderr when it is a terminal.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time

from edgebayes.runtime.config import ConfigError, load_config
from edgebayes.runtime.device import Device
from edgebayes.runtime.memory import plan_memory
from edgebayes.runtime.pending import PendingLabels
from edgebayes.streams import drop_hint, open_stream


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, metavar="FILE", help="the runtime's TOML config")
    parser.add_argument("--data", required=True, metavar="SOURCE",
                        help="a .csv, .csv.gz or .arff file with a header, or synth:NAME; its features "
                             "in [schema] order")
    parser.add_argument("--samples", type=int, metavar="N",
                        help="samples to run (a synthetic stream's length; a file's first N rows)")
    parser.add_argument("--target", metavar="NAME", help="label column of a file (default: the last one)")
    parser.add_argument("--drop", nargs="+", action="extend", default=[], metavar="COL",
                        help="file columns that are not features")
    parser.add_argument("--seed", type=int, default=1, metavar="S", help="seed of a synthetic stream (default 1)")
    parser.add_argument("--every", type=int, default=100, metavar="K",
                        help="measure the models' memory every K samples, and at the end (default 100)")


def _fail(message: str) -> int:
    print(f"edgebayes budget: {message}{drop_hint(message)}", file=sys.stderr)
    return 2


def main(args: argparse.Namespace) -> int:
    if args.every < 1 or (args.samples is not None and args.samples < 1):
        return _fail("--every and --samples must be >= 1")
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        return _fail(str(exc))
    try:
        plan = plan_memory(config)
    except ConfigError as exc:
        print(f"over budget: {'; '.join(exc.problems)}")
        return 1
    try:
        stream = open_stream(args.data, target=args.target, drop=args.drop, n_samples=args.samples,
                             seed=args.seed if args.data.startswith("synth:") else None)
    except (OSError, ValueError) as exc:
        return _fail(str(exc))
    n_features = len(config.schema.features)
    if stream.schema.n_features != n_features:
        return _fail(f"{args.data} has {stream.schema.n_features} features, [schema] features lists {n_features}")
    c = config
    device = Device("budget", plan.models, c.evaluation.accuracy_window, c.drift.delta,
                    PendingLabels(c.labels.max_pending, c.labels.max_age_s))
    try:
        peaks, n = _run(device, stream, args.every)
    except (OSError, ValueError) as exc:  # a reader's error names its file already
        return _fail(str(exc) if str(exc).startswith(args.data) else f"{args.data}: {exc}")
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    over = _report(config, plan, device, peaks, n, rss, args)
    return 1 if over else 0


def _run(device: Device, stream, every: int) -> tuple[dict, int]:
    """Test-then-train every sample; returns ({model or "total": peak bytes}, samples run)."""
    from tqdm import tqdm

    names = [s.name for s in device.slots]
    peaks = dict.fromkeys([*names, "total"], 0)

    def measure():
        sizes = [s.learner.memory_bytes() for s in device.slots]
        for name, b in zip(names, sizes):
            peaks[name] = max(peaks[name], b)
        peaks["total"] = max(peaks["total"], sum(sizes))

    n = 0
    with tqdm(total=stream.n_samples, unit="samples", disable=not sys.stderr.isatty(), file=sys.stderr) as bar:
        for x, y in stream:
            xs = x.tolist()
            y_preds = device.predict(xs)[0]
            device.learn(n, xs, y, y_preds, time.time())
            n += 1
            if n % every == 0:
                measure()
            bar.update()
    measure()
    return peaks, n


def _verdict(peak: int, limit: int | None) -> str:
    if limit is None:
        return "-"
    return "ok" if peak <= limit else "OVER"


def _report(config, plan, device, peaks: dict, n: int, rss: int, args) -> bool:
    """Print the table; True when something is over its limit."""
    mem = config.memory
    print(f"edgebayes budget: {args.config} on {args.data}, {n:,} samples, one device "
          f"(of max_devices {mem.max_devices})")
    print(f"{'model':<16}{'kind':<16}{'accuracy':>10}{'peak bytes':>14}{'share bytes':>14}  verdict")
    verdicts = []
    for slot in device.slots:
        share = plan.model_bytes[slot.name] if plan.model_bytes else None
        v = _verdict(peaks[slot.name], share)
        verdicts.append(v)
        acc = f"{slot.n_correct / slot.n_labels:.4f}" if slot.n_labels else "-"
        print(f"{slot.name:<16}{slot.kind:<16}{acc:>10}{peaks[slot.name]:>14,}"
              f"{'-' if share is None else f'{share:,}':>14}  {v}")
    if plan.model_bytes:
        # a model with its own max_size_bytes leaves part of the device share to nobody
        unassigned = plan.device_bytes - sum(plan.model_bytes.values())
        if unassigned:
            print(f"{'unassigned':<42}{'':>14}{unassigned:>14,}")
    v = _verdict(peaks["total"], plan.device_bytes)
    verdicts.append(v)
    share = "-" if plan.device_bytes is None else f"{plan.device_bytes:,}"
    print(f"{'device total':<42}{peaks['total']:>14,}{share:>14}  {v}")
    if plan.budget_bytes is not None:
        print(f"model_budget_bytes {plan.budget_bytes:,} = {plan.device_bytes:,} per device x {mem.max_devices}")
    limit = None if mem.rss_limit_mb is None else int(mem.rss_limit_mb * 2**20)
    v = _verdict(rss, limit)
    verdicts.append(v)
    print(f"peak RSS {rss / 2**20:,.1f} MiB"
          + ("" if limit is None else f" (rss_limit_mb {mem.rss_limit_mb:g}: {v})"))
    over = "OVER" in verdicts
    if all(v == "-" for v in verdicts):
        print("verdict: no [memory] model_budget_bytes or rss_limit_mb to check against")
    else:
        print("verdict: OVER BUDGET" if over else "verdict: within budget")
    return over
