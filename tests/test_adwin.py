"""ADWIN: MOA's reference vectors, the cases of docs/cases.md on detectors, bad input, state, memory."""

from __future__ import annotations

import doctest
import json
import math
import pickle
import random
import struct
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import edgebayes
from edgebayes import codec
from edgebayes.drift import ADWIN, DriftDetector, ErrorDetector, detector_from_state
from edgebayes.drift import adwin as adwin_module
from tests.conftest import BACKENDS, SHARED, implementation, needs_shared, shared_path

pytestmark = pytest.mark.usefixtures("backend")  # every test, on each backend
VECTORS_REL = "vectors/adwin"
#: MOA's reference vectors, or one parameter skipped with the reason when they are absent
VECTORS = sorted((SHARED / VECTORS_REL).glob("*.json")) or [
    pytest.param(None, marks=needs_shared(VECTORS_REL), id="absent")]


def test_vectors_present():
    assert len(sorted(shared_path(VECTORS_REL).glob("*.json"))) == 21


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
                    if v < 0.0:  # rounded below zero: Java's sqrt gives NaN, NaN never cuts
                        continue
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
@example(seed=422001977, n=1024, kind="bits", delta=0.5, clock=1, max_buckets=3,
         min_window_length=1, grace_period=0, read_every=0)  # variance rounds below 0
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
    params = {"delta": delta, "clock": clock, "max_buckets": max_buckets,
                  "min_window_length": min_window_length, "grace_period": grace_period}  # fmt: skip
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


# -- docs/cases.md------------------------------------------------------------------------------

STEP = [0.0] * 1000 + [1.0] * 1000


def test_c22_flag_true_only_at_detection_steps():
    adwin, signal = ADWIN(), ErrorDetector()
    flags = [(adwin.update(x), adwin.drift_detected, signal.update(x), signal.drift_detected)
             for x in STEP]  # fmt: skip
    # The window is kept after a cut (MOA), so the later checks cut the rest of the old regime.
    assert [i for i, f in enumerate(flags) if f[0]] == [1023, 1055, 1087]
    assert [i for i, f in enumerate(flags) if f[1]] == [1023, 1055, 1087]
    assert [i for i, f in enumerate(flags) if f[2] or f[3]] == [1023, 1055, 1087]
    assert adwin.n_detections == signal.n_detections == 3
    adwin.reset()
    signal.reset()
    assert not adwin.drift_detected and not signal.drift_detected
    assert adwin.n_detections == signal.n_detections == 0 and adwin.width == 0
    assert not any(adwin.update(0.0) or signal.update(0.0) for _ in range(10))
    assert adwin.n_detections == signal.n_detections == 0
    assert not adwin.drift_detected and not signal.drift_detected


def test_c22_one_detection_for_a_caller_that_resets_on_drift():
    # The case's peer resets its detector after a detection (as River and SRP do): one total.
    adwin, detections = ADWIN(), []
    for i, x in enumerate(STEP):
        if adwin.update(x):
            detections.append(i)
            adwin.reset()
        else:
            assert not adwin.drift_detected
    assert detections == [1023]
    assert adwin.n_detections == 0 and not adwin.drift_detected


def test_a_sub_window_needs_more_than_min_window_length_plus_one_inputs():
    # W0 = [100, 100] against W1 = [0, 0, 0] passes the cut test's bound, but with
    # min_window_length=1 both parts need 3 inputs or more: no admissible split cuts (MOA).
    params = {"delta": 0.5, "clock": 1, "max_buckets": 5, "min_window_length": 1, "grace_period": 0}
    adwin, moa = ADWIN(**params), MoaADWIN(**params)
    stream = [100.0, 100.0] + [0.0] * 6
    assert [adwin.update(x) for x in stream] == [moa.update(x) for x in stream] == [False] * 8
    assert adwin.width == 8


@pytest.mark.parametrize("n", [64, 128])
def test_c23_alternating_stream_variance(n):
    adwin = ADWIN()
    assert not any(adwin.update(float(i % 2)) for i in range(n))
    assert adwin.n_detections == 0
    assert adwin.width == n
    assert adwin.estimation == 0.5
    assert adwin.variance == 0.25
    # Every bucket holds whole 0,1 pairs: its sum of squared deviations is size/4 (never < 0).
    state = adwin.state()
    for i, row in enumerate(state["variances"]):
        assert row == [(1 << i) / 4 if i else 0.0] * len(row)


