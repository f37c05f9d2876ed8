"""Which implementation runs: edgebayes.backend(), EDGEBAYES_PURE_PYTHON, and the one line
``edgebayes evaluate`` and ``edgebayes run`` give about it."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import edgebayes
from edgebayes.cli import main as cli
from tests.data_files import SENSORS
from tests.runtime_client import wait_for, write_config

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "value, expected", [("1", "python"), ("yes", "python"), ("0", None), ("", None)]
)
def test_the_environment_variable_forces_the_reference(monkeypatch, value, expected):
    monkeypatch.setenv("EDGEBAYES_PURE_PYTHON", value)
    built = "python" if edgebayes._compiled_missing() else "compiled"
    assert edgebayes.backend() == (expected or built)
    if expected == "python":
        assert edgebayes.backend_description() == f"python (EDGEBAYES_PURE_PYTHON={value})"


def test_without_the_core_the_reference_runs_and_says_why(monkeypatch):
    monkeypatch.delenv("EDGEBAYES_PURE_PYTHON", raising=False)
    why = "edgebayes._core.adwin does not import"
    monkeypatch.setattr(edgebayes, "_compiled_missing", lambda: why)
    assert edgebayes.backend() == "python"
    assert edgebayes.backend_description() == f"python ({why})"


def test_evaluate_says_the_backend_first(backend, capsys):
    assert cli(["evaluate", "--data", str(SENSORS), "--samples", "50"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"backend          {edgebayes.backend_description()}"
    assert first.split()[1] == backend
    assert cli(["evaluate", "--data", str(SENSORS), "--samples", "50", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["backend"] == backend


def test_run_logs_the_backend_first(backend, broker, tmp_path):
    config = write_config(tmp_path / "rt.toml", broker, checkpoint_dir=tmp_path / "ck")
    log = tmp_path / "rt.log"
    proc = subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(config)],
                            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=log.open("wb"))
    try:
        wait_for(lambda: log.read_text().count("\n") >= 2, what="two log lines")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
    first = log.read_text().splitlines()[0].split(" INFO ", 1)[1]
    assert first == f"edgebayes.runtime: backend: {edgebayes.backend_description()}"
    assert first.split()[2] == backend
