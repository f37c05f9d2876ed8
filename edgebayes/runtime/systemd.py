"""systemd service notifications (``sd_notify``) with the standard library only.

Under ``Type=notify`` systemd passes a unix datagram socket in ``NOTIFY_SOCKET`` (a path, or
``@name`` for the abstract namespace) and, with ``WatchdogSec=``, the watchdog interval in
``WATCHDOG_USEC`` (microseconds; meant for the process ``WATCHDOG_PID`` when that is set). The
runtime sends ``READY=1`` once it is connected and subscribed, ``WATCHDOG=1`` from its worker
loop at half the interval (so a hung worker stops the keep-alives and systemd restarts the
service), and ``STOPPING=1`` when a clean shutdown begins. Protocol: sd_notify(3) and
systemd.service(5). Without ``NOTIFY_SOCKET`` every call does nothing.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)


class Notifier:
    """Sends service state to systemd's notification socket.

    Args:
        environ: where ``NOTIFY_SOCKET``, ``WATCHDOG_USEC`` and ``WATCHDOG_PID`` are read
            (default ``os.environ``).
        clock: monotonic seconds (for tests).

    Attributes:
        address: the socket address (str path, or bytes starting with NUL for an abstract
            socket), None when not run by systemd with ``Type=notify``.
        watchdog_interval_s: the watchdog timeout in seconds, None when there is no watchdog
            for this process.
        n_sent, n_failed: notifications sent and failed (a failure is logged, never raised).
    """

    def __init__(
        self, environ: Mapping[str, str] | None = None, clock: Callable[[], float] = time.monotonic
    ):
        env = os.environ if environ is None else environ
        raw = env.get("NOTIFY_SOCKET") or None
        self.address: str | bytes | None = None
        if raw is not None:
            self.address = b"\0" + raw[1:].encode() if raw.startswith("@") else raw
        self.watchdog_interval_s = _watchdog_interval_s(env) if self.address is not None else None
        self._clock = clock
        self._next_watchdog = -float("inf")
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self.n_sent = self.n_failed = 0

    @property
    def enabled(self) -> bool:
        return self.address is not None

    def notify(self, state: str) -> bool:
        """Send ``state`` (newline-separated ``KEY=value`` lines); True when sent.

        False, without raising, when disabled or when the socket refuses (logged at WARNING).
        """
        if self.address is None:
            return False
        with self._lock:
            try:
                if self._sock is None:
                    self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
                self._sock.sendto(state.encode(), self.address)
            except OSError as exc:
                self.n_failed += 1
                log.warning("systemd notification %r failed: %s", state, exc)
                return False
            self.n_sent += 1
            return True

    def ready(self) -> None:
        """``READY=1``: the runtime is connected and subscribed (sent after every connect:
        systemd ignores repeats, and the status line tells a reconnect)."""
        self.notify("READY=1\nSTATUS=connected to the broker, serving")

    def watchdog(self) -> None:
        """``WATCHDOG=1`` if half the watchdog interval passed since the last one; call it
        often (the worker calls it every tick)."""
        if self.watchdog_interval_s is None:
            return
        now = self._clock()
        if now >= self._next_watchdog:
            self._next_watchdog = now + self.watchdog_interval_s / 2
            self.notify("WATCHDOG=1")

    def stopping(self) -> None:
        """``STOPPING=1``: a clean shutdown began (drain, checkpoint, ``offline``)."""
        self.notify("STOPPING=1\nSTATUS=stopping: draining the queue, checkpointing")

    def close(self) -> None:
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None


def _watchdog_interval_s(env: Mapping[str, str]) -> float | None:
    usec, pid = env.get("WATCHDOG_USEC"), env.get("WATCHDOG_PID")
    if pid and pid != str(os.getpid()):
        return None  # the watchdog belongs to another process (e.g. a wrapper script)
    try:
        value = int(usec) if usec else 0
    except ValueError:
        log.warning("WATCHDOG_USEC=%r is not an integer; no watchdog keep-alives", usec)
        return None
    return value / 1e6 if value > 0 else None


def hooks(notifier: Notifier) -> dict[str, list[Callable[[], None]]]:
    """The ``Runtime`` hooks that feed ``notifier`` (``ready_hooks``, ``tick_hooks``; none when
    it is not enabled); call its ``stopping()`` when the shutdown begins."""
    if not notifier.enabled:
        return {"ready_hooks": [], "tick_hooks": []}
    log.info(
        "systemd notifications on %s (watchdog every %s s)",
        os.environ["NOTIFY_SOCKET"],
        None if notifier.watchdog_interval_s is None else notifier.watchdog_interval_s / 2,
    )
    return {"ready_hooks": [notifier.ready], "tick_hooks": [notifier.watchdog]}