def test_c23_merge_term_is_squared():
    adwin = ADWIN()
    for x in [0.0, 1.0, 0.0, 0.0, 0.0, 0.0]:  # the sixth input merges the first two buckets
        adwin.update(x)
    state = adwin.state()
    assert state["totals"][1] == [1.0]
    assert state["variances"][1] == [0.5]  # 1*1*(0 - 1)^2 / (1 + 1), not -0.5


@pytest.mark.parametrize(
    "clock, first, window", [(1, 1009, (1000, 1016)), (32, 1023, (1000, 1056))]
)
def test_c24_clock_bounds_detection_delay(clock, first, window):
    adwin = ADWIN(delta=0.002, clock=clock)
    detections = []
    for i, x in enumerate(STEP):
        if adwin.update(x):
            detections.append(i)
            adwin.reset()  # the case counts one detection per change
    assert detections == [first]
    assert window[0] <= first <= window[1]


def test_c25_error_stream_flags_the_member_that_got_worse():
    member_a = [0] * 200 + [1] * 200  # 1 = error: A starts failing at 200
    member_b = [0] * 400
    detectors = {"A": ErrorDetector(), "B": ErrorDetector()}
    resets = []  # policy: on a signal, reset the member with the highest estimated error
    for i, (a, b) in enumerate(zip(member_a, member_b)):
        if any([detectors["A"].update(a), detectors["B"].update(b)]):
            worst = max(detectors, key=lambda name: detectors[name].estimation)
            resets.append((i, worst, detectors[worst].estimation))
    assert [name for _, name, _ in resets] == ["A", "A", "A"]
    assert detectors["B"].estimation == 0.0 and detectors["B"].n_detections == 0
    # MOA's kept window: the first cut leaves 24 errors in 56 inputs, the next cuts drop the
    # rest of the old regime (the case's "> 0.5" holds from the second cut on).
    assert [(i, e) for i, _, e in resets] == [(223, 24 / 56), (255, 56 / 72), (287, 1.0)]


def test_c25_improvement_is_a_cut_but_not_a_signal():
    # Fed the wrong way round (1 = correct), A's stream falls: ADWIN cuts, the signal stays off.
    signal = ErrorDetector()
    for x in [1] * 200 + [0] * 200:
        assert not signal.update(x)
    assert signal.detector.n_detections > 0 and signal.n_detections == 0


def test_c28_detector_sees_only_what_it_is_fed():
    drift, warning = ErrorDetector(ADWIN(delta=1e-5)), ErrorDetector(ADWIN(delta=1e-4))
    assert drift.detector.width == warning.detector.width == 0
    drift.update(1)
    assert drift.detector.width == 1 and warning.detector.width == 0


# -- bad input, parameters --------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, "1.0", None, [1.0], b"1", 10**400])
def test_bad_input_raises_and_leaves_detector_unchanged(bad):
    adwin = ADWIN(clock=4)
    for x in [0.0, 1.0, 1.0]:
        adwin.update(x)  # pending inputs and the tick counter are part of what must not move
    signal = ErrorDetector(ADWIN.from_state(adwin.state()))
    before, signal_before = adwin.state(), signal.state()
    with pytest.raises(ValueError):
        adwin.update(bad)
    with pytest.raises(ValueError):
        signal.update(bad)
    assert adwin.state() == before and signal.state() == signal_before
    untouched = ADWIN.from_state(before)
    assert [adwin.update(x) for x in [0.0] * 8] == [untouched.update(x) for x in [0.0] * 8]
    assert adwin.state() == untouched.state()


def test_accepts_bools_ints_and_numpy_scalars():
    np = pytest.importorskip("numpy")
    a, b = ADWIN(), ADWIN()
    for i in range(300):
        v = i % 3 == 0
        a.update([v, int(v), np.float32(v), np.int64(v)][i % 4])
        b.update(float(v))
    assert a.state() == b.state()
    assert all(type(t) is float for row in a.state()["totals"] for t in row)


