"""``deploy/install.sh --root DIR`` over Debian's own Mosquitto, run as installed.

DIR gets Debian's /etc/mosquitto/mosquitto.conf (the mosquitto package's file: persistence in
/var/lib/mosquitto/, pid file, log file, ``include_dir /etc/mosquitto/conf.d``) and the folders
the package owns; install.sh runs into it (refused first without ``--yes``: anonymous access on
and no ACL before), then again after the user edited the config (Home Assistant discovery, a
Tasmota and a zigbee2mqtt source) and added a line of their own to the ACL.

The scenario then runs in a private network and mount namespace (``unshare -n -m``, loopback
up: port 1883 is free and nothing is reachable from outside), driven by this module run as a
script (``python -m tests.test_install_root DIR``) so that the broker, the runtime and every
client share it. The mechanism that keeps Mosquitto's files unchanged: DIR/etc/mosquitto,
DIR/var/lib/mosquitto and DIR/var/log/mosquitto are bind-mounted over the real folders, and a
tmpfs over /run holds /run/mosquitto (the pid file), in that namespace only; Mosquitto starts as
Debian starts it, ``mosquitto -c /etc/mosquitto/mosquitto.conf``. The runtime runs
``python -m edgebayes run`` with the installed config, its /etc/edgebayes/ and
/var/lib/edgebayes paths pointed into DIR (the only change), so it logs in with the generated
password.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.broker import REQUIRE_ENV, mosquitto_exe, wait_port

REPO = Path(__file__).resolve().parents[1]
INSTALL = REPO / "deploy" / "install.sh"
DEBIAN_CONF = Path("/etc/mosquitto/mosquitto.conf")
#: the folders of the mosquitto package that the scenario mounts from DIR
PACKAGE_DIRS = ("etc/mosquitto", "var/lib/mosquitto", "var/log/mosquitto")
PASSWORDS = {"homeassistant": "ha-secret", "tas-0": "t0-secret", "zigbee2mqtt": "z2m-secret",
             "sim-0": "s0-secret", "sim-9": "s9-secret", "monitor": "mon-secret"}
#: what the user adds to the installed config: discovery, a Tasmota and a zigbee2mqtt source
SOURCES = """
[homeassistant]
discovery = true

[assembler]
interval_s = 0

[[sources]]
kind = "tasmota"
topic = "tele/+/SENSOR"
features = { Temperature = "EB.T", Humidity = "EB.H", Light = "EB.L", CO2 = "EB.C", HumidityRatio = "EB.R" }

[[sources]]
kind = "zigbee2mqtt"
topic = "zigbee2mqtt/+"
features = { Temperature = "temperature", Humidity = "humidity", Light = "illuminance", CO2 = "co2", HumidityRatio = "ratio" }
"""
USER_LINE = "# my own line: kept by every run\nuser nodered\ntopic read edgebayes/#\n"
NOT_AUTHORIZED = 135  # MQTT 5 reason code


def skip_or_fail(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}, but {REQUIRE_ENV}=1 requires it")
    pytest.skip(reason)


def install(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(INSTALL), "--root", str(root), *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL, check=False)


def prepare_root(root: Path) -> None:
    """DIR as the mosquitto package leaves /: its main file, conf.d, its folders owned by it."""
    (root / "etc" / "mosquitto" / "conf.d").mkdir(parents=True)
    shutil.copy(DEBIAN_CONF, root / "etc" / "mosquitto" / "mosquitto.conf")
    for d in ("var/lib/mosquitto", "var/log/mosquitto", "var/lib/edgebayes"):
        (root / d).mkdir(parents=True)
    for d in ("var/lib/mosquitto", "var/log/mosquitto"):
        shutil.chown(root / d, "mosquitto")


def needs_debians_broker_and_namespaces() -> None:
    """Skips (fails under EDGEBAYES_REQUIRE_BROKER=1) without Mosquitto, Debian's file, or namespaces."""
    mosquitto_exe()
    if not DEBIAN_CONF.exists():
        skip_or_fail(f"{DEBIAN_CONF} (the mosquitto package's file) is absent")
    tools = all(shutil.which(t) for t in ("unshare", "ip", "ss", "mount"))
    probe = subprocess.run(["unshare", "-n", "-m", "sh", "-c", "ip link set lo up && mount -t tmpfs tmpfs /run"],
                           capture_output=True, text=True, check=False) if tools else None
    if probe is None or probe.returncode != 0:
        skip_or_fail("unshare -n -m (a private network and mount namespace, with ip and ss of iproute2) is not "
                     "permitted or not installed here")


