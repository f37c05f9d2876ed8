"""The MQTT wrapper against the client failures of docs/cases.md (C31, C34, C35, C37)."""

import collections
import logging
import socket
import threading
import time

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion

from edgebayes.runtime.config import BrokerConfig
from edgebayes.runtime.mqtt import MqttClient
from tests.broker import free_port
from tests.runtime_client import wait_for


def _client(host, port, client_id, handler=lambda topic, payload, mid, qos: None, subs=("c/in",), **kw):
    cfg = BrokerConfig(host=host, port=port, client_id=client_id, reconnect_min_s=0.1, reconnect_max_s=0.5)
    return MqttClient(cfg, subscriptions=list(subs), status_topic=f"c/{client_id}/status", on_message=handler, **kw)


def test_c31_handler_errors_are_logged_counted_and_do_not_stop_later_messages(broker, caplog):
    handled = []
    box = {}

    def handler(topic, payload, mid, qos):
        handled.append(1 / int(payload))  # ZeroDivisionError for b"0"
        box["c"].ack(mid, qos)

    c = box["c"] = _client(broker.host, broker.port, "c31", handler)
    c.start()
    wait_for(c.subscribed.is_set, what="subscription")
    pub = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="c31-pub")
    pub.connect(broker.host, broker.port)
    pub.loop_start()
    with caplog.at_level(logging.ERROR, logger="edgebayes.runtime.mqtt"):
        for p in (b"1", b"0", b"2"):
            pub.publish("c/in", p, qos=1).wait_for_publish(5)
        wait_for(lambda: len(handled) == 2 and c.n_callback_errors == 1, what="b'1' and b'2' handled")
    assert handled == [1.0, 0.5] and c.n_callback_errors == 1
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 1 and errors[0].exc_info[0] is ZeroDivisionError
    pub.loop_stop()
    pub.disconnect()
    assert c.stop() is True  # offline acknowledged by the broker


def test_c34_publishing_while_unreachable_never_hangs():
    c = _client("127.0.0.1", 1, "c34")  # closed loopback port
    c.start()
    t0 = time.monotonic()
    assert c.publish_and_wait("edge/pred", b"x", qos=0) is False  # QoS 0: never waited for
    assert c.publish_and_wait("edge/pred", b"x", qos=1, timeout_s=0.5) is False
    assert time.monotonic() - t0 < 2.5
    assert c.n_publish_failed == 1  # the QoS 0 one; the QoS 1 one stays queued for a reconnect
    t0 = time.monotonic()
    assert c.stop() is False
    assert time.monotonic() - t0 < 2.5


@pytest.mark.parametrize("packet,code,name", [
    ("e0 02 87 00", 135, "Not authorized"),
    ("e0 01 8e", 142, "Session taken over"),
    ("e0 00", 0, "Normal disconnection"),
])
def test_c35_short_disconnect_packets_keep_their_reason_code(packet, code, name):
    """A one-shot server that accepts CONNECT, grants it, then sends C35's raw
    DISCONNECT (Mosquitto 2.0 closes the socket on a takeover instead of sending 0x8E)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", free_port()))
    srv.listen(1)

    def serve():
        conn, _ = srv.accept()
        conn.recv(1024)  # CONNECT
        conn.sendall(bytes.fromhex("20 03 00 00 00"))  # CONNACK v5: success, no properties
        conn.recv(1024)  # SUBSCRIBE + PUBLISH online
        conn.sendall(bytes.fromhex(packet))
        time.sleep(0.3)
        conn.close()

    threading.Thread(target=serve, daemon=True).start()
    c = _client("127.0.0.1", srv.getsockname()[1], "c35raw")
    c.start()
    wait_for(lambda: c.last_disconnect_reason is not None, what="the DISCONNECT")
    c._stopping = True  # no reconnect noise while stopping
    c.stop(timeout_s=0.1)
    srv.close()
    assert c.last_disconnect_reason == code and c.last_disconnect_reason.getName() == name


def test_c37_callback_api_v2_and_keyword_client_id():
    with pytest.raises((TypeError, ValueError)):
        paho.Client("sensor-1")  # positional client id hits callback_api_version in paho 2.x
    ok = paho.Client(CallbackAPIVersion.VERSION2, client_id="sensor-1")
    assert ok._client_id == b"sensor-1"
    c = _client("127.0.0.1", 1, "sensor-1")
    assert c._client._client_id == b"sensor-1" and c._client._callback_api_version == CallbackAPIVersion.VERSION2
    with pytest.raises(TypeError, match="must take"):  # a v1-style handler is refused when configured
        _client("127.0.0.1", 1, "sensor-1", handler=lambda client, userdata, msg: None)


def test_every_connection_has_nagle_off(broker):
    """TCP_NODELAY on each new socket (after a reconnect too): with Nagle a small prediction
    waited for the broker's acknowledgement of the previous packet (p50 5.5 ms at 200/s)."""
    c = _client(broker.host, broker.port, "nodelay")
    c.start()
    wait_for(c.subscribed.is_set, what="subscription")
    assert c._client.socket().getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    broker.stop()
    broker.start()
    wait_for(lambda: c.n_connects == 2 and c.subscribed.is_set(), what="reconnect")
    assert c._client.socket().getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    assert c.stop() is True


