"""The shipped Mosquitto configs (deploy/mosquitto/) with real brokers.

Access control: Mosquitto runs the shipped edgebayes.conf and ACL (password file made with
``mosquitto_passwd -b``); the runtime (the shipped deploy/edgebayes.toml) serves a device,
which can neither publish as another device nor read another device's predictions.
Store and forward: a local Mosquitto with the shipped bridge.conf pointed at a second one on
loopback; what the runtime publishes while the upstream broker is down arrives upstream
after it returns, none lost.
"""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import paho.mqtt.client as paho
import pytest
from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

from edgebayes.codec import decode, encode
from edgebayes.runtime.config import load_config
from tests.broker import Broker

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
PASSWORDS = {
    "edgebayes": "rt-secret",
    "monitor": "mon-secret",
    "sim-0": "s0-secret",
    "sim-1": "s1-secret",
    "tas-0": "t0-secret",
}
NOT_AUTHORIZED, NO_SUBSCRIBERS = 135, 16  # MQTT 5 PUBACK reason codes (16 is a success)


def wait_for(cond, timeout_s: float = 10.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.02)


def shipped_broker_config(workdir: Path, bridge_to: int | None = None, acl: str | None = None) -> str:
    """deploy/mosquitto/edgebayes.conf (+ bridge.conf) for a broker in ``workdir``, with the
    shipped ACL or ``acl`` (the text of another one).

    What changes from the shipped files: /etc/mosquitto/ becomes ``workdir`` (password and ACL
    files made there); the ``Broker`` helper gives its ``listener 1883`` line a free loopback
    port and changes nothing else (tests/broker.py); for the bridge, the address is the loopback upstream, whose plain anonymous listener
    needs no TLS nor remote credentials, and retries are every second instead of 5 s doubling.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    passwd = workdir / "edgebayes.passwd"
    for i, (user, password) in enumerate(PASSWORDS.items()):
        subprocess.run(
            [
                shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd",
                *(["-c"] if i == 0 else []),
                "-b",
                str(passwd),
                user,
                password,
            ],
            check=True,
        )
    if acl is None:
        shutil.copy(DEPLOY / "mosquitto" / "edgebayes.acl", workdir / "edgebayes.acl")
    else:
        (workdir / "edgebayes.acl").write_text(acl)
    conf = (DEPLOY / "mosquitto" / "edgebayes.conf").read_text()
    conf = conf.replace("/etc/mosquitto/", f"{workdir}/")
    if bridge_to is not None:
        bridge = (DEPLOY / "mosquitto" / "bridge.conf").read_text()
        bridge = re.sub(r"(?m)^address .*$", f"address 127.0.0.1:{bridge_to}", bridge)
        bridge = re.sub(r"(?m)^(remote_username|remote_password|bridge_cafile) .*\n", "", bridge)
        bridge = re.sub(r"(?m)^restart_timeout .*$", "restart_timeout 1", bridge)
        conf += "\n" + bridge
    return conf


class Client:
    """A paho MQTT 5 client: records what it receives and the broker's answer to each publish."""

    def __init__(
        self, broker: Broker, client_id: str, user: str | None, subscribe=(), clean: bool = True
    ):
        self.lock = threading.Lock()
        self.received: list[tuple[str, bytes]] = []
        self.pubacks: dict[int, int] = {}  # mid -> reason code
        self.connack: list = []
        self.granted: list[int] = []
        c = paho.Client(
            callback_api_version=CallbackAPIVersion.VERSION2,
            client_id=client_id,
            protocol=MQTTProtocolVersion.MQTTv5,
        )
        if user is not None:
            c.username_pw_set(user, PASSWORDS[user])
        c.reconnect_delay_set(0.1, 0.5)
        self.topics = list(subscribe)

        def on_connect(client, userdata, flags, rc, props):
            self.connack.append(rc.value)
            if not rc.is_failure and self.topics:
                client.subscribe([(t, 1) for t in self.topics])

        def on_subscribe(client, userdata, mid, rcs, props):
            self.granted = [rc.value for rc in rcs]

        def on_message(client, userdata, msg):
            with self.lock:
                self.received.append((msg.topic, msg.payload))

        def on_publish(client, userdata, mid, rc, props):
            self.pubacks[mid] = rc.value

        c.on_connect, c.on_subscribe, c.on_message, c.on_publish = (
            on_connect,
            on_subscribe,
            on_message,
            on_publish,
        )
        self.client = c
        props = None
        if not clean:  # MQTT 5: a session outlives the connection only with an expiry interval
            props = Properties(PacketTypes.CONNECT)
            props.SessionExpiryInterval = 3600
        c.connect_async(broker.host, broker.port, clean_start=clean, properties=props)
        c.loop_start()
        wait_for(lambda: self.connack, what=f"{client_id} CONNACK")
        if self.connack[0] == 0 and self.topics:
            wait_for(lambda: self.granted, what=f"{client_id} SUBACK")

    def publish(self, topic: str, body: dict) -> int:
        info = self.client.publish(topic, encode(body), qos=1)
        wait_for(lambda: info.mid in self.pubacks, what=f"PUBACK of {topic}")
        return self.pubacks[info.mid]

    def got(self, topic_re: str) -> list[dict]:
        with self.lock:
            return [decode(p) for t, p in self.received if re.fullmatch(topic_re, t)]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


