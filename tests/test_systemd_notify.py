"""sd_notify from the runtime (edgebayes/runtime/systemd.py), on a real unix datagram socket.

The end-to-end test plays systemd: it binds the socket, passes it in NOTIFY_SOCKET with a
watchdog interval to ``edgebayes run`` in a subprocess, and checks READY=1 only once the broker
is there, WATCHDOG=1 at half the interval, STOPPING=1 on SIGTERM and exit status 0.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from edgebayes.runtime.systemd import Notifier

REPO = Path(__file__).resolve().parents[1]


class NotifySocket:
    """What systemd listens on: a bound unix datagram socket (short path: sun_path <= 107 bytes)."""

    def __init__(self, abstract: bool = False):
        self.dir = tempfile.mkdtemp(prefix="ebn", dir="/tmp")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        if abstract:
            name = f"edgebayes-test-{os.getpid()}-{id(self)}"
            self.sock.bind("\0" + name)
            self.env_value = "@" + name
        else:
            self.env_value = f"{self.dir}/notify"
            self.sock.bind(self.env_value)
        self.messages: list[tuple[float, str]] = []

    def receive(self, timeout_s: float) -> list[str]:
        """Collect what arrives within ``timeout_s``; returns the new messages."""
        new = []
        deadline = time.monotonic() + timeout_s
        while (left := deadline - time.monotonic()) > 0:
            self.sock.settimeout(left)
            try:
                data = self.sock.recv(4096)
            except TimeoutError:
                break
            self.messages.append((time.monotonic(), data.decode()))
            new.append(data.decode())
        return new

    def wait_for(self, prefix: str, timeout_s: float) -> float:
        """Monotonic arrival time of the first message starting with ``prefix``."""
        deadline = time.monotonic() + timeout_s
        while True:
            for t, m in self.messages:
                if m.startswith(prefix):
                    return t
            if time.monotonic() > deadline:
                raise AssertionError(f"no {prefix!r} within {timeout_s} s; got {self.messages}")
            self.receive(0.05)

    def close(self):
        self.sock.close()
        if not self.env_value.startswith("@"):
            Path(self.env_value).unlink()
        os.rmdir(self.dir)


@pytest.fixture
def notify_socket():
    s = NotifySocket()
    yield s
    s.close()


def test_without_notify_socket_every_call_is_a_no_op():
    n = Notifier({"WATCHDOG_USEC": "1000000"})
    assert not n.enabled and n.watchdog_interval_s is None
    n.ready(), n.watchdog(), n.stopping()
    assert n.notify("READY=1") is False
    assert n.n_sent == 0 and n.n_failed == 0


@pytest.mark.parametrize("abstract", [False, True])
def test_ready_and_stopping_reach_the_socket(abstract):
    s = NotifySocket(abstract=abstract)
    try:
        n = Notifier({"NOTIFY_SOCKET": s.env_value})
        assert n.enabled and n.watchdog_interval_s is None
        n.ready()
        n.watchdog()  # no WATCHDOG_USEC: nothing sent
        n.stopping()
        assert s.receive(0.2) == [
            "READY=1\nSTATUS=connected to the broker, serving",
            "STOPPING=1\nSTATUS=stopping: draining the queue, checkpointing",
        ]
        assert n.n_sent == 2
        n.close()
    finally:
        s.close()


def test_watchdog_is_fed_at_half_the_interval(notify_socket):
    now = [100.0]
    n = Notifier(
        {
            "NOTIFY_SOCKET": notify_socket.env_value,
            "WATCHDOG_USEC": "1000000",
            "WATCHDOG_PID": str(os.getpid()),
        },
        clock=lambda: now[0],
    )
    assert n.watchdog_interval_s == 1.0
    sent_at = []
    for t in [100.0, 100.2, 100.49, 100.5, 100.7, 100.99, 101.0, 102.6]:
        now[0] = t
        before = n.n_sent
        n.watchdog()
        if n.n_sent > before:
            sent_at.append(t)
    assert sent_at == [100.0, 100.5, 101.0, 102.6]
    assert notify_socket.receive(0.2) == ["WATCHDOG=1"] * 4


@pytest.mark.parametrize(
    "env, expected",
    [
        ({"WATCHDOG_USEC": "30000000"}, 30.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1"}, None),  # another process's watchdog
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
    ],
)
def test_watchdog_interval_from_the_environment(env, expected):
    assert Notifier({"NOTIFY_SOCKET": "/run/x", **env}).watchdog_interval_s == expected


def test_a_missing_socket_is_logged_and_counted_never_raised(tmp_path, caplog):
    n = Notifier({"NOTIFY_SOCKET": str(tmp_path / "gone")})
    assert n.notify("READY=1") is False
    assert n.n_failed == 1 and "READY=1" in caplog.text


def test_runtime_notifies_ready_once_connected_feeds_the_watchdog_and_stops(
    broker, tmp_path, notify_socket
):
    config = tmp_path / "edgebayes.toml"
    config.write_text(f"""
[broker]
host = "{broker.host}"
port = {broker.port}
client_id = "edgebayes-notify-test"
reconnect_min_s = 0.1
reconnect_max_s = 0.3
[schema]
features = ["a", "b"]
[[models]]
name = "nb"
kind = "gaussian_nb"
""")
    broker.stop()  # not ready while the broker is away
    env = {**os.environ, "NOTIFY_SOCKET": notify_socket.env_value, "WATCHDOG_USEC": "1000000"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "edgebayes",
            "run",
            "--config",
            str(config),
            "--log-level",
            "WARNING",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        # start-up (imports) may take seconds on a loaded machine: wait for the first message
        notify_socket.wait_for("WATCHDOG=1", timeout_s=30)  # a keep-alive while connecting
        notify_socket.receive(1.0)
        assert not [m for _, m in notify_socket.messages if m.startswith("READY=1")]
        broker.start()
        t_ready = notify_socket.wait_for("READY=1", timeout_s=10)
        notify_socket.receive(2.0)
        after = [t for t, m in notify_socket.messages if m == "WATCHDOG=1" and t > t_ready]
        # every 0.5 s over 2 s: not at every 0.2 s tick (10), never a gap systemd would kill at
        assert 2 <= len(after) <= 5
        assert max(b - a for a, b in zip([t_ready, *after], after)) < 1.0
        proc.send_signal(signal.SIGTERM)
        notify_socket.wait_for("STOPPING=1", timeout_s=10)
        assert proc.wait(timeout=15) == 0, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
