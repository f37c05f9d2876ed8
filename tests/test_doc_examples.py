"""Every payload example in README.md and docs/ against the config it names, and the Pi publisher.

A payload example is an inline ``{"seq": ...}`` JSON span, a ``mosquitto_pub`` command or a
``firmware-sim run ... --format`` command in a fenced block; the config it is checked against is
the last ``deploy/*.toml`` or ``docs/examples/*.toml`` path the text names before it. Each one
goes through the worker of that config (its protocol topics and its ``[[sources]]``) as the
runtime would take it: no error, every reading with a value for every feature, every label
learned. A config shown whole in a fenced TOML block must be the file it names.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from edgebayes.runtime.config import parse_config
from edgebayes.runtime.messages import ProtocolError
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker
from firmware_sim.cli import _sim_config, build_parser
from firmware_sim.device import build_devices
from firmware_sim.faults import FaultRates
from tests.fakes import RecordingPublisher

REPO = Path(__file__).resolve().parents[1]
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
CONFIG_RE = re.compile(r"(?:deploy|docs/examples)/[\w.-]+\.toml")
FENCE_RE = re.compile(r"^```(\w*)\n(.*?)^```", re.DOTALL | re.MULTILINE)
INLINE_RE = re.compile(r"`(\{\"seq\"[^`<]*\})`")  # not a template: no <placeholder>
THERMAL = "/sys/class/thermal/thermal_zone0/temp"


def examples(path: Path) -> list[tuple[str, str, str]]:
    """(kind, text, config path) of every example in ``path``, in document order; kind is
    "json", "mosquitto_pub", "firmware-sim" or "toml"."""
    text = path.read_text()
    found = []
    for m in INLINE_RE.finditer(text):
        found.append((m.start(), "json", m.group(1)))
    for m in FENCE_RE.finditer(text):
        lang, body = m.group(1), m.group(2)
        if lang == "toml":
            found.append((m.start(), "toml", body))
            continue
        for line in body.splitlines():
            if line.startswith("mosquitto_pub "):
                found.append((m.start(), "mosquitto_pub", line))
            elif line.startswith("firmware-sim run ") and "--format" in line:
                found.append((m.start(), "firmware-sim", line))
    out = []
    for start, kind, body in sorted(found):
        named = CONFIG_RE.findall(text, 0, start)
        assert named, f"{path.name}: the example {body[:60]!r} names no config before it"
        out.append((kind, body, named[-1]))
    return out


def mosquitto_pub(line: str, tmp_path: Path) -> tuple[str, bytes]:
    """The topic and message of a documented ``mosquitto_pub`` command, its shell expansions
    run by bash (a fake SoC temperature where this machine has none)."""
    if not Path(THERMAL).exists():
        (tmp_path / "temp").write_text("48312\n")
        line = line.replace(THERMAL, str(tmp_path / "temp"))
    stub = ('mosquitto_pub() { while [ $# -gt 0 ]; do case "$1" in -t|-m) printf "%s\\0" "$2"; '
            'shift;; esac; shift; done; }\n')
    out = subprocess.run(["bash", "-c", stub + line], capture_output=True, check=True).stdout
    topic, message, _ = out.split(b"\0")
    return topic.decode(), message


def firmware_sim(line: str) -> list[tuple[str, bytes]]:
    """What the documented ``firmware-sim run`` command publishes for its first 20 samples."""
    args = build_parser().parse_args(shlex.split(line)[1:])
    args.limit = 20
    device = build_devices(_sim_config(args, FaultRates()))[0]
    return [pub for m in device.events() for pub in device.publications(m, 1718000000.0 + m.sample_s)]


def check(config_path: str, publications: list[tuple[str, bytes]]) -> None:
    """Raises AssertionError: the config's worker refused one of ``publications`` (a label for
    an unknown seq too), took no reading, or assembled one with a feature missing."""
    raw = tomllib.loads((REPO / config_path).read_text())
    raw.setdefault("output", {})["format"] = "json"
    cfg = parse_config(raw, config_path)
    topics = Topics(cfg.topics.prefix, cfg.topics.devices, "rt")
    w = Worker(cfg, topics, None, session=RecordingPublisher())
    for topic, payload in publications:
        route = topics.route(topic)
        if route is not None and route[0] == "reading":
            with contextlib.suppress(ProtocolError):  # refused: reported by the worker below
                x = w.intake.parser.parse_reading(route[1], payload).x
                assert not any(math.isnan(v) for v in x), (config_path, topic, payload)
        w.serving.process(topic, payload, 0.0)
    errors = [json.loads(p) for t, p, *_ in w.session.published if t.endswith("/error")]
    assert errors == [] and w.reports.errors == {}, (config_path, errors)
    counts = dict(w.intake.sources.counts) if w.intake.sources else {}
    assert not set(counts) - {"readings", "labels"}, (config_path, counts)  # no missing_values
    assert w.serving.n_readings > 0, f"{config_path}: no reading taken"


def by_config(path: Path, tmp_path: Path) -> dict[str, list[tuple[str, bytes]]]:
    """The publications of every payload example of ``path``, per config, in document order."""
    out: dict[str, list[tuple[str, bytes]]] = {}
    for kind, body, config_path in examples(path):
        pubs = out.setdefault(config_path, [])
        if kind == "toml":
            assert body == (REPO / config_path).read_text(), f"{path.name}: {config_path} differs"
        elif kind == "json":
            kind = "reading" if "x" in json.loads(body) else "label"
            pubs.append((f"edgebayes/sensor-7/{kind}", body.encode()))
        elif kind == "mosquitto_pub":
            pubs.append(mosquitto_pub(body, tmp_path))
        else:
            pubs += firmware_sim(body)
    return out


@pytest.mark.parametrize("path", [pytest.param(p, id=p.name) for p in DOCS if examples(p)])
def test_payload_examples_are_taken_by_the_config_they_name(path, tmp_path):
    for config_path, pubs in by_config(path, tmp_path).items():
        if pubs:
            check(config_path, pubs)


def test_a_disagreeing_example_fails(tmp_path):
    """The check refuses the 4-value reading docs/protocol.md showed for the 5-feature config,
    and the SIM block that firmware-sim --format tasmota sent the BME280 example."""
    with pytest.raises(AssertionError):
        check("deploy/edgebayes.toml", [("edgebayes/s/reading", b'{"seq": 17, "x": [21.5, 40.0, 412.0, 0.0044]}')])
    with pytest.raises(AssertionError):
        check("docs/examples/tasmota-bme280.toml",
              firmware_sim("firmware-sim run --format tasmota --source synth:SEA --broker 127.0.0.1:1883"))


def load_pi_health():
    spec = importlib.util.spec_from_file_location("pi_health", REPO / "docs" / "examples" / "pi_health.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_pi_health_publisher_matches_its_config(tmp_path):
    pi = load_pi_health()
    (tmp_path / "temp").write_text("61250\n")
    (tmp_path / "loadavg").write_text("0.52 0.58 0.59 1/321 4242\n")
    (tmp_path / "meminfo").write_text("MemTotal:        3884292 kB\nMemFree:          912000 kB\n"
                                      "MemAvailable:    2913219 kB\n")
    x = pi.read_health(str(tmp_path / "temp"), str(tmp_path / "loadavg"), str(tmp_path / "meminfo"))
    assert x == [61.25, 0.52, 25.0]
    msgs = [("edgebayes/pi-1/reading", pi.reading(1718000000000, 1718000000.0, x)),
            ("edgebayes/pi-1/label", pi.label(1718000000000, 61.25, 60.0))]
    assert json.loads(msgs[1][1]) == {"seq": 1718000000000, "y": "hot"}
    check("docs/examples/pi-health.toml", msgs)


def test_pi_health_without_a_thermal_zone_says_so(tmp_path, capsys):
    pi = load_pi_health()
    assert pi.main(["--device", "pi-1", "--thermal", str(tmp_path / "none")]) == 2
    assert capsys.readouterr().err.startswith("pi_health: cannot read the Pi's sensors: ")


def test_pi_health_publishes_to_the_runtime_of_its_config(broker, tmp_path):
    """The script itself, through a real Mosquitto, to the runtime of docs/examples/pi-health.toml:
    6 readings, the first 4 labelled 2 readings later ("hot": the fake SoC is at 61.25 °C)."""
    from edgebayes.runtime.config import load_config
    from edgebayes.runtime.service import Runtime
    from tests.runtime_client import wait_for

    (tmp_path / "temp").write_text("61250\n")
    cfg = load_config(REPO / "docs" / "examples" / "pi-health.toml").with_overrides(broker.address)
    runtime = Runtime(cfg)
    runtime.start()
    try:
        wait_for(runtime.client.subscribed.is_set, what="runtime subscription")
        script = REPO / "docs" / "examples" / "pi_health.py"
        subprocess.run([sys.executable, str(script), "--broker", broker.address, "--device", "pi-1",
                        "--count", "6", "--interval-s", "0.05", "--ahead", "2",
                        "--thermal", str(tmp_path / "temp")], check=True, timeout=60)
        wait_for(lambda: runtime.worker.serving.n_labels == 4, what="4 labels learned")
        m = runtime.worker.metrics()
        assert (m["n_readings"], m["n_learned"], m["pending_labels"], m["errors"]) == (6, 4, 2, {})
        assert runtime.worker.devices["pi-1"].slots[0].learner.classes_ == ["hot"]
    finally:
        runtime.stop()


def test_pi_health_names_a_broker_it_cannot_reach(tmp_path, capsys):
    pi = load_pi_health()
    (tmp_path / "temp").write_text("48000\n")
    assert pi.main(["--device", "pi-1", "--broker", "127.0.0.1:1", "--thermal", str(tmp_path / "temp")]) == 2
    assert capsys.readouterr().err.startswith("pi_health: cannot connect to 127.0.0.1:1: ")
