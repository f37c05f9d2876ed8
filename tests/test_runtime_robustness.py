"""The runtime against hostile or broken input: failing models, out-of-range ints, bad
checkpoints, label type collisions, retained readings, bad files, an unreachable broker."""

import copy
import json
import logging
import math
import subprocess
import sys
import time
from pathlib import Path

import msgpack
import pytest

from edgebayes.naive_bayes import GaussianNB
from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import BrokerConfig, load_config, parse_config
from edgebayes.runtime.ingest.native import Parser
from edgebayes.runtime.messages import ProtocolError
from edgebayes.runtime.mqtt import MqttClient
from edgebayes.runtime.service import Runtime
from edgebayes.runtime.topics import Topics
from edgebayes.runtime.worker import Worker
from tests.broker import free_port
from tests.fakes import RecordingPublisher
from tests.runtime_client import FEATURES, Device, wait_for, write_config

ROOT = Path(__file__).resolve().parents[1]


def worker(store=None, models=({"name": "nb", "kind": "gaussian_nb"},), session=None, **tables):
    cfg = parse_config({"schema": {"features": list(FEATURES)}, "output": {"format": "json", "error_interval_s": 0},
                        "models": list(models), **tables})
    return Worker(cfg, Topics("eb", "+", "rt"), store, session=session or RecordingPublisher())


def send(w, device, kind, msg, retained=False):
    from edgebayes.runtime.messages import Retained

    data = json.dumps(msg).encode() if isinstance(msg, dict) else msg
    w.acks.handle(f"eb/{device}/{kind}", Retained(data) if retained else data, 0, 1, 0.0)


def test_a_full_queue_stops_the_network_loop_reading_unless_oldest_readings_are_dropped():
    w = worker(queue={"max_size": 2})
    assert w.can_take()
    for mid in (1, 2):
        w.submit("eb/d1/reading", b"{}", mid, 1)
    assert not w.can_take()  # block: the network loop pauses rather than block in submit
    w.queue.take()
    assert w.can_take()
    dropping = worker(queue={"max_size": 2, "policy": "drop_oldest"})
    for mid in (1, 2):
        dropping.submit("eb/d1/reading", b"{}", mid, 1)
    assert dropping.can_take()  # drop_oldest never waits


def test_stop_with_a_long_backlog_checkpoints_in_time_and_leaves_the_rest_unacknowledged(tmp_path):
    """A slow model with a full queue used to spend the whole stop timeout draining it, and the
    process exited without its final checkpoint. The worker now drains for half the timeout."""
    w = worker(store=CheckpointStore(tmp_path / "ck", FEATURES))
    acked = w.session.acked
    handle = w.acks.handle

    def slow_handle(*item):
        time.sleep(0.05)
        handle(*item)

    w.acks.handle = slow_handle
    for i in range(100):
        msg = json.dumps({"seq": i, "x": [float(i % 3)] * len(FEATURES), "y": i % 2}).encode()
        w.submit("eb/d1/reading", msg, i + 1, 1)
    w.start()
    t0 = time.monotonic()
    w.stop(timeout_s=1.0)
    assert not w.is_alive() and time.monotonic() - t0 < 1.0
    assert (tmp_path / "ck" / "d1.ckpt").exists()
    assert 0 < len(acked) < 100 and w.queue.qsize() == 100 - len(acked)  # the rest: redelivered
    assert acked == list(range(1, len(acked) + 1))


# --- 1. internal errors are reported; a model that raises keeps what it learned --------------

class Flaky(GaussianNB):
    """A naive Bayes with a bug: predicting or learning a reading whose first feature is 9 raises."""

    def predict_proba_one(self, x):
        if x[0] == 9:
            raise ValueError("max() arg is an empty sequence")
        return super().predict_proba_one(x)

    def learn_one(self, x, y, w=1.0):
        if x[0] == 9:
            raise ValueError("max() arg is an empty sequence")
        super().learn_one(x, y, w)


def _flaky(w, device):
    slot = w.devices[device].slots[0]
    slot.learner = Flaky.from_state(slot.learner.state())
    return slot


