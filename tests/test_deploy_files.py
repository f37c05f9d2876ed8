"""The shipped deploy files: the example config, the systemd unit, install.sh."""

from __future__ import annotations

import gzip
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from edgebayes.runtime.config import load_config
from tests.conftest import shared_path

REPO = Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
UNIT = DEPLOY / "systemd" / "edgebayes.service"
INSTALL = DEPLOY / "install.sh"


def unit_settings() -> dict[str, str]:
    out = {}
    for line in UNIT.read_text().splitlines():
        if "=" in line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            assert key not in out, f"{key} set twice"
            out[key] = value
    return out


def test_example_config_loads_with_nb_and_srp():
    cfg = load_config(DEPLOY / "edgebayes.toml")
    assert [(m.name, m.kind) for m in cfg.models] == [("nb", "gaussian_nb"), ("srp", "srp")]
    srp = cfg.models[1].build()
    assert (srp.n_models, srp.subspace_size, srp.max_size_bytes) == (10, 0.6, 1048576)
    assert cfg.models[0].build().learning_rate == 0.01
    assert cfg.schema.features == ("Temperature", "Humidity", "Light", "CO2", "HumidityRatio")
    assert str(cfg.checkpoint.dir) == "/var/lib/edgebayes"
    assert (
        cfg.broker.username == "edgebayes"
        and cfg.broker.password_file == "/etc/edgebayes/mqtt-password"
    )
    assert cfg.output.prediction_qos == 1  # the bridge stores and forwards QoS 1 only
    # the SRP bounds of every admitted device fit in the model budget
    assert cfg.memory.max_devices * srp.max_size_bytes < cfg.memory.model_budget_bytes


def test_example_config_features_are_the_occupancy_sensors():
    with gzip.open(shared_path("data/occupancy_uci/occupancy.csv.gz"), "rt") as f:
        header = f.readline().strip().split(",")
    assert (
        tuple(c for c in header if c not in ("date", "class"))
        == load_config(DEPLOY / "edgebayes.toml").schema.features
    )


def test_shipped_acl_is_the_one_edgebayes_acl_makes_from_the_shipped_config(capsys):
    from edgebayes.cli import main

    assert main(["acl", "--config", str(DEPLOY / "edgebayes.toml")]) == 0
    assert capsys.readouterr().out == (DEPLOY / "mosquitto" / "edgebayes.acl").read_text()


def test_acl_needs_the_runtimes_user_name(tmp_path, capsys):
    from edgebayes.cli import main

    example = REPO / "docs" / "examples" / "tasmota-bme280.toml"  # no [broker] username
    assert main(["acl", "--config", str(example)]) == 2
    assert capsys.readouterr().err == (
        f"edgebayes acl: {example}: [broker] username: not set; the ACL grants the runtime by its "
        'user name (deploy/edgebayes.toml uses "edgebayes")\n')


def test_unit_runs_the_installed_runtime_under_the_budget_hardened():
    s = unit_settings()
    cfg = load_config(DEPLOY / "edgebayes.toml")
    assert (
        s["ExecStart"]
        == "/opt/edgebayes/venv/bin/edgebayes run --config /etc/edgebayes/edgebayes.toml"
    )
    assert (s["Type"], s["Restart"], s["User"], s["StateDirectory"]) == (
        "notify",
        "on-failure",
        "edgebayes",
        "edgebayes",
    )
    assert Path("/var/lib") / s["StateDirectory"] == cfg.checkpoint.dir
    assert int(s["WatchdogSec"].removesuffix("s")) >= 10  # the worker ticks every 0.2 s
    memory_max_mb = int(s["MemoryMax"].removesuffix("M"))
    assert (
        cfg.memory.rss_limit_mb
        < int(s["MemoryHigh"].removesuffix("M"))
        < memory_max_mb
        <= 2 * cfg.memory.rss_limit_mb
    )
    for key, value in [
        ("NoNewPrivileges", "yes"),
        ("ProtectSystem", "strict"),
        ("ProtectHome", "yes"),
        ("PrivateTmp", "yes"),
    ]:
        assert s[key] == value
    install = INSTALL.read_text()
    assert 'VENV="$PREFIX/venv"' in install and "PREFIX=/opt/edgebayes" in install
    assert 'CONFIG="$ETC/edgebayes.toml"' in install and "ETC=/etc/edgebayes" in install


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze not installed")
def test_unit_passes_systemd_analyze_verify(tmp_path):
    # verify wants ExecStart's program to exist: a stub stands in for the venv's edgebayes
    stub = tmp_path / "edgebayes"
    stub.write_text("#!/bin/sh\n")
    stub.chmod(0o755)
    unit = tmp_path / "edgebayes.service"
    unit.write_text(UNIT.read_text().replace("/opt/edgebayes/venv/bin/edgebayes", str(stub)))
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False)
    assert (r.returncode, r.stdout, r.stderr) == (0, "", "")
    unit.write_text(unit.read_text().replace("PrivateTmp=yes", "PrivateTmp=yes\nMemoryMaxx=1M"))
    r = subprocess.run(["systemd-analyze", "verify", str(unit)], capture_output=True, text=True, check=False)
    assert "Unknown key 'MemoryMaxx'" in r.stderr  # a typo would be caught


