"""Synthetic generators: labels recomputed independently from the attributes, noise rates,
balance, value ranges, determinism by seed."""

import itertools

import numpy as np
import pytest

from edgebayes.streams import LED, SEA, Agrawal, Hyperplane, RandomRBF, Sine, open_stream
from edgebayes.streams.generator import CHUNK


def agrawal_group_a(f, salary, commission, age, elevel, car, zipcode, hvalue, hyears, loan):
    """The paper's ten functions (Agrawal et al. 1993, p. 924), one sample, plain Python."""
    def band(a, young, middle, old):
        return young if a < 40 else middle if a < 60 else old

    def inside(v, lo_hi):
        return lo_hi[0] <= v <= lo_hi[1]

    sal_band = band(age, (50e3, 100e3), (75e3, 125e3), (25e3, 75e3))
    edu = band(age, {0, 1}, {1, 2, 3}, {2, 3, 4})
    if f == 1:
        return age < 40 or age >= 60
    if f == 2:
        return inside(salary, sal_band)
    if f == 3:
        return elevel in edu
    if f == 4:
        if elevel in edu:
            return inside(salary, band(age, (25e3, 75e3), (50e3, 100e3), (50e3, 100e3)))
        return inside(salary, band(age, (50e3, 100e3), (75e3, 125e3), (25e3, 75e3)))
    if f == 5:
        if inside(salary, sal_band):
            return inside(loan, band(age, (100e3, 300e3), (200e3, 400e3), (300e3, 500e3)))
        return inside(loan, band(age, (200e3, 400e3), (300e3, 500e3), (100e3, 300e3)))
    if f == 6:
        return inside(salary + commission, sal_band)
    if f == 7:
        return 2 * (salary + commission) / 3 - loan / 5 - 20000 > 0
    if f == 8:
        return 2 * (salary + commission) / 3 - 5000 * elevel - 20000 > 0
    if f == 9:
        return 2 * (salary + commission) / 3 - 5000 * elevel - loan / 5 - 10000 > 0
    equity = hvalue * (hyears - 20) / 10 if hyears >= 20 else 0.0
    return 2 * (salary + commission) / 3 - 5000 * elevel + equity / 5 - 10000 > 0


@pytest.mark.parametrize("function", range(1, 11))
def test_agrawal_labels_recomputed_for_every_function(function):
    X, y = Agrawal(function, perturbation=0.0, seed=function).to_arrays(3000)
    expected = [0 if agrawal_group_a(function, *row) else 1 for row in X.tolist()]
    assert y == expected
    assert 0 < sum(y) < len(y)  # both classes occur


def test_agrawal_attribute_ranges():
    X, _ = Agrawal(1, perturbation=0.0, seed=3).to_arrays(5000)
    salary, commission, age, elevel, car, zipcode, hvalue, hyears, loan = X.T
    assert salary.min() >= 20000 and salary.max() < 150000
    assert np.all((commission == 0) == (salary >= 75000))
    assert commission[commission > 0].min() >= 10000 and commission.max() < 75000
    for values, low, high in ((age, 20, 80), (elevel, 0, 4), (car, 0, 19), (zipcode, 0, 8), (hyears, 1, 30)):
        assert set(values.tolist()) == set(range(low, high + 1))
    assert np.all(hvalue >= (9 - zipcode) * 50000) and np.all(hvalue < (9 - zipcode) * 150000)
    assert loan.min() >= 0 and loan.max() < 500000


