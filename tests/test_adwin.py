"""ADWIN: MOA's reference vectors, the casebook cases on detectors, bad input, state, memory."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


# -- a plain one-input-at-a-time MOA port: the oracle for the batched, filtered detector -------


class MoaADWIN:
    """MOA's ADWIN.setInput step by step: insert, compress, then every ``clock`` inputs scan
    every boundary with the exact test (no batching, no filter)."""

    def __init__(self, delta, clock=32, max_buckets=5, min_window_length=5, grace_period=10):
        self.delta, self.clock, self.mb = delta, clock, max_buckets
        self.mwl, self.grace = min_window_length, grace_period
        self.time, self.width, self.total, self.var = 0, 0, 0.0, 0.0
        self.rows_t, self.rows_v = [[]], [[]]

    def update(self, x):
        self.time += 1
        self.width += 1
        self.rows_t[0].append(x)
        self.rows_v[0].append(0.0)
        if self.width > 1:
            w1 = self.width - 1
            self.var += w1 * (x - self.total / w1) * (x - self.total / w1) / self.width
        self.total += x
        i = 0
        while len(self.rows_t[i]) == self.mb + 1:
            if i + 1 == len(self.rows_t):
                self.rows_t.append([])
                self.rows_v.append([])
            n = 1 << i
            u1, u2 = self.rows_t[i][0] / n, self.rows_t[i][1] / n
            self.rows_t[i + 1].append(self.rows_t[i][0] + self.rows_t[i][1])
            self.rows_v[i + 1].append(
                self.rows_v[i][0] + self.rows_v[i][1] + n * n * (u1 - u2) * (u1 - u2) / (n + n)
            )
            del self.rows_t[i][:2], self.rows_v[i][:2]
            i += 1
        cut = False
        if self.time % self.clock == 0 and self.width > self.grace:
            while self._scan():
                cut = True
                last = len(self.rows_t) - 1
                n = 1 << last
                t = self.rows_t[last][0]
                self.width -= n
                self.total -= t
                u = t / n
                self.var -= self.rows_v[last][0] + n * self.width * (
                    u - self.total / self.width
                ) * (u - self.total / self.width) / (n + self.width)
                del self.rows_t[last][0], self.rows_v[last][0]
                if not self.rows_t[last]:
                    del self.rows_t[last], self.rows_v[last]
        return cut

    def _scan(self):
        n0, n1, u0, u1 = 0, self.width, 0.0, self.total
        for i in range(len(self.rows_t) - 1, -1, -1):
            for t in self.rows_t[i]:
                n0 += 1 << i
                n1 -= 1 << i
                u0 += t
                u1 -= t
                if n0 > self.mwl + 1 and n1 > self.mwl + 1:
                    n = self.width
                    dd = math.log(2 * math.log(n) / self.delta)
                    v = self.var / n
                    m = 1.0 / (n0 - self.mwl + 1) + 1.0 / (n1 - self.mwl + 1)
                    eps = math.sqrt(2 * m * v * dd) + 2.0 / 3 * dd * m
                    if abs(u0 / n0 - u1 / n1) > eps:
                        return True
        return False


def _stream(draw_seed, n, kind):
    rng = random.Random(draw_seed)
    if kind == "bits":
        cut = rng.randrange(n)
        p, q = rng.random(), rng.random()
        return [float(rng.random() < (p if i < cut else q)) for i in range(n)]
    # real values far from zero with a small shift: stresses the rounding slack of the filter
    offset, scale, shift = rng.choice([0.0, 1e6, -3e8]), rng.choice([1e-3, 1.0, 50.0]), rng.random()
    cut = rng.randrange(n)
    return [offset + scale * (rng.gauss(0, 1) + (shift if i >= cut else 0.0)) for i in range(n)]


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 1500),
    kind=st.sampled_from(["bits", "real"]),
    delta=st.sampled_from([0.5, 0.05, 0.002, 1e-5]),
    clock=st.sampled_from([1, 2, 7, 32]),
    max_buckets=st.integers(2, 6),
    min_window_length=st.integers(1, 8),
    grace_period=st.integers(0, 40),
    read_every=st.sampled_from([0, 1, 5]),
)
def test_matches_plain_moa_port(
    seed, n, kind, delta, clock, max_buckets, min_window_length, grace_period, read_every
):
    params = dict(delta=delta, clock=clock, max_buckets=max_buckets,
                  min_window_length=min_window_length, grace_period=grace_period)  # fmt: skip
    ours, ref = ADWIN(**params), MoaADWIN(**params)
    for i, x in enumerate(_stream(seed, n, kind)):
        assert ours.update(x) == ref.update(x), i
        if read_every and i % read_every == 0:  # read-outs fold pending inputs in early
            assert ours.width == ref.width
    state = ours.state()
    assert state["width"] == ref.width
    assert state["total"] == ref.total
    assert state["variance"] == ref.var
    assert state["totals"] == ref.rows_t
    assert state["variances"] == ref.rows_v
