"""ConceptDriftStream (MOA's sigmoid) and the SRP paper's presets: drift position and width
visible in the label statistics."""

import numpy as np
import pytest

from edgebayes.streams import (
    PRESETS,
    SEA,
    Agrawal,
    ConceptDriftStream,
    Sine,
    open_stream,
    srp_stream,
)
from edgebayes.streams.drift import drift_probability
from tests.test_streams_generators import DIGITS, agrawal_group_a


def follows_new_concept(X, y):
    """Sine 0 and its reverse disagree on every sample: the label tells the concept."""
    return np.asarray(y) != (X[:, 0] < np.sin(X[:, 1]))


def test_drift_probability_is_moas_sigmoid():
    assert drift_probability(1000, 1000, 100) == 0.5
    assert drift_probability(1100, 1000, 100) == pytest.approx(1 / (1 + np.exp(-4)))
    assert drift_probability(900, 1000, 100) == pytest.approx(1 / (1 + np.exp(4)))
    assert drift_probability(10**9, 0, 1) == 1.0 and drift_probability(0, 10**9, 1) < 1e-300  # no overflow


def test_gradual_drift_follows_the_sigmoid():
    position, width = 6000, 2000
    stream = ConceptDriftStream(Sine(0, seed=1), Sine(1, seed=2), position, width, seed=3)
    X, y = stream.to_arrays(12000)
    new = follows_new_concept(X, y)
    p = drift_probability(np.arange(1, 12001), position, width)
    for start in range(0, 12000, 500):
        window = slice(start, start + 500)
        expected = p[window].mean()
        sd = np.sqrt(max(expected * (1 - expected), 1e-4) / 500)
        assert abs(new[window].mean() - expected) < 4.5 * sd + 1e-3, start
    assert new[:2000].sum() <= 2 and new[-2000:].sum() >= 1998


def test_abrupt_drift_with_width_1():
    stream = ConceptDriftStream(Sine(0, seed=1), Sine(1, seed=2), position=3000, width=1, seed=4)
    X, y = stream.to_arrays(6000)
    new = follows_new_concept(X, y)
    assert not new[:2994].any() and new[3005:].all()  # p < 2e-9 five samples away


def test_each_concept_advances_only_when_used():
    before, after = SEA(0, seed=1), SEA(3, seed=2)
    stream = ConceptDriftStream(before, after, position=2500, width=1000, seed=5)
    X, _ = stream.to_arrays(5000)
    Xa, _ = before.to_arrays(5000)
    Xb, _ = after.to_arrays(5000)
    from_a = np.isin(X[:, 0], Xa[:, 0])
    assert np.array_equal(X[from_a], Xa[: from_a.sum()])
    assert np.array_equal(X[~from_a], Xb[: (~from_a).sum()])
    assert 1000 < from_a.sum() < 4000


def test_nested_streams_chain_drifts():
    inner = ConceptDriftStream(Sine(1, seed=2), Sine(0, seed=3), position=2000, width=1, seed=6)
    stream = ConceptDriftStream(Sine(0, seed=1), inner, position=2000, width=1, seed=7)
    X, y = stream.to_arrays(6000)
    reversed_ = follows_new_concept(X, y)  # Sine 1 between 2000 and 4000 only
    assert not reversed_[:1990].any() and reversed_[2010:3990].all() and not reversed_[4010:].any()


def test_schema_and_bad_arguments():
    s = ConceptDriftStream(SEA(seed=1), SEA(seed=2), 10, 5)
    assert s.schema.feature_names == ["attrib1", "attrib2", "attrib3"] and s.schema.classes == (0, 1)
    with pytest.raises(ValueError, match="number of features"):
        ConceptDriftStream(SEA(), Agrawal(), 10, 5)
    with pytest.raises(ValueError, match="width"):
        ConceptDriftStream(SEA(), SEA(), 10, 0)
    with pytest.raises(ValueError, match="position"):
        ConceptDriftStream(SEA(), SEA(), -1, 10)
    with pytest.raises(ValueError, match="generators"):
        ConceptDriftStream([], SEA(), 10, 10)