def dry_run(*args: str) -> list[str]:
    r = subprocess.run(
        ["bash", str(INSTALL), "--dry-run", *args], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.splitlines()


def test_install_dry_run_prints_every_step_in_order_and_changes_nothing():
    before = {
        p: p.exists()
        for p in map(Path, ["/opt/edgebayes", "/etc/systemd/system/edgebayes.service"])
    }
    lines = dry_run()
    plan = "\n".join(lines)
    apt = r"\+ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq"
    steps = [
        apt + r" python3 python3-venv mosquitto",
        r"(\+ useradd --system .* edgebayes|user edgebayes exists)",
        r"(\+ python3 -m venv (--system-site-packages )?/opt/edgebayes/venv|venv \S+ exists)",
        rf"\+ /opt/edgebayes/venv/bin/pip install --quiet --upgrade {re.escape(str(REPO))}",
        (
            r"(\+ install -m 0640 \S+/deploy/edgebayes.toml "
            r"/etc/edgebayes/edgebayes.toml\n\+ chown root:edgebayes /etc/edgebayes/edgebayes.toml|"
            r"kept the existing /etc/edgebayes/edgebayes.toml)"
        ),
        r"\+ write /etc/mosquitto/conf.d/edgebayes.conf \(mode 0644, owner root:root\)",
        (r"\+ /opt/edgebayes/venv/bin/edgebayes acl --config /etc/edgebayes/edgebayes.toml --ha-user homeassistant "
         r"--bridge-user zigbee2mqtt > the edgebayes block of /etc/mosquitto/\S+"),
        r"\+ install -D -m 0644 \S+/deploy/systemd/edgebayes.service /etc/systemd/system/\S+",
        r"(\+ systemctl enable edgebayes.service|skipped 'systemctl enable edgebayes.service')",
        r"next: edit \[schema\] features .* in /etc/edgebayes/edgebayes.toml for your sensors",
        (r"check it: /opt/edgebayes/venv/bin/edgebayes run --config /etc/edgebayes/edgebayes.toml "
        r"prints one line per problem and exits 2"),
    ]
    pos = 0
    for step in steps:
        m = re.compile(step).search(plan, pos)
        assert m, f"step {step!r} missing or out of order in:\n{plan}"
        pos = m.end()
    assert "<generated>" in plan or "kept the runtime's existing password" in plan  # never printed
    assert {p: p.exists() for p in before} == before


def test_install_dry_run_without_broker_installs_no_mosquitto():
    plan = "\n".join(dry_run("--no-broker"))
    assert "python3 python3-venv" in plan and "mosquitto " not in plan.replace(
        "mosquitto_passwd", ""
    )
    assert "/etc/mosquitto" not in plan


def test_uninstall_dry_run_keeps_config_and_checkpoints_unless_purged():
    plan = "\n".join(dry_run("--uninstall"))
    assert "+ rm -rf /opt/edgebayes" in plan and "/var/lib/edgebayes (checkpoints)" in plan
    assert "rm -rf /etc/edgebayes" not in plan
    purge = "\n".join(dry_run("--uninstall", "--purge"))
    assert "+ rm -rf /etc/edgebayes /var/lib/edgebayes" in purge


def test_install_refuses_unknown_options():
    r = subprocess.run(
        ["bash", str(INSTALL), "--dry-run", "--frobnicate"], capture_output=True, text=True, check=False
    )
    assert r.returncode == 1 and "unknown option --frobnicate" in r.stderr
    r = subprocess.run(
        ["bash", str(INSTALL), "--dry-run", "--purge"], capture_output=True, text=True, check=False
    )
    assert r.returncode == 1 and "--purge goes with --uninstall" in r.stderr


@pytest.mark.skipif(
    shutil.which("shellcheck") is None,
    reason="shellcheck not installed (apt-get install shellcheck)",
)
def test_install_script_is_shellcheck_clean():
    r = subprocess.run(["shellcheck", str(INSTALL)], capture_output=True, text=True, check=False)
    assert (r.returncode, r.stdout) == (0, "")


def test_acl_grants_each_source_kind_its_topics_and_publishers(tmp_path):
    """Every grant once; a topic that names no device written by its one publisher only (the
    zigbee2mqtt bridge's user, the fixed ESPHome node), not by every user with a password."""
    from edgebayes.acl import acl_text
    from edgebayes.runtime.config import parse_config

    cfg = parse_config({
        "broker": {"username": "rt", "client_id": "node7"},
        "topics": {"prefix": "site/eb"},
        "schema": {"features": ["t", "h"]},
        "models": [{"name": "nb", "kind": "gaussian_nb"}],
        "output": {"format": "json"},
        "homeassistant": {"discovery": True},
        "sources": [
            {"kind": "tasmota", "topic": "tele/+/SENSOR", "features": {"t": "BME280.Temperature"}},
            {"kind": "zigbee2mqtt", "topic": "zigbee2mqtt/+", "features": {"t": "temperature"}},
            {"kind": "esphome", "features": {"t": "+/sensor/t/state", "h": "node1/sensor/h/state"}},
            {"kind": "json", "topic": "lab/+/+/env", "device_level": 2, "features": {"h": "rh"}},
        ],
    })
    lines = [line for line in acl_text(cfg).splitlines() if line and not line.startswith("#")]
    assert lines == [
        "user rt",
        "topic read site/eb/+/reading", "topic read site/eb/+/label",
        "topic write site/eb/+/prediction", "topic write site/eb/+/drift", "topic write site/eb/+/error",
        "topic write site/eb/runtime/#", "topic read $SYS/broker/uptime",
        "topic read tele/+/SENSOR", "topic read tele/+/LWT",
        "topic read zigbee2mqtt/+", "topic read zigbee2mqtt/bridge/state", "topic read zigbee2mqtt/+/availability",
        "topic read +/sensor/t/state", "topic read node1/sensor/h/state", "topic read +/status",
        "topic read node1/status",
        "topic read lab/+/+/env",
        "topic readwrite homeassistant/+/edgebayes/#", "topic readwrite homeassistant/+/node7/#",
        "topic write site/eb/+/availability", "topic write site/eb/+/attributes",
        "topic read homeassistant/status",
        # Home Assistant: discovery configs, its birth message, the runtime's outputs
        "user homeassistant", "topic read homeassistant/#", "topic write homeassistant/status",
        *(f"topic read site/eb/+/{kind}" for kind in ("prediction", "drift", "error", "availability", "attributes")),
        "topic read site/eb/runtime/#",
        "user monitor", "topic read site/eb/#",
        # one bridge publishes for every zigbee device: its own user only (was: any user)
        "user zigbee2mqtt", "topic write zigbee2mqtt/+", "topic write zigbee2mqtt/bridge/state",
        "topic write zigbee2mqtt/+/availability",
        # a fixed topic: the device it names only
        "user node1", "topic write node1/sensor/h/state", "topic write node1/status",
        "pattern write site/eb/%u/reading", "pattern write site/eb/%u/label",
        "pattern read site/eb/%u/prediction", "pattern read site/eb/%u/drift", "pattern read site/eb/%u/error",
        "pattern write tele/%u/SENSOR", "pattern write tele/%u/LWT",
        "pattern write %u/sensor/t/state", "pattern write %u/status",
        "pattern write lab/+/%u/env",
    ]


def test_acl_grants_no_line_twice_and_takes_the_users_of_home_assistant_and_the_bridge(tmp_path, capsys):
    from edgebayes.cli import main

    config = tmp_path / "aqara.toml"  # two zigbee2mqtt sources: bridge/state was granted twice
    config.write_text((REPO / "docs" / "examples" / "aqara-occupancy.toml").read_text()
                      .replace("[broker]\n", '[broker]\nusername = "edgebayes"\n', 1))
    assert main(["acl", "--config", str(config), "--ha-user", "hass", "--bridge-user", "z2m"]) == 0
    sections: dict[str, list[str]] = {}
    section = "pattern"
    for line in capsys.readouterr().out.splitlines():
        if line.startswith("user "):
            section = line
        elif line.startswith(("topic ", "pattern ")):
            sections.setdefault("pattern" if line.startswith("pattern ") else section, []).append(line)
    assert all(len(lines) == len(set(lines)) for lines in sections.values()), sections
    assert sections["user hass"][:2] == ["topic read homeassistant/#", "topic write homeassistant/status"]
    assert "topic write zigbee2mqtt/bridge/state" in sections["user z2m"]
    assert not [p for p in sections["pattern"] if p.startswith("pattern write zigbee2mqtt/")]
    assert main(["acl", "--config", str(config), "--ha-user", ""]) == 0
    assert "user homeassistant" not in capsys.readouterr().out


def test_readmes_acl_lines_for_an_existing_broker_are_what_edgebayes_acl_grants(tmp_path):
    """The recipe "I already run Home Assistant and Mosquitto": each line it tells the user to add
    is one the generated ACL has, in the same user section (for the example config, discovery on)."""
    from edgebayes.acl import acl_text
    from edgebayes.runtime.config import load_config

    readme = (REPO / "README.md").read_text()
    recipe = readme[readme.index("### I already run Home Assistant and Mosquitto"):]
    block = re.search(r"\n```\n(user .*?)```", recipe, re.DOTALL).group(1)
    config = tmp_path / "edgebayes.toml"
    config.write_text((DEPLOY / "edgebayes.toml").read_text() + "\n[homeassistant]\ndiscovery = true\n")

    def grants(text: str) -> set[tuple[str, str]]:
        out, section = set(), "pattern"
        for line in text.splitlines():
            if line.startswith("user "):
                section = line
            elif line.startswith(("topic ", "pattern ")):
                out.add(("pattern" if line.startswith("pattern ") else section, line))
        return out

    wanted = grants(block)
    assert len(wanted) == 20 and wanted <= grants(acl_text(load_config(config))), wanted - grants(
        acl_text(load_config(config)))
