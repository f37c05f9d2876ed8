"""Which implementation runs: edgebayes.backend(), EDGEBAYES_PURE_PYTHON, and the one line
``edgebayes evaluate`` and ``edgebayes run`` give about it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import edgebayes
from edgebayes.cli import main as cli

ROOT = Path(__file__).resolve().parents[1]
IRIS = ROOT / ".." / "shared" / "data" / "uci_iris" / "iris.csv"


@pytest.mark.parametrize("value, expected", [("1", "python"), ("yes", "python"), ("0", None), ("", None)])
def test_the_environment_variable_forces_the_reference(monkeypatch, value, expected):
    monkeypatch.setenv("EDGEBAYES_PURE_PYTHON", value)
    built = "python" if edgebayes._compiled_missing() else "compiled"
    assert edgebayes.backend() == (expected or built)
    if expected == "python":
        assert edgebayes.backend_description() == f"python (EDGEBAYES_PURE_PYTHON={value})"


def test_without_the_core_the_reference_runs_and_says_why(monkeypatch):
    monkeypatch.delenv("EDGEBAYES_PURE_PYTHON", raising=False)
    monkeypatch.setattr(edgebayes, "_compiled_missing", lambda: "edgebayes._core.adwin does not import")
    assert edgebayes.backend() == "python"
    assert edgebayes.backend_description() == "python (edgebayes._core.adwin does not import)"


def test_evaluate_says_the_backend_first(backend, capsys):
    assert cli(["evaluate", "--data", str(IRIS), "--samples", "50"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == f"backend          {edgebayes.backend_description()}" and first.split()[1] == backend
    assert cli(["evaluate", "--data", str(IRIS), "--samples", "50", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["backend"] == backend


def test_run_logs_the_backend_first(backend, tmp_path):
    done = subprocess.run([sys.executable, "-m", "edgebayes", "run", "--config", str(tmp_path / "none.toml")],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 2  # no such config
    assert done.stderr.splitlines()[0].split(" INFO ", 1)[1].split(" (")[0] == f"edgebayes.runtime: backend: {backend}"