def test_agrawal_perturbation_is_feature_noise_within_ranges():
    # within the first chunk both streams draw the same attributes (perturbation draws come after)
    plain_X, plain_y = Agrawal(2, perturbation=0.0, seed=5).to_arrays(CHUNK)
    X, y = Agrawal(2, perturbation=0.05, seed=5).to_arrays(CHUNK)
    assert y == plain_y
    salary, commission, age, hyears, hvalue = X[:, 0], X[:, 1], X[:, 2], X[:, 7], X[:, 6]
    assert salary.min() >= 20000 and salary.max() <= 150000
    assert np.all(age == np.round(age)) and age.min() >= 20 and age.max() <= 80
    assert np.all(hyears == np.round(hyears)) and hyears.min() >= 1 and hyears.max() <= 30
    assert hvalue.max() <= 135000  # MOA's clip of the perturbed house value
    assert np.all((commission == 0) == (plain_X[:, 1] == 0))
    # labels were fixed before perturbation: only samples near a salary edge disagree
    agree = np.mean([(not agrawal_group_a(2, *row)) == bool(lab) for row, lab in zip(X.tolist(), y)])
    assert 0.9 < agree < 1.0
    # salary moved by at most 5 % of its 130k range
    assert np.all(np.abs(salary - plain_X[:, 0]) <= 0.05 * 130000 + 1e-9)


@pytest.mark.parametrize("make", [
    lambda: Agrawal(8, perturbation=0.0, balance_classes=True, seed=2),  # 2 % class 1 unbalanced
    lambda: SEA(3, noise=0.0, balance_classes=True, seed=2),
    lambda: Sine(2, balance_classes=True, seed=2),
])
def test_balance_alternates_from_class_1_across_chunks(make):
    stream = make()
    X, y = stream.to_arrays(CHUNK + 101)
    assert y == [1 - i % 2 for i in range(CHUNK + 101)]
    if isinstance(stream, Agrawal):
        assert [0 if agrawal_group_a(8, *r) else 1 for r in X.tolist()] == y


@pytest.mark.parametrize("variant, threshold", [(0, 8), (1, 9), (2, 7), (3, 9.5)])
def test_sea_labels_recomputed(variant, threshold):
    X, y = SEA(variant, noise=0.0, seed=variant).to_arrays(3000)
    assert X.min() >= 0 and X.max() < 10
    assert y == [int(a + b > threshold) for a, b, _ in X.tolist()]


def test_sea_noise_rate():
    X, y = SEA(0, noise=0.1, seed=4).to_arrays(20000)
    flipped = np.mean(np.array(y) != (X[:, 0] + X[:, 1] > 8))
    assert abs(flipped - 0.1) < 0.01  # 4.7 standard errors


@pytest.mark.parametrize("function", range(4))
def test_sine_labels_recomputed(function):
    X, y = Sine(function, has_noise=True, seed=function).to_arrays(2000)
    assert X.shape == (2000, 4)
    curve = [np.sin(b) if function < 2 else 0.5 + 0.3 * np.sin(3 * np.pi * b) for _, b, _, _ in X.tolist()]
    below = [a < c for (a, *_), c in zip(X.tolist(), curve)]
    assert y == [int(b if function in (0, 2) else not b) for b in below]


DIGITS = ["1110111", "0010010", "1011101", "1011011", "0111010", "1101011", "1101111", "1010010",
          "1111111", "1111011"]


@pytest.mark.parametrize("drift", [0, 1, 3, 7])
def test_led_segments_and_drifting_attributes(drift):
    X, y = LED(noise=0.0, n_drift_features=drift, seed=drift).to_arrays(2000)
    assert X.shape == (2000, 24) and set(np.unique(X)) == {0.0, 1.0}
    columns = list(range(24))
    for i in range(drift):  # segment i lives in column 7 + i and the other way round
        columns[i], columns[7 + i] = 7 + i, i
    segments = ["".join(str(int(v)) for v in row[columns[:7]]) for row in X]
    assert [DIGITS.index(s) for s in segments] == y
    assert sorted(set(y)) == list(range(10))


def test_led_noise_rate_and_7_features():
    X, y = LED(noise=0.1, irrelevant_features=False, seed=1).to_arrays(10000)
    assert X.shape == (10000, 7)
    truth = np.array([[int(c) for c in DIGITS[d]] for d in y])
    assert abs(np.mean(truth != X) - 0.1) < 0.01
    with pytest.raises(ValueError, match="irrelevant_features"):
        LED(irrelevant_features=False, n_drift_features=2)


