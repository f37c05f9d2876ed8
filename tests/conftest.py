import pytest

from tests.broker import Broker


@pytest.fixture
def broker(tmp_path):
    """A running Mosquitto on a free loopback port (``.host``, ``.port``, ``.stop()``, ``.start()``)."""
    b = Broker(tmp_path / "broker").start()
    yield b
    b.stop()