def led_match(X, y, n_drift):
    """1 where the segments of LED concept ``n_drift`` show exactly the digit y."""
    columns = list(range(24))
    for i in range(n_drift):
        columns[i], columns[7 + i] = 7 + i, i
    truth = np.array([[int(c) for c in DIGITS[d]] for d in y])
    return np.all(X[:, columns[:7]] == truth, axis=1)


@pytest.mark.parametrize("name", ["LED_A", "LED_G"])
def test_led_presets_change_concept_every_quarter(name):
    n = 40000
    X, y = srp_stream(name, n_samples=n, seed=1).to_arrays()
    assert X.shape == (n, 24)
    matches = {d: led_match(X, y, d) for d in (1, 3, 5, 7)}
    margin = 2500 if name == "LED_G" else 10  # LED_G's width is n/20 = 2000
    for q, d in enumerate((1, 3, 5, 7)):
        window = slice(q * n // 4 + margin, (q + 1) * n // 4 - margin)
        rates = {k: m[window].mean() for k, m in matches.items()}
        assert max(rates, key=rates.get) == d
        assert rates[d] == pytest.approx(0.9 ** 7, abs=0.03)  # 7 segments, 10 % noise each
    # at the first drift point half the samples come from each concept
    mid = matches[1][n // 4 - 250: n // 4 + 250].mean()
    if name == "LED_G":
        assert 0.15 < mid < 0.35
        assert matches[1][n // 4 - 2000: n // 4 - 1000].mean() > mid + 0.1
    else:
        assert matches[1][n // 4 - 500: n // 4 - 5].mean() > 0.4 and matches[1][n // 4 + 5: n // 4 + 500].mean() < 0.2


@pytest.mark.parametrize("name", ["AGR_A", "AGR_G"])
def test_agrawal_presets_functions_1_2_1_4(name):
    n = 20000
    X, y = srp_stream(name, n_samples=n, seed=2).to_arrays()
    agree = {f: np.array([(not agrawal_group_a(f, *row)) == bool(label) for row, label in zip(X.tolist(), y)])
             for f in (1, 2, 4)}
    margin = 1250 if name == "AGR_G" else 10
    for q, f in enumerate((1, 2, 1, 4)):
        window = slice(q * n // 4 + margin, (q + 1) * n // 4 - margin)
        rates = {k: a[window].mean() for k, a in agree.items()}
        assert max(rates, key=rates.get) == f
        assert rates[f] > 0.9  # 5 % perturbation moves a few samples across an edge


def test_rbf_presets_scale_speed_and_shape():
    m, f = srp_stream("RBF_M", n_samples=100_000, seed=1), srp_stream("rbf_f", n_samples=100_000, seed=1)
    assert m.change_speed == pytest.approx(1e-3) and f.change_speed == pytest.approx(1e-2)
    assert (m.n_classes, m.n_features, m.n_centroids, m.n_drift_centroids) == (5, 10, 50, 50)
    assert srp_stream("RBF_M").change_speed == pytest.approx(1e-4)  # the paper's 1,000,000


def test_preset_geometry_scales_with_n():
    a = srp_stream("AGR_A", n_samples=100_000)
    g = srp_stream("AGR_G", n_samples=100_000)
    assert (a.position, a.width, g.width) == (25_000, 5, 5_000)
    assert (a.drift_stream.position, a.drift_stream.drift_stream.position) == (25_000, 25_000)
    paper = srp_stream("LED_G")
    assert (paper.n_samples, paper.position, paper.width) == (1_000_000, 250_000, 50_000)
    assert srp_stream("LED_A").width == 50


@pytest.mark.parametrize("name", PRESETS)
def test_presets_deterministic_and_open_stream(name):
    X1, y1 = open_stream(f"synth:{name}", n_samples=3000, seed=5).to_arrays()
    X2, y2 = srp_stream(name, n_samples=3000, seed=5).to_arrays()
    X3, _ = srp_stream(name, n_samples=3000, seed=6).to_arrays()
    assert np.array_equal(X1, X2) and y1 == y2 and len(y1) == 3000
    assert not np.array_equal(X1, X3)


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown SRP stream"):
        srp_stream("AGR_X")
