"""Which implementation runs: edgebayes.backend(), EDGEBAYES_PURE_PYTHON, and the one line
``edgebayes evaluate`` and ``edgebayes run`` give about it."""

from __future__ import annotations

import inspect
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import edgebayes
import edgebayes._backend
from edgebayes.cli import main as cli
from tests.conftest import BACKENDS, implementation
from tests.data_files import SENSORS
from tests.runtime_client import wait_for, write_config

ROOT = Path(__file__).resolve().parents[1]


#: the public learner classes: (module, name)
LEARNERS = [("edgebayes.naive_bayes", "GaussianNB"), ("edgebayes.tree", "HoeffdingTreeClassifier"),
            ("edgebayes.ensemble", "SRPClassifier"), ("edgebayes.drift", "ADWIN")]
#: prints the backend, its description and, per public learner, the module of the object built
PROBE = f"""
import importlib, os, sys
import edgebayes
if sys.argv[1] == "set":
    os.environ["EDGEBAYES_PURE_PYTHON"] = "1"
if sys.argv[1] == "unset":
    os.environ.pop("EDGEBAYES_PURE_PYTHON", None)
print(edgebayes.backend())
print(edgebayes.backend_description())
for module, name in {LEARNERS!r}:
    print(type(getattr(importlib.import_module(module), name)()).__module__)
"""
#: one compiled module unimportable, as where no C compiler built the core
NO_CORE = "import sys\nsys.modules['edgebayes._core.adwin'] = None\n"


def _probe(value: str | None, after: str = "keep", prelude: str = "") -> list[str]:
    """The probe's lines in a process started with ``EDGEBAYES_PURE_PYTHON=value`` (unset for
    None) that sets (``after="set"``) or unsets it (``"unset"``) once edgebayes is imported."""
    env = {k: v for k, v in os.environ.items() if k != edgebayes.PURE_PYTHON_ENV}
    if value is not None:
        env[edgebayes.PURE_PYTHON_ENV] = value
    done = subprocess.run([sys.executable, "-c", prelude + PROBE, after], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.splitlines()


def _built_modules(backend: str) -> list[str]:
    compiled = {"GaussianNB": "edgebayes._core.naive_bayes", "HoeffdingTreeClassifier": "edgebayes._core.tree",
                "SRPClassifier": "edgebayes._core.srp", "ADWIN": "edgebayes._core.adwin"}
    reference = {"GaussianNB": "edgebayes.naive_bayes", "HoeffdingTreeClassifier": "edgebayes.tree.hoeffding_tree",
                 "SRPClassifier": "edgebayes.ensemble.srp", "ADWIN": "edgebayes.drift.adwin"}
    return [(compiled if backend == "compiled" else reference)[name] for _, name in LEARNERS]


@pytest.mark.parametrize(
    "value, expected", [("1", "python"), ("yes", "python"), ("0", None), ("", None), (None, None)]
)
def test_the_environment_variable_forces_the_reference(value, expected):
    built = "python" if edgebayes._backend.compiled_missing() else "compiled"
    lines = _probe(value)
    assert lines[0] == (expected or built)
    if expected == "python":
        assert lines[1] == f"python (EDGEBAYES_PURE_PYTHON={value})"
    assert lines[2:] == _built_modules(expected or built)


@pytest.mark.parametrize("value, after", [(None, "set"), ("1", "unset")])
def test_the_backend_is_chosen_once_at_import(value, after):
    """Changing the variable once edgebayes is imported changes neither `backend()` nor the
    classes, even those of modules imported later."""
    before = _probe(value)
    assert _probe(value, after) == before


def test_without_the_core_the_reference_runs_and_says_why():
    lines = _probe(None, prelude=NO_CORE)
    assert lines[0] == "python"
    assert lines[1] == "python (edgebayes._core.adwin is not built; a C compiler at install time builds it)"
    assert lines[2:] == _built_modules("python")


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", [name for _, name in LEARNERS])
def test_each_learner_class_has_the_signature_of_its_init(backend, name):
    """Defaults written once, in ``__init__``: the class's signature (what ``clone``, ``repr``
    and the config read) is ``__init__``'s without ``self``."""
    cls = implementation(name, backend)
    init = inspect.signature(cls.__init__)
    assert inspect.signature(cls) == init.replace(parameters=list(init.parameters.values())[1:])
    assert "args" not in inspect.signature(cls).parameters


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
