"""The runtime's parts without a broker: config, protocol validation, pending labels, checkpoints."""

import json
import math
import subprocess
import sys
import tomllib
import zlib
from pathlib import Path

import msgpack
import pytest
from paho.mqtt.client import topic_matches_sub

from edgebayes.runtime.checkpoint import FRAME, CheckpointError, CheckpointForeign, CheckpointStore
from edgebayes.runtime.config import ConfigError, check_files, load_config, parse_config
from edgebayes.runtime.ingest.native import Parser
from edgebayes.runtime.messages import SEQ_JUMP, SEQ_PER_S, TS_AHEAD_S, ProtocolError
from edgebayes.runtime.pending import EARLY_HOLD_S, Early, Pending, PendingLabels
from edgebayes.runtime.seqs import MAX_RUNS, SeqRuns
from edgebayes.runtime.topics import Topics

BASE = """
[broker]
host = "10.0.0.2"
port = 1884
client_id = "pi-kitchen"
keepalive_s = 30
[topics]
prefix = "site/eb"
devices = "+"
[schema]
features = ["temp_c", "hum_pct", "co2_ppm"]
label = "occupied"
[memory]
model_budget_bytes = 262144
rss_limit_mb = 60
[checkpoint]
dir = "/var/lib/edgebayes"
interval_s = 30
[labels]
max_pending = 50
max_age_s = 600
[output]
format = "json"
prediction_qos = 1
[queue]
max_size = 500
policy = "drop_oldest"
[[models]]
name = "nb"
kind = "gaussian_nb"
learning_rate = 0.01
"""


def test_full_config_is_read_with_units_and_defaults():
    cfg = parse_config(tomllib.loads(BASE))
    assert (cfg.broker.host, cfg.broker.port, cfg.broker.client_id, cfg.broker.keepalive_s) == (
        "10.0.0.2", 1884, "pi-kitchen", 30)
    assert cfg.broker.protocol == "mqttv5" and cfg.broker.session_expiry_s == 604800
    assert cfg.topics.prefix == "site/eb" and cfg.schema.features == ("temp_c", "hum_pct", "co2_ppm")
    assert cfg.schema.label == "occupied"
    assert cfg.memory.model_budget_bytes == 262144 and cfg.memory.max_devices == 64
    assert cfg.checkpoint.dir == Path("/var/lib/edgebayes") and cfg.checkpoint.interval_s == 30
    assert (cfg.labels.max_pending, cfg.labels.max_age_s) == (50, 600)
    assert (cfg.output.format, cfg.output.prediction_qos, cfg.output.metrics_interval_s) == ("json", 1, 10.0)
    assert (cfg.queue.max_size, cfg.queue.policy) == (500, "drop_oldest")
    assert [(m.name, m.kind, m.params) for m in cfg.models] == [("nb", "gaussian_nb", {"learning_rate": 0.01})]
    assert cfg.models[0].build().learning_rate == 0.01


def test_every_problem_is_reported_once_each():
    doc = tomllib.loads(BASE)
    doc["broker"]["port"] = "1883"  # wrong type
    doc["broker"]["keepalive"] = 30  # unknown key (no unit)
    doc["labels"]["max_age_s"] = -1  # out of range
    doc["output"]["format"] = "xml"
    doc["queue"]["policy"] = "drop-oldest"
    doc["extra"] = {}  # unknown table
    doc["models"].append({"name": "nb", "kind": "gaussian_nb"})  # duplicate name
    doc["models"].append({"name": "t", "kind": "forest"})  # unknown kind
    doc["models"].append({"name": "nb2", "kind": "gaussian_nb", "learning_rat": 0.1})  # unknown param
    with pytest.raises(ConfigError) as err:
        parse_config(doc)
    problems = err.value.problems
    assert len(problems) == 9, problems
    text = "\n".join(problems)
    for needle in ("[broker] port = '1883': expected int", "[broker] unknown key 'keepalive'",
                   "[labels] max_age_s = -1: must be > 0", "[output] format = 'xml'",
                   "[queue] policy = 'drop-oldest'", "unknown table [extra]", "'nb': the name is used twice",
                   "unknown model kind 'forest'", "learning_rat"):
        assert needle in text