@pytest.mark.parametrize(
    "params",
    [{"delta": 0.0}, {"delta": 1.0}, {"delta": True}, {"delta": "0.1"}, {"clock": 0},
     {"clock": 2.0}, {"max_buckets": 1}, {"min_window_length": 0}, {"grace_period": -1},
     {"grace_period": True}],
)  # fmt: skip
def test_bad_parameters(params):
    with pytest.raises(ValueError, match=next(iter(params))):
        ADWIN(**params)


def test_both_follow_the_detector_protocol():
    assert isinstance(ADWIN(), DriftDetector)
    assert isinstance(ErrorDetector(), DriftDetector)
    assert isinstance(ErrorDetector().detector, ADWIN)


def test_error_detector_needs_estimation_before_drift():
    with pytest.raises(ValueError, match="estimation_before_drift"):
        ErrorDetector(object())


# -- state, clone, memory ---------------------------------------------------------------------


def test_state_round_trip_through_the_codec_mid_stream():
    stream = [float(x) for x in _stream(11, 3000, "bits")] + [1.0] * 500
    adwin, signal = ADWIN(delta=0.01), ErrorDetector(ADWIN(delta=0.01))
    for x in stream[:2017]:  # a cut has happened and inputs are pending
        adwin.update(x)
        signal.update(x)
    copy = ADWIN.from_state(codec.decode(codec.encode(adwin.state())))
    signal_copy = detector_from_state(codec.decode(codec.encode(signal.state())))
    assert isinstance(signal_copy, ErrorDetector)
    assert copy.state() == adwin.state() and signal_copy.state() == signal.state()
    rest = stream[2017:]
    assert [adwin.update(x) for x in rest] == [copy.update(x) for x in rest]
    assert [signal.update(x) for x in rest] == [signal_copy.update(x) for x in rest]
    assert copy.state() == adwin.state() and signal_copy.state() == signal.state()


def test_a_state_with_abs_max_still_loads():
    adwin = ADWIN(clock=5)
    for x in _stream(4, 700, "real"):
        adwin.update(x)
    state = adwin.state()
    assert "abs_max" not in state
    assert ADWIN.from_state(dict(state, abs_max=3.5)).state() == state  # written by 0.1.0


def test_pickle_round_trip_mid_stream():  # docs/cases.md C30, for models that hold detectors
    stream = _stream(12, 3000, "bits")
    adwin = ADWIN(delta=0.01)
    for x in stream[:2017]:
        adwin.update(x)
    copy = pickle.loads(pickle.dumps(adwin))
    assert type(copy) is type(adwin) and copy.state() == adwin.state()
    assert [adwin.update(x) for x in stream[2017:]] == [copy.update(x) for x in stream[2017:]]
    assert copy.state() == adwin.state()


def test_from_state_refuses_foreign_or_broken_states():
    with pytest.raises(ValueError, match="kind"):
        detector_from_state({"kind": "page_hinkley"})
    with pytest.raises(ValueError, match="kind"):
        ADWIN.from_state({"kind": "error_detector"})
    state = ADWIN().state()
    state["width"] = 3
    with pytest.raises(ValueError, match="width"):
        ADWIN.from_state(state)
    state = ADWIN(clock=8).state()
    state["ticks"] = 9
    with pytest.raises(ValueError, match="ticks"):
        ADWIN.from_state(state)


@pytest.mark.parametrize("key, value", [("n_detections", 2**63), ("n_detections", -1)])
def test_from_state_refuses_counters_out_of_range_on_both_backends(key, value):
    state = ADWIN().state()
    state[key] = value
    with pytest.raises(ValueError, match=f"{key} must be in"):
        ADWIN.from_state(state)


def test_clone_is_fresh_with_same_parameters():
    adwin = ADWIN(delta=1e-4, clock=16, max_buckets=4, min_window_length=3, grace_period=20)
    for x in STEP:
        adwin.update(x)
    twin = adwin.clone()
    assert repr(twin) == repr(adwin) == (
        "ADWIN(delta=0.0001, clock=16, max_buckets=4, min_window_length=3, grace_period=20)"
    )
    assert twin.width == 0 and twin.n_detections == 0 and twin.estimation == 0.0
    signal = ErrorDetector(adwin)
    fresh = signal.clone()
    assert fresh.detector is not adwin and repr(fresh.detector) == repr(adwin)
    assert fresh.detector.width == 0


