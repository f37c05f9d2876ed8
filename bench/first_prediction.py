"""From a clean clone to the first prediction, and the discovery configs checked by Home Assistant.

What a new user does, timed, all on this machine (loopback only; nothing installed outside a
temporary folder; no system service touched):

1. ``git clone`` this repository (its committed HEAD; ``--repo`` for another clone or URL);
2. a venv and ``pip install -e .`` in it, as the README says (the compiled core is built when a
   C compiler is there);
3. Mosquitto with the shipped config (deploy/mosquitto/edgebayes.conf: no anonymous access,
   user name as client id, persistence) on a free loopback port, a password file made with
   ``mosquitto_passwd`` and the ACL made by ``edgebayes acl --config``, as deploy/install.sh
   does;
4. ``edgebayes run`` with the shipped Tasmota example (docs/examples/tasmota-bme280.toml), its
   ``[broker]`` pointed at that broker with a user name and password file, plus a Zigbee2MQTT
   device in the shape ``firmware-sim --format zigbee2mqtt`` publishes (the shipped Aqara
   example needs two Aqara devices, which firmware-sim does not imitate) and
   ``[homeassistant] discovery = true``;
5. ``firmware-sim run`` as a Tasmota board (the README's command) and as a Zigbee2MQTT device,
   the board logged in with its device id as user name, the Zigbee2MQTT device as the
   bridge's user ``zigbee2mqtt``, as the ACL wants; the time from starting
   each to its first prediction (and from its first reading at the broker);
6. a second venv with ``homeassistant`` (default 2024.1.6) and bench/ha_discovery_check.py:
   every retained config the runtime published under ``homeassistant/`` through Home
   Assistant's own MQTT discovery schemas.

    python3 bench/first_prediction.py [--repo PATH|URL] [--ha-version 2024.1.6]
        [--ha-venv DIR] [--no-ha] [--keep] [--json PATH]

``--ha-venv`` reuses a venv that already has homeassistant (its install takes minutes);
``--keep`` leaves the temporary folder (logs, configs, the collected messages). Exit 0 when a
prediction came for both devices and every config passed the schemas.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEVICES = {"tas-0": "tasmota", "z2m-0": "zigbee2mqtt"}
#: each simulator's login, as the generated ACL wants: a Tasmota board its Topic, the Zigbee2MQTT
#: device's messages come from the bridge, which logs in as its own user
LOGINS = {"tas-0": "tas-0", "z2m-0": "zigbee2mqtt"}
RUNTIME_USER = "edgebayes"
CHECK_USER = "bench-check"  # this script's own subscriber: reads everything, writes nothing

#: the Zigbee2MQTT device: firmware-sim's shape (synth:SEA's features attrib1..3 as keys, the
#: label as a remote's "action" on <device>_label), mapped to the Tasmota example's schema
Z2M_SOURCES = """
[[sources]]
kind = "zigbee2mqtt"
topic = "zigbee2mqtt/z2m-0"
device = "z2m-0"
features = { temperature = "attrib1", humidity = "attrib2", pressure = "attrib3" }

[[sources]]
kind = "zigbee2mqtt"
topic = "zigbee2mqtt/z2m-0_label"
device = "z2m-0"
label = "action"
label_window_after_s = 0.5

[homeassistant]
discovery = true
"""

#: run by the venv's Python (paho is an edgebayes dependency): every message of the topics
#: given, one JSON line each, with the arrival time (time.time())
COLLECTOR = r"""
import json, sys, time
import paho.mqtt.client as mqtt
port, user, password_file, out = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
topics = sys.argv[5:]
f = open(out, "a", buffering=1)
c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=user, protocol=mqtt.MQTTv5)
c.username_pw_set(user, open(password_file).read().splitlines()[0])
def on_connect(cl, u, flags, rc, props):
    if rc.is_failure:
        print(f"collector refused: {rc}", file=sys.stderr, flush=True)
        sys.exit(3)
    cl.subscribe([(t, 1) for t in topics])
def on_subscribe(cl, u, mid, rcs, props):
    f.write(json.dumps({"t": time.time(), "subscribed": [str(r) for r in rcs]}) + "\n")
def on_message(cl, u, msg):
    f.write(json.dumps({"t": time.time(), "topic": msg.topic, "retain": bool(msg.retain),
                        "payload": msg.payload.decode("utf-8", "replace")}) + "\n")
