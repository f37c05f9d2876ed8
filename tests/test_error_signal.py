"""The error signal's rule (`ErrorDetector.judge`), which ``update`` and the compiled SRP
member both apply."""

from __future__ import annotations

import numpy as np
import pytest

from edgebayes.drift import ADWIN
from edgebayes.drift.base import ErrorDetector

pytestmark = pytest.mark.usefixtures("backend")  # every test on both backends (ADWIN's)


def test_error_detector_judge_is_the_rule_update_applies():
    rng = np.random.default_rng(3)
    errors = np.concatenate([rng.random(600) < 0.1, rng.random(600) < 0.6, rng.random(600) < 0.05])
    signal, judged = ErrorDetector(ADWIN(delta=0.01)), ErrorDetector(ADWIN(delta=0.01))
    fired = []
    for e in errors.astype(float):
        out = signal.update(e)
        assert judged.judge(judged.detector.update(e)) == out
        assert judged.state() == signal.state()
        fired.append(out)
    assert sum(fired) >= 1  # the rise at 600 fired
    assert signal.detector.n_detections > signal.n_detections  # the fall at 1200 cut, not signalled


def test_error_detector_judge_signals_a_cut_only_when_the_estimate_rose():
    signal = ErrorDetector(ADWIN(delta=0.01))
    for _ in range(100):
        signal.update(0.0)
    inner = signal.detector
    assert not signal.judge(True)  # no rise: the estimate is where it was before the input
    assert signal.drift_detected is False and signal.n_detections == 0
    for _ in range(100):
        inner.update(1.0)
    assert inner.estimation > inner.estimation_before_drift
    assert signal.judge(True) and signal.drift_detected and signal.n_detections == 1
    assert not signal.judge(False) and not signal.drift_detected and signal.n_detections == 1