def test_memory_grows_with_log_width():
    adwin = ADWIN()
    rng = random.Random(5)
    sizes = {}
    for i in range(1, 200_001):
        adwin.update(float(rng.random() < 0.3))
        if i in (2_000, 20_000, 200_000):
            sizes[i] = (adwin.width, len(adwin.state()["totals"]), adwin.n_buckets,
                        adwin.memory_bytes())  # fmt: skip
    for width, rows, buckets, _ in sizes.values():
        assert rows <= math.log2(width / (adwin.max_buckets - 1)) + 2
        assert buckets <= adwin.max_buckets * rows
    assert sizes[200_000][0] == 200_000
    # Each factor 10 in width adds about log2(10) rows: a constant number of bytes.
    grow_1 = sizes[20_000][3] - sizes[2_000][3]
    grow_2 = sizes[200_000][3] - sizes[20_000][3]
    assert 0 < grow_2 <= 1.5 * grow_1
    assert sizes[200_000][3] < 10_000  # raw floats would take 200_000 * 32 bytes


def test_docstring_examples():
    import edgebayes.drift
    import edgebayes.drift.adwin

    for module in (edgebayes.drift, edgebayes.drift.adwin):
        assert doctest.testmod(module).failed == 0


def held_by_buffers(adwin):
    """What the four buffers really allocate (arrays: header + items), plus the object counted
    as `adwin.OBJECT_BYTES` (checked against the object by the test below)."""
    bufs = (adwin._totals, adwin._variances, adwin._counts, adwin._pending)
    return adwin_module.OBJECT_BYTES + sum(sys.getsizeof(b) for b in bufs)


def test_the_object_bytes_counted_are_the_object_on_64_bit_and_a_bound_on_32_bit():
    """Both backends count the same constant: exactly either object where pointers are 8 bytes
    (the compiled fields are 8 bytes each there too), at least either object elsewhere."""
    for name in BACKENDS:
        size = sys.getsizeof(implementation("ADWIN", name)())
        if struct.calcsize("P") == 8:
            assert size == adwin_module.OBJECT_BYTES, name
        else:
            assert size <= adwin_module.OBJECT_BYTES, name


@pytest.mark.parametrize("max_buckets", [2, 5])
def test_max_memory_bytes_is_reached_exactly_by_a_window_of_that_width(max_buckets):
    adwin, rows = ADWIN(max_buckets=max_buckets), 10
    least = max_buckets * 2 ** (rows - 1) - max_buckets + 1  # the least width with 10 rows
    for i in range(1, least + 1):
        adwin.update(0.5)  # constant: never cut
        if i % 97 == 0 or i >= least - 1:
            assert adwin.memory_bytes() <= adwin.max_memory_bytes(adwin.width)
    assert adwin.width == least and len(adwin.state()["totals"]) == rows
    assert adwin.memory_bytes() == adwin.max_memory_bytes(least) == held_by_buffers(adwin)
    one_row = 8 * (2 * max_buckets + 1)  # totals, variances and a count
    assert adwin.max_memory_bytes(least - 1) == adwin.max_memory_bytes(least) - one_row
    assert adwin.max_memory_bytes(0) == ADWIN(max_buckets=max_buckets).memory_bytes()


def test_memory_bytes_is_what_the_buffers_hold_and_stays_under_the_bound_through_cuts():
    adwin = ADWIN(delta=0.05, clock=7)
    for i, x in enumerate(_stream(3, 6000, "bits") + [1.0] * 2000):
        adwin.update(x)
        if i % 50 == 0:
            assert adwin.memory_bytes() == held_by_buffers(adwin)
            assert adwin.memory_bytes() <= adwin.max_memory_bytes(adwin.width)
    assert adwin.n_detections > 0
    copy = ADWIN.from_state(adwin.state())
    assert copy.memory_bytes() == held_by_buffers(copy) == adwin.memory_bytes()


