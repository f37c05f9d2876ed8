"""``edgebayes demo``: the whole thing on a real broker, short, and its pieces."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from edgebayes.cli import main
from edgebayes.demo import (
    DEFAULT_DATA,
    FALLBACK_SOURCE,
    RuntimeProcess,
    baseline_predictions,
    baselines,
    choose_source,
    mosquitto_path,
    prepare_data,
    score,
)
from edgebayes.streams import open_stream
from tests.conftest import SHARED, needs_shared

#: the demo's default data set, ``DEFAULT_DATA``, under ../shared
DEMO_DATA = DEFAULT_DATA.relative_to(SHARED).as_posix()
DURATION_S, RATE_HZ, DEVICES = 5, 80, 3
N = DURATION_S * RATE_HZ  # readings per device
UNTIL = N // 2  # each device's first reading without its label (--labels-until 0.5)
#: what learning must gain over the no-change baseline once the label sensor is gone
MARGIN = 0.1


def run_demo(tmp_path: Path, *extra: str) -> dict:
    code = main(
        [
            "demo",
            "--duration",
            str(DURATION_S),
            "--rate",
            str(RATE_HZ),
            "--out",
            str(tmp_path),
            "--refresh-s",
            "0",
            *extra,
        ]
    )
    assert code == 0
    return json.loads((tmp_path / "edgebayes-demo.json").read_text())


def true_labels(tmp_path: Path) -> list[list]:
    """Each device's true labels as the demo replays them (the concept change applied)."""
    work = tmp_path / "labels"
    work.mkdir()
    data = prepare_data(str(DEFAULT_DATA), None, ("date",), DEVICES, N, seed=1, workdir=work)
    assert data.labels_until == UNTIL
    return [data.device_labels(d) for d in range(DEVICES)]


def check_summary(r: dict, tmp_path: Path) -> None:
    n = DEVICES * N
    assert r["readings"] == r["predictions"] == n
    # labels only with each device's first half: the monitor scores those
    assert r["labels"] == r["scored"] == DEVICES * UNTIL
    assert r["label_sensor_removed"] == {"from_reading": UNTIL, "t_s": UNTIL / RATE_HZ}
    assert r["errors"] == 0 and r["runtime"]["n_malformed"] == 0 and r["runtime"]["n_dropped"] == 0
    assert r["runtime"]["exit_code"] == 0
    assert all(d["answered"] == N for d in r["per_device"].values())

    # the baselines, computed here from the true labels: after the label sensor is gone, no
    # change repeats each device's last label; majority its most frequent label sent
    labels = true_labels(tmp_path)
    removed = [y for ys in labels for y in ys[UNTIL:]]
    no_change = sum(y == ys[UNTIL - 1] for ys in labels for y in ys[UNTIL:]) / len(removed)
    majority = sum(
        y == Counter(ys[:UNTIL]).most_common(1)[0][0] for ys in labels for y in ys[UNTIL:]
    ) / len(removed)
    phase = r["phases"]["removed"]
    assert phase["readings"] == len(removed)
    assert phase["no_change"] == pytest.approx(no_change)
    assert phase["majority"] == pytest.approx(majority)
    # learning beats both by the margin once labels stop: the models predict from the features
    gain = phase["served"] - max(no_change, majority)
    assert gain >= MARGIN, (phase, no_change, majority)
    assert r["learning_gain"] == pytest.approx(phase["served"] - no_change)
    assert max(phase["nb"], phase["srp"]) - no_change >= MARGIN, phase
    for name in ("nb", "srp"):
        assert phase[name] > no_change, (name, phase)
        m = r["models"][name]
        assert m["bytes"] > 0
    # while every label is at hand, the models beat the majority class
    labelled = r["phases"]["labelled"]
    assert labelled["readings"] == DEVICES * UNTIL
    assert labelled["served"] > labelled["majority"] + MARGIN, labelled

    # the concept change on the last device, while it still has labels, is noticed after it
    change = round(N * 0.2)
    assert r["concept_change"] == {"device": "sim-2", "from_reading": change, "t_s": change / RATE_HZ}
    assert r["first_drift_after_change_s"] is not None and r["first_drift_after_change_s"] >= 0
    assert r["per_device"]["sim-2"]["drift_alerts"] >= 1
    assert r["runtime"]["rss_bytes"] > 10 * 2**20
    for kind in ("through_broker", "in_runtime"):
        assert r["latency_ms"][kind]["p50"] > 0, kind
    png = tmp_path / "edgebayes-demo.png"
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert r["png"] is None
    else:
        assert r["png"] == str(png) and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@needs_shared(DEMO_DATA)
