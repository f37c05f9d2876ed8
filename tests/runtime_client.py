"""Device-side helpers for the runtime tests: a real paho client that publishes and collects.

``Device`` publishes readings and labels (QoS 1) and records every message on the runtime's
output topics, decoded as a third-party subscriber decodes them (`decode_default`), per topic kind; ``wait_for`` polls a condition. Also the synthetic
streams and config writer the runtime tests share.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from pathlib import Path

import msgpack
import numpy as np
import paho.mqtt.client as paho
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

from edgebayes.codec import encode, sniff

FEATURES = ("f0", "f1", "f2")


def decode_default(payload: bytes):
    """``payload`` decoded by the default decoders, as any subscriber would: ``json.loads``, or
    msgpack-python's ``unpackb`` (which refuses map keys other than str and bytes)."""
    return json.loads(payload) if sniff(payload) == "json" else msgpack.unpackb(payload)


def wait_for(cond, timeout_s: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.02)


class Device:
    """A test client: publishes to ``<prefix>/<device>/...``, collects ``<prefix>/#``."""

    def __init__(self, broker, prefix: str = "eb", client_id: str = "test-device", collect: bool = True,
                 max_queued: int = 0):
        self.prefix = prefix
        self.lock = threading.Lock()
        self.messages: dict[str, list] = defaultdict(list)  # last topic level -> decoded payloads
        self.raw: list[tuple[str, bytes, bool]] = []
        self.connected = threading.Event()
        c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id=client_id,
                        protocol=MQTTProtocolVersion.MQTTv5)
        c.reconnect_delay_set(0.1, 0.5)
        c.max_inflight_messages_set(1000)
        c.max_queued_messages_set(max_queued)  # unacknowledged QoS 1 messages (0: paho's 65,535 ids)
        c.on_connect = self._on_connect
        c.on_message = self._on_message
        c.on_subscribe = lambda *a: self.connected.set()
        self.collect = collect
        self.client = c
        c.connect_async(broker.host, broker.port, clean_start=False,
                        properties=_session_props())
        c.loop_start()
        wait_for(self.connected.is_set, what="test client connection and subscription")

    def _on_connect(self, client, userdata, flags, rc, props):
        if self.collect:
            client.subscribe(f"{self.prefix}/#", qos=1)
        else:
            self.connected.set()

    def _on_message(self, client, userdata, msg):
        kind = msg.topic.rsplit("/", 1)[-1]
        with self.lock:
            self.raw.append((msg.topic, msg.payload, msg.retain))
            if kind in ("reading", "label", "status"):
                return
            self.messages[kind].append(decode_default(msg.payload))

    def publish(self, device: str, kind: str, payload, fmt: str = "msgpack", qos: int = 1):
        """Publish; for QoS 1, wait while paho has no room for another unacknowledged message
        (at most 65,535: MQTT packet ids are 16 bits; fewer with ``max_queued_messages_set``)."""
        data = payload if isinstance(payload, bytes) else encode(payload, fmt)
        while True:
            info = self.client.publish(f"{self.prefix}/{device}/{kind}", data, qos=qos)
            if info.rc != paho.MQTT_ERR_QUEUE_SIZE or qos == 0:
                return info
            time.sleep(0.001)  # the broker's acknowledgements free packet ids

    def got(self, kind: str) -> list:
        with self.lock:
            return list(self.messages[kind])

    def predictions(self) -> dict[int, dict]:
        return {p["seq"]: p for p in self.got("prediction")}

    def close(self):
        self.client.disconnect()
        self.client.loop_stop()


class Publisher:
    """Publishes ``n`` labelled readings of device d1 at QoS 1 in a thread (``start()``), paced
    at ``per_s``; records which ``seq`` the broker acknowledged (PUBACK), across broker
    restarts. Clearing ``go`` pauses it."""

    def __init__(self, broker, n: int, per_s: float, prefix: str = "eb", seed: int = 11):
        self.dev = Device(broker, prefix=prefix, client_id="chaos-device", collect=False)
        self.data = blobs(n, seed=seed)
        self.per_s = per_s
        self.seq_of: dict[int, int] = {}  # packet id -> seq (ids are not reused below 65,536)
        self.acked_mids: set[int] = set()
        self.dev.client.on_publish = lambda client, userdata, mid, rc, props: self.acked_mids.add(mid)
        self.go = threading.Event()
        self.go.set()
        self.n_sent = 0
        self.thread = threading.Thread(target=self._run, daemon=True)

    def acked(self) -> set[int]:
        """The seqs the broker acknowledged."""
        return {self.seq_of[m] for m in list(self.acked_mids) if m in self.seq_of}

    def _run(self):
        t0 = time.monotonic()
        for seq, (x, y) in enumerate(self.data):
            if not self.go.is_set():
                self.go.wait()
                t0 = time.monotonic() - seq / self.per_s
            info = self.dev.publish("d1", "reading", {"seq": seq, "ts": 1.7e9 + seq, "x": x, "y": y})
            self.seq_of[info.mid] = seq
            self.n_sent = seq + 1
            delay = t0 + (seq + 1) / self.per_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)


def _session_props():
    from paho.mqtt.packettypes import PacketTypes
    from paho.mqtt.properties import Properties

    p = Properties(PacketTypes.CONNECT)
    p.SessionExpiryInterval = 3600
    return p


def blobs(n: int, seed: int = 0, flip_after: int | None = None):
    """``n`` samples of 3 features, labels "a"/"b" from two Gaussian blobs; after
    ``flip_after`` samples the labels swap (an abrupt concept change)."""
    rng = np.random.default_rng(seed)
    ys = rng.integers(0, 2, n)
    X = rng.normal(0.0, 1.0, (n, 3)) + ys[:, None] * 2.5
    labels = ["a", "b"]
    out = []
    for i, (x, yi) in enumerate(zip(X.tolist(), ys.tolist())):
        if flip_after is not None and i >= flip_after:
            yi = 1 - yi
        out.append((x, labels[yi]))
    return out


def write_config(path: Path, broker, *, prefix="eb", client_id="rt-test", checkpoint_dir=None,
                 extra: str = "", models: str | None = None) -> Path:
    models = models or '[[models]]\nname = "nb"\nkind = "gaussian_nb"\n'
    ckpt = f'[checkpoint]\ndir = "{checkpoint_dir}"\ninterval_s = 0.3\n' if checkpoint_dir else ""
    path.write_text(
        f'[broker]\nhost = "{broker.host}"\nport = {broker.port}\nclient_id = "{client_id}"\n'
        'reconnect_min_s = 0.1\nreconnect_max_s = 0.5\n'
        f'[topics]\nprefix = "{prefix}"\n'
        f'[schema]\nfeatures = {list(FEATURES)!r}\n'.replace("'", '"')
        + ckpt + extra + models
    )
    return path
