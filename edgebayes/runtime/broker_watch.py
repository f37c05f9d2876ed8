"""What the runtime's MQTT connection tells about the broker: failed connects, refused logins,
session takeovers and restarts, and the reconnect delay that follows (``MqttClient``'s network
thread calls it; the rules are in `edgebayes.runtime.mqtt`'s module docstring).

- A failed connect is logged in one line with the broker's address and why (WARNING for the
  first three in a row, then INFO), the ``[broker]`` key that fixes it where one does.
- A refused login is tried ``LOGIN_TRIES`` times in a row, then ``fatal`` says why.
- A takeover (MQTT 5 reason 142, or ``TAKEOVER_LOSSES`` connections in a row each lost within
  ``TAKEOVER_WINDOW_S``, none ended by a broker restart) is logged at ERROR, alerted, and the
  next reconnect waits ``reconnect_max_s``.
"""

from __future__ import annotations

import logging
import socket
import ssl
import time
from collections.abc import Callable

import paho.mqtt.client as paho

from edgebayes.runtime.config import BrokerConfig
from edgebayes.runtime.payloads import session_alert
from edgebayes.runtime.tls import describe_tls_error

log = logging.getLogger("edgebayes.runtime.mqtt")  # one logger for the connection's story

#: MQTT 5 DISCONNECT reason "Session taken over".
SESSION_TAKEN_OVER = 142
#: Connections lost this soon after being made, this many times in a row, are a takeover.
TAKEOVER_WINDOW_S = 10.0
TAKEOVER_LOSSES = 3
#: CONNACK reasons of a refused login: "Bad user name or password", "Not authorized" (paho
#: gives MQTT 3.1.1's return codes 4 and 5 these MQTT 5 values)
LOGIN_REFUSED = (134, 135)
#: refused logins in a row before the client gives up (``ConnectionWatch.fatal``)
LOGIN_TRIES = 3


