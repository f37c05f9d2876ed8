import contextlib
import importlib
import os
from pathlib import Path

import pytest

import edgebayes
import edgebayes._backend
from tests.broker import Broker

BACKENDS = ("compiled", "python")
#: Set (to 1) where the compiled core must be built, as in CI: a missing core fails the
#: compiled half of the backend tests instead of skipping it.
REQUIRE_COMPILED_ENV = "EDGEBAYES_REQUIRE_COMPILED"
#: The reference material beside the repository (data sets, ADWIN vectors, real payloads): not
#: part of edgebayes, so the tests that read it skip without it.
SHARED = Path(__file__).resolve().parents[1].parent / "shared"


def shared_reason(rel: str) -> str | None:
    """The one skip reason of a test that reads ``../shared/<rel>``; None when it is there."""
    path = SHARED / rel
    return None if path.exists() else f"../shared not present: {path}"


def shared_path(rel: str) -> Path:
    """``../shared/<rel>``; skips the calling test (or fixture) with `shared_reason` when absent."""
    reason = shared_reason(rel)
    if reason is not None:
        pytest.skip(reason)
    return SHARED / rel


def needs_shared(rel: str) -> pytest.MarkDecorator:
    """A mark skipping a test (or a parameter) with `shared_reason` when ``../shared/<rel>`` is absent."""
    reason = shared_reason(rel)
    return pytest.mark.skipif(reason is not None, reason=reason or "")


#: public class name -> (the module of its reference, the module of its compiled twin)
_MODULES = {"GaussianNB": ("edgebayes.naive_bayes", "edgebayes._core.naive_bayes"),
            "HoeffdingTreeClassifier": ("edgebayes.tree.hoeffding_tree", "edgebayes._core.tree"),
            "SRPClassifier": ("edgebayes.ensemble.srp", "edgebayes._core.srp"),
            "ADWIN": ("edgebayes.drift.adwin", "edgebayes._core.adwin")}


def _skip_or_fail_without_core(why: str) -> None:
    if os.environ.get(REQUIRE_COMPILED_ENV) == "1" and edgebayes._backend.compiled_missing():
        pytest.fail(f"backend {edgebayes.backend_description()}, but {REQUIRE_COMPILED_ENV}=1")
    pytest.skip(why)


def implementation(name: str, backend: str) -> type:
    """Class ``name`` ("GaussianNB", "HoeffdingTreeClassifier", "SRPClassifier", "ADWIN") of
    ``backend``, whichever backend this process chose at import: the reference, or its compiled
    twin (the test is skipped when the compiled core is not built)."""
    reference, compiled = _MODULES[name]
    if backend == "python":
        return getattr(importlib.import_module(reference), f"Reference{name}")
    if edgebayes._backend.compiled_missing():
        _skip_or_fail_without_core(f"backend {edgebayes.backend_description()}")
    importlib.import_module(reference)  # the compiled twin is reached through its reference
    return getattr(importlib.import_module(compiled), name)


@contextlib.contextmanager
def use_backend(name: str):
    """Runs the block when this process's backend, chosen at import, is ``name`` ("compiled" or
    "python"); skips the test otherwise (``EDGEBAYES_PURE_PYTHON=1`` runs the python half)."""
    if edgebayes.backend() != name:
        _skip_or_fail_without_core(f"backend {edgebayes.backend_description()}, chosen at import; "
                                   f"{edgebayes.PURE_PYTHON_ENV}=1 or unset runs the other half")
    yield name


def pytest_collection_modifyitems(items):
    """Marks every test run per backend ``backends``: ``EDGEBAYES_PURE_PYTHON=1 pytest -m
    backends`` runs their Python half (a process runs the backend it chose at import)."""
    for item in items:
        if "backend" in getattr(item, "fixturenames", ()):
            item.add_marker("backends")


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Runs the test once per backend (``pytestmark = pytest.mark.usefixtures("backend")`` for a
    whole module): the half of this process's backend runs, the other is skipped (see
    `use_backend`); the value is the backend's name."""
    with use_backend(request.param) as name:
        yield name


@pytest.fixture(autouse=True)
def _private_state_dir(tmp_path, monkeypatch):
    """Each test's runtimes keep their default checkpoints (``[checkpoint]`` without ``dir``)
    in its own folder, never in the user's ~/.local/state nor another test's."""
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg-state"))
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)


@pytest.fixture
def broker(tmp_path):
    """A running Mosquitto on a free loopback port (``.host``, ``.port``, ``.stop()``, ``.start()``)."""
    b = Broker(tmp_path / "broker").start()
    yield b
    b.stop()