def test_a_burst_read_in_chunks_is_handled_once_each_in_order(broker):
    """300 packets of 1 kB: they arrive in 64 KiB chunks, packets straddle chunk boundaries."""
    handled = []
    box = {}

    def handler(topic, payload, mid, qos):
        handled.append(int(payload[:8]))
        box["c"].ack(mid, qos)

    c = box["c"] = _client(broker.host, broker.port, "burst", handler)
    c.start()
    wait_for(c.subscribed.is_set, what="subscription")
    pub = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="burst-pub")
    pub.max_inflight_messages_set(1000)
    pub.connect(broker.host, broker.port)
    pub.loop_start()
    infos = [pub.publish("c/in", b"%08d" % i + b"x" * 992, qos=1) for i in range(300)]
    for info in infos:
        info.wait_for_publish(5)
    wait_for(lambda: len(handled) >= 300, what="300 messages handled")
    assert handled == list(range(300))
    pub.loop_stop()
    pub.disconnect()
    assert c.stop() is True


def test_a_publish_from_another_thread_wakes_the_sleeping_network_thread(broker):
    """The network thread sleeps in select for up to 1 s; a publish from the worker's thread
    must go out at once, not at the next timeout."""
    arrived = []
    sub = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="wake-sub")
    sub.on_message = lambda client, userdata, msg: arrived.append(time.monotonic())
    sub.connect(broker.host, broker.port)
    sub.subscribe("c/out", qos=0)
    sub.loop_start()
    c = _client(broker.host, broker.port, "wake")
    c.start()
    wait_for(c.subscribed.is_set, what="subscription")
    delays = []
    for _ in range(3):
        time.sleep(0.3)  # the network thread is idle in select
        t0 = time.monotonic()
        n = len(arrived)
        assert c.publish("c/out", b"p", qos=0) is not None
        wait_for(lambda n=n: len(arrived) > n, what="the publish arriving")
        delays.append(arrived[-1] - t0)
    assert max(delays) < 0.3, delays
    sub.loop_stop()
    assert c.stop() is True


def test_reading_pauses_while_the_consumer_cannot_take_and_writing_goes_on(broker):
    """A full worker queue pauses reading (can_take False); acknowledgements and predictions
    queued meanwhile still go out, and the held messages are handled once it takes again."""
    handled, arrived, gate = [], [], {"take": True}
    box = {}

    def handler(topic, payload, mid, qos):
        handled.append(int(payload))
        box["c"].ack(mid, qos)

    sub = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="pause-sub")
    sub.on_message = lambda client, userdata, msg: arrived.append(msg.payload)
    sub.connect(broker.host, broker.port)
    sub.subscribe("c/out", qos=0)
    sub.loop_start()
    c = box["c"] = _client(broker.host, broker.port, "pause", handler, can_take=lambda: gate["take"])
    c.start()
    wait_for(c.subscribed.is_set, what="subscription")
    gate["take"] = False
    c.publish("c/wake", b"", qos=0)  # wakes the network thread, which then sees the gate shut
    time.sleep(0.2)
    pub = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="pause-pub")
    pub.connect(broker.host, broker.port)
    pub.loop_start()
    for i in range(5):
        pub.publish("c/in", b"%d" % i, qos=1).wait_for_publish(5)
    time.sleep(0.5)
    assert handled == []  # held by the broker and TCP, not read
    c.publish("c/out", b"p", qos=0)
    wait_for(lambda: arrived == [b"p"], what="the publish written while reading is paused")
    gate["take"] = True
    wait_for(lambda: len(handled) == 5, what="the held messages")
    assert handled == [0, 1, 2, 3, 4]
    for client in (pub, sub):
        client.loop_stop()
    assert c.stop() is True


def test_messages_held_while_the_consumer_waits_stay_within_the_receive_maximum(broker):
    """Once acknowledgements flow, Mosquitto 2.0 sends more unacknowledged messages than the
    Receive Maximum. While the consumer waits for room in the backlog the network thread reads
    on and holds what the consumer cannot take: at most Receive Maximum messages (the rest stays
    at the broker), and every message is handled once, in order."""
    queued, handled, held, box = collections.deque(), [], [], {}
    c = box["c"] = _client(broker.host, broker.port, "held", lambda *message: queued.append(message),
                           can_take=lambda: len(queued) < 10, receive_maximum=20,
                           max_backlog_bytes=0)  # never room: the consumer waits before each message
    c.start()
    wait_for(c.subscribed.is_set, what="subscription")
    done = threading.Event()

    def consumer():  # a worker that goes on after each wait, acknowledging as it handles
        while not done.is_set():
            c.wait_for_room(0.002)
            held.append(c.n_held)
            if queued:
                _topic, payload, mid, qos = queued.popleft()
                handled.append(int(payload))
                c.ack(mid, qos)

    waiter = threading.Thread(target=consumer)
    waiter.start()
    pub = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id="held-pub")
    pub.max_inflight_messages_set(0)
    pub.connect(broker.host, broker.port)
    pub.loop_start()
    for i in range(3000):
        pub.publish("c/in", b"%d" % i, qos=1)
    wait_for(lambda: len(handled) == 3000, timeout_s=60, what="every message")
    done.set()
    waiter.join()
    assert handled == list(range(3000))
    assert 0 < max(held) <= 20
    pub.loop_stop()
    assert c.stop() is True
