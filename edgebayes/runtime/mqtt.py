"""A thin paho-mqtt 2.x wrapper: the network thread only hands messages over.

- Built with ``CallbackAPIVersion.VERSION2`` and ``client_id`` by keyword (casebook C37: a
  positional client id hits ``callback_api_version`` in paho 2.x); the message handler's
  signature is checked when the wrapper is built, not when the first message arrives.
- Persistent session: MQTT 5 clean start off with a session expiry interval (MQTT 3.1.1: clean
  session off), a fixed client id, QoS 1 subscriptions renewed in every ``on_connect``.
- Manual acknowledgement: a message is acknowledged by ``ack`` once the consumer is done with
  it, so a message still queued when the process dies is delivered again. The MQTT 5 Receive
  Maximum is set to the consumer's queue size, so the broker should never have more
  unacknowledged messages in flight than the queue can hold (Mosquitto was seen sending a few
  more: ``can_take`` pauses reading then).
- The network thread is ours, driving paho's external-loop API (``loop_read``/``loop_write``/
  ``loop_misc`` around one ``select``). With ``loop_start`` every ``publish`` and ``ack`` from
  the worker wrote a byte to paho's wake-up socket pair, and each of those syscalls handed the
  GIL to the network thread and back: the two threads ran in lockstep and the wake-ups took
  ~45 % of the worker's time. Here the worker only queues; it wakes the network thread
  (one byte on our own socket pair) just when that thread is asleep in ``select``, so a burst
  of readings costs one wake-up, not two per reading. Reads are buffered (``_BufferedClient``):
  paho asks the socket for each packet's command byte, each length byte and the body apart.
- Reconnects with exponential backoff (``reconnect_min_s`` doubling up to ``reconnect_max_s``,
  back to the minimum after a connect); each failed attempt is logged with the broker's
  address (WARNING for the first three in a row, then INFO). Status ``online`` retained on
  connect; ``offline`` retained as the last will and on ``stop``.
- Every callback catches and logs its exceptions with traceback at ERROR and counts them
  (casebook C31): one bad message never kills the network thread, and is never silent.
- Disconnect reason codes are logged with their MQTT 5 names (casebook C35).
- TCP_NODELAY on the socket: small packets go out at once instead of waiting for the broker's
  delayed acknowledgement (Nagle), which added up to a reading period (or 40 ms) of latency.
- Outgoing traffic is bounded: ``max_queued_out`` QoS>0 messages, and as many QoS 0 packets
  waiting for the socket; beyond that ``publish`` refuses and counts. QoS 0 publishes are
  never waited for (casebook C34).
"""

from __future__ import annotations

import inspect
import logging
import select
import socket
import threading
import time
from collections.abc import Callable
from pathlib import Path

import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTErrorCode, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties
from paho.mqtt.subscribeoptions import SubscribeOptions

from edgebayes.runtime.config import BrokerConfig
from edgebayes.runtime.protocol import Retained

log = logging.getLogger(__name__)

#: handler(topic, payload, mid, qos); it must return quickly (it runs on the network thread).
#: A payload the broker sent as retained is a ``protocol.Retained`` (a bytes subclass).
MessageHandler = Callable[[str, bytes, int, int], None]