@pytest.fixture
def secure_broker(tmp_path):
    b = Broker(tmp_path / "broker", extra_config=shipped_broker_config(tmp_path / "broker")).start()
    yield b
    b.stop()


def test_shipped_broker_config_serves_runtime_and_devices_and_fences_devices(
    secure_broker, tmp_path
):
    from edgebayes.runtime.service import Runtime

    anonymous = Client(secure_broker, "anon", None)
    assert anonymous.connack == [NOT_AUTHORIZED]
    anonymous.close()

    (tmp_path / "mqtt-password").write_text(PASSWORDS["edgebayes"] + "\n")
    cfg = load_config(DEPLOY / "edgebayes.toml").with_overrides(
        secure_broker.address, str(tmp_path / "checkpoints")
    )
    cfg = dataclasses.replace(
        cfg,
        broker=dataclasses.replace(
            cfg.broker, password_file=str(tmp_path / "mqtt-password"), reconnect_min_s=0.1
        ),
    )
    runtime = Runtime(cfg)
    runtime.start()
    clients = []
    try:
        wait_for(runtime.client.subscribed.is_set, what="the runtime's subscriptions granted")
        monitor = Client(secure_broker, "mon", "monitor", ["edgebayes/#"])
        sim0 = Client(secure_broker, "sim-0", "sim-0", ["edgebayes/+/prediction"])
        sim1 = Client(
            secure_broker,
            "sim-1",
            "sim-1",
            ["edgebayes/+/prediction", "edgebayes/sim-0/prediction"],
        )
        clients = [monitor, sim0, sim1]
        for seq in range(20):  # occupancy-like readings, labelled inline
            y = seq % 2
            x = [21.0 + y, 27.0, 500.0 * y, 450.0 + 400 * y, 0.0042]
            assert sim0.publish("edgebayes/sim-0/reading", {"seq": seq, "x": x, "y": y}) == 0
        assert (
            sim1.publish(
                "edgebayes/sim-1/reading", {"seq": 0, "x": [20.0, 25.0, 0.0, 420.0, 0.004]}
            )
            == 0
        )
        # sim-1 forging a reading, a label and a prediction of sim-0
        assert (
            sim1.publish("edgebayes/sim-0/reading", {"seq": 1000, "x": [0.0] * 5, "y": 1})
            == NOT_AUTHORIZED
        )
        assert sim1.publish("edgebayes/sim-0/label", {"seq": 19, "y": 0}) == NOT_AUTHORIZED
        assert (
            sim1.publish("edgebayes/sim-0/prediction", {"seq": 1000, "y_pred": 0}) == NOT_AUTHORIZED
        )

        wait_for(lambda: len(monitor.got(r"edgebayes/.*/prediction")) == 21, what="21 predictions")
        time.sleep(0.3)  # anything misrouted would arrive by now
        assert [p["seq"] for p in sim0.got(r"edgebayes/sim-0/prediction")] == list(range(20))
        assert sim0.got(r"edgebayes/sim-1/prediction") == []
        assert [p["seq"] for p in sim1.got(r"edgebayes/sim-1/prediction")] == [0]
        assert sim1.got(r"edgebayes/sim-0/prediction") == []
        assert [r["seq"] for r in monitor.got(r"edgebayes/sim-0/reading")] == list(range(20))
        assert monitor.got(r"edgebayes/sim-0/label") == []
        assert runtime.worker.serving.n_readings == 21 and runtime.worker.serving.n_learned == 20
        assert runtime.worker.reports.errors["unknown_seq"] == 0
        with monitor.lock:
            status = [
                p for t, p in monitor.received if t == "edgebayes/runtime/edgebayes-pi/status"
            ]
        assert status == [b"online"]
    finally:
        for c in clients:
            c.close()
        runtime.stop()


