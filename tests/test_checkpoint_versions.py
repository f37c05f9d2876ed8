"""Device state versions: each older shape, built from today's state by removing what that
version lacked, migrates to the current one with the values the older release meant."""

from __future__ import annotations

import copy

import msgpack
import pytest

from edgebayes.runtime.checkpoint import MIGRATIONS, STATE_VERSION, CheckpointStore, migrate_device_state
from edgebayes.runtime.config import ModelConfig
from edgebayes.runtime.device import Device
from edgebayes.runtime.pending import Early, Pending, PendingLabels

#: what each version added to the one before (version 1: device, last_seq, models, pending)
ADDED = {
    2: ("last_ts", "n_reboots", "pending.n_rebooted"),
    3: ("label_type",),
    4: ("journal",),
    5: ("last_recv",),
    6: ("accepted",),
    7: ("pending.early",),
}
#: the value each added key takes when migrated from a state without it, given the state
MIGRATED = {
    "last_ts": lambda s: None,
    "n_reboots": lambda s: 0,
    "pending.n_rebooted": lambda s: 0,
    "label_type": lambda s: type(s["models"][0]["learner"]["classes"][0]).__name__,
    "journal": lambda s: None,
    "last_recv": lambda s: None,
    "accepted": lambda s: [0, s["last_seq"]],
    "pending.early": lambda s: [],
}


def _device() -> Device:
    return Device("d1", [ModelConfig("nb", "gaussian_nb", {})], 200, 0.002, PendingLabels(10, 600.0))


def _state(labels) -> dict:
    """A device's current state as a checkpoint holds it (msgpack round trip): 12 readings
    accepted, 9 learned with ``labels``, 3 pending, a label held for reading 13, one reboot
    counted, a journal position."""
    dev = _device()
    for seq in range(12):
        x = [float(seq % 4), float(seq) / 3]
        y_preds, _, _ = dev.predict(x)
        if seq < 9:
            y, _ = dev.check_label(labels[seq % 2])
            dev.learn(seq, x, y, y_preds, 1000.0 + seq)
        else:
            dev.pending.add(seq, Pending(1000.0 + seq, x, y_preds))
        dev.accept(seq, 500.0 + seq, 1000.0 + seq, "next")
    dev.n_reboots, dev.pending.n_rebooted = 1, 2
    assert dev.pending.hold(13, Early(1011.5, labels[1], "eb/d1/label")) == []
    state = dev.state(["j1", 4096])
    return msgpack.unpackb(msgpack.packb(state, use_bin_type=True), raw=False, strict_map_key=False)


def _without(state: dict, keys) -> dict:
    old = copy.deepcopy(state)
    for key in keys:
        part, _, name = key.rpartition(".")
        del (old[part] if part else old)[name]
    return old


def _set(state: dict, key: str, value) -> None:
    part, _, name = key.rpartition(".")
    (state[part] if part else state)[name] = value


def _old_shape(state: dict, version: int) -> tuple[dict, dict]:
    """(a state of ``version`` as that release wrote it, unnumbered; what it migrates to)."""
    later = [k for v in range(version + 1, STATE_VERSION + 1) for k in ADDED[v]]
    old = _without(state, ["version", *later])
    expected = copy.deepcopy(state)
    for key in later:
        _set(expected, key, MIGRATED[key](state))
    return old, expected


def test_one_migration_per_old_version():
    assert STATE_VERSION == 7 and len(MIGRATIONS) == STATE_VERSION - 1 == len(ADDED)
    assert _state(["a", "b"])["version"] == STATE_VERSION


@pytest.mark.parametrize("labels", [["a", "b"], [0, 1]], ids=["str", "int"])
@pytest.mark.parametrize("version", range(1, STATE_VERSION))
def test_each_old_shape_migrates_to_the_values_its_release_meant(version, labels):
    state = _state(labels)
    old, expected = _old_shape(state, version)
    kept = copy.deepcopy(old)
    assert migrate_device_state(old) == expected
    assert old == kept  # the argument is unchanged
    numbered = {**old, "version": version}  # the same shape carrying its number
    assert migrate_device_state(numbered) == expected


@pytest.mark.parametrize("version", range(1, STATE_VERSION))
def test_a_device_restored_from_an_old_shape_holds_the_migrated_values(version):
    state = _state(["a", "b"])
    old, expected = _old_shape(state, version)
    dev = _device()
    dev.load_state(old, 2)
    again = dev.state(expected["journal"])
    assert again == expected
    assert dev.label_type is str and dev.accepted.state() == expected["accepted"]


def test_the_current_shape_is_returned_as_it_is():
    state = _state(["a", "b"])
    assert migrate_device_state(state) is state


@pytest.mark.parametrize("version", [0, STATE_VERSION + 1, "6", 6.0, None])
def test_a_state_of_an_unknown_version_is_refused(version):
    dev = _device()
    with pytest.raises(ValueError, match="device state version"):
        dev.load_state({**_state(["a", "b"]), "version": version}, 2)


def test_an_unnumbered_checkpoint_file_is_read_and_migrated(tmp_path):
    """A version 1 file (unframed msgpack) of the first device state shape, as the first
    releases wrote it, restores a device."""
    state = _state(["a", "b"])
    old, expected = _old_shape(state, 1)
    store = CheckpointStore(tmp_path, ("f0", "f1"))
    store.path("d1").write_bytes(msgpack.packb(
        {"format": "edgebayes-checkpoint", "version": 1, "features": ["f0", "f1"], "device": old},
        use_bin_type=True))
    saved = store.read_generation("d1")
    dev = _device()
    dev.load_state(saved.state, 2, saved.features)
    assert dev.state(expected["journal"]) == expected