def test_install_root_joins_debians_broker_and_serves_home_assistant_tasmota_zigbee2mqtt(tmp_path):
    needs_debians_broker_and_namespaces()
    root = tmp_path / "root"
    prepare_root(root)
    conf_d = root / "etc" / "mosquitto" / "conf.d"

    refused = install(root)  # Debian's file: anonymous from localhost, no ACL: it would lock out
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "stopped before locking clients out of your broker" in refused.stderr
    assert "locks out anonymous clients" in refused.stdout and "an ACL on a broker that had none" in refused.stdout
    assert not (conf_d / "edgebayes.conf").exists()
    assert not (root / "etc" / "edgebayes").exists()

    first = install(root, "--yes")
    assert first.returncode == 0, first.stdout + first.stderr
    config = root / "etc" / "edgebayes" / "edgebayes.toml"
    config.write_text(config.read_text() + SOURCES)
    acl_file = root / "etc" / "mosquitto" / "edgebayes.acl"
    acl_file.write_text(USER_LINE + acl_file.read_text())
    t_install = time.time()
    again = install(root)  # a rerun: nothing new locks anyone out
    t_installed = time.time()
    assert again.returncode == 0, again.stdout + again.stderr
    acl = acl_file.read_text()
    assert acl.startswith(USER_LINE) and acl.count("# >>> edgebayes") == acl.count("# <<< edgebayes") == 1
    assert "pattern write tele/%u/SENSOR" in acl and "user zigbee2mqtt\ntopic write zigbee2mqtt/+\n" in acl
    passwd = root / "etc" / "mosquitto" / "edgebayes.passwd"
    for user, password in PASSWORDS.items():  # what the user does next: one login per client
        subprocess.run(["mosquitto_passwd", "-b", str(passwd), user, password], check=True)

    out = subprocess.run(["unshare", "-n", "-m", sys.executable, "-m", "tests.test_install_root", str(root)],
                         capture_output=True, text=True, timeout=120, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.splitlines()[-1])
    assert r["broker_started"], f"mosquitto exit {r['broker_exit']}: {r['broker_log']}"
    assert "error" not in r, f"{r['error']}\n{r}"
    print(f"\ninstall.sh --root (the rerun) to the first prediction: {r['first_prediction_at'] - t_install:.2f} s "
          f"(install.sh {t_installed - t_install:.2f} s)")
    assert r["listening"] == ["1883"], r["listening"]
    assert r["anonymous"] == NOT_AUTHORIZED
    assert r["tasmota"] == {"published": 0, "as_another": NOT_AUTHORIZED, "predictions": 3}
    assert r["zigbee2mqtt"] == {"published": 0, "by_another_user": NOT_AUTHORIZED, "predictions": 3}
    assert r["ha"]["configs"] >= 1 and r["ha"]["configs_after_birth"] > r["ha"]["configs"], r["ha"]
    assert r["ha"]["birth"] == 0 and r["ha"]["reads_predictions"] is True
    assert r["takeover"] == {"intruder_connack": 0, "readings": 40, "predictions": list(range(40)),
                             "runtime_status": ["online"], "old_connection_closed": 0,
                             "runtime_connections": 1}, r["broker_log"]


THEIRS = """# the broker Home Assistant already uses
listener 1883
allow_anonymous false
password_file /etc/mosquitto/passwd
acl_file /etc/mosquitto/acl
"""
THEIR_ACL = "user homeassistant\ntopic readwrite #\n"


