"""A real Mosquitto broker for integration tests, on a free loopback port.

``Broker`` writes a config into a temporary folder, starts ``mosquitto -c`` and waits until the
port accepts connections. Given a whole config with its own ``listener 1883`` line (the shipped
deploy/mosquitto/edgebayes.conf), it runs that text unchanged but for that one line, which gets
the free loopback port (``listener PORT 127.0.0.1``), and appends only where its persistence and
log go. ``stop()`` / ``start()`` restart it on the same port with the same
persistence file, so tests can take the broker away mid-stream and bring it back.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """``n`` distinct free loopback ports: each socket stays bound until all are chosen (one
    at a time, the kernel may hand a port just released out again)."""
    with contextlib.ExitStack() as stack:
        socks = [stack.enter_context(socket.socket()) for _ in range(n)]
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]


def wait_port(host: str, port: int, timeout_s: float = 10.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on {host}:{port} after {timeout_s} s")


#: Set (to 1) where Mosquitto must be present, as in CI: a missing broker fails the broker
#: tests instead of skipping them.
REQUIRE_ENV = "EDGEBAYES_REQUIRE_BROKER"
MISSING = "mosquitto is not installed (apt-get install -y mosquitto): broker tests skipped"


def mosquitto_exe() -> str:
    """The mosquitto binary; skips the calling test when there is none (fails under `REQUIRE_ENV`)."""
    exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
    if not Path(exe).exists():
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{MISSING}, but {REQUIRE_ENV}=1 requires it")
        pytest.skip(MISSING)
    return exe


#: the listener line of a whole config (deploy/mosquitto/edgebayes.conf) that gets the test's port
SHIPPED_LISTENER = re.compile(r"(?m)^listener 1883$")


class Broker:
    def __init__(self, workdir: Path, extra_config: str = "", port: int | None = None):
        exe = mosquitto_exe()
        self.exe = exe
        self.host = "127.0.0.1"
        self.port = port or free_port()
        self.workdir = Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.config = self.workdir / "mosquitto.conf"
        self.log = self.workdir / "mosquitto.log"
        housekeeping = (
            f"persistence_location {self.workdir}/\n"
            f"log_dest file {self.log}\n"
            "log_type error\nlog_type warning\nlog_type notice\n"
            # as root, mosquitto drops to user "mosquitto", which cannot write to a private
            # temp folder: no log and, silently, no persistence across restarts
            + ("user root\n" if os.geteuid() == 0 else "")
        )
        shipped, n = SHIPPED_LISTENER.subn(f"listener {self.port} {self.host}", extra_config, count=1)
        if n:  # a whole config: its listener options stay after its listener line, as shipped
            self.config.write_text(shipped.rstrip("\n") + "\n\n# tests/broker.py\n" + housekeeping)
        else:
            self.config.write_text(
                f"listener {self.port} {self.host}\n"
                "allow_anonymous true\n"
                "persistence true\n"
                "max_queued_messages 100000\n"
                "set_tcp_nodelay true\n"  # no Nagle wait on small packets (latency)
                + housekeeping
                + extra_config
            )
        self.proc: subprocess.Popen | None = None

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self) -> Broker:
        self.proc = subprocess.Popen(
            [self.exe, "-c", str(self.config)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            wait_port(self.host, self.port)
        except TimeoutError:
            self.stop()
            raise RuntimeError(f"mosquitto did not start: {self.log.read_text() if self.log.exists() else ''}") from None
        return self

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: mosquitto writes its persistence file
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
