"""What a user reads in ``--help``: a plain description, every default once, no internal names."""

import subprocess
from pathlib import Path

import pytest

from edgebayes.cli import build_parser
from firmware_sim.cli import build_parser as sim_parser

ROOT = Path(__file__).resolve().parents[1]


def text(capsys, parser, *argv) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit):
        parser.parse_args([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())  # argparse wraps to the terminal width


def test_edgebayes_help_starts_with_a_user_description(capsys):
    out = text(capsys, build_parser())
    assert out.startswith("usage: edgebayes [-h] [--version] COMMAND ... Online naive Bayes and "
                          "Streaming Random Patches on a Raspberry Pi, over MQTT. ")
    assert "``" not in out and "sub-command" not in out


def test_option_defaults_are_stated_and_jargon_is_gone(capsys):
    demo = text(capsys, build_parser(), "demo")
    for said in ("readings per second per device (default 50)",
                 "live table period in seconds (default 2; 0: none)",
                 "seed of SRP and of a synth: stream (default 1)"):
        assert said in demo
    assert "from this level up (default INFO)" in text(capsys, build_parser(), "run")
    evaluate = text(capsys, build_parser(), "evaluate")
    assert "constant learning rate in (0, 1) (Wu & Xiong 2023)" in evaluate and "seed 001" not in evaluate
    budget = text(capsys, build_parser(), "budget")
    assert "measure the models' memory every K samples, and at the end (default 100)" in budget
    assert "memory_bytes()" not in budget


def test_firmware_sim_help_states_each_default_once(capsys):
    top = text(capsys, sim_parser())
    assert "or as Tasmota, Zigbee2MQTT, ESPHome or Shelly devices with --format" in top
    run = text(capsys, sim_parser(), "run")
    assert "(default: None)" not in run and "(default: [])" not in run
    assert "samples per device (default: the whole stream) --duration" in run
    assert "label column of a file (default: the last) --drop" in run
    assert "readings per second per device (default: 10.0)" in run


def test_install_sh_help_is_its_comment_block():
    out = subprocess.run(["bash", str(ROOT / "deploy" / "install.sh"), "--help"],
                         capture_output=True, text=True, timeout=10, check=True).stdout
    lines = out.splitlines()
    assert lines[0].startswith("Install edgebayes as a systemd service")
    assert lines[-1] == "(create_venv, pip_install_edgebayes) to test them under arm64 emulation."
    assert "set -euo pipefail" not in out