def tasmota_behind_the_installed_broker(tmp_path: Path):
    """The Tasmota example config with the runtime's login, a broker with the shipped config
    and the ACL `edgebayes acl` makes from that config, and the runtime serving it."""
    from edgebayes.runtime.service import Runtime

    for user in ("edgebayes", "tas-0"):
        (tmp_path / f"{user}-password").write_text(PASSWORDS[user] + "\n")
    example = (REPO / "docs" / "examples" / "tasmota-bme280.toml").read_text()
    login = (f'[broker]\nusername = "edgebayes"\npassword_file = "{tmp_path}/edgebayes-password"\n'
             "reconnect_min_s = 0.1\n")
    config_file = tmp_path / "tasmota.toml"
    config_file.write_text(example.replace("[broker]\n", login, 1) + '\n[output]\nformat = "json"\n')
    acl = subprocess.run([sys.executable, "-m", "edgebayes", "acl", "--config", str(config_file)],
                         capture_output=True, text=True, check=True).stdout
    assert "pattern write tele/%u/SENSOR\npattern write tele/%u/LWT\n" in acl
    workdir = tmp_path / "broker"
    broker = Broker(workdir, extra_config=shipped_broker_config(workdir, acl=acl)).start()
    runtime = Runtime(load_config(config_file).with_overrides(broker.address))
    runtime.start()
    wait_for(runtime.client.subscribed.is_set, what="the runtime's subscriptions granted")
    return broker, runtime


def test_generated_acl_admits_the_configured_sources_and_fences_them(tmp_path):
    """A board logged in as its Topic publishes tele/tas-0/SENSOR and gets a prediction back;
    it cannot publish as another board. The shipped ACL denied tele/tas-0/SENSOR outright."""
    broker, runtime = tasmota_behind_the_installed_broker(tmp_path)
    clients = []
    try:
        monitor = Client(broker, "mon", "monitor", ["edgebayes/#"])
        board = Client(broker, "tas-0", "tas-0")
        clients = [monitor, board]

        def publish(topic, doc):
            info = board.client.publish(topic, json.dumps(doc).encode(), qos=1)
            wait_for(lambda: info.mid in board.pubacks, what=f"PUBACK of {topic}")
            return board.pubacks[info.mid]

        sensor = {"BME280": {"Temperature": 21.5, "Humidity": 40.0, "Pressure": 1001.0}, "Switch1": "ON"}
        assert publish("tele/tas-0/SENSOR", sensor) == 0  # taken: the runtime subscribes
        assert publish("tele/tas-1/SENSOR", sensor) == NOT_AUTHORIZED
        assert publish("tele/tas-0/LWT", "Online") == 0
        wait_for(lambda: monitor.got(r"edgebayes/tas-0/prediction"), what="the board's prediction")
        assert runtime.worker.serving.n_learned == 1 and "tas-1" not in runtime.worker.devices
    finally:
        for c in clients:
            c.close()
        runtime.stop()
        broker.stop()