class MqttClient:
    """One MQTT connection of the runtime.

    Args:
        cfg: the ``[broker]`` table.
        subscriptions: topic filters, subscribed at QoS 1 on every connect.
        status_topic: where ``online`` / ``offline`` are published (retained, QoS 1).
        on_message: called on the network thread as ``on_message(topic, payload, mid, qos)``;
            the consumer must call ``ack(mid, qos)`` when done with the message.
        receive_maximum: most unacknowledged messages the broker may send us (MQTT 5).
        max_queued_out: bound of the outgoing queues.
        on_connected: called (network thread) after each successful connect, once the broker
            granted the subscriptions (the runtime is then ready to serve).
        can_take: called (network thread) before each incoming packet is read; while it says
            False the socket is not read (the broker and TCP hold the rest) and queued output
            keeps going out. The runtime's worker says False while its queue is full: a
            handler blocked on a full queue would also hold back the acknowledgements and
            predictions waiting to be written.

    Raises:
        TypeError: ``on_message`` cannot take ``(topic, payload, mid, qos)``.
        OSError: the password file cannot be read.
    """

    def __init__(self, cfg: BrokerConfig, *, subscriptions: list[str], status_topic: str,
                 on_message: MessageHandler, receive_maximum: int = 65535,
                 max_queued_out: int = 10000, on_connected: Callable[[], None] | None = None,
                 can_take: Callable[[], bool] = lambda: True):
        try:
            inspect.signature(on_message).bind("topic", b"", 0, 0)
        except TypeError:
            raise TypeError(f"on_message {on_message!r} must take (topic, payload, mid, qos)") from None
        self.cfg = cfg
        self.subscriptions = list(subscriptions)
        self.status_topic = status_topic
        self.max_queued_out = max_queued_out
        self._handler = on_message
        self._on_connected = on_connected
        self._can_take = can_take
        self.v5 = cfg.protocol == "mqttv5"
        self.connected = threading.Event()
        self.subscribed = threading.Event()  # set once the broker granted every subscription
        self.n_connects = 0
        self.n_connect_failures = 0  # in a row, since the last connect
        self.n_callback_errors = 0
        self.n_publish_failed = 0
        self.last_disconnect_reason: paho.ReasonCode | None = None
        self._stopping = False
        self._halt = threading.Event()  # ends the network thread (and any backoff wait)
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_w.setblocking(False)
        self._idle = False  # the network thread is (about to be) asleep in select
        self._wake_sent = False
        self._backoff_s: float | None = None  # reconnect delay; None after a connect

        c = _BufferedClient(
            callback_api_version=CallbackAPIVersion.VERSION2,
            client_id=cfg.client_id,
            protocol=MQTTProtocolVersion.MQTTv5 if self.v5 else MQTTProtocolVersion.MQTTv311,
            clean_session=None if self.v5 else False,
            manual_ack=True,
        )
        c.on_connect = self._on_connect
        c.on_disconnect = self._on_disconnect
        c.on_message = self._on_message
        c.on_subscribe = self._on_subscribe
        # Not None, so paho never writes to the socket from the worker's thread (it would without
        # a loop thread of its own); queued packets are written by the network thread.
        c.on_socket_register_write = lambda client, userdata, sock: self._wake()
        c.will_set(status_topic, b"offline", qos=1, retain=True)
        c.max_queued_messages_set(max_queued_out)
        c.max_inflight_messages_set(100)
        if cfg.username is not None:
            password = None
            if cfg.password_file is not None:  # first line; a file keeps it out of the config
                password = (Path(cfg.password_file).read_text().splitlines() or [""])[0]
            c.username_pw_set(cfg.username, password)
        if cfg.tls_ca_file or cfg.tls_cert_file:
            c.tls_set(ca_certs=cfg.tls_ca_file, certfile=cfg.tls_cert_file, keyfile=cfg.tls_key_file)
        self._client = c
        self._connect_properties = None
        if self.v5:
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = cfg.session_expiry_s
            props.ReceiveMaximum = max(1, min(receive_maximum, 65535))
            self._connect_properties = props

    # --- lifecycle ------------------------------------------------------------------------
    def start(self) -> None:
        """Connect in the background (retrying with backoff until the broker answers)."""
        cfg = self.cfg
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
            self.status_topic, b"offline", qos=1, retain=True, timeout_s=timeout_s)
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
                if not first:  # after a failed attempt or a lost connection, as paho does
                    cfg = self.cfg
                    self._backoff_s = (cfg.reconnect_min_s if self._backoff_s is None
                                       else min(2 * self._backoff_s, cfg.reconnect_max_s))
                    if self._halt.wait(self._backoff_s):
                        return
                first = False
                try:
                    c.reconnect()
                except OSError:
                    self._on_connect_fail(c, None)
                except Exception:  # e.g. a TLS setting paho rejects: logged, retried with backoff
                    self._callback_error("connect")
                continue
            try:
                self._serve(c)
            except Exception:  # never end the thread (paho's own would die silently)
                self._callback_error("network loop")
                self._halt.wait(self.cfg.reconnect_min_s)

    def _serve(self, c: paho.Client) -> None:
        """One round: wait for the socket (or a wake-up), read, write what is queued, keepalive."""
        sock = c.socket()
        self._idle = True  # before want_write: a packet queued after this check wakes us
        take = self._can_take()  # paused: the consumer's acknowledgements wake us
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
            while c.n_buffered() and c.socket() is not None and self._can_take():  # the chunk's rest
                if c.want_write():  # what the worker made meanwhile: one send a packet either way
                    c.loop_write()
                c.loop_read()
        if c.socket() is not None and c.want_write():
            c.loop_write()  # non-blocking: what the socket cannot take stays queued
        if c.socket() is not None:
            c.loop_misc()

    def _wake(self) -> None:
        """Wake the network thread if it sleeps in select (any thread; cheap when it is busy)."""
        if self._idle and not self._wake_sent:
            self._wake_sent = True
            try:
                self._wake_w.send(b"w")
            except BlockingIOError:  # a wake-up is already pending
                pass

    # --- outgoing ---------------------------------------------------------------------------
    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> paho.MQTTMessageInfo | None:
        """Queue a message; never waits. None (and counted) if refused.

        A QoS 1 message published while disconnected stays queued and goes out on reconnect; a
        QoS 0 one is dropped (paho's behaviour) and counted.
        """
        if qos == 0 and len(self._client._out_packet) >= self.max_queued_out:  # paho keeps no bound here
            self.n_publish_failed += 1
            return None
        info = self._client.publish(topic, payload, qos=qos, retain=retain)
        self._wake()  # paho calls on_socket_register_write only on the first of a run of packets
        rc = info.rc
        if rc == MQTTErrorCode.MQTT_ERR_SUCCESS or (qos > 0 and rc == MQTTErrorCode.MQTT_ERR_NO_CONN):
            return info
        self.n_publish_failed += 1
        return None

    def wait_for_room(self, timeout_s: float) -> None:
        """Wait (the worker, before each message) while half of ``max_queued_out`` packets or
        more wait to be written and the broker is connected, at most ``timeout_s`` seconds:
        the worker then runs at the pace the broker takes its output, its queue fills and the
        network loop stops reading, instead of QoS 0 predictions being refused at the bound."""
        out = self._client._out_packet  # paho 2.x's queue of packets to write (see publish)
        if len(out) < self.max_queued_out // 2:
            return
        deadline = time.monotonic() + timeout_s
        high = self.max_queued_out // 2
        while len(out) >= high and self.connected.is_set() and time.monotonic() < deadline:
            self._wake()
            time.sleep(0.001)

    def publish_and_wait(self, topic: str, payload: bytes, qos: int = 1, retain: bool = False,
                         timeout_s: float = 5.0) -> bool:
        """Publish and, for QoS >= 1, wait up to ``timeout_s`` for the broker's acknowledgement.

        A QoS 0 message has no acknowledgement, so it is never waited for (casebook C34): the
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

    def add_filter_callback(self, topic_filter: str, callback) -> None:
        """Route messages matching ``topic_filter`` to ``callback(client, userdata, msg)``
        (paho's per-filter callback: it sees the whole message, retain flag included)."""
        self._client.message_callback_add(topic_filter, callback)

    def ack(self, mid: int, qos: int) -> None:
        """Acknowledge an incoming message (safe from any thread: paho queues the packet)."""
        if qos > 0:
            self._client.ack(mid, qos)
            self._wake()

    # --- callbacks (network thread) ----------------------------------------------------------
    def _on_connect(self, client, userdata, flags, reason_code, properties) -> None:
        try:
            if reason_code.is_failure:
                log.error("broker refused the connection: %s (%d)", reason_code.getName(), reason_code.value)
                return
            log.info("connected to %s:%d (session present: %s)", self.cfg.host, self.cfg.port,
                     flags.session_present)
            _no_delay(client.socket())
            if self.v5:
                client.subscribe([(f, SubscribeOptions(qos=1)) for f in self.subscriptions])
            else:
                client.subscribe([(f, 1) for f in self.subscriptions])
            client.publish(self.status_topic, b"online", qos=1, retain=True)
            self.n_connects += 1
            self.n_connect_failures = 0
            self._backoff_s = None
            self.connected.set()
        except Exception:
            self._callback_error("on_connect")

    def _on_connect_fail(self, client, userdata) -> None:
        try:
            self.n_connect_failures += 1
            # WARNING for the first failures, then INFO: a broker down for hours is not a flood
            level = logging.WARNING if self.n_connect_failures <= 3 else logging.INFO
            log.log(level, "broker %s:%d unreachable (attempt %d); retrying with backoff (%g s up to %g s)",
                    self.cfg.host, self.cfg.port, self.n_connect_failures, self.cfg.reconnect_min_s,
                    self.cfg.reconnect_max_s)
        except Exception:
            self._callback_error("on_connect_fail")

    def _on_disconnect(self, client, userdata, flags, reason_code, properties) -> None:
        try:
            self.connected.clear()
            self.subscribed.clear()
            self.last_disconnect_reason = reason_code
            if self._stopping and not reason_code.is_failure:
                log.info("disconnected")
            else:
                log.warning("disconnected from the broker: %s (%d); reconnecting with backoff",
                            reason_code.getName(), reason_code.value)
        except Exception:
            self._callback_error("on_disconnect")

    def _on_subscribe(self, client, userdata, mid, reason_code_list, properties) -> None:
        try:
            refused = [(f, rc) for f, rc in zip(self.subscriptions, reason_code_list) if rc.is_failure]
            for f, rc in refused:
                log.error("subscription to %s refused: %s", f, rc.getName())
            if not refused:
                self.subscribed.set()
                if self._on_connected is not None:
                    self._on_connected()
        except Exception:
            self._callback_error("on_subscribe")

    def _on_message(self, client, userdata, msg) -> None:
        try:
            self._handler(msg.topic, Retained(msg.payload) if msg.retain else msg.payload, msg.mid, msg.qos)
        except Exception:
            self._callback_error("on_message")
            self.ack(msg.mid, msg.qos)  # counted and logged: do not leave it in flight

    def _callback_error(self, where: str) -> None:
        self.n_callback_errors += 1
        log.exception("error in MQTT %s callback (counted: %d so far)", where, self.n_callback_errors)


class _BufferedClient(paho.Client):
    """paho's client, reading the socket in chunks of up to ``READ_CHUNK`` bytes.

    paho reads a packet with one ``recv`` for the command byte, one per length byte and one for
    the body: three system calls for a reading, each releasing and retaking the GIL. Here they
    are served from one chunk; ``n_buffered`` tells the network loop what is left in it (select
    cannot see it). Overrides paho 2.x's ``_sock_recv``, which every read goes through.
    """

    READ_CHUNK = 65536

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._chunk = b""
        self._pos = 0

    def reconnect(self):
        self._chunk, self._pos = b"", 0  # nothing of the old connection is read on the new one
        return super().reconnect()

    def n_buffered(self) -> int:
        """Bytes read from the socket and not yet taken by paho."""
        return len(self._chunk) - self._pos

    def _sock_recv(self, bufsize: int) -> bytes:
        if self._pos >= len(self._chunk):
            self._chunk, self._pos = super()._sock_recv(self.READ_CHUNK), 0  # b"": closed
        data = self._chunk[self._pos:self._pos + bufsize]
        self._pos += len(data)
        return data


def _no_delay(sock) -> None:
    """Turn Nagle's algorithm off: a prediction or an acknowledgement is one small packet, and
    with Nagle it waits for the broker's (delayed, up to 40 ms) TCP acknowledgement of the
    previous one, which put a reading period on every prediction's latency."""
    try:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (AttributeError, OSError) as exc:  # not a TCP socket (e.g. a unix socket)
        log.warning("TCP_NODELAY not set: %s", exc)
