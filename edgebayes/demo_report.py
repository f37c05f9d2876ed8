"""What ``edgebayes demo`` reports after a run: the summary dict (written as JSON), the text
printed at the end, and the PNG of accuracy over the run per device.

The inputs are the demo's own (`edgebayes.demo`): its data (``DemoData``: labels per device,
``n_per_device``, ``labels_until``, ``change_index``, ``source``), the monitor's summary
(``firmware_sim.Monitor.summary``: totals, models, devices, drift alerts, runtimes' metrics)
and the scores of `edgebayes.demo.score` (per phase, overall, per device, 0/1 hits).
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path

__all__ = ["PLOT_POINTS", "format_summary", "plot", "summarise"]

PLOT_POINTS = 25  # accuracy points per device in the plot (each over n / 25 readings)


# --- the summary dict -------------------------------------------------------------------------


def _drifts_after_change(alerts: list, changed: str, change_index: int, rate: float) -> list:
    """Seconds from the concept change to each drift alert on the changed device after it, by
    the readings' schedule (the alert's seq against the change's)."""
    return [
        (a["seq"] - change_index) / rate
        for a in alerts
        if a["device"] == changed
        and a["level"] == "drift"
        and isinstance(a["seq"], int)
        and a["seq"] >= change_index
    ]


def _models(summary: dict, scores: dict, metrics: dict) -> dict:
    """Per model: accuracy on every reading and on the labelled ones, its drift alerts and
    warnings, the bytes the runtime reports for it."""
    by_model: dict = {}
    for a in summary["drift_alerts"]:
        by_model.setdefault(a["model"], Counter())[a["level"]] += 1
    return {
        name: {
            "accuracy": scores["overall"][name],
            "accuracy_labelled_readings": m["accuracy"],
            "drift_alerts": by_model.get(name, {}).get("drift", 0),
            "warnings": by_model.get(name, {}).get("warning", 0),
            "bytes": (metrics.get("models", {}).get(name) or {}).get("bytes"),
        }
        for name, m in summary["models"].items()
    }


def _runtime(totals: dict, metrics: dict, exit_code: int) -> dict:
    """The latencies and the runtime's own figures of the summary."""
    return {
        "latency_ms": {
            # the monitor's: the reading's arrival to its prediction's, both through the
            # broker (the runtime's time, then the prediction's trip through the broker)
            "through_broker": totals["latency_ms"],
            # the runtime's own latency_ms: reading received -> prediction ready
            "in_runtime": totals["runtime_latency_ms"],
        },
        "runtime": {
            "rss_bytes": metrics.get("rss_bytes"),
            "n_malformed": metrics.get("n_malformed"),
            "n_dropped": metrics.get("n_dropped"),
            "n_internal_errors": metrics.get("n_internal_errors"),
            "exit_code": exit_code,
        },
    }


def summarise(args, data, broker, stats, summary: dict, scores: dict, changed: str, exit_code: int) -> dict:
    """The demo's result (the JSON it writes; the keys `format_summary` reads).

    ``args``: the demo's arguments (``devices``, ``rate``); ``broker``: its ``kind``; ``stats``:
    the simulator's (``elapsed_s``, ``totals()``); ``changed``: the device with the concept
    change; ``exit_code``: the runtime's."""
    totals = summary["totals"]
    metrics = (
        next((rt["metrics"] for rt in summary["runtimes"].values() if rt.get("metrics")), {}) or {}
    )
    after = _drifts_after_change(summary["drift_alerts"], changed, data.change_index, args.rate)
    models = _models(summary, scores, metrics)
    phases = scores["phases"]
    removed = phases["removed"]
    return {
        "source": data.source,
        "broker": broker.kind,
        "devices": args.devices,
        "rate_hz": args.rate,
        "duration_s": stats.elapsed_s,
        "readings_per_device": data.n_per_device,
        "label_sensor_removed": {"from_reading": data.labels_until, "t_s": data.labels_until / args.rate},
        "concept_change": {"device": changed, "from_reading": data.change_index,
                           "t_s": data.change_index / args.rate},
        "readings": stats.totals()["readings_published"],
        "predictions": totals["predictions"],
        "labels": stats.totals()["labels_inline"],
        "scored": totals["scored"],
        "readings_per_s": totals["readings"] / stats.elapsed_s if stats.elapsed_s else None,
        "accuracy": scores["overall"]["served"],
        "models": models,
        "phases": phases,
        "baselines": {k: scores["overall"][k] for k in ("no_change", "majority")},
        "learning_gain": removed["served"] - removed["no_change"] if removed["readings"] else None,
        "drift_alerts": sum(m["drift_alerts"] for m in models.values()),
        "warnings": sum(m["warnings"] for m in models.values()),
        "first_drift_after_change_s": min(after) if after else None,
        "errors": totals["errors"],
        **_runtime(totals, metrics, exit_code),
        "per_device": {
            d: {**scores["per_device"].get(d, {}), "drift_alerts": v["drift_alerts"], "warnings": v["warnings"]}
            for d, v in summary["devices"].items()
        },
    }