c.on_connect, c.on_subscribe, c.on_message = on_connect, on_subscribe, on_message
c.connect("127.0.0.1", int(port))
c.loop_forever()
"""

#: tries an anonymous connection: the shipped config must refuse it
ANONYMOUS = r"""
import sys
import paho.mqtt.client as mqtt
result = []
c = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="anonymous", protocol=mqtt.MQTTv5)
c.on_connect = lambda cl, u, f, rc, p: (result.append(str(rc)), cl.disconnect())
c.connect("127.0.0.1", int(sys.argv[1]))
c.loop_forever(timeout=1.0)
print(result[0] if result else "no answer")
"""


class Check:
    def __init__(self, args):
        self.args = args
        self.work = Path(tempfile.mkdtemp(prefix="edgebayes-first-prediction-"))
        self.procs: list[subprocess.Popen] = []
        self.stages: dict[str, float] = {}
        self.t_begin = time.monotonic()
        self.wall_begin = time.time()
        self.report: dict = {"work": str(self.work), "stages_s": self.stages}

    # -- helpers -------------------------------------------------------------------------------

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.t_begin:7.1f} s] {text}", flush=True)

    def run(self, stage: str, cmd: list[str], **kw) -> subprocess.CompletedProcess:
        t0 = time.monotonic()
        log = self.work / f"{stage}.log"
        with open(log, "w") as f:
            done = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, check=False, **kw)
        self.stages[stage] = time.monotonic() - t0
        if done.returncode != 0:
            raise RuntimeError(f"{stage} failed (exit {done.returncode}): {' '.join(cmd)}\n"
                               + log.read_text()[-3000:])
        return done

    def start(self, name: str, cmd: list[str], **kw) -> subprocess.Popen:
        with open(self.work / f"{name}.log", "w") as log:  # the child keeps its own descriptor
            proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, **kw)
        self.procs.append(proc)
        return proc

    def messages(self) -> list[dict]:
        path = self.work / "messages.jsonl"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]

    def wait(self, what: str, condition, timeout_s: float) -> float:
        t0 = time.monotonic()
        while not condition():
            for p in self.procs:
                if p.poll() is not None and p.returncode not in (0, None) and p.args[0].endswith(
                    ("edgebayes", "mosquitto")
                ):
                    raise RuntimeError(f"{p.args[0]} exited with {p.returncode} while waiting "
                                       f"for {what}; logs in {self.work}")
            if time.monotonic() - t0 > timeout_s:
                raise RuntimeError(f"no {what} after {timeout_s:g} s; logs in {self.work}")
            time.sleep(0.02)
        return time.monotonic() - t0

    def stop_all(self) -> None:
        for p in reversed(self.procs):
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()

    # -- steps ---------------------------------------------------------------------------------

    def install(self) -> None:
        repo = self.args.repo or str(ROOT)
        self.clone = self.work / "edgebayes"
        self.say(f"git clone {repo}")
        self.run("clone", ["git", "clone", "--quiet", repo, str(self.clone)])
        head = subprocess.run(["git", "-C", str(self.clone), "log", "-1", "--format=%h %s"],
                              capture_output=True, text=True, check=False).stdout.strip()
        self.report["commit"] = head
        self.venv = self.work / "venv"
        self.say("python3 -m venv venv && venv/bin/pip install -e .")
        self.run("venv", [sys.executable, "-m", "venv", str(self.venv)])
        self.run("pip_install", [str(self.venv / "bin" / "pip"), "install", "-q", "-e", str(self.clone)],
                 cwd=self.clone)
        backend = subprocess.run(
            [str(self.venv / "bin" / "python"), "-c",
             "import edgebayes; print(edgebayes.backend_description())"],
            # not from self.work: its edgebayes/ (the clone) would be imported as a namespace
            capture_output=True, text=True, cwd=self.venv, check=False,
        )
        self.report["backend"] = backend.stdout.strip() or backend.stderr.strip()[-200:]
        self.say(f"installed in {self.stages['pip_install']:.1f} s; backend: {self.report['backend']}")

    def broker(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.say(f"Mosquitto with deploy/mosquitto/edgebayes.conf on 127.0.0.1:{self.port}")
        b = self.work / "mosquitto"
        (b / "data").mkdir(parents=True)
        self.passwords = {}
        for user in (RUNTIME_USER, CHECK_USER, *LOGINS.values()):
            self.passwords[user] = f"pw-{user}-{os.urandom(6).hex()}"
            pw_file = self.work / f"{user}.password"
            pw_file.write_text(self.passwords[user] + "\n")
            pw_file.chmod(0o600)
        passwd = b / "edgebayes.passwd"
        for i, (user, pw) in enumerate(self.passwords.items()):
            self.run(f"passwd_{user}", ["mosquitto_passwd", *(["-c"] if i == 0 else []), "-b",
                                        str(passwd), user, pw])
        # the runtime's config: the shipped Tasmota example, pointed at this broker
        example = (self.clone / "docs" / "examples" / "tasmota-bme280.toml").read_text()
        broker_table = (f'[broker]\nhost = "127.0.0.1"\nport = {self.port}\n'
                        f'username = "{RUNTIME_USER}"\n'
                        f'password_file = "{self.work / (RUNTIME_USER + ".password")}"\n')
        example, n = re.subn(r"\[broker\]\nhost = .*\nport = \d+\n", broker_table, example)
        if n != 1:
            raise RuntimeError("docs/examples/tasmota-bme280.toml: its [broker] table changed; "
                               "update this script")
        self.config = self.work / "edgebayes.toml"
        self.config.write_text(example + Z2M_SOURCES)
        self.client_id = re.search(r'client_id = "([^"]+)"', example).group(1)
        acl = subprocess.run([str(self.venv / "bin" / "edgebayes"), "acl", "--config", str(self.config)],
                             capture_output=True, text=True, check=False)
        if acl.returncode != 0:
            raise RuntimeError(f"edgebayes acl failed: {acl.stderr[-2000:]}")
        acl_text = acl.stdout
        acl_text += (f"\n# {CHECK_USER}: bench/first_prediction.py's subscriber, read only\n"
                     f"user {CHECK_USER}\ntopic read #\n")
        (b / "edgebayes.acl").write_text(acl_text)
        conf = (self.clone / "deploy" / "mosquitto" / "edgebayes.conf").read_text()
        conf, n = re.subn(r"(?m)^listener 1883$", f"listener {self.port} 127.0.0.1", conf)
        if n != 1:
            raise RuntimeError("deploy/mosquitto/edgebayes.conf: no `listener 1883` line")
        conf = conf.replace("/etc/mosquitto/edgebayes.passwd", str(passwd))
        conf = conf.replace("/etc/mosquitto/edgebayes.acl", str(b / "edgebayes.acl"))
        # standalone, as the shipped file says: the persistence folder; as root Mosquitto
        # would switch to the user "mosquitto", which cannot read this folder
        conf += f"\npersistence_location {b / 'data'}/\nlog_dest stderr\n"
        conf += "user root\n" if os.geteuid() == 0 else ""
        (b / "mosquitto.conf").write_text(conf)
        exe = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        t0 = time.monotonic()
        self.start("mosquitto", [exe, "-c", str(b / "mosquitto.conf")])
        self.wait("broker listening", self._listening, 10)
        self.stages["broker_start"] = time.monotonic() - t0
        out = subprocess.run([str(self.venv / "bin" / "python"), "-c", ANONYMOUS, str(self.port)],
                             capture_output=True, text=True, timeout=10, check=False)
        self.report["anonymous_connection"] = out.stdout.strip()
        self.say(f"anonymous connection: {self.report['anonymous_connection']}")

    def _listening(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False

    def runtime(self) -> None:
        py = str(self.venv / "bin" / "python")
        self.start("collector", [py, "-c", COLLECTOR, str(self.port), CHECK_USER,
                                 str(self.work / f"{CHECK_USER}.password"),
                                 str(self.work / "messages.jsonl"),
                                 "edgebayes/#", "homeassistant/#", "tele/#", "zigbee2mqtt/#"])
        self.wait("collector subscription", lambda: any("subscribed" in m for m in self.messages()), 10)
        self.say(f"edgebayes run --config {self.config.name} (Tasmota example + Zigbee2MQTT device)")
        t0 = time.monotonic()
        self.start("runtime", [str(self.venv / "bin" / "edgebayes"), "run", "--config", str(self.config),
                               "--checkpoint-dir", str(self.work / "checkpoints")], cwd=self.work)
        status = f"edgebayes/runtime/{self.client_id}/status"
        self.wait("runtime online", lambda: any(
            m.get("topic") == status and m["payload"] == "online" for m in self.messages()), 60)
        self.stages["runtime_online"] = time.monotonic() - t0
        self.say(f"runtime online after {self.stages['runtime_online']:.2f} s")

    def devices(self) -> None:
        sim = str(self.venv / "bin" / "firmware-sim")
        common = ["--source", "synth:SEA", "--broker", f"127.0.0.1:{self.port}", "--rate", "2",
                  "--duration", str(self.args.device_s)]
        commands = {
            "tas-0": [sim, "run", "--format", "tasmota", "--sensor", "BME280", "--fields",
                      "Temperature", "Humidity", "Pressure", "--switch", "Switch1",
                      "--device-prefix", "tas-", *common],
            "z2m-0": [sim, "run", "--format", "zigbee2mqtt", "--device-prefix", "z2m-", *common],
        }
        self.t_sim = {}
        for device, cmd in commands.items():
            self.say(f"firmware-sim run --format {DEVICES[device]} as {device}")
            self.t_sim[device] = time.time()
            self.start(f"sim_{device}", [*cmd, "--username", LOGINS[device], "--password-file",
                                         str(self.work / f"{LOGINS[device]}.password")], cwd=self.work)
        first = {}

        def all_predicted() -> bool:
            for m in self.messages():
                topic = m.get("topic", "")
                for device in DEVICES:
                    if topic == f"edgebayes/{device}/prediction" and device not in first:
                        first[device] = m["t"]
            return len(first) == len(DEVICES)

        self.wait("prediction for every device", all_predicted, 60)
        readings = {"tas-0": "tele/tas-0/SENSOR", "z2m-0": "zigbee2mqtt/z2m-0"}
        self.report["first_prediction"] = {}
        for device in DEVICES:
            first_reading = min((m["t"] for m in self.messages() if m.get("topic") == readings[device]),
                                default=None)
            r = self.report["first_prediction"][device] = {
                "from_firmware_sim_start_s": first[device] - self.t_sim[device],
                "from_first_reading_at_broker_ms": (
                    None if first_reading is None else (first[device] - first_reading) * 1000
                ),
            }
            self.say(f"{device}: first prediction {r['from_firmware_sim_start_s']:.2f} s after "
                     f"starting firmware-sim, {r['from_first_reading_at_broker_ms']:.1f} ms after "
                     "its first reading reached the broker")
        self.report["clone_to_first_prediction_s"] = max(first.values()) - self.wall_begin
        # let the devices finish, then count
        for p in self.procs:
            if "firmware-sim" in p.args[0]:
                p.wait(self.args.device_s + 30)
                if p.returncode != 0:
                    raise RuntimeError(f"{p.args[0]} exited with {p.returncode}; logs in {self.work}")
        time.sleep(1.0)
        counts = {}
        for device in DEVICES:
            counts[device] = sum(m.get("topic") == f"edgebayes/{device}/prediction" for m in self.messages())
        self.report["predictions"] = counts
        self.say(f"predictions: {counts}")

    def discovery(self) -> None:
        configs = {}
        for m in self.messages():
            # an empty payload removes a config (stale ones are removed before the first announce)
            if m.get("topic", "").startswith("homeassistant/") and m["topic"].endswith("/config") and m["payload"]:
                configs[m["topic"]] = m["payload"]
        path = self.work / "discovery-configs.json"
        path.write_text(json.dumps(configs, indent=2))
        self.report["discovery_configs"] = sorted(configs)
        self.say(f"{len(configs)} discovery configs published: {', '.join(sorted(configs))}")
        if self.args.no_ha:
            return
        ha_venv = Path(self.args.ha_venv) if self.args.ha_venv else self.work / "ha-venv"
        ha_py = ha_venv / "bin" / "python"
        if not self.args.ha_venv:
            self.say(f"python3 -m venv ha-venv && pip install homeassistant=={self.args.ha_version} "
                     "(minutes)")
            self.run("ha_venv", [sys.executable, "-m", "venv", str(ha_venv)])
            self.run("ha_install", [str(ha_venv / "bin" / "pip"), "install", "-q",
                                    f"homeassistant=={self.args.ha_version}"])
        t0 = time.monotonic()
        done = subprocess.run(
            [str(ha_py), str(self.clone / "bench" / "ha_discovery_check.py"), str(path),
             "--json", str(self.work / "ha-check.json")],
            capture_output=True, text=True, cwd=self.work, check=False,
        )
        self.stages["ha_check"] = time.monotonic() - t0
        print(done.stdout + done.stderr[-3000:], end="", flush=True)
        if done.returncode not in (0, 1):
            raise RuntimeError(f"the Home Assistant check did not run (exit {done.returncode})")
        check = json.loads((self.work / "ha-check.json").read_text())
        self.report["homeassistant"] = {
            "version": check["homeassistant"],
            "valid": sum(r["ok"] for r in check["results"]),
            "configs": len(check["results"]),
            "unknown_keys": sorted({k for r in check["results"] for k in r["unknown_keys"]}),
            "errors": {r["topic"]: r["error"] for r in check["results"] if not r["ok"]},
        }

    def main(self) -> int:
        try:
            self.install()
            self.broker()
            self.runtime()
            self.devices()
            self.stop_all()
            self.procs = []
            self.discovery()
        finally:
            self.stop_all()
            self.report["total_s"] = time.monotonic() - self.t_begin
        ok = all(n > 0 for n in self.report["predictions"].values())
        ha = self.report.get("homeassistant")
        if ha is not None:
            ok = ok and ha["valid"] == ha["configs"] > 0
        self.summary()
        return 0 if ok else 1

    def summary(self) -> None:
        r = self.report
        print("\nfirst prediction from a clean clone")
        print(f"  commit {r.get('commit')}, backend {r.get('backend')}")
        for stage, s in self.stages.items():
            if not stage.startswith("passwd_"):
                print(f"  {stage:<22}{s:8.2f} s")
        for device, fp in r.get("first_prediction", {}).items():
            print(f"  {device} ({DEVICES[device]}): first prediction {fp['from_firmware_sim_start_s']:.2f} s "
                  f"after starting firmware-sim ({fp['from_first_reading_at_broker_ms']:.1f} ms after its "
                  "first reading reached the broker)")
        if "clone_to_first_prediction_s" in r:
            print(f"  from git clone to the last device's first prediction: "
                  f"{r['clone_to_first_prediction_s']:.1f} s")
        print(f"  anonymous connection to the broker: {r.get('anonymous_connection')}")
        ha = r.get("homeassistant")
        if ha:
            print(f"  Home Assistant {ha['version']} discovery schemas: {ha['valid']} of {ha['configs']} "
                  "configs valid" + (f"; keys it does not know (ignored): {', '.join(ha['unknown_keys'])}"
                                     if ha["unknown_keys"] else ""))
            for topic, error in ha["errors"].items():
                print(f"    {topic}: {error}")
        print(f"  total {r['total_s']:.1f} s; logs: {self.work}" if self.args.keep else
              f"  total {r['total_s']:.1f} s")
        if self.args.json:
            Path(self.args.json).write_text(json.dumps(r, indent=2))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repo", help="repository to clone (default: this checkout)")
    p.add_argument("--ha-version", default="2024.1.6", help="homeassistant version (default 2024.1.6)")
    p.add_argument("--ha-venv", metavar="DIR", help="a venv that already has homeassistant")
    p.add_argument("--no-ha", action="store_true", help="skip the Home Assistant schema check")
    p.add_argument("--device-s", type=float, default=10.0, help="seconds each device publishes (default 10)")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    p.add_argument("--json", metavar="PATH", help="write the figures here too")
    args = p.parse_args(argv)
    for tool in ("git", "mosquitto_passwd"):
        if shutil.which(tool) is None:
            print(f"first_prediction: {tool} is needed (apt-get install -y git mosquitto)", file=sys.stderr)
            return 2
    check = Check(args)
    try:
        return check.main()
    except RuntimeError as exc:
        print(f"first_prediction: {exc}", file=sys.stderr)
        check.args.keep = True
        return 1
    finally:
        if not args.keep:
            shutil.rmtree(check.work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
