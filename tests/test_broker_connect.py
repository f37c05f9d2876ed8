"""Connecting to a real Mosquitto over TLS, with a login and over websockets: a failure is
logged in one line saying why and which ``[broker]`` key to set; a refused login ends
``edgebayes run`` (exit 3) after ``LOGIN_TRIES`` tries."""

from __future__ import annotations

import dataclasses
import logging
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from edgebayes.runtime.config import BrokerConfig, ConfigError, load_config, parse_config
from edgebayes.runtime.mqtt import MqttClient
from edgebayes.runtime.service import Runtime
from firmware_sim.cli import main as firmware_sim_main
from firmware_sim.monitor import Monitor
from firmware_sim.mqtt import BrokerOptions
from tests.broker import Broker, free_port, wait_port
from tests.runtime_client import Device, wait_for, write_config
from tests.tls_certs import CertificateAuthority

ROOT = Path(__file__).resolve().parents[1]
RETRY = "retrying with backoff (0.1 s up to 0.5 s)"


@dataclasses.dataclass
class TlsBroker:
    broker: Broker
    port: int  # the TLS listener
    ca: CertificateAuthority
    client_cert: tuple[Path, Path]


def _tls_broker(tmp_path, require_certificate: bool = False) -> TlsBroker:
    """A Mosquitto with a TLS listener whose certificate is for ``broker.test`` (and, when it
    requires client certificates, 127.0.0.1)."""
    ca = CertificateAuthority(tmp_path / "certs")
    crt, key = ca.issue("server", "broker.test", dns=("broker.test",),
                        ips=("127.0.0.1",) if require_certificate else ())
    port = free_port()
    broker = Broker(tmp_path / "broker", extra_config=(
        f"listener {port} 127.0.0.1\ncafile {ca.ca_file}\ncertfile {crt}\nkeyfile {key}\n"
        f"require_certificate {str(require_certificate).lower()}\n")).start()
    return TlsBroker(broker, port, ca, ca.issue("client", "edgebayes", client=True))


@pytest.fixture
def tls_broker(tmp_path):
    b = _tls_broker(tmp_path)
    yield b
    b.broker.stop()


@pytest.fixture
def mtls_broker(tmp_path):
    b = _tls_broker(tmp_path, require_certificate=True)
    yield b
    b.broker.stop()


def _client(port: int, **broker) -> MqttClient:
    cfg = BrokerConfig(host="127.0.0.1", port=port, client_id="tls-test", reconnect_min_s=0.1,
                       reconnect_max_s=0.5, **broker)
    return MqttClient(cfg, subscriptions=["t/in"], status_topic="t/status",
                      on_message=lambda topic, payload, mid, qos: None)


def _first_failure(caplog, port: int, **broker) -> str:
    """The first 'cannot connect' line of a client with these ``[broker]`` keys."""
    c = _client(port, **broker)
    with caplog.at_level(logging.INFO, logger="edgebayes.runtime.mqtt"):
        c.start()
        try:
            wait_for(lambda: c.watch.n_connect_failures >= 1, what="a failed connect")
        finally:
            c.stop()
    lines = [r.getMessage() for r in caplog.records if r.name == "edgebayes.runtime.mqtt"]
    caplog.clear()
    return lines[0]


def _connects(port: int, **broker) -> bool:
    c = _client(port, **broker)
    c.start()
    try:
        wait_for(c.subscribed.is_set, what="connection and subscription")
        return c.watch.n_connect_failures == 0
    finally:
        c.stop()


def test_a_certificate_name_mismatch_names_the_certificate_and_tls_server_name(tls_broker, caplog):
    port, ca = tls_broker.port, str(tls_broker.ca.ca_file)
    assert _first_failure(caplog, port, tls_ca_file=ca) == (
        f"cannot connect to the broker 127.0.0.1:{port}: TLS: certificate name mismatch: the broker's "
        "certificate is for broker.test, not 127.0.0.1 (set [broker] tls_server_name) (attempt 1); " + RETRY)
    assert _connects(port, tls_ca_file=ca, tls_server_name="broker.test")


