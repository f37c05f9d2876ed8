"""Junk device ids cannot lock new devices out (docs/protocol.md "Devices"), through a real
Mosquitto: idle devices are checkpointed and evicted to make room, least recently served first,
and each source brings at most ``new_devices_per_min`` new ids a minute; devices with a
checkpoint are known and never counted against it."""

import time

from edgebayes.runtime.checkpoint import CheckpointStore
from edgebayes.runtime.config import load_config
from edgebayes.runtime.service import Runtime
from tests.runtime_client import FEATURES, Device, blobs, wait_for, write_config


def _runtime(broker, tmp_path, memory: str, checkpoints=True) -> Runtime:
    cfg = write_config(tmp_path / "rt.toml", broker, checkpoint_dir=tmp_path / "ck" if checkpoints else None,
                       extra=f"[memory]\n{memory}" + ("" if checkpoints else "[checkpoint]\nenabled = false\n"))
    rt = Runtime(load_config(cfg))
    rt.start()
    wait_for(rt.client.subscribed.is_set, what="runtime subscription")
    return rt


def _served(dev) -> set[str]:
    with dev.lock:
        return {t.split("/")[1] for t, _, _ in dev.raw if t.endswith("/prediction")}


def test_a_new_device_is_admitted_when_junk_ids_fill_max_devices(broker, tmp_path):
    rt = _runtime(broker, tmp_path, "max_devices = 8\nevict_idle_s = 0.5\nnew_devices_per_min = 1000\n")
    dev = Device(broker)
    try:
        (x, y), = blobs(1, seed=2)
        dev.publish("good", "reading", {"seq": 0, "x": x, "y": y})
        wait_for(lambda: "good" in _served(dev), what="good served")
        time.sleep(0.6)  # good is idle now: the least recently served, evicted first
        for i in range(8):
            dev.publish(f"junk{i}", "reading", {"seq": 0, "x": x})
        wait_for(lambda: len(_served(dev)) == 9, what="8 junk ids served")
        time.sleep(0.6)  # every junk id idle
        dev.publish("new", "reading", {"seq": 0, "x": x, "y": y})
        dev.publish("good", "reading", {"seq": 1, "x": x, "y": y})
        wait_for(lambda: {"new", "good"} <= _served(dev) and len(dev.got("prediction")) == 11,
                 what="new and good served")
        assert rt.worker.reports.errors["device_limit"] == 0 and dev.got("error") == []
        assert rt.worker.registry.n_evicted == 3  # good (for junk7), junk0 (for new), junk1 (for good again)
        assert sorted(rt.worker.devices) == ["good", "junk2", "junk3", "junk4", "junk5", "junk6", "junk7", "new"]
        assert CheckpointStore(tmp_path / "ck", FEATURES).read("junk0")["last_seq"] == 0
        good = rt.worker.devices["good"]
        assert (good.last_seq, good.slots[0].n_labels) == (1, 2)  # restored: it learned both
    finally:
        dev.close()
        rt.stop(timeout_s=5)


def test_each_source_brings_a_bounded_number_of_new_ids_and_known_devices_are_not_counted(broker, tmp_path):
    memory = "max_devices = 64\nnew_devices_per_min = 5\n"
    rt = _runtime(broker, tmp_path, memory)
    dev = Device(broker)
    (x, y), = blobs(1, seed=2)
    try:
        dev.publish("known", "reading", {"seq": 0, "x": x, "y": y})
        wait_for(lambda: "known" in _served(dev), what="known served")
    finally:
        rt.stop(timeout_s=5)  # checkpoints "known"
    rt = _runtime(broker, tmp_path, memory)
    try:
        for i in range(20):
            dev.publish(f"junk{i}", "reading", {"seq": 0, "x": x})
        dev.publish("known", "reading", {"seq": 1, "x": x, "y": y})
        wait_for(lambda: rt.worker.serving.n_readings + rt.worker.reports.errors["device_limit"] == 21, what="21 readings")
        assert rt.worker.reports.errors["device_limit"] == 15
        assert sorted(rt.worker.devices) == ["junk0", "junk1", "junk2", "junk3", "junk4", "known"]
        assert rt.worker.devices["known"].last_seq == 1  # restored from its checkpoint, not counted
    finally:
        dev.close()
        rt.stop(timeout_s=5)


def test_without_checkpoints_no_device_is_evicted(broker, tmp_path):
    rt = _runtime(broker, tmp_path, "max_devices = 2\nevict_idle_s = 0\n", checkpoints=False)
    dev = Device(broker)
    try:
        (x, y), = blobs(1, seed=2)
        for name in ("a", "b", "c"):
            dev.publish(name, "reading", {"seq": 0, "x": x, "y": y})
        wait_for(lambda: rt.worker.serving.n_readings + rt.worker.reports.errors["device_limit"] == 3, what="3 readings")
        assert (sorted(rt.worker.devices), rt.worker.reports.errors["device_limit"], rt.worker.registry.n_evicted) == (["a", "b"], 1, 0)
    finally:
        dev.close()
        rt.stop(timeout_s=5)


def test_the_rate_of_new_ids_is_a_bucket_per_source_and_idle_devices_come_least_recent_first():
    from edgebayes.runtime.admission import NATIVE, Admission
    from edgebayes.runtime.topics import Topics

    clock = [1000.0]
    adm = Admission(Topics("eb", "+", "rt"), ["zigbee2mqtt/+"], per_min=3, evict_idle_s=5.0,
                    clock=lambda: clock[0])
    assert (adm.source("eb/d1/reading"), adm.source("zigbee2mqtt/lamp")) == (NATIVE, "zigbee2mqtt/+")
    got = [adm.take_new(f"j{i}", "eb/j/reading") is None for i in range(5)]
    assert got == [True, True, True, False, False]  # 3 at once
    assert adm.take_new("z1", "zigbee2mqtt/z1") is None  # another source, its own bucket
    clock[0] += 20.0  # one token every 20 s
    assert [adm.take_new("a", "eb/a/reading") is None, adm.take_new("b", "eb/b/reading") is None] == [True, False]
    for name, t in (("a", 1000.0), ("b", 1003.0), ("c", 1001.0), ("d", 1006.0)):
        clock[0] = t
        adm.served(name)
    clock[0] = 1010.0
    assert adm.idle() == ["a", "c", "b"]  # d was served 5 s ago or less: not idle
    adm.forget("c")
    assert adm.idle() == ["a", "b"]