class ConnectionWatch:
    """The connection's failures and takeovers, and the reconnect delay (network thread).

    Args:
        cfg: the ``[broker]`` table.
        alert: called with a ``session_taken_over`` alert (a dict) on a takeover, or None.

    Attributes:
        n_connect_failures: failed attempts in a row, since the last connect.
        n_login_refusals: refused logins in a row, since the last connect.
        n_takeovers: session takeovers told.
        fatal: why the client gave up (a refused login ``LOGIN_TRIES`` times); set once.
    """

    def __init__(self, cfg: BrokerConfig, alert: Callable[[dict], None] | None = None):
        self.cfg = cfg
        self._alert = alert
        self.n_connect_failures = 0
        self.n_login_refusals = 0
        self.n_takeovers = 0
        self.fatal: str | None = None
        self._connected_at: float | None = None
        self._lost_conn_at: float | None = None  # when the connection lost last was made (monotonic)
        self._n_quick_losses = 0  # connections in a row lost within TAKEOVER_WINDOW_S
        self._hold_off = False  # a takeover: the next reconnect waits reconnect_max_s
        self._backoff_s: float | None = None  # reconnect delay; None after a connect

    def next_delay_s(self) -> float:
        """The wait before the next reconnect: doubling from ``reconnect_min_s`` up to
        ``reconnect_max_s``, the maximum at once after a takeover."""
        cfg = self.cfg
        self._backoff_s = (cfg.reconnect_max_s if self._hold_off else cfg.reconnect_min_s
                           if self._backoff_s is None else min(2 * self._backoff_s, cfg.reconnect_max_s))
        self._hold_off = False
        return self._backoff_s

    def connected(self) -> None:
        """A connect the broker accepted: the counts in a row and the backoff start again."""
        self.n_connect_failures = 0
        self.n_login_refusals = 0
        self._backoff_s = None
        self._connected_at = time.monotonic()

    def connect_failed(self, why: str) -> None:
        """Count and log a failed connection attempt, saying why."""
        self.n_connect_failures += 1
        self._n_quick_losses = 0  # the broker away (a restart), not a takeover
        # WARNING for the first failures, then INFO: a broker down for hours is not a flood
        level = logging.WARNING if self.n_connect_failures <= 3 else logging.INFO
        cfg = self.cfg
        log.log(level, "cannot connect to the broker %s:%d: %s (attempt %d); retrying with backoff "
                "(%g s up to %g s)", cfg.host, cfg.port, why, self.n_connect_failures,
                cfg.reconnect_min_s, cfg.reconnect_max_s)

    def connect_error(self, exc: OSError | None) -> None:
        """A connect that failed with ``exc`` (None: ended before the CONNACK, no socket error)."""
        self.connect_failed(_ended(self.cfg) if exc is None else _why(exc, self.cfg))

    def login_refused(self, reason_code: paho.ReasonCode) -> bool:
        """A refused login, retried up to ``LOGIN_TRIES`` times in a row; True once it gives up."""
        self.n_connect_failures += 1
        self.n_login_refusals += 1
        cfg = self.cfg
        who = f"user {cfg.username!r}" if cfg.username is not None else "an anonymous client (no [broker] username)"
        why = (f"the broker {cfg.host}:{cfg.port} refused the login of {who}: {reason_code.getName()} "
               f"({reason_code.value})")
        if self.n_login_refusals < LOGIN_TRIES:
            log.warning("%s (attempt %d of %d)", why, self.n_login_refusals, LOGIN_TRIES)
            return False
        self.fatal = (f"{why}, {LOGIN_TRIES} times in a row; check [broker] username and password_file "
                      "against the broker's password file and ACL")
        log.error("%s; giving up", self.fatal)
        return True

    def lost(self, reason_code: paho.ReasonCode) -> None:
        """An accepted connection lost: a takeover when the broker says so or when it keeps
        closing them soon after they are made."""
        if self._connected_at is None:
            return
        quick = time.monotonic() - self._connected_at < TAKEOVER_WINDOW_S
        self._n_quick_losses = self._n_quick_losses + 1 if quick else 0
        self._lost_conn_at, self._connected_at = self._connected_at, None
        if reason_code.value == SESSION_TAKEN_OVER or self._n_quick_losses >= TAKEOVER_LOSSES:
            self._taken_over(reason_code)

    def _taken_over(self, reason_code: paho.ReasonCode) -> None:
        """Another client took our session: say so (log, alert) and back off."""
        self.n_takeovers += 1
        self._hold_off = True
        cid, wait_s = self.cfg.client_id, self.cfg.reconnect_max_s
        if reason_code.value == SESSION_TAKEN_OVER:
            why = f"the broker says {reason_code.getName()}"
        else:
            why = (f"the broker closed {self._n_quick_losses} connections in a row within "
                   f"{TAKEOVER_WINDOW_S:g} s of their start")
        log.error("session taken over: another process connected with client id %s (%s): a second "
                  "runtime with the same [broker] client_id? Reconnecting in %g s (reconnect_max_s), "
                  "not at once, so the two do not take the session from each other every second. "
                  "Give each client its own client id (with deploy/mosquitto/edgebayes.conf the "
                  "broker uses the user name)", cid, why, wait_s)
        if self._alert is not None:
            self._alert(session_alert(cid, why, self.n_takeovers, wait_s))

    def uptime(self, payload: bytes) -> None:
        """The broker's uptime: shorter than the time since the connection lost last was made,
        the broker was restarted since, and that loss was no takeover."""
        try:
            uptime_s = float(payload.split()[0])
        except (IndexError, ValueError):
            return
        lost = self._lost_conn_at
        if lost is not None and uptime_s < time.monotonic() - lost and self._n_quick_losses:
            log.info("the broker was restarted (up %g s): the connection lost was no session takeover", uptime_s)
            self._n_quick_losses = 0


def _why(exc: OSError, cfg: BrokerConfig) -> str:
    """Why a connection attempt failed, in one line (the ``[broker]`` key to set when one does)."""
    if isinstance(exc, ssl.SSLError):
        return describe_tls_error(exc, cfg)
    if isinstance(exc, paho.WebsocketConnectionError):
        return f"websockets: {exc} (is port {cfg.port} a websockets listener, with path {cfg.ws_path}?)"
    if isinstance(exc, ConnectionResetError) and cfg.tls:
        return f"the connection was reset during the TLS handshake (is port {cfg.port} a TLS listener?)"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (no broker listening on this port)"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host name {cfg.host!r} ({exc.strerror})"
    if isinstance(exc, TimeoutError):
        return "no answer (timed out)"
    return f"{type(exc).__name__}: {exc}"


def _ended(cfg: BrokerConfig) -> str:
    """Why a connection ended before the broker's CONNACK, with no socket error to tell."""
    if cfg.transport == "tcp" and not cfg.tls:  # a websockets or TLS listener closes plain MQTT
        return (f"the connection ended before the broker accepted it (is port {cfg.port} a websockets "
                "or TLS listener? see [broker] transport and tls_ca_file)")
    return "the connection ended before the broker accepted it"