def test_the_readmes_simulated_tasmota_board_gets_predictions_through_the_installed_broker(tmp_path, capsys):
    """The README's firmware-sim command, logged in as tas-0: every reading through the ACL,
    read by the Tasmota example, predicted and learned with its Switch1 label; none lost."""
    from firmware_sim.cli import main as firmware_sim

    broker, runtime = tasmota_behind_the_installed_broker(tmp_path)
    try:
        readme = (REPO / "README.md").read_text()
        command = re.search(r"^firmware-sim run --format tasmota .*$", readme, re.MULTILINE).group(0)
        args = command.split()[1:]
        args[args.index("--broker") + 1] = broker.address
        args += ["--limit", "40", "--rate", "200", "--username", "tas-0",
                 "--password-file", str(tmp_path / "tas-0-password"), "--client-id", "tas-0"]
        assert firmware_sim(args) == 0
        summary = capsys.readouterr().err.splitlines()[-1]
        assert "40 readings and 40 labels published (40 inline, 0 label messages), 0 lost," in summary
        wait_for(lambda: runtime.worker.serving.n_learned == 40, what="40 readings learned")
        m = runtime.worker.metrics()
        assert (m["n_readings"], m["n_malformed"], m["sources"]) == (40, 0, {"readings": 40})
    finally:
        runtime.stop()
        broker.stop()


@pytest.mark.slow
def test_bridge_stores_and_forwards_outputs_while_the_upstream_is_down(tmp_path):
    upstream = Broker(tmp_path / "upstream").start()
    local = Broker(
        tmp_path / "local",
        extra_config=shipped_broker_config(tmp_path / "local", bridge_to=upstream.port),
    )
    central = runtime = None
    try:
        local.start()
        # the central side: a persistent session, so it misses nothing across its broker's restart
        central = Client(upstream, "central-consumer", None, ["edgebayes/#"], clean=False)
        runtime = Client(local, "edgebayes-pi", "edgebayes")  # publishes what the runtime would
        assert runtime.publish("edgebayes/sim-0/prediction", {"seq": -1}) == 0
        wait_for(lambda: central.got(r"edgebayes/sim-0/prediction"), what="the bridge up")

        upstream.stop()
        for seq in range(200):
            assert (
                runtime.publish("edgebayes/sim-0/prediction", {"seq": seq, "y_pred": seq % 2}) == 0
            )
            if seq % 40 == 39:
                alert = {"seq": seq, "model": "nb", "level": "drift", "detector": "adwin"}
                assert runtime.publish("edgebayes/sim-0/drift", alert) == 0
        device = Client(local, "sim-0", "sim-0")
        assert device.publish("edgebayes/sim-0/reading", {"seq": 0, "x": [1.0]}) == NO_SUBSCRIBERS
        device.close()
        time.sleep(0.5)
        upstream.start()

        wait_for(
            lambda: len(central.got(r"edgebayes/sim-0/prediction")) >= 201,
            timeout_s=60,  # the bridge reconnects on its own schedule; slow on a loaded machine
            what="the queued predictions upstream",
        )
        wait_for(
            lambda: len(central.got(r"edgebayes/sim-0/drift")) >= 5, timeout_s=30, what="the queued drift alerts"
        )
        time.sleep(0.3)
        assert [p["seq"] for p in central.got(r"edgebayes/sim-0/prediction")] == list(
            range(-1, 200)
        )
        assert [a["seq"] for a in central.got(r"edgebayes/sim-0/drift")] == [39, 79, 119, 159, 199]
        assert central.got(r"edgebayes/sim-0/reading") == []  # readings stay local
    finally:
        for c in (central, runtime):
            if c is not None:
                c.close()
        local.stop()
        upstream.stop()