def test_rbf_samples_come_from_their_centroid():
    stream = RandomRBF(n_classes=3, n_features=4, n_centroids=1, seed=7)
    centres, classes, std, _weights, _velocity = stream.centroids()
    X, y = stream.to_arrays(20000)
    assert set(y) == {int(classes[0])}
    # x = centre + N(0, std^2) along a unit direction: mean at the centre, mean squared distance std^2
    np.testing.assert_allclose(X.mean(axis=0), centres[0], atol=0.02)
    assert np.mean(np.sum((X - centres[0]) ** 2, axis=1)) == pytest.approx(std[0] ** 2, rel=0.05)


def test_rbf_class_frequencies_follow_centroid_weights():
    stream = RandomRBF(n_classes=4, n_centroids=10, seed=8)
    _, classes, _, weights, _ = stream.centroids()
    _, y = stream.to_arrays(40000)
    expected = np.bincount(classes, weights=weights, minlength=4) / weights.sum()
    np.testing.assert_allclose(np.bincount(y, minlength=4) / len(y), expected, atol=0.01)


def test_rbf_moving_centroid_bounces_in_the_unit_cube():
    speed = 1e-3
    stream = RandomRBF(n_features=2, n_centroids=1, change_speed=speed, seed=9)
    centres, _, std, _, velocity = stream.centroids()
    assert np.linalg.norm(velocity[0]) == pytest.approx(speed)
    X, _ = stream.to_arrays(6000)  # travels 6 units: several bounces
    t = np.arange(1, 6001)[:, None]  # sample t sees the centre after t moves
    u = np.mod(centres[0] + t * velocity[0], 2.0)
    path = np.where(u > 1, 2 - u, u)  # reflected at the faces of [0, 1]
    for start in range(0, 6000, 500):  # window means follow the path
        np.testing.assert_allclose(X[start:start + 500].mean(axis=0), path[start:start + 500].mean(axis=0),
                                   atol=5 * std[0] / np.sqrt(500) + 1e-3)
    still = RandomRBF(n_features=2, n_centroids=1, change_speed=speed, n_drift_centroids=0, seed=9)
    Xs, _ = still.to_arrays(6000)
    np.testing.assert_allclose(Xs[:3000].mean(axis=0), Xs[3000:].mean(axis=0), atol=0.03)


def test_hyperplane_one_feature_threshold_and_noise():
    X, y = Hyperplane(n_features=1, n_drift_features=0, noise=0.0, seed=1).to_arrays(3000)
    assert y == [int(x >= 0.5) for x in X[:, 0]]
    X, y = Hyperplane(n_features=1, n_drift_features=0, noise=0.05, seed=1).to_arrays(20000)
    assert abs(np.mean(np.array(y) != (X[:, 0] >= 0.5)) - 0.05) < 0.006


def corner_violations(X, y):
    """Fraction of samples in the all-high / all-low corners labelled against a plane through
    the centre with non-negative weights (0 for MOA's initial weights)."""
    high, low = np.all(X > 0.5, axis=1), np.all(X < 0.5, axis=1)
    y = np.asarray(y)
    return (np.sum(y[high] == 0) + np.sum(y[low] == 1)) / max(1, high.sum() + low.sum())


def test_hyperplane_rotates_only_with_mag_change():
    X, y = Hyperplane(n_features=2, n_drift_features=2, mag_change=0.0, noise=0.0, seed=2).to_arrays(20000)
    assert corner_violations(X, y) == 0.0
    X, y = Hyperplane(n_features=2, n_drift_features=2, mag_change=0.01, sigma=0.0, noise=0.0, seed=2).to_arrays(20000)
    # sigma 0: both weights grow linearly, the plane stays in the same family: still no violation
    assert corner_violations(X, y) == 0.0
    X, y = Hyperplane(n_features=2, n_drift_features=2, mag_change=0.01, sigma=0.5, noise=0.0, seed=2).to_arrays(20000)
    # random walks of the weights go negative at times: labels disagree with the initial plane
    assert corner_violations(X, y) > 0.01