def test_an_untrusted_certificate_says_tls_ca_file_and_tls_insecure_connects_with_a_warning(tls_broker, caplog):
    port = tls_broker.port
    other = CertificateAuthority(tls_broker.broker.workdir / "other", name="other CA")
    assert _first_failure(caplog, port, tls_ca_file=str(other.ca_file), tls_server_name="broker.test") == (
        f"cannot connect to the broker 127.0.0.1:{port}: TLS: the broker's certificate is refused: "
        "self-signed certificate in certificate chain (set [broker] tls_ca_file to the CA that signed it, or "
        "tls_insecure = true for a test broker) (attempt 1); " + RETRY)
    with caplog.at_level(logging.WARNING, logger="edgebayes.runtime.mqtt"):
        assert _connects(port, tls_insecure=True)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [(f"[broker] tls_insecure = true: the certificate of 127.0.0.1:{port} is not verified, "
                         "so anyone on the way can pose as the broker; for test brokers only")]


def test_a_missing_client_certificate_says_tls_cert_file(mtls_broker, caplog):
    port, ca = mtls_broker.port, str(mtls_broker.ca.ca_file)
    assert _first_failure(caplog, port, tls_ca_file=ca) == (
        f"cannot connect to the broker 127.0.0.1:{port}: TLS: the broker requires a client certificate "
        "(set [broker] tls_cert_file and tls_key_file) (attempt 1); " + RETRY)
    crt, key = mtls_broker.client_cert
    assert _connects(port, tls_ca_file=ca, tls_cert_file=str(crt), tls_key_file=str(key))


def test_firmware_sim_takes_the_same_tls_options_and_says_why_it_cannot_connect(tls_broker, capsys):
    port, ca = tls_broker.port, str(tls_broker.ca.ca_file)
    code = firmware_sim_main(["monitor", "--broker", f"127.0.0.1:{port}", "--tls-ca-file", ca, "--duration", "1"])
    assert code == 1
    assert capsys.readouterr().err == (
        f"firmware-sim: cannot reach the broker 127.0.0.1:{port}: TLS: certificate name mismatch: the broker's "
        "certificate is for broker.test, not 127.0.0.1 (set [broker] tls_server_name)\n")
    with Monitor(BrokerOptions("127.0.0.1", port, tls_ca_file=ca, tls_server_name="broker.test")) as mon:
        assert mon.connection.connected.is_set()


def test_a_plain_listener_is_not_mistaken_for_tls(tls_broker, caplog):
    port = tls_broker.broker.port
    line = _first_failure(caplog, port, tls_ca_file=str(tls_broker.ca.ca_file))
    assert line == (f"cannot connect to the broker 127.0.0.1:{port}: the connection was reset during the TLS "
                    f"handshake (is port {port} a TLS listener?) (attempt 1); " + RETRY)


@pytest.mark.parametrize("protocol", ["mqttv5", "mqttv311"])
def test_a_refused_login_stops_edgebayes_run_after_three_tries(tmp_path, protocol):
    passwd = tmp_path / "passwd"
    subprocess.run([shutil.which("mosquitto_passwd") or "/usr/bin/mosquitto_passwd", "-c", "-b", str(passwd),
                    "edgebayes", "right"], check=True)
    broker = Broker(tmp_path / "broker", extra_config=f"password_file {passwd}\n").start()
    try:
        (tmp_path / "pw").write_text("wrong\n")
        cfg = write_config(tmp_path / "rt.toml", broker, extra="")
        text = cfg.read_text().replace(
            "[broker]\n", f'[broker]\nusername = "edgebayes"\npassword_file = "{tmp_path / "pw"}"\n'
                          f'protocol = "{protocol}"\n')
        cfg.write_text(text)
        out = subprocess.run([sys.executable, "-m", "edgebayes", "run", "--config", str(cfg)],
                             check=False, capture_output=True, text=True, timeout=30, cwd=ROOT)
    finally:
        broker.stop()
    lines = out.stderr.strip().splitlines()
    refused = f"the broker {broker.host}:{broker.port} refused the login of user 'edgebayes': Not authorized (135)"
    check = "check [broker] username and password_file against the broker's password file and ACL"
    assert out.returncode == 3, out.stderr
    assert [line.split(": ", 1)[1] for line in lines if "refused the login" in line] == [
        f"{refused} (attempt 1 of 3)", f"{refused} (attempt 2 of 3)",
        f"{refused}, 3 times in a row; {check}; giving up", f"{refused}, 3 times in a row; {check}; exiting"]
    assert lines[-1].endswith("ACL; exiting") and " CRITICAL " in lines[-1]
    assert "Protocol error" not in out.stderr and "Unspecified error" not in out.stderr


