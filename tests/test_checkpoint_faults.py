"""Checkpoints against one bad byte, a file that cannot be read, and an edited config: a flipped
bit falls back to the previous generation, a permission error refuses the device without
touching its files, and reordered or added features, a renamed model, a reverted config keep
what each device learned (through a real Mosquitto and real runtime processes)."""

import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from edgebayes.naive_bayes import GaussianNB
from edgebayes.runtime import registry as registry_module
from edgebayes.runtime import worker as worker_module
from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.messages import ProtocolError
from edgebayes.tree import HoeffdingTreeClassifier
from tests.fakes import RecordingPublisher
from tests.runtime_client import FEATURES, Device, blobs, wait_for, write_config
from tests.test_runtime_process import ROOT, _wait_online
from tests.test_runtime_robustness import send, worker

MODELS = ({"name": "nb", "kind": "gaussian_nb"}, {"name": "ht", "kind": "hoeffding_tree", "grace_period": 10})
PROBES = [[i * 0.3 - 1.0, 2.0 - i * 0.2, i * 0.1] for i in range(12)]


def _fingerprint(dev) -> tuple:
    return dev.last_seq, [json.dumps(dev.predict(list(x))[2], sort_keys=True) for x in PROBES]


def _two_generations(ck):
    """A worker's device d1 checkpointed at seq 39 then at seq 79; the fingerprints of both."""
    w = worker(store=CheckpointStore(ck, FEATURES), models=MODELS)
    prints = []
    for seq, (x, y) in enumerate(blobs(80, seed=3)):
        send(w, "d1", "reading", {"seq": seq, "x": x, "y": y})
        if seq in (39, 79):
            assert w.checkpoint(all_devices=True) == 1
            prints.append(_fingerprint(w.devices["d1"]))
    return prints


def _restored(ck):
    w = worker(store=CheckpointStore(ck, FEATURES), models=MODELS)
    return w, w.registry.get("d1", create=True)


# --- one bad byte -----------------------------------------------------------------------------

