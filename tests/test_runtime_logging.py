"""What ``edgebayes run`` logs for a person reading its journal: devices admitted, the topics
served (edgebayes protocol and [[sources]]), drift alerts in one readable line."""

import logging

from edgebayes.naive_bayes import GaussianNB
from edgebayes.runtime.config import parse_config
from edgebayes.runtime.service import Runtime
from edgebayes.runtime.serving import describe_alert
from tests.test_runtime_robustness import send, worker


def messages(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]


def test_describe_alert_member_and_model():
    alert = {"seq": 223, "ts": 1.0, "model": "srp", "level": "warning", "detector": "adwin",
             "member": 8, "accuracy_before": 0.9137, "accuracy_after": 0.7249}
    assert describe_alert("sim-0", alert) == (
        "device sim-0: model srp member 8 warning (adwin), accuracy 0.91 -> 0.72 at seq 223")
    alert.update(model="nb", level="drift", member=None, accuracy_after=None)
    assert describe_alert("sim-0", alert) == (
        "device sim-0: model nb drift (adwin), accuracy 0.91 -> ? at seq 223")


def test_a_new_device_is_logged_once_when_admitted(caplog):
    w = worker(memory={"max_devices": 4})
    with caplog.at_level(logging.INFO, logger="edgebayes.runtime"):
        send(w, "d1", "reading", {"seq": 0, "x": [0, 0, 0], "y": "a"})
        send(w, "d1", "reading", {"seq": 1, "x": [0, 0, 0], "y": "a"})
        send(w, "d2", "reading", {"seq": 0, "x": [0, 0, 0]})
    assert messages(caplog) == ["device d1 admitted, new; 1 of at most 4 devices",
                                "device d2 admitted, new; 2 of at most 4 devices"]


class Warns(GaussianNB):
    """A learner whose every update reports a member warning, as SRP does."""

    def learn_one(self, x, y):
        super().learn_one(x, y)
        self.last_events = [{"level": "warning", "detector": "adwin", "member": 8,
                             "accuracy_before": 0.91, "accuracy_after": 0.72}]


def test_drift_alerts_are_logged_in_one_readable_line(caplog):
    w = worker()
    send(w, "sim-0", "reading", {"seq": 0, "x": [0, 0, 0], "y": "a"})
    slot = w.devices["sim-0"].slots[0]
    slot.learner, slot.detector = Warns(), None
    with caplog.at_level(logging.INFO, logger="edgebayes.runtime"):
        send(w, "sim-0", "reading", {"seq": 223, "x": [0, 0, 0], "y": "a"})
    assert messages(caplog) == [
        "device sim-0: model nb member 8 warning (adwin), accuracy 0.91 -> 0.72 at seq 223"]
    assert w.session.on("drift")[0]["member"] == 8  # the published alert is unchanged


def test_the_serving_line_lists_the_sources_topic_filters(broker, caplog):
    rt = Runtime(parse_config({
        "broker": {"host": broker.host, "port": broker.port, "client_id": "rt-log"},
        "schema": {"features": ["t"]}, "models": [{"name": "nb", "kind": "gaussian_nb"}],
        "sources": [{"kind": "zigbee2mqtt", "topic": "zigbee2mqtt/+", "features": {"t": "temperature"}},
                    {"kind": "tasmota", "topic": "tele/+/SENSOR", "features": {"t": "SI7021.Temperature"}}],
    }))
    with caplog.at_level(logging.INFO, logger="edgebayes.runtime.service"):
        rt.start()
        rt.stop()
    # every filter subscribed, availability ones included
    assert messages(caplog)[0] == (
        "serving edgebayes/+/reading and edgebayes/+/label; [[sources]]: zigbee2mqtt/+, "
        "zigbee2mqtt/bridge/state, zigbee2mqtt/+/availability, tele/+/SENSOR, tele/+/LWT as rt-log")
