import contextlib
import os
from pathlib import Path

import pytest

import edgebayes
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


@contextlib.contextmanager
def use_backend(name: str):
    """Objects built inside the block get backend ``name`` ("compiled" or "python"); the test
    is skipped for "compiled" when the compiled core is not built."""
    saved = os.environ.get(edgebayes.PURE_PYTHON_ENV)
    if name == "python":
        os.environ[edgebayes.PURE_PYTHON_ENV] = "1"
    else:
        os.environ.pop(edgebayes.PURE_PYTHON_ENV, None)
    try:
        if edgebayes.backend() != name:
            if os.environ.get(REQUIRE_COMPILED_ENV) == "1":
                pytest.fail(f"backend {edgebayes.backend_description()}, but {REQUIRE_COMPILED_ENV}=1")
            pytest.skip(f"backend {edgebayes.backend_description()}")
        yield name
    finally:
        if saved is None:
            os.environ.pop(edgebayes.PURE_PYTHON_ENV, None)
        else:
            os.environ[edgebayes.PURE_PYTHON_ENV] = saved


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Runs the test once per backend (``pytestmark = pytest.mark.usefixtures("backend")`` for a
    whole module): what the test builds gets that backend; the value is its name."""
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
