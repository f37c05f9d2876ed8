"""ADWIN: MOA's reference vectors, the casebook cases on detectors, bad input, state, memory."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgebayes.drift import ADWIN, ErrorDetector

VECTORS = sorted(
    (Path(__file__).resolve().parents[1] / ".." / "shared" / "vectors" / "adwin").glob("*.json")
)


def test_vectors_present():
    assert len(VECTORS) == 21


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.stem)
def test_reference_vector(path):
    case = json.loads(path.read_text())
    adwin = ADWIN(**case["params"])
    signal = ErrorDetector(ADWIN(**case["params"]))
    drifts, widths, rises, signals = [], [], [], []
    for i, x in enumerate(case["stream"]):
        before = adwin.estimation
        if adwin.update(x):
            drifts.append(i)
            widths.append(adwin.width)
            if adwin.estimation > before:
                rises.append(i)
        if signal.update(x):
            signals.append(i)
    assert drifts == case["drift_indices"]
    assert widths == case["width_after_drift"]
    assert rises == case["rise_indices"]
    assert signals == case["rise_indices"]
    assert adwin.n_detections == len(case["drift_indices"])
    assert signal.n_detections == len(case["rise_indices"])
    assert adwin.width == case["final_width"]
    assert adwin.estimation == pytest.approx(case["final_estimation"], abs=1e-9)
    assert adwin.variance == pytest.approx(case["final_variance"], rel=1e-9, abs=1e-12)
