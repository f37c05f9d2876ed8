"""``edgebayes demo``: the whole thing on a real broker, short, and its pieces."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgebayes.cli import main
from edgebayes.demo import (
    DEFAULT_DATA,
    FALLBACK_SOURCE,
    RuntimeProcess,
    baselines,
    choose_source,
    mosquitto_path,
    prepare_data,
)
from edgebayes.streams import open_stream

DURATION_S, RATE_HZ, DEVICES = 5, 80, 3


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


def check_summary(r: dict, tmp_path: Path) -> None:
    n = DEVICES * DURATION_S * RATE_HZ
    assert r["readings"] == r["predictions"] == r["labels"] == r["scored"] == n
    assert r["errors"] == 0 and r["runtime"]["n_malformed"] == 0 and r["runtime"]["n_dropped"] == 0
    assert r["runtime"]["exit_code"] == 0
    majority = r["baselines"]["majority"]
    assert 0.5 <= majority < 1.0
    for name in ("nb", "srp"):
        m = r["models"][name]
        assert m["scored"] == n
        assert m["accuracy"] > majority, (name, m["accuracy"], majority)
        assert m["bytes"] > 0
    assert r["accuracy"] > majority
    # the concept change on the last device is noticed after it happens
    assert r["concept_change"] == {
        "device": "sim-2",
        "from_reading": DURATION_S * RATE_HZ // 2,
        "t_s": DURATION_S / 2,
    }
    assert r["first_drift_after_change_s"] is not None and r["first_drift_after_change_s"] >= 0
    assert r["per_device"]["sim-2"]["drift_alerts"] >= 1
    assert r["runtime"]["rss_bytes"] > 10 * 2**20
    assert r["latency_ms"]["p50"] > 0
    png = tmp_path / "edgebayes-demo.png"
    assert r["png"] == str(png) and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
@pytest.mark.skipif(
    not DEFAULT_DATA.exists() or mosquitto_path() is None,
    reason="needs ../shared/data and Mosquitto",
)
def test_demo_runs_and_its_summary_is_sane(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    r = run_demo(tmp_path)
    assert r["broker"] == "mosquitto" and r["source"] == str(DEFAULT_DATA)
    check_summary(r, tmp_path)
    out = capsys.readouterr().out
    assert f"predictions {r['predictions']} / readings {r['readings']}" in out
    assert "concept change on sim-2" in out


@pytest.mark.slow
@pytest.mark.skipif(not DEFAULT_DATA.exists(), reason="needs ../shared/data")
def test_demo_on_the_embedded_broker(tmp_path):
    pytest.importorskip("amqtt")
    pytest.importorskip("matplotlib")
    r = run_demo(tmp_path, "--broker", "embedded")
    assert r["broker"] == "amqtt"
    check_summary(r, tmp_path)


def test_baselines_exact():
    labels = ["a", "a", "b", "b", "a", "b", "a", "b"]
    assert baselines(labels, n_devices=2, n_per_device=4) == {"majority": 0.5, "no_change": 0.25}


def test_prepare_data_windows_and_concept_change(tmp_path):
    src = tmp_path / "three.csv"
    rows = [(float(i), float(i % 5), "abc"[i % 3]) for i in range(20)]
    src.write_text(
        "date,f1,f2,class\n" + "".join(f"d{i},{a},{b},{c}\n" for i, (a, b, c) in enumerate(rows))
    )
    work = tmp_path / "work"
    work.mkdir()
    data = prepare_data(
        str(src), None, ("date",), n_devices=3, n_per_device=3, seed=1, workdir=work
    )
    assert data.features == ("f1", "f2") and data.change_index == 1
    taken = [0, 2, 4, 6, 8, 10, 12, 14, 16]  # thirds of 6 rows, every other row
    shift = {"a": "b", "b": "c", "c": "a"}
    expected = [rows[i][2] for i in taken[:7]] + [shift[rows[i][2]] for i in taken[7:]]
    assert data.labels == expected
    replay = [(x.tolist(), y) for x, y in open_stream(str(data.csv_path), target="class")]
    assert replay == [([rows[i][0], rows[i][1]], y) for i, y in zip(taken, expected)]


def test_prepare_data_refuses_a_short_file(tmp_path):
    src = tmp_path / "short.csv"
    src.write_text("f,class\n1,a\n2,b\n")
    with pytest.raises(ValueError, match="2 rows, the demo needs 6 \\(3 devices x 2\\)"):
        prepare_data(str(src), None, (), n_devices=3, n_per_device=2, seed=1, workdir=tmp_path)


def test_bad_arguments_exit_2(tmp_path, capsys):
    assert main(["demo", "--duration", "0", "--out", str(tmp_path)]) == 2
    assert main(["demo", "--data", str(tmp_path / "missing.csv"), "--out", str(tmp_path)]) == 2
    assert "edgebayes demo:" in capsys.readouterr().err


def test_missing_default_data_is_said_aloud(tmp_path, monkeypatch):
    said = []
    monkeypatch.chdir(tmp_path)
    missing = tmp_path.parent / "shared" / "data" / "occupancy_uci" / "occupancy.csv.gz"
    assert choose_source(None, missing, said.append) == FALLBACK_SOURCE
    assert said == [
        "../shared/data/occupancy_uci/occupancy.csv.gz not found; "
        "replaying synth:AGRAWAL instead — pass --data PATH"
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