def test_install_root_joins_a_broker_with_its_own_listener_passwords_and_acl(tmp_path):
    """Their listener, password file and ACL stay theirs: the dry run lists each change and changes
    nothing; the install adds the runtime's user to their password file and the generated block to
    their ACL, locks nobody out (no --yes needed); a rerun changes nothing; the broker starts and
    both Home Assistant and the runtime log in."""
    needs_debians_broker_and_namespaces()
    root = tmp_path / "root"
    prepare_root(root)
    etc = root / "etc" / "mosquitto"
    (etc / "conf.d" / "local.conf").write_text(THEIRS)
    subprocess.run(["mosquitto_passwd", "-c", "-b", str(etc / "passwd"), "homeassistant", PASSWORDS["homeassistant"]],
                   check=True)
    (etc / "acl").write_text(THEIR_ACL)
    (etc / "acl").chmod(0o640)
    shutil.chown(etc / "acl", "root", "mosquitto")
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}

    plan = install(root, "--dry-run")
    assert plan.returncode == 0, plan.stderr
    assert {p: p.read_bytes() for p in root.rglob("*") if p.is_file()} == before
    assert "locks out" not in plan.stdout
    for change in (f"# listener 1883    # edgebayes install: your {etc}/conf.d/local.conf has listener 1883",
                   "# password_file /etc/mosquitto/edgebayes.passwd    # edgebayes install: yours: /etc/mosquitto/passwd",
                   "# acl_file /etc/mosquitto/edgebayes.acl    # edgebayes install: yours: /etc/mosquitto/acl",
                   "# allow_anonymous false    # edgebayes install: yours: allow_anonymous false is kept",
                   "# message_size_limit 65536    # edgebayes install: would drop larger messages",
                   f"{etc}/passwd: user edgebayes added",
                   f"{etc}/acl: the lines between its edgebayes markers added",
                   "add 'use_username_as_clientid true' after 'listener 1883'"):
        assert change in plan.stdout, change

    done = install(root)
    assert done.returncode == 0, done.stdout + done.stderr
    acl = (etc / "acl").read_text()
    assert acl.startswith(THEIR_ACL) and acl.count("# >>> edgebayes") == 1 and "user edgebayes" in acl
    assert ((etc / "acl").stat().st_mode & 0o777, (etc / "acl").group()) == (0o640, "mosquitto")  # still theirs
    assert [line.split(":")[0] for line in (etc / "passwd").read_text().splitlines()] == ["homeassistant", "edgebayes"]
    assert not (etc / "edgebayes.acl").exists() and not (etc / "edgebayes.passwd").exists()
    active = [line.split()[0] for line in (etc / "conf.d" / "edgebayes.conf").read_text().splitlines()
              if line and not line.startswith("#")]
    assert active == ["persistence", "autosave_interval", "max_queued_messages", "set_tcp_nodelay"]
    again = install(root)
    assert again.returncode == 0 and f"the ACL in {etc}/acl is up to date" in again.stdout
    assert (etc / "acl").read_text() == acl
    (etc / "conf.d" / "local.conf").write_text("per_listener_settings true\n" + THEIRS)
    refused = install(root)  # which listener's files to join is not the install's call
    assert refused.returncode == 1 and "sets per_listener_settings true: join that broker by hand" in refused.stderr
    (etc / "conf.d" / "local.conf").write_text(THEIRS)

    out = subprocess.run(["unshare", "-n", "-m", sys.executable, "-m", "tests.test_install_root", str(root), "login"],
                         capture_output=True, text=True, timeout=60, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)}, check=False)
    assert out.returncode == 0, out.stderr[-3000:]
    r = json.loads(out.stdout.splitlines()[-1])
    assert (r["broker_started"], r.get("listening"), r.get("connacks")) == (True, ["1883"], [0, 0]), r


# ---- the scenario, run inside the namespaces (python -m tests.test_install_root DIR) ----