@pytest.mark.skipif(mosquitto_path() is None, reason="needs Mosquitto")
def test_demo_learning_beats_the_baselines_once_the_label_sensor_is_gone(tmp_path, capsys):
    r = run_demo(tmp_path)
    assert r["broker"] == "mosquitto" and r["source"] == str(DEFAULT_DATA)
    check_summary(r, tmp_path)
    out = " ".join(capsys.readouterr().out.split())  # the summary's lines are wrapped
    assert f"predictions {r['predictions']} / readings {r['readings']}" in out
    assert "concept change on sim-2" in out
    assert f"label sensor removed ({UNTIL}-{N - 1})" in out
    assert f"learning pays, {r['learning_gain']:+.3f}" in out
    # each latency printed says what it measures
    assert "latency through the broker, p50" in out
    assert "a reading -> its prediction, as the monitor receives both from the broker" in out
    assert "latency in the runtime, p50" in out
    assert "reading received -> prediction ready" in out


@pytest.mark.slow
@needs_shared(DEMO_DATA)
def test_demo_on_the_embedded_broker(tmp_path):
    pytest.importorskip("amqtt")
    r = run_demo(tmp_path, "--broker", "embedded")
    assert r["broker"] == "amqtt"
    check_summary(r, tmp_path)


def test_baselines_exact():
    labels = ["a", "a", "b", "b", "a", "b", "a", "b"]
    # no change: each device's previous label (its first reading: none, wrong); majority:
    # the most frequent label so far, the first seen on ties
    assert baseline_predictions(labels[:4], 4) == ([None, "a", "a", "b"], [None, "a", "a", "a"])
    assert baseline_predictions(labels[4:], 4) == ([None, "a", "b", "a"], [None, "a", "a", "a"])
    assert baselines(labels, n_devices=2, n_per_device=4) == {"majority": 0.25, "no_change": 0.25}
    # labels sent for the first two readings only: both repeat what they had then
    assert baseline_predictions(labels[:4], 2) == ([None, "a", "a", "a"], [None, "a", "a", "a"])
    assert baseline_predictions(["b", "a", "b", "b"], 2) == (
        [None, "b", "a", "a"],
        [None, "b", "b", "b"],
    )
    assert baselines(labels, 2, 4, labels_until=2) == {"majority": 2 / 8, "no_change": 2 / 8}


def test_score_every_reading_against_its_true_label(tmp_path):
    src = tmp_path / "four.csv"
    src.write_text("f,class\n" + "".join(f"{i},{'ab'[i // 3 % 2]}\n" for i in range(12)))
    data = prepare_data(str(src), None, (), 2, 4, seed=1, workdir=tmp_path, labels_until=0.5)
    assert data.labels_until == 2
    truth = [data.device_labels(d) for d in range(2)]
    assert truth == [["a", "b", "a", "b"], ["a", "a", "b", "a"]]  # sim-1 changed from reading 1
    # sim-0 answers every reading right from its second; sim-1 only answers reading 3 (nb right)
    predictions = {
        "sim-0": {i: (y if i else None, {"nb": y}) for i, y in enumerate(truth[0])},
        "sim-1": {3: ("zz", {"nb": truth[1][3]})},
    }
    s = score(data, ["sim-0", "sim-1"], predictions, ["nb"])
    assert s["per_device"]["sim-0"]["phases"]["labelled"]["served"] == 0.5
    assert s["per_device"]["sim-0"]["phases"]["removed"]["served"] == 1.0
    assert s["per_device"]["sim-1"]["phases"]["removed"] == {
        "readings": 2,
        "served": 0.0,
        "nb": 0.5,
        "no_change": sum(y == truth[1][1] for y in truth[1][2:]) / 2,
        "majority": sum(y == "a" for y in truth[1][2:]) / 2,  # labels sent: a, a
    }
    assert s["per_device"]["sim-1"]["answered"] == 1
    assert s["phases"]["removed"]["readings"] == 4
    assert s["overall"]["served"] == 3 / 8
    assert s["hits"]["sim-0"]["served"] == [False, True, True, True]


