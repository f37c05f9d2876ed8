"""The worker's owners without a broker: the periodic tasks and the watchdog ping, one list of
error kinds, the ``Session`` protocol, and the payloads against docs/protocol.md's tables."""

import ast
import inspect
import re
import time
from pathlib import Path

import pytest

from edgebayes.runtime import payloads
from edgebayes.runtime.config import parse_config
from edgebayes.runtime.messages import ERROR_KINDS, ErrorKind, ProtocolError
from edgebayes.runtime.mqtt import MqttClient
from edgebayes.runtime.publisher import Muted, Publisher, Session
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker
from firmware_sim.mqtt import Connection
from tests.fakes import RecordingPublisher
from tests.runtime_client import FEATURES, wait_for

ROOT = Path(__file__).resolve().parents[1]
PROTOCOL = (ROOT / "docs" / "protocol.md").read_text()


class Broken:
    """A watcher whose every tick raises."""

    def __init__(self):
        self.n = 0

    def tick(self, devices):
        self.n += 1
        raise RuntimeError("a watcher with a bug")


def test_a_periodic_task_that_raises_still_lets_the_watchdog_ping_happen():
    cfg = parse_config({"schema": {"features": list(FEATURES)}, "models": [{"name": "nb", "kind": "gaussian_nb"}]})
    pings, broken = [], Broken()
    w = Worker(cfg, Topics("eb", "+", "rt"), None, session=RecordingPublisher(), watchers=[broken],
               tick_hooks=[lambda: pings.append(time.monotonic())])
    w.start()
    try:
        wait_for(lambda: len(pings) >= 3, timeout_s=5, what="three watchdog pings")
    finally:
        w.stop(timeout_s=2)
    assert broken.n >= 3 and w.n_internal_errors >= 3  # each failure logged and counted
    assert w.metrics()["n_internal_errors"] == w.n_internal_errors


def test_the_tasks_after_a_failing_one_still_run(caplog):
    cfg = parse_config({"schema": {"features": list(FEATURES)}, "output": {"metrics_interval_s": 0.01},
                        "models": [{"name": "nb", "kind": "gaussian_nb"}]})
    session = RecordingPublisher()
    w = Worker(cfg, Topics("eb", "+", "rt"), None, session=session, watchers=[Broken(), Broken()])
    time.sleep(0.02)
    w.periodic.run()
    assert len(session.on("metrics")) == 1 and w.n_internal_errors == 2
    assert caplog.text.count("periodic task watcher Broken failed") == 2


def _emitted_kinds() -> set[str]:
    """Every error kind a refusal names in edgebayes/: ProtocolError(kind, ...), the router's
    _refuse(device, topic, kind, ...), an adapter's Extract(..., reason=kind) and model_errors."""
    kinds = set()
    for path in (ROOT / "edgebayes").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            args = {"ProtocolError": node.args[:1], "_refuse": node.args[2:3],
                    "Extract": [k.value for k in node.keywords if k.arg == "reason"],
                    "_model_error": [], }.get(name, [])
            for arg in args:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    kinds.add(arg.value)
                elif isinstance(arg, ast.Attribute) and getattr(arg.value, "id", None) == "ErrorKind":
                    kinds.add(ErrorKind[arg.attr].value)
    return kinds - {"no_feature"}  # a count of the sources' metrics, not a refusal


def test_every_error_kind_emitted_anywhere_is_in_the_enum_and_documented():
    emitted = _emitted_kinds()
    assert {"too_few_values", "device_id_taken", "field", "device_limit"} <= emitted
    assert emitted <= set(ERROR_KINDS), emitted - set(ERROR_KINDS)
    section = PROTOCOL.split("## Error report")[1].split("\n## ")[0]
    assert [k for k in ERROR_KINDS if f"`{k}`" not in section] == []
    assert tuple(k.value for k in ErrorKind) == ERROR_KINDS and len(set(ERROR_KINDS)) == len(ERROR_KINDS)


def test_a_protocol_error_takes_only_a_kind_of_the_enum():
    assert ProtocolError("too_few_values", "x").kind is ErrorKind.TOO_FEW_VALUES
    with pytest.raises(ValueError):
        ProtocolError("model_reset", "no such kind")


@pytest.mark.parametrize("cls", [MqttClient, Muted, RecordingPublisher, Connection])
def test_every_publisher_takes_the_protocols_publish_call(cls):
    signature = inspect.signature(cls.publish)
    signature.bind(None, "eb/d1/reading", b"{}")
    signature.bind(None, "eb/d1/reading", b"{}", qos=1, retain=False)
    assert issubclass(cls, Publisher)


@pytest.mark.parametrize("cls", [MqttClient, Muted, RecordingPublisher])
def test_every_session_the_worker_runs_on_has_its_calls(cls):
    for name in ("ack", "wait_for_room"):
        assert list(inspect.signature(getattr(cls, name)).parameters) == list(
            inspect.signature(getattr(Session, name)).parameters), name
    assert all(name in inspect.getsource(cls) for name in ("n_connects", "n_publish_failed"))


def _table_keys(heading: str) -> list[str]:
    section = PROTOCOL.split(f"## {heading}")[1].split("\n## ")[0]
    return re.findall(r"^\| `(\w+)` \|", section, flags=re.M)


@pytest.mark.parametrize("heading, payload", [
    ("Prediction", payloads.prediction(3, 1.5, ["a"], 0, {"a": 1.0}, ["nb"], 0.2)),
    ("Drift alert", payloads.drift_alert(3, 1.5, "nb", "drift", "adwin", None, 0.9, 0.7)),
    ("Error report", payloads.error_report("eb/d1/reading", 3, ErrorKind.FIELD, "bad", 0)),
    ("Memory alert", payloads.memory_alert("exit", 10, 10, 0, 5)),
    ("Session alert", payloads.session_alert("rt", "reason 142", 1, 60.0)),
    ("Durability alert", payloads.durability_alert(False, "journal sync: OSError", "wait", 1)),
])
def test_each_payload_has_the_keys_of_its_table_in_the_protocol(heading, payload):
    assert list(payload) == _table_keys(heading)


def test_the_metrics_keys_are_the_ones_the_protocol_names():
    cfg = parse_config({"schema": {"features": list(FEATURES)}, "models": [{"name": "nb", "kind": "gaussian_nb"}]})
    w = Worker(cfg, Topics("eb", "+", "rt"), None, session=RecordingPublisher())
    documented = set(re.findall(r"`(\w+)`", PROTOCOL.split("## Metrics")[1].split("\n## ")[0]))
    documented |= set(re.findall(r"counted in `(n_\w+)`", PROTOCOL))
    assert sorted(set(w.metrics()) - documented) == []


def test_a_task_failing_every_tick_logs_its_traceback_once_and_counts_every_failure(caplog):
    """A watcher broken for good must not write a traceback every tick onto a Pi's SD card."""
    from edgebayes.runtime.periodic import Periodic

    def broken():
        raise RuntimeError("broken for good")

    p = Periodic([("watcher", broken)])
    for _ in range(5):
        p.run()
    assert p.n_failures == 5
    assert caplog.text.count("Traceback") == 1 and caplog.text.count("periodic task watcher failed") == 1