def _shipped_runtime(broker: Broker, tmp_path: Path):
    from edgebayes.runtime.service import Runtime

    (tmp_path / "mqtt-password").write_text(PASSWORDS["edgebayes"] + "\n")
    cfg = load_config(DEPLOY / "edgebayes.toml").with_overrides(
        broker.address, str(tmp_path / "checkpoints")
    )
    cfg = dataclasses.replace(
        cfg,
        broker=dataclasses.replace(
            cfg.broker, password_file=str(tmp_path / "mqtt-password"), reconnect_min_s=0.1
        ),
        models=cfg.models[:1],  # naive Bayes: the broker is what is tested
    )
    runtime = Runtime(cfg)
    runtime.start()
    wait_for(runtime.client.subscribed.is_set, what="the runtime's subscriptions granted")
    return runtime


def _reading(seq: int) -> dict:
    y = seq % 2
    return {"seq": seq, "x": [21.0 + y, 27.0, 500.0 * y, 450.0 + 400 * y, 0.0042], "y": y}


def test_no_client_can_take_over_the_runtimes_session(secure_broker, tmp_path):
    """A device connecting with the runtime's client id (edgebayes-pi) gets its user name as
    client id instead: the runtime keeps its one connection and serves every reading."""
    runtime = _shipped_runtime(secure_broker, tmp_path)
    clients = []
    try:
        intruder = Client(secure_broker, "edgebayes-pi", "sim-1")
        sim0 = Client(secure_broker, "sim-0", "sim-0")
        clients = [intruder, sim0]
        assert intruder.connack == [0]
        for seq in range(50):
            assert sim0.publish("edgebayes/sim-0/reading", _reading(seq)) == 0
        wait_for(lambda: runtime.worker.serving.n_readings == 50, what="50 readings served")
        time.sleep(0.5)
        assert (runtime.client.n_connects, runtime.client.watch.n_takeovers) == (1, 0)
        assert runtime.client.connected.is_set() and intruder.client.is_connected()
    finally:
        for c in clients:
            c.close()
        runtime.stop()


def test_a_kill_9_of_mosquitto_keeps_the_runtimes_subscription_and_queued_readings(
    secure_broker, tmp_path
):
    """kill -9 two seconds after the runtime first subscribed (the shipped autosave once saved
    every minute: the restarted broker knew no subscription, and readings published to it were
    acknowledged and dropped) and after readings were queued for the stopped runtime."""
    runtime = _shipped_runtime(secure_broker, tmp_path)
    sim0 = Client(secure_broker, "sim-0", "sim-0")
    try:
        for seq in range(20):
            assert sim0.publish("edgebayes/sim-0/reading", _reading(seq)) == 0
        wait_for(lambda: runtime.worker.serving.n_readings == 20, what="20 readings served")
        runtime.stop()  # its session stays, readings queue in it
        runtime = None
        for seq in range(20, 60):
            assert sim0.publish("edgebayes/sim-0/reading", _reading(seq)) == 0  # 0: a subscriber
        time.sleep(2.0)
        secure_broker.proc.kill()
        secure_broker.proc.wait()
        sim0.close()
        secure_broker.start()
        sim0 = Client(secure_broker, "sim-0", "sim-0")
        for seq in range(60, 80):
            assert sim0.publish("edgebayes/sim-0/reading", _reading(seq)) == 0, "no subscriber"
        runtime = _shipped_runtime(secure_broker, tmp_path)
        wait_for(lambda: runtime.worker.serving.n_readings == 60, what="the 60 queued readings served")
        time.sleep(0.3)
        m = runtime.worker.metrics()
        assert (m["n_readings"], m["n_duplicates"], runtime.worker.devices["sim-0"].last_seq) == (60, 0, 79)
    finally:
        sim0.close()
        if runtime is not None:
            runtime.stop()
