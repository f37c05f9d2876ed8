"""A thin paho-mqtt 2.x wrapper: the network thread only hands messages over.

- Built with ``CallbackAPIVersion.VERSION2`` and ``client_id`` by keyword (docs/cases.md C37: a
  positional client id hits ``callback_api_version`` in paho 2.x); the message handler's
  signature is checked when the wrapper is built, not when the first message arrives.
- Persistent session: MQTT 5 clean start off with a session expiry interval (MQTT 3.1.1: clean
  session off), a fixed client id, QoS 1 subscriptions renewed in every ``on_connect``.
- Manual acknowledgement: a message is acknowledged by ``ack`` once the consumer is done with
  it, so a message still queued when the process dies is delivered again. The MQTT 5 Receive
  Maximum is set to the consumer's queue size, so the broker should never have more
  unacknowledged messages in flight than the queue can hold. Mosquitto 2.0 does not keep to it
  once acknowledgements flow (tens of thousands seen in flight): ``can_take`` pauses reading
  then, and the messages read while the consumer waits for room in the backlog are held as
  (topic, payload, mid, qos) tuples, at most Receive Maximum of them (a paho message object
  with its properties takes kilobytes); at that bound reading stops too, unless a QoS 1
  message of ours waits for its acknowledgement (reading is then the only way on).
- The network thread is ours, driving paho's external-loop API (``loop_read``/``loop_write``/
  ``loop_misc`` around one ``select``). With ``loop_start`` every ``publish`` and ``ack`` from the
  worker wrote a byte to paho's wake-up socket pair, and each of those syscalls handed the GIL to
  the network thread and back: the two threads ran in lockstep and the wake-ups took a large part of
  the worker's time (docs/results.md, "Figures behind choices in the code"). Here the worker only
  queues; it wakes the network thread (one byte on our own socket pair) just when that thread is
  asleep in ``select``, so a burst of readings costs one wake-up, not two per reading. Reads are
  buffered and the error that ends a connection is kept (``edgebayes.runtime.paho_client``: the one
  override of paho's private API, checked against the paho versions it was tested with).
- Reconnects with exponential backoff (``reconnect_min_s`` doubling up to ``reconnect_max_s``,
  back to the minimum after a connect); each failed attempt is logged in one line with the
  broker's address and why (WARNING for the first three in a row, then INFO): the TLS problem
  and the ``[broker]`` key that fixes it (``edgebayes.runtime.tls``), a refused TCP
  connection, the CONNACK's reason. Status ``online`` retained on connect; ``offline``
  retained as the last will and on ``stop``.
- A refused login (CONNACK "Bad user name or password" or "Not authorized", MQTT 3.1.1's
  return codes 4 and 5) is tried ``LOGIN_TRIES`` times in a row, then the client gives up:
  ``watch.fatal`` says why and the network thread ends (``edgebayes run`` exits with status 3).
- Transport TCP or websockets (``[broker] transport``, ``ws_path``), either with TLS.
- Every callback catches and logs its exceptions with traceback at ERROR and counts them
  (docs/cases.md C31): one bad message never kills the network thread, and is never silent.
- Disconnect reason codes are logged with their MQTT 5 names (docs/cases.md C35).
- TCP_NODELAY on the socket: small packets go out at once instead of waiting for the broker's
  delayed acknowledgement (Nagle), which added up to a reading period (or 40 ms) of latency.
- The outgoing backlog is bounded in bytes (``max_backlog_bytes``): every message published
  and not yet done with (a QoS 0 one until it is written to the socket, a QoS 1 one until the
  broker acknowledges it) counts its topic, its payload and ``PAHO_MESSAGE_BYTES``. The
  consumer calls ``wait_for_room`` before each message it processes: at the bound, or while
  the broker is away, it waits and its readings stay at the broker, unacknowledged; paho's own
  message-count limit is off, so no prediction or alert is refused at a bound. What paho still
  refuses (a QoS 0 message while disconnected) or the broker refuses (a failure PUBACK) is
  counted in ``n_publish_failed``. QoS 0 publishes are never waited for (docs/cases.md C34).
- Session takeover: another client connecting with our client id takes the session, and the
  broker drops us (MQTT 5 reason 142, or, as Mosquitto 2.0.11 does for MQTT 5 clients too, just
  closing the socket, exactly as it does when it is restarted). Told by reason 142, or by
  ``TAKEOVER_LOSSES`` connections in a row each lost within ``TAKEOVER_WINDOW_S`` of being
  made, none of them ended by a broker restart; then it is logged at ERROR, ``alert`` gets a
  ``session_taken_over`` alert, and the next reconnect waits ``reconnect_max_s`` instead of
  taking the session back (and losing it again) every ``reconnect_min_s``. A restart is told
  by a failed connect, or by the broker's retained ``UPTIME_TOPIC`` (subscribed at QoS 0 on
  each connect, never handed to the consumer): an uptime shorter than the time since the
  previous connection was made means the broker started after it (while a broker is younger
  than its sys_interval its uptime reads 0, so a takeover is told only once that has passed).
- Size limit: with ``max_packet_bytes`` the MQTT 5 CONNECT carries a Maximum Packet Size, so
  the broker drops a larger PUBLISH instead of sending it (Mosquitto 2.0.11 logs "Dropping too
  large outgoing PUBLISH"): nothing of it is read or copied here. MQTT 3.1.1 has no such
  property: the broker's ``message_size_limit`` must bound what devices publish.
"""