def test_missing_feature_list_and_models_are_errors():
    with pytest.raises(ConfigError) as err:
        parse_config({"schema": {"label": "y"}})
    assert err.value.problems == ["[schema] features: missing (the ordered list of feature names)",
                                  "[[models]]: at least one model is required"]
    with pytest.raises(ConfigError, match="holds a name twice"):
        parse_config({"schema": {"features": ["a", "a"]}, "models": [{"name": "m", "kind": "gaussian_nb"}]})
    with pytest.raises(ConfigError, match="expected int"):  # TOML true is not a number
        parse_config({"schema": {"features": ["a"]}, "queue": {"max_size": True},
                      "models": [{"name": "m", "kind": "gaussian_nb"}]})


def test_overrides_and_bad_file(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(BASE)
    cfg = load_config(path).with_overrides("broker.local:1999", str(tmp_path / "ck"))
    assert (cfg.broker.host, cfg.broker.port, cfg.checkpoint.dir) == ("broker.local", 1999, tmp_path / "ck")
    with pytest.raises(ConfigError, match="HOST:PORT"):
        cfg.with_overrides("nohost")
    with pytest.raises(ConfigError, match=r"port 99999 is out of range 1\.\.65535"):
        cfg.with_overrides("127.0.0.1:99999")
    path.write_text("[broker\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")


def test_a_shared_subscription_prefix_is_refused_by_name():
    with pytest.raises(ConfigError, match=r"\$share/ shared subscriptions are not supported"):
        parse_config({"topics": {"prefix": "$share/g/edgebayes"}, "schema": {"features": ["a"]},
                      "models": [{"name": "m", "kind": "gaussian_nb"}]})


def test_cli_exits_2_with_the_problem_on_stderr(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(BASE.replace("max_pending = 50", "max_pending = 50\nmax_age = 3"))
    out = subprocess.run([sys.executable, "-m", "edgebayes", "run", "--config", str(path)],
                         check=False, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert "[labels] unknown key 'max_age'" in out.stderr


def test_unreadable_broker_files_are_named_by_key_at_start(tmp_path):
    ca = tmp_path / "ca.pem"
    ca.write_text("not parsed here\n")
    path = tmp_path / "c.toml"
    path.write_text(BASE.replace("keepalive_s = 30\n", (
        f'keepalive_s = 30\nusername = "edgebayes"\npassword_file = "{tmp_path}/mqtt-password"\n'
        f'tls_ca_file = "{ca}"\ntls_cert_file = "{tmp_path}"\n'
        f'tls_key_file = "{tmp_path}/client.key"\n'), 1))
    cfg = load_config(path)  # the config itself is valid
    with pytest.raises(ConfigError) as err:
        check_files(cfg, "c.toml")
    assert err.value.problems == [
        (f"[broker] password_file {tmp_path}/mqtt-password: no such file "
         "(create it, see deploy/install.sh, or remove username/password_file)"),
        f"[broker] tls_cert_file {tmp_path}: a folder, not a file",
        f"[broker] tls_key_file {tmp_path}/client.key: no such file",
    ]
    out = subprocess.run([sys.executable, "-m", "edgebayes", "run", "--config", str(path)],
                         check=False, capture_output=True, text=True, timeout=30)
    assert out.returncode == 2
    assert out.stderr.startswith(f"edgebayes run: {path}: 3 problems:\n  [broker] password_file ")
    (tmp_path / "mqtt-password").write_text("secret\n")
    (tmp_path / "client.key").write_text("key\n")
    cert = tmp_path / "client.crt"
    cert.write_text("cert\n")
    path.write_text(path.read_text().replace(f'tls_cert_file = "{tmp_path}"', f'tls_cert_file = "{cert}"'))
    check_files(load_config(path), "c.toml")  # all readable: no problem


# --- topics (docs/cases.md C32) -------------------------------------------------------------

def test_c32_topic_matching_uses_paho_semantics():
    pairs = [["test/6/#", "test/3"], ["sport/#", "sport"], ["/#", "/"], ["foo/+/#", "foo/bar"],
             ["home/log/#", "home/login/23/set"], ["+/+", "/finance"]]
    assert [topic_matches_sub(s, t) for s, t in pairs] == [False, True, True, True, False, True]


def test_routing_by_subscription_filter():
    t = Topics("test", "6", "rt")
    assert t.route("test/3/reading") is None and t.route("test/6/reading") == ("reading", "6")
    t = Topics("site/eb", "+", "rt")
    assert t.route("site/eb/kitchen-1/reading") == ("reading", "kitchen-1")
    assert t.route("site/eb/kitchen_1/label") == ("label", "kitchen_1")
    assert t.route("site/eb/kitchen/prediction") is None  # never our own outputs
    assert t.route("site/eb/runtime/rt/status") is None
    assert t.route("site/ebx/k/reading") is None
    for bad in ("dev.1", "dev ice", "caf\u00e9", "x" * 65):
        with pytest.raises(ProtocolError) as err:
            t.route(f"site/eb/{bad}/reading")
        assert err.value.kind == "device_id"
    assert t.status == "site/eb/runtime/rt/status" and t.device_topic("k", "drift") == "site/eb/k/drift"


# --- payload validation -------------------------------------------------------------------

P = Parser(("a", "b", "c"), "y", max_payload_bytes=1000)


def test_valid_readings_in_both_encodings():
    r = P.parse_reading("d", msgpack.packb({"seq": 3, "ts": 1.5, "x": [1, 2.5, float("nan")], "y": "on"}))
    assert (r.device, r.seq, r.ts, r.x[:2], r.y) == ("d", 3, 1.5, [1.0, 2.5], "on")
    assert math.isnan(r.x[2]) and type(r.x[0]) is float
    r = P.parse_reading("d", b'{"seq": 4, "x": {"c": 3, "a": 1}, "y": null, "extra": 1}')
    assert (r.seq, r.ts, r.y) == (4, None, None)
    assert r.x[0] == 1.0 and math.isnan(r.x[1]) and r.x[2] == 3.0
    lab = P.parse_label("d", b'{"seq": 4, "y": 2}')
    assert (lab.seq, lab.y) == (4, 2)
    p2 = Parser(("a",), "occupied")
    assert p2.parse_reading("d", b'{"seq": 1, "x": [0], "occupied": 1}').y == 1


BAD = [
    (b"\xc1\x00", "decode"),
    (b"", "decode"),
    (b"{nope", "decode"),
    (bytes.fromhex("81a464617461a80000000000000080"), "decode"),  # C41: legacy raw str, not UTF-8
    (msgpack.packb({"seq": 1, "x": [1, 2, 3], "pad": "z" * 1000}), "oversize"),
    (msgpack.packb([1, 2, 3]), "not_a_map"),
    (b'[1, 2]', "not_a_map"),
    (msgpack.packb({"x": [1, 2, 3]}), "field"),
    (msgpack.packb({"seq": "1", "x": [1, 2, 3]}), "field"),
    (msgpack.packb({"seq": -1, "x": [1, 2, 3]}), "field"),
    (msgpack.packb({"seq": True, "x": [1, 2, 3]}), "field"),
    (msgpack.packb({"seq": 1}), "field"),
    (msgpack.packb({"seq": 1, "x": "1,2,3"}), "field"),
    (msgpack.packb({"seq": 1, "x": [1, "2", 3]}), "field"),
    (msgpack.packb({"seq": 1, "x": [1, None, 3]}), "field"),
    (msgpack.packb({"seq": 1, "x": [1, True, 3]}), "field"),
    (msgpack.packb({"seq": 1, "ts": "now", "x": [1, 2, 3]}), "field"),
    (msgpack.packb({"seq": 1, "x": [1, 2, 3], "y": 1.5}), "field"),
    (msgpack.packb({"seq": 1, "x": [1, 2, 3], "y": [1]}), "field"),
    (msgpack.packb({"seq": 1, "x": [1, 2]}), "vector_length"),
    (msgpack.packb({"seq": 1, "x": [1, 2, 3, 4]}), "vector_length"),
    (msgpack.packb({"seq": 1, "x": [1, float("inf"), 3]}), "not_finite"),
    (b'{"seq": 1, "x": [1, -Infinity, 3]}', "not_finite"),
    (b'{"seq": 1, "x": [1, 1e999, 3]}', "not_finite"),
    (b'{"seq": 1, "x": [1, ' + str(10**400).encode() + b', 3]}', "not_finite"),  # int beyond float
    (msgpack.packb({"seq": 1, "x": {"a": 1, "z": 2}}), "unknown_feature"),
]


@pytest.mark.parametrize("payload,kind", BAD)
def test_malformed_reading_names_its_kind(payload, kind):
    with pytest.raises(ProtocolError) as err:
        P.parse_reading("d", payload)
    assert err.value.kind == kind


def test_label_needs_seq_and_label():
    for payload in (b'{"seq": 1}', b'{"y": "a"}', b'{"seq": 1, "y": null}', b'{"seq": 1, "y": 0.5}'):
        with pytest.raises(ProtocolError) as err:
            P.parse_label("d", payload)
        assert err.value.kind == "field"


# --- pending labels -----------------------------------------------------------------------

def test_pending_is_bounded_by_count_and_age():
    p = PendingLabels(max_pending=3, max_age_s=10.0)
    for seq in range(5):
        p.add(seq, Pending(100.0 + seq, [float(seq)], ["a"]))
    assert len(p) == 3 and p.n_overflow == 2
    assert p.pop(0) is None and p.pop(3) == Pending(103.0, [3.0], ["a"])
    p.expire(113.5)  # limit 103.5: seq 2 (t=102) falls out, seq 4 (t=104) stays
    assert len(p) == 1 and p.n_expired == 1
    q = PendingLabels(3, 10.0)
    q.load_state(json.loads(json.dumps(p.state())))
    assert q.pop(4) == Pending(104.0, [4.0], ["a"]) and (q.n_overflow, q.n_expired) == (2, 1)
    z = PendingLabels(0, 10.0)
    z.add(1, Pending(0.0, [], []))
    assert len(z) == 0 and z.n_overflow == 1



def test_labels_held_for_their_readings_are_bounded_by_count_and_age_and_kept_in_the_state():
    p = PendingLabels(max_pending=2, max_age_s=10.0)
    assert p.hold(5, Early(100.0, "a", "eb/d1/label")) == []
    assert p.hold(6, Early(101.0, "b", "eb/d1/label")) == []
    assert p.hold(7, Early(102.0, "c", "eb/d1/label")) == [(5, Early(100.0, "a", "eb/d1/label"))]  # count
    assert p.held(6) and not p.held(5) and p.n_early == 2
    q = PendingLabels(2, 10.0)
    q.load_state(json.loads(json.dumps(p.state())))
    assert q.take(6) == Early(101.0, "b", "eb/d1/label") and q.take(6) is None
    assert q.expire_early(102.0 + EARLY_HOLD_S) == [] and q.n_early == 1
    assert q.expire_early(102.5 + EARLY_HOLD_S) == [(7, Early(102.0, "c", "eb/d1/label"))]  # age
    assert p.drop_early() == [(6, Early(101.0, "b", "eb/d1/label")), (7, Early(102.0, "c", "eb/d1/label"))]
    assert PendingLabels(0, 10.0).hold(1, Early(0.0, 1, "t")) == [(1, Early(0.0, 1, "t"))]  # none kept
    small = PendingLabels(1, 10.0)
    small.load_state(json.loads(json.dumps({**q.state(), "early": [[8, 1.0, "x", "t"], [9, 2.0, "y", "t"]]})))
    assert small.take(9) == Early(2.0, "y", "t") and small.n_early == 0  # the newest kept
    for bad in ([8, 1.0, 0.5, "t"], [8, float("nan"), "x", "t"], [-1, 1.0, "x", "t"], [8, 1.0, "x", 3]):
        with pytest.raises(ValueError, match="held label"):
            PendingLabels(2, 10.0).load_state({**q.state(), "early": [bad]})

# --- checkpoints --------------------------------------------------------------------------

def test_checkpoint_round_trip_and_corrupt_file_moved_aside(tmp_path, caplog):
    store = CheckpointStore(tmp_path / "ck", ("a", "b"))
    state = {"device": "d1", "last_seq": 7, "models": [], "pending": {"items": [], "n_overflow": 0, "n_expired": 0}}
    path = store.save("d1", state)
    assert store.read("d1") == state and store.read("nobody") is None
    assert sorted(p.name for p in path.parent.iterdir()) == ["d1.ckpt"]  # no temp file left
    body = path.read_bytes()[FRAME.size:]
    doc = msgpack.unpackb(body)
    assert (doc["format"], doc["version"], doc["features"]) == ("edgebayes-checkpoint", 2, ["a", "b"])
    assert FRAME.unpack_from(path.read_bytes()) == (b"EBCK", len(body), zlib.crc32(body))
    path.write_bytes(path.read_bytes()[:-5])
    with pytest.raises(CheckpointError, match="bytes after the header"):
        store.read("d1")
    aside = store.move_aside("d1", "test")
    assert aside[0].name.startswith("d1.ckpt.corrupt-") and not path.exists()
    assert "d1" in caplog.text and caplog.records[-1].levelname == "ERROR"
    CheckpointStore(tmp_path / "ck", ("a",)).save("d2", state)
    assert store.read_generation("d2").features == ["a"]  # fitted to the schema by the device


def test_a_version_1_checkpoint_without_a_frame_still_loads(tmp_path):
    store = CheckpointStore(tmp_path / "ck", ("a", "b"))
    state = {"device": "d1", "last_seq": 7, "models": [], "pending": {"items": [], "n_overflow": 0, "n_expired": 0}}
    doc = {"format": "edgebayes-checkpoint", "version": 1, "features": ["a", "b"], "device": state}
    store.path("d1").write_bytes(msgpack.packb(doc, use_bin_type=True))
    assert store.read("d1") == state


def test_a_save_keeps_the_previous_generation_and_a_newer_version_is_left_alone(tmp_path):
    store = CheckpointStore(tmp_path / "ck", ("a",))
    for seq in (1, 2, 3):
        store.save("d1", {"device": "d1", "last_seq": seq})
    assert [store.read_generation("d1", g).state["last_seq"] for g in (0, 1)] == [3, 2]
    body = msgpack.packb({"format": "edgebayes-checkpoint", "version": 3, "features": ["a"], "device": {}})
    store.path("d1").write_bytes(FRAME.pack(b"EBCK", len(body), zlib.crc32(body)) + body)
    with pytest.raises(CheckpointForeign, match="version 3"):
        store.read("d1")


# --- reboots (docs/protocol.md "Reboots") ---------------------------------------------------

def _device(max_pending=10):
    from edgebayes.runtime.config import ModelConfig
    from edgebayes.runtime.device import Device

    return Device("d1", [ModelConfig("nb", "gaussian_nb", {})], 200, 0.002, PendingLabels(max_pending, 60.0))


@pytest.mark.parametrize("last_ts,ts,restarted", [
    (105.0, 200.0, True),    # a later ts: the firmware rebooted (whatever the seq)
    (105.0, 100.0, False),   # a redelivery of an earlier reading: its original ts
    (105.0, 105.0, False),   # a redelivery of the last reading
    (105.0, None, False),    # no ts: a reboot cannot be told from a redelivery
    (None, 200.0, False),    # nor when the last reading had none
    (None, None, False),
])
def test_a_reboot_is_a_seq_not_above_the_last_with_a_later_ts(last_ts, ts, restarted):
    dev = _device()
    dev.last_seq, dev.last_ts, dev.last_recv = 5, last_ts, 1000.0
    dev.accepted = SeqRuns([0, 5])  # seqs 0..5 accepted
    if restarted:
        assert dev.check_seq(3, ts, 1001.0) == "reboot"
    else:
        with pytest.raises(ProtocolError) as err:
            dev.check_seq(3, ts, 1001.0)
        assert err.value.kind == "duplicate"
    assert dev.check_seq(6, ts, 1001.0) == "next"  # above the last: never a reboot


def test_a_seq_may_run_ahead_by_a_bound_that_grows_with_the_time_since_the_last_reading():
    dev = _device()
    assert dev.check_seq(2**53 - 1, None, 1000.0) == "next"  # the first reading sets where seq starts
    dev.last_seq, dev.last_recv = 100, 1000.0
    assert dev.check_seq(100 + SEQ_JUMP, None, 1000.0) == "next"
    with pytest.raises(ProtocolError) as err:
        dev.check_seq(100 + SEQ_JUMP + 1, None, 1000.0)
    assert (err.value.kind, err.value.seq) == ("seq_jump", 100 + SEQ_JUMP + 1)
    assert dev.check_seq(100 + SEQ_JUMP + 3 * SEQ_PER_S, None, 1003.0) == "next"  # 3 s later
    with pytest.raises(ProtocolError, match="runs ahead"):
        dev.check_seq(100 + SEQ_JUMP + 1, None, 990.0)  # the clock stepped back: no credit, no debt
    dev.last_recv = None  # a checkpoint written before arrival times were kept
    assert dev.check_seq(2**53 - 1, None, 1000.0) == "next"


def test_a_reading_below_the_last_seq_never_accepted_is_taken_once_however_late():
    dev = _device()
    for seq in [*range(10), 20, 9000]:  # 10..19 and 21..8999 not delivered yet
        dev.accept(seq, None, 1000.0, dev.check_seq(seq, None, 1000.0))
    assert [dev.check_seq(s, None, 1000.0) for s in (12, 19, 21, 8999, 9001)] == ["late"] * 4 + ["next"]
    dev.accept(12, None, 1000.0, "late")
    assert (dev.last_seq, dev.accepted.state()) == (9000, [0, 9, 12, 12, 20, 20, 9000, 9000])
    for seq in (12, 9, 0, 20, 9000):  # taken already
        with pytest.raises(ProtocolError, match="accepted already"):
            dev.check_seq(seq, None, 1000.0)
    restored = _device()
    restored.load_state(dev.state(), 1)
    assert (restored.accepted.state(), restored.check_seq(13, None, 1000.0)) == (dev.accepted.state(), "late")
    dev.accept(5, 2000.0, 1000.0, "reboot")  # a new epoch starts its own runs
    assert dev.accepted.state() == [5, 5]


def test_seq_runs_join_and_stay_bounded():
    runs = SeqRuns()
    for seq in (4, 6, 5, 8, 2, 3):
        assert seq not in runs
        runs.add(seq)
        assert seq in runs
    assert runs.state() == [2, 6, 8, 8] and 7 not in runs and 1 not in runs and 9 not in runs
    for seq in range(100, 100 + 2 * (MAX_RUNS + 5), 2):  # every other seq: one run each
        runs.add(seq)
    assert len(runs) == MAX_RUNS and 7 in runs and 98 in runs  # the oldest runs merged
    assert seq - 1 not in runs and runs.state()[-2:] == [seq, seq]
    with pytest.raises(ValueError, match="gap between runs"):
        SeqRuns([1, 3, 4, 6])


def test_a_ts_too_far_ahead_of_the_runtime_clock_is_refused():
    dev = _device()
    assert dev.check_seq(0, 1000.0 + TS_AHEAD_S, 1000.0) == "next"
    with pytest.raises(ProtocolError) as err:
        dev.check_seq(0, 1000.0 + TS_AHEAD_S + 1.0, 1000.0)
    assert (err.value.kind, err.value.seq) == ("ts_ahead", 0)


def test_a_reboot_drops_pending_readings_and_is_checkpointed():
    dev = _device()
    for seq in range(3):
        dev.pending.add(seq, Pending(100.0 + seq, [0.0], [None]))
    dev.last_seq, dev.last_ts, dev.accepted = 2, 102.0, SeqRuns([0, 2])
    assert dev.reboot() == 3 and dev.n_reboots == 1 and len(dev.pending) == 0
    assert (dev.pending.n_rebooted, dev.pending.n_dropped) == (3, 3)
    again = _device()
    again.load_state(json.loads(json.dumps(dev.state())), 1)
    assert (again.last_seq, again.last_ts, again.n_reboots, again.pending.n_rebooted) == (2, 102.0, 1, 3)
    dev.last_recv = 1234.5
    again.load_state(dev.state(), 1)
    assert again.last_recv == 1234.5
    old = dev.state()  # a checkpoint written before reboots were tracked
    for key in ("version", "last_ts", "last_recv", "n_reboots"):
        del old[key]
    del old["pending"]["n_rebooted"]
    again.load_state(old, 1)
    assert (again.last_seq, again.last_ts, again.n_reboots, again.pending.n_rebooted) == (2, None, 0, 0)
    assert again.last_recv is None


def test_checkpoints_go_to_the_state_folder_unless_turned_off(monkeypatch, tmp_path):
    base = {"schema": {"features": ["a"]}, "models": [{"name": "nb", "kind": "gaussian_nb"}],
            "broker": {"client_id": "pi-1"}}
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    assert parse_config(base).checkpoint.dir == tmp_path / "xdg" / "edgebayes" / "pi-1"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/ignored")
    assert parse_config(base).checkpoint.dir == Path.home() / ".local" / "state" / "edgebayes" / "pi-1"
    monkeypatch.setenv("STATE_DIRECTORY", "/var/lib/edgebayes:/var/lib/other")  # the unit's StateDirectory=
    assert parse_config(base).checkpoint.dir == Path("/var/lib/edgebayes")
    assert parse_config({**base, "checkpoint": {"dir": "/data/eb"}}).checkpoint.dir == Path("/data/eb")
    assert parse_config({**base, "checkpoint": {"enabled": False}}).checkpoint.dir is None
    with pytest.raises(ConfigError, match=r"\[checkpoint\] dir is set but enabled = false"):
        parse_config({**base, "checkpoint": {"enabled": False, "dir": "/data/eb"}})


def test_previous_name_must_name_a_model_no_longer_configured():
    def problems(prev):
        models = [{"name": "nb", "kind": "gaussian_nb"}, {"name": "bayes", "kind": "gaussian_nb", "previous_name": prev}]
        try:
            parse_config({"schema": {"features": ["a"]}, "models": models})
        except ConfigError as exc:
            return exc.problems
        return []
    assert problems("old") == []
    assert problems("nb") == ["[[models]] 'bayes' previous_name = 'nb': is a configured model (it keeps its own checkpoint)"]
    assert problems("bayes") == ["[[models]] 'bayes' previous_name = 'bayes': must be another model's name, not its own"]
    assert parse_config({"schema": {"features": ["a"]}, "models": [
        {"name": "b", "kind": "gaussian_nb", "previous_name": "a"}]}).models[0].previous_name == "a"