def test_max_memory_bytes_for_2_to_the_32_inputs():
    adwin, signal = ADWIN(), ErrorDetector(ADWIN(delta=1e-5))
    # 30 rows: 5 * 2**29 - 4 <= 2**32 < 5 * 2**30 - 4
    assert adwin.max_memory_bytes(2**32) == adwin.max_memory_bytes(5 * 2**29 - 4)
    assert adwin.max_memory_bytes(5 * 2**29 - 5) == adwin.max_memory_bytes(2**32) - 88
    assert adwin.max_memory_bytes() == adwin.max_memory_bytes(2**32) < 3500
    assert signal.max_memory_bytes() == sys.getsizeof(signal) + adwin.max_memory_bytes()
    for bad in (-1, 2.0, True, None):
        with pytest.raises(ValueError, match="max_width"):
            adwin.max_memory_bytes(bad)


def test_from_state_refuses_rows_the_algorithm_cannot_produce():
    adwin = ADWIN()
    for x in [0.0, 1.0] * 40:
        adwin.update(x)
    state = adwin.state()
    assert [len(r) for r in state["totals"]] == [4, 4, 5, 4, 1]
    state["totals"][1], state["variances"][1] = [], []  # a short middle row: more rows per input
    state["width"] -= 8
    with pytest.raises(ValueError, match="width and max_buckets"):
        ADWIN.from_state(state)


# -- the two backends -------------------------------------------------------------------------


def test_the_backend_fixture_builds_that_backend(backend):
    assert edgebayes.backend() == backend
    expected = "edgebayes._core.adwin" if backend == "compiled" else "edgebayes.drift.adwin"
    built = (ADWIN(), ADWIN().clone(), ADWIN.from_state(ADWIN().state()), ErrorDetector().detector)
    for adwin in built:
        assert type(adwin).__module__ == expected and type(adwin).__name__ == "ADWIN"
        assert isinstance(adwin, ADWIN)


def _both(params):
    """One detector per backend, same parameters."""
    return {name: implementation("ADWIN", name)(**params) for name in BACKENDS}


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 3000),
    kind=st.sampled_from(["bits", "real"]),
    delta=st.sampled_from([0.5, 0.05, 0.002, 1e-5]),
    clock=st.sampled_from([1, 3, 32]),
    max_buckets=st.integers(2, 6),
    min_window_length=st.integers(1, 8),
    grace_period=st.integers(0, 40),
)
def test_backends_give_identical_states(
    seed, n, kind, delta, clock, max_buckets, min_window_length, grace_period
):
    params = {"delta": delta, "clock": clock, "max_buckets": max_buckets,
                  "min_window_length": min_window_length, "grace_period": grace_period}  # fmt: skip
    dets = _both(params)
    for i, x in enumerate(_stream(seed, n, kind)):
        assert dets["compiled"].update(x) == dets["python"].update(x), i
        if i % 257 == 0:  # mid-stream, with inputs pending
            assert dets["compiled"].state() == dets["python"].state(), i
    assert dets["compiled"].state() == dets["python"].state()
    assert dets["compiled"].memory_bytes() == dets["python"].memory_bytes()
    for name in ("width", "estimation", "variance", "n_detections", "estimation_before_drift"):
        assert getattr(dets["compiled"], name) == getattr(dets["python"], name), name


def _read(state: dict, backend: str) -> ErrorDetector:
    """`ErrorDetector.from_state` with the ADWIN of ``backend``, whichever this process chose."""
    if backend == edgebayes.backend():
        return detector_from_state(state)
    copy = ErrorDetector(implementation("ADWIN", backend).from_state(state["detector"]))
    copy.drift_detected, copy._n_detections = state["drift_detected"], state["n_detections"]
    return copy


@pytest.mark.parametrize("writer, reader", [BACKENDS, BACKENDS[::-1]])
def test_a_state_written_by_one_backend_continues_identically_in_the_other(writer, reader):
    stream = _stream(17, 6000, "bits") + [1.0] * 800 + _stream(18, 3000, "real")
    original = ErrorDetector(implementation("ADWIN", writer)(delta=0.01, clock=7))
    for x in stream[:4003]:  # cuts have happened and inputs are pending
        original.update(x)
    state = codec.decode(codec.encode(original.state()))
    copy = _read(state, reader)
    assert type(copy.detector).__module__ != type(original.detector).__module__
    assert copy.state() == original.state()
    rest = stream[4003:]
    flags = [original.update(x) for x in rest]
    assert flags == [copy.update(x) for x in rest] and sum(flags) > 0
    assert copy.state() == original.state()