def test_a_model_that_raises_keeps_its_state_skips_the_reading_and_is_reported(caplog):
    """A model that raises is neither replaced nor reset: the reading is skipped for it, counted
    and reported as learner_error, and everything it learned stays."""
    w = worker()
    for seq in range(4):
        send(w, "d1", "reading", {"seq": seq, "x": [seq, 0, 0], "y": "ab"[seq % 2]})
    slot = _flaky(w, "d1")
    before = slot.learner.state()
    with caplog.at_level(logging.ERROR, logger="edgebayes.runtime"):
        send(w, "d1", "reading", {"seq": 4, "x": [9, 1, 1], "y": "b"})
    assert w.session.on("prediction")[4]["models"] == {"nb": None}  # it had no answer
    errors = w.session.on("error")
    assert [(e["kind"], e["seq"]) for e in errors] == [("learner_error", 4), ("learner_error", 4)]
    assert "'nb'" in errors[0]["error"] and "predict_proba_one raised ValueError" in errors[0]["error"]
    assert "learn_one raised ValueError" in errors[1]["error"]
    assert slot.learner.state() == before and type(slot.learner) is Flaky  # kept, not reset
    logged = [r for r in caplog.records if r.levelno == logging.ERROR]  # once a minute per device
    assert len(logged) == 1 and logged[0].exc_info is not None and "predict_proba_one" in logged[0].getMessage()
    send(w, "d1", "reading", {"seq": 5, "x": [3, 0, 0], "y": "b"})
    assert w.session.on("prediction")[5]["y_pred"] == "b" and slot.learner.state()["n"] == 5.0
    m = w.metrics()
    assert (m["errors"]["learner_error"], m["n_internal_errors"], "n_model_resets" in m) == (2, 0, False)


def test_a_class_the_model_cannot_hold_is_a_class_limit_error_without_a_traceback(caplog):
    from edgebayes.base import ClassLimitError

    class Full(GaussianNB):
        def learn_one(self, x, y, w=1.0):
            if y not in self.classes_:
                raise ClassLimitError(f"class {y!r}: max_size_bytes holds 2 classes")
            super().learn_one(x, y, w)

    w = worker()
    send(w, "d1", "reading", {"seq": 0, "x": [0, 0, 0], "y": "a"})
    send(w, "d1", "reading", {"seq": 1, "x": [1, 0, 0], "y": "b"})
    slot = w.devices["d1"].slots[0]
    slot.learner = Full.from_state(slot.learner.state())
    before = slot.learner.state()
    with caplog.at_level(logging.WARNING, logger="edgebayes.runtime"):
        send(w, "d1", "reading", {"seq": 2, "x": [2, 0, 0], "y": "c"})
    assert [(e["kind"], e["seq"]) for e in w.session.on("error")] == [("class_limit", 2)]
    assert "max_size_bytes holds 2 classes" in w.session.on("error")[0]["error"]
    assert slot.learner.state() == before
    assert not any(r.exc_info for r in caplog.records) and w.reports.errors["class_limit"] == 1
    assert [r.levelno for r in caplog.records] == [logging.WARNING]


def test_when_the_best_model_fails_to_predict_the_next_best_is_published():
    w = worker(models=[{"name": "nb", "kind": "gaussian_nb"}, {"name": "nb2", "kind": "gaussian_nb"}])
    for seq in range(4):
        send(w, "d1", "reading", {"seq": seq, "x": [seq, 0, 0], "y": "ab"[seq % 2]})
    assert w.devices["d1"].best == 0
    _flaky(w, "d1")
    send(w, "d1", "reading", {"seq": 4, "x": [9, 0, 0]})
    p = w.session.on("prediction")[4]
    assert (p["model"], p["models"]["nb"], p["y_pred"]) == ("nb2", None, p["models"]["nb2"])
    assert p["y_pred"] in ("a", "b") and set(p["proba"]) == {"a", "b"}
    send(w, "d1", "label", {"seq": 4, "y": "b"})  # nb's failed prediction is scored as wrong
    assert [s.window[-1] for s in w.devices["d1"].slots] == [0, int(p["y_pred"] == "b")]


def test_a_model_that_raises_on_learn_from_a_label_keeps_its_state():
    w = worker()
    send(w, "d1", "reading", {"seq": 0, "x": [0, 0, 0], "y": "a"})
    send(w, "d1", "reading", {"seq": 1, "x": [9, 0, 0]})
    slot = _flaky(w, "d1")
    before = slot.learner.state()
    send(w, "d1", "label", {"seq": 1, "y": "a"})
    assert [e["kind"] for e in w.session.on("error")] == ["learner_error"]
    assert slot.learner.state() == before and w.serving.n_learned == 2