from __future__ import annotations

import collections
import contextlib
import inspect
import logging
import select
import socket
import threading
from collections.abc import Callable
from pathlib import Path

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from edgebayes.runtime.backlog import Backlog
from edgebayes.runtime.broker_watch import LOGIN_REFUSED, ConnectionWatch
from edgebayes.runtime.config import BrokerConfig
from edgebayes.runtime.messages import Retained
from edgebayes.runtime.paho_client import BufferedClient
from edgebayes.runtime.payloads import OFFLINE, ONLINE
from edgebayes.runtime.tls import tls_context

log = logging.getLogger(__name__)

#: handler(topic, payload, mid, qos); it must return quickly (it runs on the network thread).
#: A payload the broker sent as retained is a ``messages.Retained`` (a bytes subclass).
MessageHandler = Callable[[str, bytes, int, int], None]

#: Mosquitto's retained "<seconds> seconds" since it started (updated every sys_interval, 10 s)
UPTIME_TOPIC = "$SYS/broker/uptime"
#: room in a packet besides the payload: fixed header, topic, packet id, properties (bytes)
PACKET_ROOM = 4096


class MqttClient:
    """One MQTT connection of the runtime.

    Args:
        cfg: the ``[broker]`` table.
        subscriptions: topic filters, subscribed at QoS 1 on every connect.
        status_topic: where ``online`` / ``offline`` are published (retained, QoS 1).
        on_message: called on the network thread as ``on_message(topic, payload, mid, qos)``;
            the consumer must call ``ack(mid, qos)`` when done with the message.
        receive_maximum: most unacknowledged messages the broker may send us (MQTT 5).
        max_backlog_bytes: bound of the outgoing backlog in bytes (module docstring).
        on_connected: called (network thread) after each successful connect, once the broker
            granted the subscriptions (the runtime is then ready to serve).
        can_take: called (network thread) before each incoming packet is read; while it says
            False the socket is not read (the broker and TCP hold the rest) and queued output
            keeps going out. The runtime's worker says False while its queue is full: a
            handler blocked on a full queue would also hold back the acknowledgements and
            predictions waiting to be written. While the consumer waits in ``wait_for_room``
            reading goes on (acknowledgements free the backlog) and messages it cannot take
            are held here, in order, until it can: at most ``receive_maximum`` of them
            (module docstring).
        alert: called (network thread) with a ``session_taken_over`` alert (a dict) on a
            session takeover; it is published on the next connect.
        on_round: called (network thread) after each round of reading, the messages it read
            handed to ``on_message``: a consumer woken once per round, not per message, is
            woken here (``Inbox``).
        max_packet_bytes: the MQTT 5 Maximum Packet Size asked of the broker (None: no limit);
            ``max_payload_bytes + PACKET_ROOM`` for the runtime (module docstring).

    Raises:
        TypeError: ``on_message`` cannot take ``(topic, payload, mid, qos)``.
        OSError: the password file cannot be read.
        ConfigError: a TLS CA, certificate or key file that cannot be read or parsed.
    """

    def __init__(self, cfg: BrokerConfig, *, subscriptions: list[str], status_topic: str,
                 on_message: MessageHandler, receive_maximum: int = 65535,
                 max_backlog_bytes: int = 2**20, on_connected: Callable[[], None] | None = None,
                 can_take: Callable[[], bool] = lambda: True,
                 alert: Callable[[dict], None] | None = None, max_packet_bytes: int | None = None,
                 on_round: Callable[[], None] = lambda: None):
        try:
            inspect.signature(on_message).bind("topic", b"", 0, 0)
        except TypeError:
            raise TypeError(f"on_message {on_message!r} must take (topic, payload, mid, qos)") from None
        self.cfg = cfg
        self.subscriptions = list(subscriptions)
        self.status_topic = status_topic
        self._handler = on_message
        self._on_connected = on_connected
        self._can_take = can_take
        self._on_round = on_round
        self.watch = ConnectionWatch(cfg, alert)
        self.v5 = cfg.protocol == "mqttv5"
        self.connected = threading.Event()
        self.subscribed = threading.Event()  # set once the broker granted every subscription
        self.n_connects = 0
        self.n_callback_errors = 0
        self.n_publish_failed = 0
        self.last_disconnect_reason: paho.ReasonCode | None = None
        self.backlog = Backlog(max_backlog_bytes)
        self._room = threading.Event()  # set by the network thread when room is made
        self._waiting = False  # the consumer waits in wait_for_room
        # (topic, payload, mid, qos) of messages the consumer could not take, at most _max_held
        self._held: collections.deque = collections.deque()
        self._max_held = max(1, min(receive_maximum, 65535))
        self._uptime_mid: int | None = None  # packet id of the UPTIME_TOPIC subscription
        self._stopping = False
        self._halt = threading.Event()  # ends the network thread (and any backoff wait)
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_w.setblocking(False)
        self._idle = False  # the network thread is (about to be) asleep in select
        self._wake_sent = False
        self._awaiting_connack = False  # a socket is open, the broker has not answered yet
        self._refused = False  # the broker's CONNACK refused it (paho then reports a disconnect)

        c = self._client = _paho_client(cfg, status_topic)
        c.on_connect = self._on_connect
        c.on_disconnect = self._on_disconnect
        c.on_message = self._on_message
        c.on_subscribe = self._on_subscribe
        c.on_publish = self._on_publish
        # Not None, so paho never writes to the socket from the worker's thread (it would without
        # a loop thread of its own); queued packets are written by the network thread.
        c.on_socket_register_write = lambda client, userdata, sock: self._wake()
        self._connect_properties = (_connect_properties(cfg, receive_maximum, max_packet_bytes)
                                    if self.v5 else None)

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Connect in the background (retrying with backoff until the broker answers)."""
        cfg = self.cfg
        if cfg.tls_insecure:
            log.warning("[broker] tls_insecure = true: the certificate of %s:%d is not verified, so "
                        "anyone on the way can pose as the broker; for test brokers only", cfg.host, cfg.port)
        if self.v5:
            self._client.connect_async(cfg.host, cfg.port, cfg.keepalive_s, clean_start=False,
                                       properties=self._connect_properties)
        else:
            self._client.connect_async(cfg.host, cfg.port, cfg.keepalive_s)
        self._thread = threading.Thread(target=self._run, name="edgebayes-mqtt", daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> bool:
        """Publish ``offline`` (retained), disconnect cleanly, stop the network thread.

        Returns:
            True when the broker acknowledged ``offline`` within ``timeout_s`` seconds.
        """
        self._stopping = True
        ok = self.connected.is_set() and self.publish_and_wait(
            self.status_topic, OFFLINE, qos=1, retain=True, timeout_s=timeout_s)
        self._client.disconnect()
        self._wake()
        if self._thread is not None and self.connected.is_set():
            self._thread.join(timeout_s)  # it writes the DISCONNECT, the socket closes, it ends
        self._halt.set()  # not connected: it may be waiting to reconnect
        if self._thread is not None:
            self._thread.join(timeout_s)
        return ok

    # --- the network thread -------------------------------------------------------------------
    def _run(self) -> None:
        c = self._client
        first = True
        while not self._halt.is_set():
            if c.socket() is None:
                if self._stopping:
                    return
                if not first and self._halt.wait(self.watch.next_delay_s()):  # as paho does
                    return
                first = False
                self.backlog.forget_qos0()  # paho drops the QoS 0 packets it did not write
                self._refused = False
                try:
                    c.reconnect()
                    self._awaiting_connack = True
                except OSError as exc:  # ssl.SSLError included
                    self.watch.connect_error(exc)
                except Exception:  # noqa: BLE001 (e.g. a TLS setting paho rejects: logged, retried with backoff)
                    self._callback_error("connect")
                continue
            try:
                self._serve(c)
            except Exception:  # noqa: BLE001 (never end the thread: paho's own would die silently)
                self._callback_error("network loop")
                self._halt.wait(self.cfg.reconnect_min_s)

    def _serve(self, c: paho.Client) -> None:
        """One round: wait for the socket (or a wake-up), read, write what is queued, keepalive."""
        sock = c.socket()
        self._idle = True  # before want_write: a packet queued after this check wakes us
        self._deliver_held()
        self._on_round()  # before select, which may sleep: what was delivered is served
        take = self._reading()  # paused: the consumer's acknowledgements wake us
        pending = getattr(sock, "pending", None)  # TLS may hold decrypted bytes select cannot see
        buffered = take and (c.n_buffered() > 0 or (pending is not None and pending() > 0))
        try:
            readable, _, _ = select.select([sock, self._wake_r] if take else [self._wake_r],
                                           [sock] if c.want_write() else [], [],
                                           0.0 if buffered else 1.0 if take else 0.05)
        except (OSError, ValueError):  # the socket was closed under us
            readable = []
        self._idle = False
        if self._wake_r in readable:
            self._wake_r.recv(4096)
            self._wake_sent = False
        if sock in readable or buffered:
            c.loop_read()
            while c.n_buffered() and c.socket() is not None:  # the chunk's rest
                self._deliver_held()
                if not self._reading():
                    break
                if c.want_write():  # what the worker made meanwhile: one send a packet either way
                    c.loop_write()
                c.loop_read()
        self._on_round()
        if c.socket() is not None and c.want_write():
            c.loop_write()  # non-blocking: what the socket cannot take stays queued
        if c.socket() is not None:
            c.loop_misc()

    def _reading(self) -> bool:
        """Whether to read the socket: the consumer takes messages, or it waits for
        acknowledgements that free the backlog (what it cannot take is then held). With
        ``_max_held`` messages held, only while it waits for an acknowledgement of ours."""
        if len(self._held) >= self._max_held:
            return self._waiting and self.backlog.n_qos1 > 0
        return self._waiting or self._can_take()

    def _deliver_held(self) -> None:
        while self._held and self._can_take():
            self._deliver(*self._held.popleft())

    def _wake(self) -> None:
        """Wake the network thread if it sleeps in select (any thread; cheap when it is busy)."""
        if self._idle and not self._wake_sent:
            self._wake_sent = True
            with contextlib.suppress(BlockingIOError):  # a wake-up is already pending
                self._wake_w.send(b"w")

    # --- outgoing ---------------------------------------------------------------------------
    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> paho.MQTTMessageInfo | None:
        """Queue a message; never waits, never refused for the backlog's bound (the consumer
        waits in ``wait_for_room``). None (and counted in ``n_publish_failed``) if paho refuses
        it: a QoS 0 message while disconnected (paho's behaviour); a QoS 1 one stays queued and
        goes out on reconnect.
        """
        info = self._client.publish(topic, payload, qos=qos, retain=retain)
        self._wake()  # paho calls on_socket_register_write only on the first of a run of packets
        rc = info.rc
        if rc == MQTTErrorCode.MQTT_ERR_SUCCESS or (qos > 0 and rc == MQTTErrorCode.MQTT_ERR_NO_CONN):
            self.backlog.add(info.mid, topic, payload, qos)
            return info
        self.n_publish_failed += 1
        return None

    def _done_out(self, mid: int) -> None:
        self.backlog.done(mid)
        if self._waiting and self.has_room():
            self._room.set()

    @property
    def n_held(self) -> int:
        """Messages read while the consumer could not take them, held for it in order (at most
        the Receive Maximum, unless reading must go on for an acknowledgement: module docstring)."""
        return len(self._held)

    def has_room(self) -> bool:
        """Whether the consumer may process a message now: the broker is connected and the
        backlog is under ``max_backlog_bytes`` and `edgebayes.runtime.backlog.MAX_OUT_MESSAGES`."""
        return self.connected.is_set() and self.backlog.under_bounds()

    def wait_for_room(self, timeout_s: float) -> bool:
        """Wait (the consumer, before each message) until ``has_room``, at most ``timeout_s``
        seconds; returns ``has_room()``. While it waits, the network thread goes on reading
        (acknowledgements free the backlog) and holds the messages the consumer cannot take.
        The consumer calls it again after its periodic work: readings wait at the broker,
        unacknowledged, for as long as the backlog is full or the broker is away."""
        if self.has_room():
            return True
        self._waiting = True
        self._room.clear()
        try:
            self._wake()  # the network thread reads again (acknowledgements) and writes
            if not self.has_room():
                self._room.wait(timeout_s)
            return self.has_room()
        finally:
            self._waiting = False

    def publish_and_wait(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False,
                         timeout_s: float = 5.0) -> bool:
        """Publish and, for QoS >= 1, wait up to ``timeout_s`` for the broker's acknowledgement.

        A QoS 0 message has no acknowledgement, so it is never waited for (docs/cases.md C34): the
        result is whether paho accepted it.
        """
        info = self.publish(topic, payload, qos=qos, retain=retain)
        if info is None:
            return False
        if qos == 0:
            return True
        try:
            info.wait_for_publish(timeout_s)
        except (RuntimeError, ValueError):
            return False
        return info.is_published()

    def ack(self, mid: int, qos: int) -> None:
        """Acknowledge an incoming message (safe from any thread: paho queues the packet)."""
        if qos > 0:
            self._client.ack(mid, qos)
            self._wake()

    # --- callbacks (network thread) ----------------------------------------------------------
    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        try:
            self._awaiting_connack = False
            if reason_code.is_failure:
                self._refused = True
                if reason_code.value in LOGIN_REFUSED:
                    if self.watch.login_refused(reason_code):
                        self._halt.set()
                else:
                    self.watch.connect_failed(f"the broker refused the connection: {reason_code.getName()} "
                                         f"({reason_code.value})")
                return
            log.info("connected to %s:%d (session present: %s)", self.cfg.host, self.cfg.port,
                     flags.session_present)
            if self.cfg.transport == "tcp":  # paho's websocket wrapper does not show its socket
                _no_delay(client.socket())
            if self.v5:
                client.subscribe([(f, SubscribeOptions(qos=1)) for f in self.subscriptions])
            else:
                client.subscribe([(f, 1) for f in self.subscriptions])
            self._uptime_mid = client.subscribe(UPTIME_TOPIC, 0)[1]  # its own SUBACK, granted or not
            self.publish(self.status_topic, ONLINE, qos=1, retain=True)
            self.n_connects += 1
            self.watch.connected()
            self.connected.set()
            self._room.set()
        except Exception:  # noqa: BLE001 (counted and logged: docs/cases.md C31)
            self._callback_error("on_connect")

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        try:
            self.connected.clear()
            self.subscribed.clear()
            self.last_disconnect_reason = reason_code
            if self._refused:  # logged by _on_connect; paho follows a refusal with "Protocol error"
                self._refused = False
                return
            if self._stopping and not reason_code.is_failure:
                log.info("disconnected")
                return
            if self._awaiting_connack:  # closed before the broker answered: a failed connect
                self._awaiting_connack = False
                self.watch.connect_error(self._client.last_error)
                return
            log.warning("disconnected from the broker: %s (%d); reconnecting with backoff",
                        reason_code.getName(), reason_code.value)
            if not self._stopping:
                self.watch.lost(reason_code)
        except Exception:  # noqa: BLE001 (counted and logged: docs/cases.md C31)
            self._callback_error("on_disconnect")

    def _on_subscribe(self, client, userdata, mid, reason_code_list, properties) -> None:
        try:
            if mid == self._uptime_mid:  # a broker without it, or an ACL denying it: no restart told
                return
            refused = [(f, rc) for f, rc in zip(self.subscriptions, reason_code_list) if rc.is_failure]
            for f, rc in refused:
                log.error("subscription to %s refused: %s", f, rc.getName())
            if not refused:
                self.subscribed.set()
                if self._on_connected is not None:
                    self._on_connected()
        except Exception:  # noqa: BLE001 (counted and logged: docs/cases.md C31)
            self._callback_error("on_subscribe")

    def _on_publish(self, client, userdata, mid, reason_code, properties) -> None:
        try:
            if reason_code.is_failure:  # the broker refused it (e.g. not authorized)
                self.n_publish_failed += 1
            self._done_out(mid)
        except Exception:  # noqa: BLE001 (counted and logged: docs/cases.md C31)
            self._callback_error("on_publish")

    def _on_message(self, client, userdata, msg) -> None:
        try:
            topic = msg.topic  # decoded from bytes at each access: once here
        except Exception:  # noqa: BLE001 (a topic that is not UTF-8: counted, logged, acknowledged)
            self._callback_error("on_message")
            self.ack(msg.mid, msg.qos)
            return
        if topic == UPTIME_TOPIC:
            self.watch.uptime(msg.payload)
            return
        item = (topic, Retained(msg.payload) if msg.retain else msg.payload, msg.mid, msg.qos)
        if self._held or not self._can_take():  # in order, after the ones held before it
            self._held.append(item)
        else:
            self._deliver(*item)

    def _deliver(self, topic: str, payload: bytes, mid: int, qos: int) -> None:
        try:
            self._handler(topic, payload, mid, qos)
        except Exception:  # noqa: BLE001 (counted and logged: docs/cases.md C31)
            self._callback_error("on_message")
            self.ack(mid, qos)  # counted and logged: do not leave it in flight

    def _callback_error(self, where: str) -> None:
        self.n_callback_errors += 1
        log.exception("error in MQTT %s callback (counted: %d so far)", where, self.n_callback_errors)


def _paho_client(cfg: BrokerConfig, status_topic: str) -> BufferedClient:
    """paho's client for ``cfg``: manual acknowledgements, the ``offline`` will, no message-count
    limit (the backlog is bounded in bytes), the login and TLS of ``[broker]``."""
    v5 = cfg.protocol == "mqttv5"
    c = BufferedClient(
        callback_api_version=CallbackAPIVersion.VERSION2,
        client_id=cfg.client_id,
        protocol=MQTTProtocolVersion.MQTTv5 if v5 else MQTTProtocolVersion.MQTTv311,
        clean_session=None if v5 else False,
        transport=cfg.transport,
        manual_ack=True,
    )
    if cfg.transport == "websockets":
        c.ws_set_options(path=cfg.ws_path)
    c.will_set(status_topic, OFFLINE, qos=1, retain=True)
    c.max_queued_messages_set(0)
    c.max_inflight_messages_set(100)
    if cfg.username is not None:
        password = None
        if cfg.password_file is not None:  # first line; a file keeps it out of the config
            password = (Path(cfg.password_file).read_text().splitlines() or [""])[0]
        c.username_pw_set(cfg.username, password)
    context = tls_context(cfg)
    if context is not None:
        c.tls_set_context(context)
    return c


def _connect_properties(cfg: BrokerConfig, receive_maximum: int, max_packet_bytes: int | None) -> Properties:
    """The MQTT 5 CONNECT's properties: session expiry, Receive Maximum, Maximum Packet Size."""
    props = Properties(PacketTypes.CONNECT)
    props.SessionExpiryInterval = cfg.session_expiry_s
    props.ReceiveMaximum = max(1, min(receive_maximum, 65535))
    if max_packet_bytes is not None:
        props.MaximumPacketSize = max_packet_bytes
    return props


def _no_delay(sock) -> None:
    """Turn Nagle's algorithm off: a prediction or an acknowledgement is one small packet, and
    with Nagle it waits for the broker's (delayed, up to 40 ms) TCP acknowledgement of the
    previous one, which put a reading period on every prediction's latency."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (AttributeError, OSError) as exc:  # not a TCP socket (e.g. a unix socket)
        log.warning("TCP_NODELAY not set: %s", exc)