def test_websockets_transport_serves_readings(broker, tmp_path, caplog):
    ws_port = free_port()
    broker.stop()
    broker.config.write_text(broker.config.read_text() + f"listener {ws_port} 127.0.0.1\nprotocol websockets\n")
    broker.start()
    wait_port("127.0.0.1", ws_port)
    assert _first_failure(caplog, ws_port) == (
        f"cannot connect to the broker 127.0.0.1:{ws_port}: the connection ended before the broker accepted it "
        f"(is port {ws_port} a websockets or TLS listener? see [broker] transport and tls_ca_file) (attempt 1); "
        + RETRY)
    cfg = load_config(write_config(tmp_path / "rt.toml", broker, extra="")).with_overrides(f"127.0.0.1:{ws_port}")
    cfg = dataclasses.replace(cfg, broker=dataclasses.replace(cfg.broker, transport="websockets"))
    rt = Runtime(cfg)
    rt.start()
    try:
        wait_for(rt.client.subscribed.is_set, what="runtime subscription over websockets")
        dev = Device(broker)  # plain MQTT on the TCP listener
        dev.publish("d1", "reading", {"seq": 0, "x": [1.0, 2.0, 3.0], "y": "a"})
        dev.publish("d1", "reading", {"seq": 1, "x": [1.0, 2.0, 3.0]})
        wait_for(lambda: len(dev.predictions()) == 2, what="2 predictions")
        assert (dev.predictions()[1]["y_pred"], dev.predictions()[1]["proba"]) == ("a", {"a": 1.0})
        with Monitor(BrokerOptions("127.0.0.1", ws_port, transport="websockets"), prefix="eb") as mon:
            dev.publish("d1", "reading", {"seq": 2, "x": [1.0, 2.0, 3.0], "y": "a"})
            assert mon.wait_until(lambda t: t["scored"] == 1, timeout_s=10)
        dev.close()
    finally:
        rt.stop(timeout_s=5)


def test_a_tls_file_that_does_not_parse_stops_edgebayes_run_with_one_line(tmp_path):
    (tmp_path / "ca.crt").write_text("not a certificate\n")
    cfg = tmp_path / "rt.toml"
    cfg.write_text(f'[broker]\nport = {free_port()}\ntls_ca_file = "{tmp_path / "ca.crt"}"\n'
                   '[schema]\nfeatures = ["x"]\n[[models]]\nname = "nb"\nkind = "gaussian_nb"\n')
    out = subprocess.run([sys.executable, "-m", "edgebayes", "run", "--config", str(cfg)],
                         check=False, capture_output=True, text=True, timeout=30, cwd=ROOT)
    assert out.returncode == 2
    assert out.stderr == (f"edgebayes run: TLS: [broker] tls_ca_file {tmp_path / 'ca.crt'}: not PEM CA "
                          "certificates (NO_CERTIFICATE_OR_CRL_FOUND)\n")


def test_broker_keys_are_checked():
    base = {"schema": {"features": ["x"]}, "models": [{"name": "nb", "kind": "gaussian_nb"}]}
    with pytest.raises(ConfigError) as err:
        parse_config({**base, "broker": {"tls_insecure": 1, "transport": "ws", "tls_server_name": ""}})
    assert err.value.problems == [
        "[broker] tls_insecure = 1: expected bool", "[broker] transport = 'ws': must be one of 'tcp', 'websockets'",
        "[broker] tls_server_name = '': must not be empty"]
    with pytest.raises(ConfigError) as err:
        parse_config({**base, "broker": {"ws_path": "mqtt"}})
    assert err.value.problems == ["[broker] ws_path = 'mqtt': must start with '/'",
                                  '[broker] ws_path needs transport = "websockets"']
    with pytest.raises(ConfigError) as err:
        parse_config({**base, "broker": {"ws_path": "/mqtt"}})
    assert err.value.problems == ['[broker] ws_path needs transport = "websockets"']
    b = parse_config({**base, "broker": {"tls_insecure": True, "transport": "websockets", "ws_path": "/ws"}}).broker
    assert (b.tls, b.tls_insecure, b.transport, b.ws_path) == (True, True, "websockets", "/ws")
    assert parse_config(base).broker.tls is False