def test_any_other_exception_after_parsing_is_reported_as_internal():
    w = worker(session=RecordingPublisher(fail_on="/prediction"))
    send(w, "d1", "reading", {"seq": 0, "x": [0, 0, 0], "y": "a"})
    errors = w.session.on("error")
    assert [(e["kind"], e["seq"], e["topic"]) for e in errors] == [("internal", 0, "eb/d1/reading")]
    assert "RuntimeError: cannot publish on eb/d1/prediction" in errors[0]["error"]
    assert w.n_internal_errors == 1 and w.reports.errors["internal"] == 1


def test_a_model_that_raises_keeps_its_learning_and_checkpoint_through_mosquitto(broker, tmp_path):
    ck = tmp_path / "ck"
    rt = Runtime(load_config(write_config(tmp_path / "c.toml", broker, checkpoint_dir=ck,
                                          extra="[output]\nerror_interval_s = 0\n")))
    rt.start()
    try:
        wait_for(rt.client.subscribed.is_set, what="runtime subscription")
        dev = Device(broker)
        for seq in range(20):
            dev.publish("d1", "reading", {"seq": seq, "x": [seq % 2 * 5, 0, 0], "y": "ab"[seq % 2]})
        wait_for(lambda: rt.worker.serving.n_learned == 20, what="20 readings learned")
        slot = rt.worker.devices["d1"].slots[0]
        slot.learner = Flaky.from_state(slot.learner.state())
        for seq in (20, 21, 22):
            dev.publish("d1", "reading", {"seq": seq, "x": [9 if seq == 20 else 5, 0, 0], "y": "b"})
        wait_for(lambda: len(dev.predictions()) == 23 and rt.worker.serving.n_learned == 23, what="every reading served")
        wait_for(lambda: len(dev.got("error")) == 2, what="the learner_error reports")
        assert [(e["kind"], e["seq"]) for e in dev.got("error")] == [("learner_error", 20), ("learner_error", 20)]
        assert [dev.predictions()[s]["y_pred"] for s in (20, 21, 22)] == [None, "b", "b"]
    finally:
        rt.stop(timeout_s=5)
    saved = CheckpointStore(ck, FEATURES).read("d1")
    assert saved["models"][0]["learner"]["n"] == 22.0  # 20 + 2: only the failed reading is missing


# --- 2, 4. ints the runtime would echo or store are bounded ----------------------------------

P = Parser(("a", "b", "c"), "y")


@pytest.mark.parametrize("payload", [
    b'{"seq": 1000000000000000000000000000000, "x": [1, 2, 3]}',
    b'{"seq": 9007199254740992, "x": [1, 2, 3]}',                     # 2**53
    msgpack.packb({"seq": 2**64 - 1, "x": [1, 2, 3]}),
    b'{"seq": 1, "ts": ' + str(10**400).encode() + b', "x": [1, 2, 3]}',
    b'{"seq": 1, "x": [1, 2, 3], "y": 999999999999999999999999999999}',
    b'{"seq": 1, "x": [1, 2, 3], "y": 9223372036854775808}',          # 2**63
    b'{"seq": 1, "x": [1, 2, 3], "y": -9223372036854775809}',         # -2**63 - 1
])
def test_out_of_range_ints_are_field_errors(payload):
    with pytest.raises(ProtocolError) as err:
        P.parse_reading("d", payload)
    assert err.value.kind == "field"


@pytest.mark.parametrize("payload", [b'{"seq": 9007199254740992, "y": "a"}', b'{"seq": 1, "y": 18446744073709551615}'])
def test_out_of_range_ints_in_labels_are_field_errors(payload):
    with pytest.raises(ProtocolError) as err:
        P.parse_label("d", payload)
    assert err.value.kind == "field"


def test_ints_at_the_bounds_are_accepted():
    r = P.parse_reading("d", b'{"seq": 9007199254740991, "ts": 1e30, "x": [1, 2, 3], "y": 9223372036854775807}')
    assert (r.seq, r.ts, r.y) == (2**53 - 1, 1e30, 2**63 - 1)
    assert P.parse_label("d", b'{"seq": 0, "y": -9223372036854775808}').y == -2**63