def test_every_flipped_bit_of_the_newest_checkpoint_falls_back_to_the_previous_generation(tmp_path, caplog):
    src = tmp_path / "src"
    older, newest = _two_generations(src)
    data = (src / "d1.ckpt").read_bytes()
    bits = [*range(96), *range(96, len(data) * 8, 29)]  # the whole frame header, then spread over the body
    outcomes = {"newest": 0, "previous": 0, "other": 0}
    for bit in bits:
        ck = tmp_path / f"flip-{bit}"
        shutil.copytree(src, ck)
        spoilt = bytearray(data)
        spoilt[bit // 8] ^= 1 << (bit % 8)
        (ck / "d1.ckpt").write_bytes(bytes(spoilt))
        with caplog.at_level(logging.CRITICAL):
            _, dev = _restored(ck)
        got = _fingerprint(dev)
        outcomes["newest" if got == newest else "previous" if got == older else "other"] += 1
        assert sorted(p.name.split("-")[0] for p in ck.iterdir()) == ["d1.ckpt.1", "d1.ckpt.corrupt"]
        shutil.rmtree(ck)
    assert outcomes == {"newest": 0, "previous": len(bits), "other": 0}
    assert len(bits) > 1000


def test_a_restored_previous_generation_is_saved_without_losing_it(tmp_path):
    older, _ = _two_generations(tmp_path)
    data = bytearray((tmp_path / "d1.ckpt").read_bytes())
    data[200] ^= 0x10
    (tmp_path / "d1.ckpt").write_bytes(bytes(data))
    w, dev = _restored(tmp_path)
    assert _fingerprint(dev) == older and dev.last_seq == 39
    send(w, "d1", "reading", {"seq": 40, "x": [0, 0, 0], "y": "a"})
    assert w.checkpoint(all_devices=True) == 1
    store = CheckpointStore(tmp_path, FEATURES)
    assert [store.read_generation("d1", g).state["last_seq"] for g in (0, 1)] == [40, 39]


def test_both_generations_damaged_start_fresh_and_are_kept_aside(tmp_path, caplog):
    _two_generations(tmp_path)
    for name in ("d1.ckpt", "d1.ckpt.1"):
        (tmp_path / name).write_bytes((tmp_path / name).read_bytes()[:-1])
    with caplog.at_level(logging.ERROR):
        _, dev = _restored(tmp_path)
    assert dev.last_seq == -1 and sorted(p.name.split("-")[0] for p in tmp_path.iterdir()) == [
        "d1.ckpt.1.corrupt", "d1.ckpt.corrupt"]
    assert "checksum" in caplog.text or "bytes after the header" in caplog.text


# --- a file that cannot be read ----------------------------------------------------------------

def test_a_checkpoint_that_cannot_be_read_refuses_the_device_and_is_never_overwritten(tmp_path, monkeypatch, caplog):
    _, newest = _two_generations(tmp_path)
    good = (tmp_path / "d1.ckpt").read_bytes()
    (tmp_path / "d1.ckpt").rename(tmp_path / "kept")
    (tmp_path / "d1.ckpt").mkdir()  # a real read error (EISDIR), not damage: the newest may be fine
    w = worker(store=CheckpointStore(tmp_path, FEATURES), models=MODELS)
    with caplog.at_level(logging.ERROR):
        send(w, "d1", "reading", {"seq": 80, "x": [0, 0, 0], "y": "a"})
        send(w, "d1", "reading", {"seq": 81, "x": [0, 0, 0], "y": "a"})  # not read again before READ_RETRY_S
    assert [e["kind"] for e in w.session.on("error")] == ["checkpoint_unreadable"] * 2
    assert w.session.on("prediction") == [] and "d1" not in w.devices and caplog.text.count("cannot be read") == 1
    assert w.checkpoint(all_devices=True) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d1.ckpt", "d1.ckpt.1", "kept"]  # nothing moved aside
    (tmp_path / "d1.ckpt").rmdir()
    (tmp_path / "kept").rename(tmp_path / "d1.ckpt")
    monkeypatch.setattr(registry_module, "READ_RETRY_S", 0.0)
    w.registry._unreadable["d1"] = (0.0, "")  # the retry is due
    send(w, "d1", "reading", {"seq": 82, "x": [0, 0, 0], "y": "a"})
    assert [p["seq"] for p in w.session.on("prediction")] == [82]
    assert w.devices["d1"].slots[0].learner.state()["n"] == 81.0  # the 80 it had learned, and seq 82
    assert _fingerprint(w.devices["d1"])[0] == 82 and newest[0] == 79
    assert w.checkpoint(all_devices=True) == 1 and (tmp_path / "d1.ckpt.1").read_bytes() == good


def _run(config, log, *prefix) -> subprocess.Popen:
    return subprocess.Popen([*prefix, sys.executable, "-m", "edgebayes", "run", "--config", str(config),
                             "--log-level", "INFO"], cwd=ROOT, stdout=log.open("ab"), stderr=subprocess.STDOUT)


def _stop(proc) -> None:
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(15) == 0


def _learn(dev, data, start=0):
    for i, (x, y) in enumerate(data, start=start):
        dev.publish("d1", "reading", {"seq": i, "x": x, "y": y})


NO_DAC = ("setpriv", "--bounding-set", "-dac_override,-dac_read_search", "--")


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to drop CAP_DAC_OVERRIDE (a real EACCES for root)")
def test_a_permission_error_through_mosquitto_loses_no_model(broker, tmp_path):
    ck = tmp_path / "ck"
    cfg, log, dev, data = _first_run(broker, tmp_path, models=None, extra="[output]\nerror_interval_s = 0\n", seed=8)
    files = {p.name: p.read_bytes() for p in ck.glob("d1.ckpt*")}
    for name in files:
        (ck / name).chmod(0)
    proc = _run(cfg, log, *NO_DAC)  # root without CAP_DAC_OVERRIDE: EACCES on the mode 000 files
    try:
        _wait_online(dev, 1)
        dev.publish("d1", "reading", {"seq": 30, "x": data[30][0], "y": data[30][1]})
        wait_for(lambda: dev.got("error"), what="the refusal")
        assert [(e["kind"], e["seq"]) for e in dev.got("error")] == [("checkpoint_unreadable", None)]
        assert "Permission denied" in dev.got("error")[0]["error"] and 30 not in dev.predictions()
        for name in files:
            (ck / name).chmod(0o644)
        assert {p.name: p.read_bytes() for p in ck.glob("d1.ckpt*")} == files  # untouched, not moved aside
        seq = 30
        while seq not in dev.predictions():  # read again every READ_RETRY_S: a later reading is served
            seq += 1
            assert seq < 40, "the checkpoint was never read again"
            time.sleep(1.0)
            dev.publish("d1", "reading", {"seq": seq, "x": data[seq][0], "y": data[seq][1]})
            wait_for(lambda s=seq: s in dev.predictions() or len(dev.got("error")) > s - 30, what=f"seq {seq}")
    finally:
        _stop(proc)
    off = GaussianNB()
    for x, y in data[:seq]:  # the 30 it had, then the readings refused while unreadable (journaled)
        off.learn_one(x, y)
    assert dev.predictions()[seq]["proba"] == off.predict_proba_one(data[seq][0])  # the learning is kept
    assert "restored from its checkpoint (last seq 29)" in log.read_text()
    assert f"device d1: {seq - 30} journal messages it was refused" in log.read_text()


# --- an edited config --------------------------------------------------------------------------

TWO_MODELS = ('[[models]]\nname = "nb"\nkind = "gaussian_nb"\n'
              '[[models]]\nname = "ht"\nkind = "hoeffding_tree"\ngrace_period = 10\n')


def _edit(cfg, features=None, models=None):
    text = cfg.read_text()
    if features is not None:
        text = "\n".join(f"features = {json.dumps(features)}" if line.startswith("features = ") else line
                         for line in text.splitlines()) + "\n"
    if models is not None:
        text = text[:text.index("[[models]]")] + models
    cfg.write_text(text)


def _first_run(broker, tmp_path, models=TWO_MODELS, extra="", seed=9):
    """A runtime that learns 30 labelled readings of d1 (of 40 made), stopped: its config, log,
    device client and the 40 readings."""
    ck = tmp_path / "ck"
    cfg = write_config(tmp_path / "rt.toml", broker, checkpoint_dir=ck, models=models, extra=extra)
    log = tmp_path / "rt.log"
    dev = Device(broker)
    data = blobs(40, seed=seed)
    proc = _run(cfg, log)
    _wait_online(dev)
    _learn(dev, data[:30])
    wait_for(lambda: len(dev.predictions()) == 30, what="30 predictions")
    _stop(proc)
    return cfg, log, dev, data


def _offline(data):
    nb, ht = GaussianNB(), HoeffdingTreeClassifier(grace_period=10)
    for x, y in data:
        nb.learn_one(x, y)
        ht.learn_one(x, y)
    return nb, ht


def _serve(cfg, log, dev, n_online, readings):
    """Start the runtime, publish ``readings`` ((seq, x, y)), stop it; their predictions."""
    proc = _run(cfg, log)
    try:
        _wait_online(dev, n_online)
        for seq, x, y in readings:
            dev.publish("d1", "reading", {"seq": seq, "x": x, "y": y})
        wait_for(lambda: all(s in dev.predictions() for s, _, _ in readings), what="the predictions")
    finally:
        _stop(proc)
    return [dev.predictions()[s] for s, _, _ in readings]


def test_reordered_features_and_the_reverted_config_keep_the_learning(broker, tmp_path):
    cfg, log, dev, data = _first_run(broker, tmp_path)
    nb, ht = _offline(data[:30])
    order = [2, 0, 1]
    _edit(cfg, features=[FEATURES[i] for i in order])
    x, y = data[30]
    (p30,) = _serve(cfg, log, dev, 1, [(30, [x[i] for i in order], y)])
    assert p30["proba"] == nb.predict_proba_one(x) or p30["proba"] == ht.predict_proba_one(x)
    assert p30["models"] == {"nb": nb.predict_one(x), "ht": ht.predict_one(x)}
    nb.learn_one(x, y)
    ht.learn_one(x, y)
    _edit(cfg, features=list(FEATURES))  # reverted: the checkpoint written under the new order is found
    x, y = data[31]
    (p31,) = _serve(cfg, log, dev, 2, [(31, x, y)])
    assert p31["models"] == {"nb": nb.predict_one(x), "ht": ht.predict_one(x)}
    assert p31["proba"] in (nb.predict_proba_one(x), ht.predict_proba_one(x))
    assert not dev.got("error") and not list((tmp_path / "ck").glob("d1.ckpt*corrupt*"))
    text = log.read_text()
    assert "restored from its checkpoint (last seq 29)" in text and "restored from its checkpoint (last seq 30)" in text


def test_an_added_feature_extends_naive_bayes_and_is_ignored_by_the_tree(broker, tmp_path):
    cfg, log, dev, data = _first_run(broker, tmp_path)
    nb, ht = _offline(data[:30])
    _edit(cfg, features=[*FEATURES, "f3"])
    x, y = data[30]
    (p30,) = _serve(cfg, log, dev, 1, [(30, [*x, 7.5], y)])
    assert p30["models"] == {"nb": nb.predict_one(x), "ht": ht.predict_one(x)}
    saved = CheckpointStore(tmp_path / "ck", FEATURES).read("d1")
    nb_state, ht_state = (m for m in saved["models"])
    assert (nb_state["features"], ht_state["features"]) == ([*FEATURES, "f3"], list(FEATURES))
    assert (nb_state["learner"]["n_features_in"], nb_state["learner"]["n"]) == (4, 31.0)
    assert not dev.got("error") and "restored from its checkpoint (last seq 29)" in log.read_text()


def test_a_renamed_model_keeps_its_learning_under_its_new_name(broker, tmp_path):
    cfg, log, dev, data = _first_run(broker, tmp_path, models='[[models]]\nname = "nb"\nkind = "gaussian_nb"\n')
    nb, _ = _offline(data[:30])
    _edit(cfg, models='[[models]]\nname = "bayes"\nkind = "gaussian_nb"\nprevious_name = "nb"\n')
    x, y = data[30]
    (p30,) = _serve(cfg, log, dev, 1, [(30, x, y)])
    assert (p30["model"], p30["proba"]) == ("bayes", nb.predict_proba_one(x))
    saved = CheckpointStore(tmp_path / "ck", FEATURES).read("d1")
    assert [(m["name"], m["learner"]["n"]) for m in saved["models"]] == [("bayes", 31.0)]
    assert not dev.got("error")


# --- the same edits in one process (fast) ------------------------------------------------------

def test_unconfigured_models_stay_in_the_checkpoint_for_a_config_that_names_them_again(tmp_path, caplog):
    store = CheckpointStore(tmp_path, FEATURES)
    w = worker(store=store, models=MODELS)
    for seq, (x, y) in enumerate(blobs(20, seed=4)):
        send(w, "d1", "reading", {"seq": seq, "x": x, "y": y if seq < 15 else None})
    w.checkpoint(all_devices=True)
    before = w.devices["d1"].state()
    with caplog.at_level(logging.WARNING):
        w2 = worker(store=store, models=MODELS[1:])  # nb removed
        send(w2, "d1", "label", {"seq": 15, "y": "a"})
    assert "model 'nb' (gaussian_nb) is not configured; kept" in caplog.text
    w2.checkpoint(all_devices=True)
    w3 = worker(store=store, models=MODELS)  # nb back
    dev = w3.registry.get("d1", create=True)
    assert dev.slots[0].learner.state() == before["models"][0]["learner"]
    assert sorted(dev.pending._items) == [16, 17, 18, 19]
    # matched by name: ht's reading-time prediction kept; nb's was not kept by the run without nb
    assert dev.pending.get(16).y_preds == [None, before["pending"]["items"][1][3][1]]


def test_a_removed_feature_a_tree_takes_refuses_the_device_and_leaves_its_checkpoint(tmp_path, caplog):
    store = CheckpointStore(tmp_path, FEATURES)
    w = worker(store=store, models=MODELS[1:])  # a tree: it cannot be fed without the feature
    send(w, "d1", "reading", {"seq": 0, "x": [1, 2, 3], "y": "a"})
    w.checkpoint(all_devices=True)
    files = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    from edgebayes.runtime.config import parse_config
    from edgebayes.runtime.topics import Topics
    cfg = parse_config({"schema": {"features": ["f0", "f2"]}, "output": {"format": "json", "error_interval_s": 0},
                        "models": list(MODELS[1:])})
    w2 = worker_module.Worker(cfg, Topics("eb", "+", "rt"), CheckpointStore(tmp_path, ("f0", "f2")),
                              session=RecordingPublisher())
    with caplog.at_level(logging.ERROR), pytest.raises(ProtocolError) as err:
        w2.registry.get("d1", create=True)
    assert err.value.kind == "checkpoint_refused" and "no longer has 'f1'" in str(err.value)
    assert caplog.text.count("no longer has 'f1'") == 1
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == files


def test_a_parameter_a_restored_model_cannot_take_is_reported(tmp_path, caplog):
    store = CheckpointStore(tmp_path, FEATURES)
    w = worker(store=store, models=({"name": "ht", "kind": "hoeffding_tree", "grace_period": 10},))
    send(w, "d1", "reading", {"seq": 0, "x": [1, 2, 3], "y": "a"})
    w.checkpoint(all_devices=True)
    with caplog.at_level(logging.WARNING):
        w2 = worker(store=store, models=({"name": "ht", "kind": "hoeffding_tree", "grace_period": 50,
                                          "max_size_bytes": 100_000},))
        w2.registry.get("d1", create=True)
    assert "model 'ht': grace_period = 50 in the config" in caplog.text
    assert "model 'ht': max_size_bytes = 100000 (its share of the memory plan), the restored model has None" in caplog.text


def test_an_added_feature_a_bounded_naive_bayes_cannot_hold_is_ignored_by_it(tmp_path, caplog):
    nb = GaussianNB()
    for x, y in blobs(10, seed=1):
        nb.learn_one(x, y)
    models = ({"name": "nb", "kind": "gaussian_nb", "max_size_bytes": nb.memory_bytes()},)
    store = CheckpointStore(tmp_path, FEATURES)
    w = worker(store=store, models=models)
    for seq, (x, y) in enumerate(blobs(10, seed=1)):
        send(w, "d1", "reading", {"seq": seq, "x": x, "y": y})
    w.checkpoint(all_devices=True)
    from edgebayes.runtime.config import parse_config
    from edgebayes.runtime.topics import Topics
    cfg = parse_config({"schema": {"features": [*FEATURES, "f3"]}, "output": {"format": "json"},
                        "models": list(models)})
    w2 = worker_module.Worker(cfg, Topics("eb", "+", "rt"), CheckpointStore(tmp_path, (*FEATURES, "f3")),
                              session=RecordingPublisher())
    with caplog.at_level(logging.WARNING):
        slot = w2.registry.get("d1", create=True).slots[0]
    assert "do not fit its max_size_bytes" in caplog.text
    assert (slot.inputs, slot.learner.state()) == ([0, 1, 2], w.devices["d1"].slots[0].learner.state())
    assert slot.learner.memory_bytes() <= slot.learner.max_size_bytes


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root and setpriv to drop CAP_DAC_OVERRIDE (a real EACCES for root)")
def test_a_checkpoint_folder_that_cannot_be_searched_refuses_the_device(tmp_path):
    ck = tmp_path / "ck"
    _two_generations(ck)
    files = {p.name: p.read_bytes() for p in ck.iterdir()}
    ck.chmod(0)
    script = ("from pathlib import Path\n"
              "from tests.test_checkpoint_faults import _restored\n"
              "from edgebayes.runtime.messages import ProtocolError\n"
              f"try:\n    _restored(Path({str(ck)!r}))\nexcept ProtocolError as e:\n    print(e.kind)\n"
              "else:\n    print('served')\n")
    try:
        out = subprocess.run([*NO_DAC, sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                             timeout=60, check=False, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        ck.chmod(0o755)
    assert out.stdout.split()[-1:] == ["checkpoint_unreadable"], out.stderr[-2000:]
    assert {p.name: p.read_bytes() for p in ck.iterdir()} == files


def test_reverting_an_added_feature_drops_it_from_naive_bayes_and_finds_the_tree_as_it_was(tmp_path, caplog):
    from edgebayes.runtime.config import parse_config
    from edgebayes.runtime.topics import Topics

    def worker_for(features):
        cfg = parse_config({"schema": {"features": list(features)}, "output": {"format": "json"},
                            "models": list(MODELS)})
        return worker_module.Worker(cfg, Topics("eb", "+", "rt"), CheckpointStore(tmp_path, features),
                                    session=RecordingPublisher())
    w = worker_for(FEATURES)
    for seq, (x, y) in enumerate(blobs(30, seed=5)):
        send(w, "d1", "reading", {"seq": seq, "x": x, "y": y})
    w.checkpoint(all_devices=True)
    nb, ht = (s.learner.state() for s in w.devices["d1"].slots)
    w2 = worker_for((*FEATURES, "f3"))
    send(w2, "d1", "reading", {"seq": 30, "x": [0.1, 0.2, 0.3, 9.0], "y": "a"})
    w2.checkpoint(all_devices=True)
    assert w2.devices["d1"].slots[0].learner.n_features_in_ == 4
    with caplog.at_level(logging.WARNING):
        dev = worker_for(FEATURES).registry.get("d1", create=True)  # the config reverted
    assert "model 'nb' drops what it learned of 'f3'" in caplog.text
    assert (dev.last_seq, [s.inputs for s in dev.slots]) == (30, [None, None])
    again = GaussianNB.from_state(nb)
    again.learn_one([0.1, 0.2, 0.3], "a")
    assert dev.slots[0].learner.state() == again.state()  # as if f3 had never been there
    assert dev.slots[1].learner.n_features_in_ == 3 and dev.slots[1].learner.state() != ht  # the tree learned seq 30


def test_a_version_1_checkpoint_of_an_older_release_is_restored_and_fitted_by_name(tmp_path):
    import msgpack

    from edgebayes.runtime.config import parse_config
    from edgebayes.runtime.topics import Topics
    w = worker(store=CheckpointStore(tmp_path / "src", FEATURES), models=MODELS)
    for seq, (x, y) in enumerate(blobs(30, seed=6)):
        send(w, "d1", "reading", {"seq": seq, "x": x, "y": y if seq < 25 else None})
    state = w.devices["d1"].state()
    for m in state["models"]:
        del m["features"]  # older releases wrote none
    doc = {"format": "edgebayes-checkpoint", "version": 1, "features": list(FEATURES), "device": state}
    order = ("f2", "f0", "f1")
    (tmp_path / "d1.ckpt").write_bytes(msgpack.packb(doc, use_bin_type=True))
    cfg = parse_config({"schema": {"features": list(order)}, "output": {"format": "json"}, "models": list(MODELS)})
    dev = worker_module.Worker(cfg, Topics("eb", "+", "rt"), CheckpointStore(tmp_path, order),
                               session=RecordingPublisher()).registry.get("d1", create=True)
    x = [0.4, 2.0, -1.0]
    assert dev.predict([x[2], x[0], x[1]]) == w.devices["d1"].predict(x)
    assert [e.x for e in dev.pending._items.values()] == [
        [e.x[2], e.x[0], e.x[1]] for e in w.devices["d1"].pending._items.values()]
