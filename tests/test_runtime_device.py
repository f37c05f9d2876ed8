"""The device layer turns every model's drift signal into protocol alerts (docs/protocol.md)."""

import numpy as np

from edgebayes.runtime.config import ModelConfig
from edgebayes.runtime.device import Device
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