def test_a_huge_label_never_reaches_the_device(tmp_path):
    w = worker(store=CheckpointStore(tmp_path / "ck", FEATURES))
    send(w, "d1", "reading", b'{"seq": 0, "x": [0, 0, 0], "y": 999999999999999999999999999999}')
    send(w, "d1", "reading", b'{"seq": 10000000000000000000000000000000, "x": [0, 0, 0]}')
    send(w, "d1", "reading", {"seq": 1, "x": [0, 0, 0], "y": 1})
    assert [e["kind"] for e in w.session.on("error")] == ["field", "field"]
    assert [p["seq"] for p in w.session.on("prediction")] == [1]
    assert w.checkpoint(all_devices=True) == 1 and w.n_internal_errors == 0


# --- 3. checkpoints are validated before a device is restored --------------------------------

def _saved_state(tmp_path):
    w = worker(store=CheckpointStore(tmp_path / "ck", FEATURES))
    for seq in range(4):
        send(w, "d1", "reading", {"seq": seq, "x": [seq, 1, 2], "y": "ab"[seq % 2]})
    return w.devices["d1"].state()


def _restore(tmp_path, name, state):
    store = CheckpointStore(tmp_path / "ck", FEATURES)
    store.save(name, state)
    w = worker(store=store)
    send(w, name, "reading", {"seq": 1, "x": [0, 0, 0]})
    return w, sorted(p.name.split(".corrupt-")[0] for p in (tmp_path / "ck").glob(f"{name}.ckpt.corrupt-*"))


def _nan_mean(s):
    s["models"][0]["learner"]["means"][0][0] = math.nan


def _negative_count(s):
    s["models"][0]["learner"]["counts"][0][0] = -1.0


def _garbage_models(s):
    s["models"] = "nonsense"


@pytest.mark.parametrize("spoil", [_nan_mean, _negative_count, _garbage_models])
def test_a_checkpoint_with_bad_values_is_moved_aside(tmp_path, spoil, caplog):
    state = _saved_state(tmp_path)
    spoil(state)
    with caplog.at_level(logging.ERROR, logger="edgebayes.runtime.checkpoint"):
        w, aside = _restore(tmp_path, "d2", state | {"device": "d2"})
    assert aside == ["d2.ckpt"] and "d2" in caplog.text
    dev = w.devices["d2"]
    assert dev.last_seq == 1 and dev.slots[0].learner.state() == GaussianNB().state()
    assert [p["seq"] for p in w.session.on("prediction")] == [1]


def test_a_checkpoint_of_another_device_is_not_loaded(tmp_path, caplog):
    state = _saved_state(tmp_path)
    with caplog.at_level(logging.ERROR, logger="edgebayes.runtime.checkpoint"):
        w, aside = _restore(tmp_path, "mismatch", state | {"device": "other"})
    assert aside == ["mismatch.ckpt"] and "'other'" in caplog.text
    assert w.devices["mismatch"].slots[0].learner.state() == GaussianNB().state()


def test_a_good_checkpoint_is_still_restored(tmp_path):
    state = _saved_state(tmp_path)
    w, aside = _restore(tmp_path, "d1", copy.deepcopy(state))
    assert aside == [] and w.devices["d1"].slots[0].learner.state() == state["models"][0]["learner"]
    assert [e["kind"] for e in w.session.on("error")] == ["duplicate"]  # seq 1 <= the restored last seq 3


# --- 5. one label type per device ------------------------------------------------------------

def test_a_label_of_the_other_type_is_taken_by_its_json_text_or_refused():
    w = worker()
    send(w, "d1", "reading", {"seq": 0, "x": [0, 0, 0], "y": 1})
    send(w, "d1", "reading", {"seq": 1, "x": [5, 5, 5], "y": "2"})   # new firmware: the same label as text
    send(w, "d1", "reading", {"seq": 2, "x": [5, 5, 5], "y": "on"})  # refused whole: not predicted
    send(w, "d1", "reading", {"seq": 3, "x": [5, 5, 5]})
    send(w, "d1", "label", {"seq": 3, "y": "02"})                      # not the text of an int: stays pending
    send(w, "d1", "label", {"seq": 3, "y": "1"})
    errors = w.session.on("error")
    assert [(e["kind"], e["seq"]) for e in errors] == [("label_type", 2), ("label_type", 3)]
    assert "int" in errors[0]["error"] and "str" in errors[0]["error"]
    assert [p["seq"] for p in w.session.on("prediction")] == [0, 1, 3]
    assert w.devices["d1"].slots[0].learner.classes_ == [1, 2] and w.serving.n_learned == 3
    send(w, "d2", "reading", {"seq": 0, "x": [0, 0, 0], "y": "a"})  # another device, its own type
    send(w, "d2", "reading", {"seq": 1, "x": [0, 0, 0], "y": 7})
    assert w.devices["d2"].slots[0].learner.classes_ == ["a", "7"]