class Client:
    """A paho MQTT 5 client logged in as ``user``: what it receives, and each PUBACK's reason."""

    def __init__(self, user: str | None, client_id: str, subscribe=(), password: str | None = None):
        import paho.mqtt.client as paho
        from paho.mqtt.enums import CallbackAPIVersion, MQTTProtocolVersion

        self.lock, self.received, self.pubacks, self.connack = threading.Lock(), [], {}, []
        c = paho.Client(callback_api_version=CallbackAPIVersion.VERSION2, client_id=client_id,
                        protocol=MQTTProtocolVersion.MQTTv5)
        if user is not None:
            c.username_pw_set(user, password or PASSWORDS[user])
        subscribed = threading.Event()
        c.on_connect = lambda cl, u, f, rc, p: (self.connack.append(rc.value),
                                                 subscribe and not rc.is_failure and cl.subscribe(
                                                     [(t, 1) for t in subscribe]))
        c.on_subscribe = lambda *a: subscribed.set()
        c.on_message = lambda cl, u, m: self._got(m)
        c.on_publish = lambda cl, u, mid, rc, p: self.pubacks.__setitem__(mid, rc.value)
        c.reconnect_delay_set(60, 60)  # a refused or dropped client stays down: the test counts
        c.connect_async("127.0.0.1", 1883)
        c.loop_start()
        self.client = c
        wait_for(lambda: self.connack, f"{client_id}'s CONNACK")
        if subscribe and self.connack[0] == 0:
            wait_for(subscribed.is_set, f"{client_id}'s SUBACK")

    def _got(self, msg) -> None:
        with self.lock:
            self.received.append((msg.topic, msg.payload, msg.retain, time.time()))

    def publish(self, topic: str, payload: bytes | str) -> int:
        info = self.client.publish(topic, payload, qos=1)
        wait_for(lambda: info.mid in self.pubacks, f"PUBACK of {topic}")
        return self.pubacks[info.mid]

    def got(self, pattern: str) -> list[tuple]:
        with self.lock:
            return [m for m in self.received if re.fullmatch(pattern, m[0])]

    def close(self) -> None:
        self.client.disconnect()
        self.client.loop_stop()


def wait_for(cond, what: str, timeout_s: float = 15.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.02)


