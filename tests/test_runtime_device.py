"""The device layer turns every model's drift signal into protocol alerts (docs/protocol.md)."""

import numpy as np

from edgebayes.runtime.config import ModelConfig
from edgebayes.runtime.device import CLOCK_CONFIRM_S, JUMP_CONFIRM, Device
from edgebayes.runtime.messages import ProtocolError
from edgebayes.runtime.pending import PendingLabels


def _run_flip(kind, params, n=3000, flip=1500):
    dev = Device("d1", [ModelConfig("m", kind, params)], accuracy_window=200, drift_delta=0.002,
                 pending=PendingLabels(100, 60.0))
    rng = np.random.default_rng(3)
    alerts = []
    for seq in range(n):
        x = rng.normal(size=4).tolist()
        y = int(x[0] > 0) if seq < flip else int(x[0] <= 0)  # the concept flips at `flip`
        y_preds, _, _ = dev.predict(x)
        alerts += dev.learn(seq, x, y, y_preds, now=float(seq))
    return alerts


def test_srp_member_events_become_alerts():
    alerts = _run_flip("srp", {"n_models": 3, "seed": 1})
    assert alerts, "SRP's detectors must reach the drift topic"
    assert all(a["seq"] >= 1500 for a in alerts)  # nothing on the stationary prefix
    for a in alerts:
        assert a["model"] == "m" and a["level"] in ("warning", "drift")
        assert a["member"] in (0, 1, 2)
        assert a["detector"] == "adwin"
        assert 0.0 <= a["accuracy_after"] <= 1.0


def test_models_without_detectors_get_an_adwin_on_their_errors():
    alerts = _run_flip("gaussian_nb", {})
    assert alerts and all(a["seq"] >= 1500 and a["member"] is None for a in alerts)
    assert alerts[0]["accuracy_before"] > alerts[0]["accuracy_after"]


# --- seq and ts bounds that do not last (docs/protocol.md "Seq and ts bounds") ------------------

def _seq_device():
    return Device("d1", [ModelConfig("nb", "gaussian_nb", {})], 200, 0.002, PendingLabels(10, 60.0))


def _offer(dev, seq, ts, now):
    """check_seq, then accept what it takes; the kind of refusal otherwise."""
    try:
        how = dev.check_seq(seq, ts, now)
    except ProtocolError as exc:
        return exc.kind
    dev.accept(seq, ts, now, how)
    return how


def test_a_clock_stepped_back_starts_a_new_epoch_after_the_confirmation_time():
    dev = _seq_device()
    for seq in range(100):  # a reading every 5 s
        assert _offer(dev, seq, 10_000.0 + 5 * seq, 10_000.0 + 5 * seq) in ("next",)
    t = 10_000.0 + 5 * 100  # rebooted: seq from 0, the clock a day behind, a reading every 5 s
    got = [_offer(dev, seq, t + 5 * seq - 86_400, t + 5 * seq + 0.3 * (seq % 2)) for seq in range(20)]
    n = int(CLOCK_CONFIRM_S // 5)  # refused for CLOCK_CONFIRM_S, then a reboot and its epoch
    assert got == ["duplicate"] * n + ["reboot"] + ["next"] * (19 - n)
    assert (dev.last_seq, dev.accepted.state()) == (19, [n, 19])


def test_a_redelivery_stays_a_duplicate_however_long_it_takes():
    """A broker resending accepted readings with their original ts, in a burst or slowly: each
    arrives at another now - ts, so no run of them is taken for a clock step."""
    dev = _seq_device()
    for seq in range(200):
        _offer(dev, seq, 1000.0 + seq, 1000.0 + seq)
    burst = [_offer(dev, seq, 1000.0 + seq, 5000.0 + 0.001 * seq) for seq in range(200)]
    slow = [_offer(dev, seq, 1000.0 + seq, 9000.0 + 0.5 * seq) for seq in range(200)]  # 100 s of them
    assert burst == slow == ["duplicate"] * 200 and dev.last_seq == 199


def test_readings_past_a_dropped_middle_are_taken_from_the_jump_confirm_th_on():
    dev = _seq_device()
    for seq in range(10):
        _offer(dev, seq, None, 1000.0)
    got = [_offer(dev, 500_000 + seq, None, 1000.5) for seq in range(6)]
    assert got == ["seq_jump"] * (JUMP_CONFIRM - 1) + ["next"] * (7 - JUMP_CONFIRM)
    assert dev.last_seq == 500_005


def test_one_huge_seq_between_good_readings_is_still_refused():
    dev = _seq_device()
    for seq in range(10):
        _offer(dev, seq, None, 1000.0)
    got = [_offer(dev, s, None, 1000.0) for s in (2**53 - 1, 10, 2**53 - 2, 11, 2**52, 12)]
    assert got == ["seq_jump", "next"] * 3 and dev.last_seq == 12