def test_the_label_type_survives_a_checkpoint(tmp_path):
    store = CheckpointStore(tmp_path / "ck", FEATURES)
    w = worker(store=store)
    send(w, "d1", "reading", {"seq": 0, "x": [0, 0, 0], "y": 3})
    w.checkpoint(all_devices=True)
    w2 = worker(store=store)
    send(w2, "d1", "reading", {"seq": 1, "x": [0, 0, 0], "y": "b"})
    send(w2, "d1", "reading", {"seq": 2, "x": [0, 0, 0], "y": "4"})
    assert [e["kind"] for e in w2.session.on("error")] == ["label_type"]
    assert w2.devices["d1"].slots[0].learner.classes_ == [3, 4]


def test_a_retained_reading_is_skipped_counted_and_reported_through_mosquitto(broker, tmp_path):
    dev = Device(broker)
    dev.client.publish("eb/d1/reading", msgpack.packb({"seq": 0, "x": [0, 0, 0], "y": "a"}), qos=1,
                       retain=True).wait_for_publish(5)
    dev.client.publish("eb/d1/label", msgpack.packb({"seq": 0, "y": "a"}), qos=1, retain=True).wait_for_publish(5)
    rt = Runtime(load_config(write_config(tmp_path / "c.toml", broker, extra="[output]\nerror_interval_s = 0\n")))
    rt.start()
    try:
        wait_for(lambda: rt.worker.reports.errors["retained"] == 2, what="both retained messages counted")
        wait_for(lambda: len(dev.got("error")) == 2, what="both reported")
        assert sorted((e["kind"], e["topic"]) for e in dev.got("error")) == [
            ("retained", "eb/d1/label"), ("retained", "eb/d1/reading")]
        dev.publish("d1", "reading", {"seq": 0, "x": [0, 0, 0], "y": "a"})  # the same, live: served
        wait_for(lambda: 0 in dev.predictions(), what="the live reading")
        assert rt.worker.serving.n_readings == 1 and rt.worker.serving.n_learned == 1
    finally:
        rt.stop(timeout_s=5)


# --- 7. one-line errors, a visible retry -----------------------------------------------------

def _run_cli(*args):
    return subprocess.run([sys.executable, "-m", "edgebayes", "run", *args], check=False, capture_output=True,
                          text=True, timeout=30, cwd=ROOT)


def test_a_binary_config_is_one_line_not_a_traceback(tmp_path):
    path = tmp_path / "binary.toml"
    path.write_bytes(b"\xff\xfe[broker]\n")
    out = _run_cli("--config", str(path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == f"edgebayes run: {path}: cannot read: not UTF-8 text (byte 0xff at offset 0)"


def test_a_checkpoint_dir_that_is_a_file_is_one_line(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text('[schema]\nfeatures = ["a"]\n[[models]]\nname = "nb"\nkind = "gaussian_nb"\n')
    (tmp_path / "ck").write_text("not a folder")
    out = _run_cli("--config", str(cfg), "--checkpoint-dir", str(tmp_path / "ck"))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.strip() == f"edgebayes run: checkpoint dir {tmp_path / 'ck'} is not a directory"


def test_an_unreachable_broker_is_logged_as_retrying(caplog):
    port = free_port()
    cfg = BrokerConfig(host="127.0.0.1", port=port, client_id="nobody", reconnect_min_s=0.1, reconnect_max_s=0.2)
    c = MqttClient(cfg, subscriptions=["x/y"], status_topic="x/status", on_message=lambda t, p, m, q: None)
    with caplog.at_level(logging.INFO, logger="edgebayes.runtime.mqtt"):
        c.start()
        try:
            wait_for(lambda: sum("retrying" in r.getMessage() for r in caplog.records) >= 2,
                     what="two retries logged")
        finally:
            c.stop()
    msgs = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert msgs[0].levelno == logging.WARNING and f"127.0.0.1:{port}" in msgs[0].getMessage()