def test_prepare_data_interleaves_the_devices_and_changes_the_concept(tmp_path):
    src = tmp_path / "three.csv"
    rows = [(float(i), float(i % 5), "abc"[i % 3]) for i in range(20)]
    src.write_text(
        "date,f1,f2,class\n" + "".join(f"d{i},{a},{b},{c}\n" for i, (a, b, c) in enumerate(rows))
    )
    work = tmp_path / "work"
    work.mkdir()
    data = prepare_data(
        str(src), None, ("date",), n_devices=3, n_per_device=5, seed=1, workdir=work
    )
    assert data.features == ("f1", "f2") and data.change_index == 1
    assert data.labels_until == 2  # round(5 * 0.5): banker's rounding
    # every device replays the whole file, every 4th row, from its own offset: 0, 1, 2
    taken = [0, 4, 8, 12, 16, 1, 5, 9, 13, 17, 2, 6, 10, 14, 18]
    shift = {"a": "b", "b": "c", "c": "a"}
    expected = [rows[i][2] for i in taken[:11]] + [shift[rows[i][2]] for i in taken[11:]]
    assert data.labels == expected
    replay = [(x.tolist(), y) for x, y in open_stream(str(data.csv_path), target="class")]
    assert replay == [([rows[i][0], rows[i][1]], y) for i, y in zip(taken, expected)]


def test_prepare_data_refuses_a_short_file(tmp_path):
    src = tmp_path / "short.csv"
    src.write_text("f,class\n1,a\n2,b\n")
    with pytest.raises(ValueError, match="2 rows, the demo needs 3 per device"):
        prepare_data(str(src), None, (), n_devices=3, n_per_device=3, seed=1, workdir=tmp_path)


def test_bad_arguments_exit_2(tmp_path, capsys):
    assert main(["demo", "--duration", "0", "--out", str(tmp_path)]) == 2
    assert main(["demo", "--labels-until", "0", "--out", str(tmp_path)]) == 2
    assert main(["demo", "--labels-until", "1.5", "--out", str(tmp_path)]) == 2
    assert main(["demo", "--data", str(tmp_path / "missing.csv"), "--out", str(tmp_path)]) == 2
    assert "edgebayes demo:" in capsys.readouterr().err


def test_missing_default_data_is_said_aloud(tmp_path, monkeypatch):
    said = []
    monkeypatch.chdir(tmp_path)
    missing = tmp_path.parent / "shared" / "data" / "occupancy_uci" / "occupancy.csv.gz"
    assert choose_source(None, missing, said.append) == FALLBACK_SOURCE
    assert said == [
        (
            "../shared/data/occupancy_uci/occupancy.csv.gz not found; "
            "replaying synth:AGRAWAL instead — pass --data PATH"
        )
    ]
    here = tmp_path / "here.csv"
    here.write_text("f,class\n1,a\n")
    assert choose_source(None, here, said.append) == str(here)
    assert choose_source("x.csv", missing, said.append) == "x.csv"
    assert len(said) == 1


def test_runtime_starts_from_a_folder_holding_an_edgebayes_checkout(broker, tmp_path, monkeypatch):
    # `cd ~ && edgebayes demo` with ~/edgebayes a clone: the child must import the installed package
    (tmp_path / "edgebayes").mkdir()
    monkeypatch.chdir(tmp_path)
    config = tmp_path / "rt.toml"
    config.write_text(
        f'[broker]\nhost = "{broker.host}"\nport = {broker.port}\n'
        '[schema]\nfeatures = ["a"]\n[[models]]\nname = "nb"\nkind = "gaussian_nb"\n'
    )
    runtime = RuntimeProcess(config, tmp_path)
    try:
        runtime.wait_ready()
    finally:
        assert runtime.stop() == 0