# --- the text printed -------------------------------------------------------------------------


def _pct(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def _ms(lat: dict) -> str:
    if lat.get("p50") is None:
        return "-"
    return f"p50 {lat['p50']:.1f} ms, p99 {lat['p99']:.1f} ms"


def _accuracy_table(r: dict, cols: list) -> list[str]:
    """The heading and the accuracy per phase of each predictor in ``cols``."""
    until = r["label_sensor_removed"]["from_reading"]
    n = r["readings_per_device"]
    heads = {"served": "served", "no_change": "no change", "majority": "majority"}
    lines = [
        "",
        (
            f"summary ({r['readings']} readings from {r['devices']} devices "
            f"in {r['duration_s']:.1f} s, broker {r['broker']})"
        ),
        "accuracy on every reading against its true label (predicted before it is learned):",
        f"{'':<36}{'readings':>9}" + "".join(f"{heads.get(c, c):>10}" for c in cols),
    ]
    rows = [("labelled", f"with labels (readings 0-{until - 1})")]
    if until < n:
        rows.append(("removed", f"label sensor removed ({until}-{n - 1})"))
    for phase, title in rows:
        p = r["phases"][phase]
        lines.append(
            f"{title:<36}{p['readings']:>9}" + "".join(f"{_pct(p[c]):>10}" for c in cols)
        )
    return lines


def _notes(r: dict) -> list[str]:
    """What the table says: the columns, the labelled phase, and whether learning pays."""
    note = [
        (
            "served: the model with the best recent accuracy when the reading came; no change: "
            "the device's last label sent; majority: its most frequent label sent"
        )
    ]
    lab = r["phases"]["labelled"]
    if lab["served"] is not None and lab["no_change"] is not None:
        if lab["served"] < lab["no_change"]:
            note.append(
                f"with every label at hand, repeating the previous one is hard to beat "
                f"({_pct(lab['no_change'])} against the served {_pct(lab['served'])}): the class "
                "changes seldom between readings"
            )
        else:
            note.append(
                f"with labels: served {lab['served'] - lab['no_change']:+.3f} against no change"
            )
    gain = r["learning_gain"]
    if gain is not None:
        rem = r["phases"]["removed"]
        verdict = "learning pays" if gain > 0 else "learning does not pay here"
        note.append(
            f"without labels, no change can only repeat the last label it saw "
            f"({_pct(rem['no_change'])}); the models predict from the features "
            f"({_pct(rem['served'])}): {verdict}, {gain:+.3f}"
        )
    return [textwrap.fill(t, 100, initial_indent="  ", subsequent_indent="    ") for t in note]


def _run_lines(r: dict, models: list) -> list[str]:
    """Model bytes, the concept change and its alerts, throughput, memory and latencies."""
    lines = [
        f"{'model bytes':<55}"
        + "".join(
            f"{('-' if r['models'][m]['bytes'] is None else format(r['models'][m]['bytes'], ',')):>10}"
            for m in models
        )
    ]
    first = r["first_drift_after_change_s"]
    alerts = ", ".join(f"{m} {v['drift_alerts']}" for m, v in r["models"].items())
    lines.append(
        f"concept change on {r['concept_change']['device']} at {r['concept_change']['t_s']:.1f} s: "
        + ("no drift alert after it" if first is None else f"first drift alert {first:.1f} s later")
        + f" (drift alerts: {alerts}; {r['warnings']} warnings)"
    )
    lat = r["latency_ms"]
    rss = r["runtime"]["rss_bytes"]
    lines.append(
        f"predictions {r['predictions']} / readings {r['readings']}, "
        f"{r['readings_per_s']:.0f} readings/s, runtime RSS "
        + ("-" if rss is None else f"{rss / 2**20:.1f} MB")
    )
    for text in (
        (
            f"latency through the broker, {_ms(lat['through_broker'])}: a reading -> its "
            "prediction, as the monitor receives both from the broker: the runtime's time and "
            "the prediction's trip; the monitor shares one Python process with the simulated "
            "devices, and the broker and runtime the same cores"
        ),
        (
            f"latency in the runtime, {_ms(lat['in_runtime'])}: reading received -> prediction "
            f"ready (its queue, then {' and '.join(models)} predict; each learns after the "
            "publish). The figures of bench/runtime.py (docs/results.md, section 5) are through "
            "the broker, one device, no monitor"
        ),
    ):
        lines.append(textwrap.fill(text, 100, subsequent_indent="    "))
    return lines


def format_summary(r: dict) -> str:
    """The summary printed at the end, from the result of `summarise` (with ``wall_s`` and
    ``png`` added)."""
    models = list(r["models"])
    lines = _accuracy_table(r, ["served", *models, "no_change", "majority"])
    lines += _notes(r)
    lines += _run_lines(r, models)
    if r["runtime"]["n_internal_errors"]:
        lines.append(f"runtime internal errors: {r['runtime']['n_internal_errors']} (see its log)")
    lines.append(
        f"wall time {r['wall_s']:.1f} s"
        + (f", plot: {r['png']}" if r["png"] else ", no plot (pip install matplotlib)")
    )
    return "\n".join(lines)


# --- the plot ---------------------------------------------------------------------------------

_STYLES = {
    "served": {"color": "black", "lw": 2.0, "label": "served"},
    "nb": {"color": "tab:blue", "lw": 1.0, "label": "nb"},
    "srp": {"color": "tab:orange", "lw": 1.0, "label": "srp"},
    "no_change": {"color": "tab:red", "lw": 1.2, "ls": "--", "label": "no change (baseline)"},
    "majority": {"color": "tab:gray", "lw": 1.2, "ls": ":", "label": "majority (baseline)"},
}


def _plot_device(ax, device: str, hits: dict, n: int, window: int, rate: float, result: dict,
                 alerts: list) -> None:
    """One device's panel: accuracy per predictor over windows of ``window`` readings, the
    label sensor's removal shaded, its drift alerts and the concept change as vertical lines."""
    t_removed = result["label_sensor_removed"]["t_s"]
    t_end = n / rate
    starts = range(0, n - window + 1, window)
    ts = [(i + window) / rate for i in starts]
    for name, style in _STYLES.items():
        acc = [sum(hits[name][i : i + window]) / window for i in starts]
        ax.plot(ts, acc, drawstyle="steps-pre", **style)
    if t_removed < t_end:
        ax.axvspan(t_removed, t_end, color="tab:green", alpha=0.08, label="no labels")
    colors = {m: _STYLES[m]["color"] for m in ("nb", "srp")}
    for a in alerts:
        if a["device"] == device and a["level"] == "drift" and isinstance(a["seq"], int):
            ax.axvline(a["seq"] / rate, color=colors.get(a["model"]), alpha=0.5, lw=1)
    if device == result["concept_change"]["device"]:
        ax.axvline(
            result["concept_change"]["t_s"], color="black", ls="--", lw=1.2,
            label="concept change",
        )
    ax.set_ylim(-0.02, 1.02)
    ax.set_ylabel(f"{device}\naccuracy")


def plot(data, scores: dict, result: dict, summary: dict, rate: float, path: Path):
    """Accuracy over the run per device: the prediction served, each model and the two
    baselines, each over windows of n / `PLOT_POINTS` readings; the label sensor's removal
    shaded, the concept change and drift alerts as vertical lines. Returns ``str(path)``, or
    None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    devices = list(scores["hits"])
    window = max(1, data.n_per_device // PLOT_POINTS)
    fig, axes = plt.subplots(
        len(devices), 1, figsize=(9, 2.3 * len(devices) + 1.2), sharex=True, squeeze=False
    )
    for ax, device in zip(axes[:, 0], devices):
        _plot_device(ax, device, scores["hits"][device], data.n_per_device, window, rate, result,
                     summary["drift_alerts"])
    handles = {}
    for ax in axes[:, 0]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    fig.legend(handles.values(), handles.keys(), loc="lower center", ncol=4, fontsize=8)
    axes[-1, 0].set_xlabel(
        f"seconds of readings (accuracy over {window} readings; thin vertical lines: drift alerts; "
        "shaded: label sensor removed)", fontsize=8,
    )
    gain = result["learning_gain"]
    fig.suptitle(
        f"edgebayes demo: {Path(result['source']).name}, NB and SRP over MQTT"
        + ("" if gain is None else f"; without labels, served {gain:+.3f} over no change"),
        fontsize=10,
    )
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return str(path)
