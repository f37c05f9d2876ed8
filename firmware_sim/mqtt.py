"""Broker connection options and paho-mqtt clients, as a sensor device or a dashboard has them.

paho-mqtt 2.x with the callback API version 2, the client id passed by keyword (docs/cases.md C37),
over MQTT 5 so the broker's acknowledgements carry a reason code (a refused publish is seen).
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import paho.mqtt.client as mqtt

from edgebayes.runtime.config import BrokerConfig
from edgebayes.runtime.tls import describe_tls_error, tls_context

log = logging.getLogger(__name__)


def parse_address(address: str) -> tuple[str, int]:
    """``"HOST:PORT"`` (or ``"[v6]:PORT"``, or ``"HOST"`` for port 1883) -> (host, port).

    Raises:
        ValueError: an empty host or a port that is not an integer in 1..65535.
    """
    host, sep, port = address.rpartition(":")
    if not sep or "]" in port:
        host, port = address, "1883"
    host = host.strip("[]")
    if not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError(f"broker address must be HOST:PORT, got {address!r}")
    return host, int(port)


#: ``BrokerOptions.protocol`` -> paho's protocol
PROTOCOLS = {"mqttv5": mqtt.MQTTv5, "mqttv311": mqtt.MQTTv311}


@dataclass(frozen=True)
class BrokerOptions:
    """Where and how to connect.

    Attributes:
        host, port: the broker.
        username: user name, or None for an anonymous connection.
        password_file: file holding the password (first line; kept off the command line).
        tls_ca_file: CA certificates to verify the broker with (the system's without it).
        tls_cert_file, tls_key_file: client certificate and key (mutual TLS).
        keepalive_s: MQTT keep-alive, seconds.
        tls_server_name: the name the broker's certificate must hold (default: host).
        tls_insecure: do not verify the broker's certificate (test brokers only).
        transport: "tcp" or "websockets"; ws_path: the websockets path.
        protocol: "mqttv5" (default) or "mqttv311" for a broker that speaks only MQTT 3.1.1
            (amqtt, the demo's embedded broker), which has no reason codes: a publish it
            refuses is not seen as refused.

    Any ``tls_*`` option turns TLS on, as ``[broker]`` in the runtime's config does.
    """

    host: str = "127.0.0.1"
    port: int = 1883
    username: str | None = None
    password_file: str | None = None
    tls_ca_file: str | None = None
    tls_cert_file: str | None = None
    tls_key_file: str | None = None
    keepalive_s: int = 60
    tls_server_name: str | None = None
    tls_insecure: bool = False
    transport: str = "tcp"
    ws_path: str = "/mqtt"
    protocol: str = "mqttv5"

    def __post_init__(self):
        if self.protocol not in PROTOCOLS:
            raise ValueError(f"protocol must be one of {tuple(PROTOCOLS)}, got {self.protocol!r}")

    def broker_config(self) -> BrokerConfig:
        """The runtime's ``[broker]`` table for these options (TLS is built and explained alike)."""
        return BrokerConfig(host=self.host, port=self.port, tls_ca_file=self.tls_ca_file,
                            tls_cert_file=self.tls_cert_file, tls_key_file=self.tls_key_file,
                            tls_server_name=self.tls_server_name, tls_insecure=self.tls_insecure,
                            transport=self.transport, ws_path=self.ws_path)

    @classmethod
    def from_address(cls, address: str, **options) -> BrokerOptions:
        host, port = parse_address(address)
        return cls(host, port, **options)

    def password(self) -> str | None:
        """The first line of ``password_file``, or None. Raises OSError: unreadable file."""
        if self.password_file is None:
            return None
        lines = Path(self.password_file).read_text().splitlines()
        return lines[0] if lines else ""


def as_options(broker: BrokerOptions | str) -> BrokerOptions:
    """Accept ``"HOST:PORT"`` wherever `BrokerOptions` are expected."""
    return BrokerOptions.from_address(broker) if isinstance(broker, str) else broker


class Connection:
    """A paho client with a "ready" flag and a count of unconfirmed publishes.

    ``connected`` is set once the broker accepted the connection and, when ``subscriptions``
    (a list of ``(topic filter, qos)``) are given, acknowledged them; they are renewed on
    every reconnection. Publishes are counted until paho's ``on_publish`` confirms them
    (written out for QoS 0, acknowledged for QoS 1 and 2), so a device can flush before it
    disconnects. ``refused`` counts, per reason (``"Not authorized"``), the QoS 1 and 2
    publishes the broker acknowledged with an MQTT 5 failure reason code (>= 128): it did not
    take them (an ACL, a quota), so they are lost. A QoS 0 publish is never acknowledged.
    """

    def __init__(
        self,
        options: BrokerOptions,
        client_id: str,
        on_message=None,
        subscriptions: list[tuple[str, int]] = (),
    ):
        self.options = options
        self.client_id = client_id
        self.client = mqtt.Client(
            mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
            protocol=PROTOCOLS[options.protocol],
            transport=options.transport,
        )
        if options.transport == "websockets":
            self.client.ws_set_options(path=options.ws_path)
        if options.username is not None:
            self.client.username_pw_set(options.username, options.password())
        context = tls_context(options.broker_config())  # ConfigError: a file that does not parse
        if context is not None:
            self.client.tls_set_context(context)
        self.connected = threading.Event()
        self.refused: str | None = None
        self.refused_publishes: Counter = Counter()  # reason -> publishes the broker refused
        self._lock = threading.Lock()
        self._published = 0
        self._confirmed = 0
        self._flushed = threading.Condition(self._lock)
        self.client.on_connect = self._on_connect
        self.client.on_disconnect = self._on_disconnect
        self.client.on_publish = self._on_publish
        self.client.on_subscribe = self._on_subscribe
        self.subscriptions = list(subscriptions)
        if on_message is not None:
            self.client.on_message = on_message

    def _on_connect(self, client, userdata, flags, reason_code, properties):
        if reason_code == 0:
            self.refused = None
            # no Nagle: small publishes go out at once, so latency measured through the
            # broker is the runtime's, not TCP's wait for an acknowledgement (up to 40 ms)
            sock = client.socket()
            if hasattr(sock, "setsockopt"):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self.subscriptions:
                client.subscribe(self.subscriptions)
            else:
                self.connected.set()
        else:
            self.refused = str(reason_code)
            log.error("%s: broker refused the connection: %s", self.client_id, reason_code)

    def _on_disconnect(self, client, userdata, flags, reason_code, properties):
        self.connected.clear()

    def _on_subscribe(self, client, userdata, mid, reason_codes, properties):
        refused = [str(rc) for rc in reason_codes if rc.is_failure]
        if refused:
            self.refused = f"subscription refused: {', '.join(refused)}"
            log.error("%s: %s", self.client_id, self.refused)
        else:
            self.connected.set()

    def _on_publish(self, client, userdata, mid, reason_code, properties):
        with self._lock:
            if reason_code.is_failure:
                if not self.refused_publishes:
                    log.error("%s: the broker refused a publish: %s", self.client_id, reason_code)
                self.refused_publishes[str(reason_code)] += 1
            self._confirmed += 1
            self._flushed.notify_all()  # flush() and a publish waiting for a free packet id

    def connect(self, timeout_s: float = 10.0, retry: bool = False) -> bool:
        """Connect, start the network thread and wait for the broker's CONNACK.

        With ``retry`` (a device coming back from a reboot) a failure is not an error: paho
        keeps trying in the background, QoS >= 1 publishes wait in its queue, and the result
        is whether the device is connected after ``timeout_s``.

        Raises (without ``retry``):
            ConnectionError: refused, no CONNACK within ``timeout_s``, or a TLS handshake that
                failed (saying why, as the runtime does).
            OSError: the TCP connection failed.
        """
        self.connected.clear()
        host, port, keepalive = self.options.host, self.options.port, self.options.keepalive_s
        if retry:
            self.client.connect_async(host, port, keepalive)
            self.client.loop_start()
            if not self.connected.wait(timeout_s):
                log.warning(
                    "%s: not reconnected after %g s; paho keeps trying", self.client_id, timeout_s
                )
                return False
            return True
        try:
            self.client.connect(host, port, keepalive)
        except ssl.SSLError as exc:
            raise ConnectionError(describe_tls_error(exc, self.options.broker_config())) from None
        self.client.loop_start()
        if not self.connected.wait(timeout_s):
            self.client.loop_stop()
            why = self.refused or f"no answer within {timeout_s:g} s"
            raise ConnectionError(f"{self.client_id}: cannot connect to {host}:{port}: {why}")
        return True

    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False) -> bool:
        """Publish (``edgebayes.runtime.publisher.Publisher``); False when paho refused it at
        once (e.g. QoS 0 while disconnected: C34).

        A QoS 1/2 message is never dropped: when paho's queue of unacknowledged messages is
        full (``max_queued_messages_set``, or the 65,535 packet ids of MQTT), it waits for the
        broker's acknowledgements and tries again.
        """
        with self._lock:
            self._published += 1
        info = self.client.publish(topic, payload, qos, retain)
        while info.rc == mqtt.MQTT_ERR_QUEUE_SIZE and qos > 0:
            # all 65,535 packet ids are waiting for the broker: wait for one ack, then retry
            with self._lock:
                confirmed = self._confirmed
                self._flushed.wait_for(lambda: self._confirmed > confirmed, 1.0)
            info = self.client.publish(topic, payload, qos, retain)
        if info.rc != mqtt.MQTT_ERR_SUCCESS and qos == 0:
            with self._lock:  # paho will never confirm it
                self._published -= 1
            return False
        return True

    @property
    def unconfirmed(self) -> int:
        """Publishes paho has not confirmed yet (QoS 1 and 2: not acknowledged by the broker)."""
        with self._lock:
            return self._published - self._confirmed

    def flush(self, timeout_s: float) -> bool:
        """Wait until every publish is confirmed; False on timeout."""
        with self._lock:
            return self._flushed.wait_for(lambda: self._confirmed >= self._published, timeout_s)

    def disconnect(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()
        self.connected.clear()
