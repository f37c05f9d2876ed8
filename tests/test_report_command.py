"""bench/report.py says how to reproduce a report: a command a shell runs as it was given."""

import shlex

from bench.report import reproduce_command


def test_reproduce_command_quotes_system_names_with_spaces():
    argv = ["--quick", "--systems", "NB", "River SRP", "MOA SRP", "--out", "/tmp/my results"]
    command = reproduce_command(argv)
    assert command == ("python -m bench.report --quick --systems NB 'River SRP' 'MOA SRP' "
                       "--out '/tmp/my results'")
    assert shlex.split(command) == ["python", "-m", "bench.report", *argv]  # a shell gets argv back