def mount_package_dirs(root: Path) -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    for d in PACKAGE_DIRS:
        subprocess.run(["mount", "--bind", str(root / d), f"/{d}"], check=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", "/run"], check=True)
    os.mkdir("/run/mosquitto")
    shutil.chown("/run/mosquitto", "mosquitto")


def runtime_config(root: Path) -> Path:
    """The installed config, its /etc/edgebayes/ and /var/lib/edgebayes pointed into DIR."""
    text = (root / "etc" / "edgebayes" / "edgebayes.toml").read_text()
    text = text.replace('"/etc/edgebayes/', f'"{root}/etc/edgebayes/').replace(
        '"/var/lib/edgebayes"', f'"{root}/var/lib/edgebayes"')
    path = root / "runtime.toml"
    path.write_text(text)
    return path


def reading(seq: int) -> bytes:
    y = seq % 2
    return json.dumps({"seq": seq, "x": [21.0 + y, 27.0, 500.0 * y, 450.0 + 400 * y, 0.0042], "y": y}).encode()


def scenario(root: Path, login_only: bool = False) -> dict:
    """The broker as installed, then (``login_only``) Home Assistant's and the runtime's logins,
    or the whole scenario of the first test."""
    mount_package_dirs(root)
    log = Path("/var/log/mosquitto/mosquitto.log")
    broker = subprocess.Popen([mosquitto_exe(), "-c", "/etc/mosquitto/mosquitto.conf"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    result: dict = {"broker_started": False}
    try:
        wait_port("127.0.0.1", 1883, timeout_s=5)
    except TimeoutError:
        broker.kill()
        _, err = broker.communicate()
        return {**result, "broker_exit": broker.returncode,
                "broker_log": (log.read_text() if log.exists() else "") + err.decode()}
    result["broker_started"] = True
    ss = subprocess.run(["ss", "-Hltn"], capture_output=True, text=True, check=False).stdout
    result["listening"] = sorted({line.split()[3].rsplit(":", 1)[1] for line in ss.splitlines()})
    if login_only:
        password = (root / "etc" / "edgebayes" / "mqtt-password").read_text().strip()
        logins = [Client("homeassistant", "ha"), Client("edgebayes", "rt", password=password)]
        result["connacks"] = [c.connack[0] for c in logins]
        for c in logins:
            c.close()
        broker.terminate()
        broker.wait(timeout=10)
        return result
    runtime = subprocess.Popen([sys.executable, "-m", "edgebayes", "run", "--config", str(runtime_config(root))],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    clients: list[Client] = []
    try:
        monitor = Client("monitor", "monitor", ["edgebayes/#"])
        clients.append(monitor)
        wait_for(lambda: monitor.got(r"edgebayes/runtime/edgebayes-pi/status"), "the runtime online", 30)
        anonymous = Client(None, "anonymous")
        result["anonymous"] = anonymous.connack[0]
        anonymous.client.loop_stop()
        ha = Client("homeassistant", "ha", ["homeassistant/#", "edgebayes/+/prediction"])
        tasmota = Client("tas-0", "tas-0")
        bridge = Client("zigbee2mqtt", "z2m")
        clients += [ha, tasmota, bridge]
        def sensor(i: int) -> str:
            return json.dumps({"EB": {"T": 21.0 + i, "H": 27.0, "L": 0.0, "C": 450.0, "R": 0.0042}})

        def z2m(i: int) -> str:
            return json.dumps({"temperature": 21.0 + i, "humidity": 27.0, "illuminance": 0, "co2": 450, "ratio": 0.0042})

        result["tasmota"] = {"published": max(tasmota.publish("tele/tas-0/SENSOR", sensor(i)) for i in range(3)),
                             "as_another": tasmota.publish("tele/tas-1/SENSOR", sensor(0))}
        result["zigbee2mqtt"] = {"published": max(bridge.publish("zigbee2mqtt/kitchen", z2m(i)) for i in range(3)),
                                 "by_another_user": tasmota.publish("zigbee2mqtt/kitchen", z2m(0))}
        wait_for(lambda: len(monitor.got(r"edgebayes/(tas-0|kitchen)/prediction")) == 6, "6 predictions")
        result["first_prediction_at"] = min(m[3] for m in monitor.got(r"edgebayes/.*/prediction"))
        for name, device in (("tasmota", "tas-0"), ("zigbee2mqtt", "kitchen")):
            result[name]["predictions"] = len(monitor.got(rf"edgebayes/{device}/prediction"))
        wait_for(lambda: ha.got(r"homeassistant/.*/config"), "discovery configs")
        time.sleep(0.5)  # every config of the two devices, retained
        configs = len(ha.got(r"homeassistant/.*/config"))
        birth = ha.publish("homeassistant/status", "online")
        wait_for(lambda: len(ha.got(r"homeassistant/.*/config")) > configs, "configs sent again after the birth")
        result["ha"] = {"configs": configs, "birth": birth, "configs_after_birth": len(ha.got(r"homeassistant/.*/config")),
                        "reads_predictions": bool(ha.got(r"edgebayes/.*/prediction"))}
        result["takeover"] = takeover(monitor, log)
    except TimeoutError as exc:
        result["error"] = str(exc)
        result["monitor_got"] = sorted({m[0] for m in clients[0].received}) if clients else []
        result["monitor_n"] = len(clients[0].received) if clients else 0
    finally:
        for c in clients:
            c.close()
        runtime.kill()  # SIGKILL, by its PID
        result["runtime_log"] = runtime.stderr.read()[-3000:]
        broker.terminate()
        broker.wait(timeout=10)
    result["broker_log"] = log.read_text()[-3000:]
    return result


def takeover(monitor: Client, log: Path) -> dict:
    """A device logged in as sim-9 with the runtime's client id, while sim-0 sends 40 readings."""
    device = Client("sim-0", "sim-0")
    for seq in range(20):
        device.publish("edgebayes/sim-0/reading", reading(seq))
    intruder = Client("sim-9", "edgebayes-pi")
    for seq in range(20, 40):
        device.publish("edgebayes/sim-0/reading", reading(seq))
    wait_for(lambda: len(monitor.got(r"edgebayes/sim-0/prediction")) >= 40, "sim-0's 40 predictions")
    time.sleep(0.5)  # a reconnect of the runtime would publish its status by now
    seqs = sorted(json.loads(m[1])["seq"] for m in monitor.got(r"edgebayes/sim-0/prediction"))
    text = log.read_text()
    out = {"intruder_connack": intruder.connack[0], "readings": 40, "predictions": seqs,
           "runtime_status": [m[1].decode() for m in monitor.got(r"edgebayes/runtime/edgebayes-pi/status")],
           "old_connection_closed": text.count("already connected, closing old connection"),
           "runtime_connections": len(re.findall(r"New client connected from \S+ as edgebayes \(", text))}
    intruder.close()
    device.close()
    return out


if __name__ == "__main__":
    print(json.dumps(scenario(Path(sys.argv[1]), login_only=sys.argv[2:] == ["login"])))