@pytest.mark.parametrize("make", [
    lambda seed: SEA(seed=seed), lambda seed: Agrawal(4, seed=seed), lambda seed: LED(n_drift_features=3, seed=seed),
    lambda seed: RandomRBF(change_speed=0.001, seed=seed), lambda seed: Hyperplane(mag_change=0.01, seed=seed),
    lambda seed: Sine(1, seed=seed),
])
def test_determinism_by_seed(make):
    n = CHUNK + 17
    X1, y1 = make(11).to_arrays(n)
    X2, y2 = make(11).to_arrays(n)
    X3, _ = make(12).to_arrays(n)
    assert np.array_equal(X1, X2) and y1 == y2
    assert not np.array_equal(X1, X3)
    stream = make(11)
    first = list(itertools.islice(stream, n))
    again = list(itertools.islice(stream, n))  # iterating twice restarts
    assert np.array_equal(np.array([x for x, _ in first]), X1) and [v for _, v in first] == y1
    assert np.array_equal(np.array([x for x, _ in again]), X1)
    assert all(type(v) is int for v in y1)


def test_seed_none_is_fixed_at_construction():
    stream = SEA(n_samples=100)
    assert np.array_equal(stream.to_arrays()[0], stream.to_arrays()[0])
    assert not np.array_equal(SEA(n_samples=100).to_arrays()[0], stream.to_arrays()[0])


def test_n_samples_batches_and_endless():
    stream = SEA(n_samples=CHUNK + 5, seed=1)
    assert sum(1 for _ in stream) == CHUNK + 5
    assert [len(y) for _, y in stream.batches()] == [CHUNK, 5]
    assert np.array_equal(np.concatenate([X for X, _ in stream.batches()]), stream.to_arrays()[0])
    assert SEA(seed=1).endless and SEA(seed=1).n_samples is None
    with pytest.raises(ValueError, match="endless"):
        SEA(seed=1).to_arrays()


@pytest.mark.parametrize("make, message", [
    (lambda: SEA(variant=4), "variant"),
    (lambda: SEA(noise=1.5), "noise"),
    (lambda: Agrawal(11), "classification_function"),
    (lambda: Agrawal(perturbation=-0.1), "perturbation"),
    (lambda: LED(n_drift_features=8), "n_drift_features"),
    (lambda: RandomRBF(n_classes=1), "n_classes"),
    (lambda: RandomRBF(change_speed=-1), "change_speed"),
    (lambda: Hyperplane(n_features=3, n_drift_features=4), "n_drift_features"),
    (lambda: SEA(n_samples=-1), "n_samples"),
])
def test_bad_parameters(make, message):
    with pytest.raises(ValueError, match=message):
        make()


def test_schemas():
    agr = Agrawal().schema
    assert agr.feature_names == ["salary", "commission", "age", "elevel", "car", "zipcode", "hvalue", "hyears", "loan"]
    assert agr.nominal == [3, 4, 5] and agr.features[3].categories == tuple(f"level{i}" for i in range(5))
    assert agr.classes == (0, 1)
    assert LED().schema.n_features == 24 and LED().schema.classes == tuple(range(10))
    assert RandomRBF(n_classes=5).schema.classes == (0, 1, 2, 3, 4)


def test_open_stream_synthetic_names():
    stream = open_stream("synth:SEA(variant=2, noise=0.0)", n_samples=500, seed=3)
    X, y = stream.to_arrays()
    assert stream.n_samples == 500 and len(y) == 500
    assert y == [int(a + b > 7) for a, b, _ in X.tolist()]
    assert open_stream("synth:hyperplane", seed=1).n_samples == 1_000_000  # the paper's length
    with pytest.raises(ValueError, match="unknown synthetic stream"):
        open_stream("synth:NOPE")
    with pytest.raises(ValueError, match="bad arguments"):
        open_stream("synth:SEA(2)")
    with pytest.raises(ValueError, match="unexpected keyword"):
        open_stream("synth:SEA(colour=2)")
    with pytest.raises(ValueError, match="not to synthetic"):
        open_stream("synth:SEA", drop=["x"])
