"""AGRAWAL loan-application concepts (Agrawal, Imielinski and Swami, "Database mining: a
performance perspective", IEEE TKDE 5(6), 1993, p. 924), as MOA's ``AgrawalGenerator``."""

from __future__ import annotations

import numpy as np

from edgebayes.streams.generator import Generator, check_count, check_fraction, iid_sampler
from edgebayes.streams.schema import Feature, Schema

FEATURES = (
    Feature("salary"),
    Feature("commission"),
    Feature("age"),
    Feature("elevel", "nominal", tuple(f"level{i}" for i in range(5))),
    Feature("car", "nominal", tuple(f"car{i + 1}" for i in range(20))),
    Feature("zipcode", "nominal", tuple(f"zipcode{i + 1}" for i in range(9))),
    Feature("hvalue"),
    Feature("hyears"),
    Feature("loan"),
)
SALARY, COMMISSION, AGE, ELEVEL, CAR, ZIPCODE, HVALUE, HYEARS, LOAN = range(9)


def _between(v, low, high):
    return (low <= v) & (v <= high)


def _by_age(age, young, middle, old):
    """``young`` under 40, ``middle`` in [40, 60), ``old`` from 60."""
    return np.where(age < 40, young, np.where(age < 60, middle, old))


def _salary_band(age, s):
    """The age-dependent salary band of functions 2, 4 and 5 (the 'group A' salaries)."""
    return _by_age(age, _between(s, 50000, 100000), _between(s, 75000, 125000), _between(s, 25000, 75000))


def group_a(function: int, X: np.ndarray) -> np.ndarray:
    """True where the sample belongs to group A (label 0) under ``function`` (1..10).

    X: float64 (n, 9) in `FEATURES` order, before perturbation.
    """
    s, c, age, e, hv, hy, loan = (X[:, i] for i in (SALARY, COMMISSION, AGE, ELEVEL, HVALUE, HYEARS, LOAN))
    elevel_band = _by_age(age, e <= 1, (e >= 1) & (e <= 3), (e >= 2) & (e <= 4))
    if function == 1:
        return (age < 40) | (age >= 60)
    if function == 2:
        return _salary_band(age, s)
    if function == 3:
        return elevel_band
    if function == 4:
        return np.where(
            elevel_band,
            _by_age(age, _between(s, 25000, 75000), _between(s, 50000, 100000), _between(s, 50000, 100000)),
            _by_age(age, _between(s, 50000, 100000), _between(s, 75000, 125000), _between(s, 25000, 75000)),
        )
    if function == 5:
        return np.where(
            _salary_band(age, s),
            _by_age(age, _between(loan, 1e5, 3e5), _between(loan, 2e5, 4e5), _between(loan, 3e5, 5e5)),
            _by_age(age, _between(loan, 2e5, 4e5), _between(loan, 3e5, 5e5), _between(loan, 1e5, 3e5)),
        )
    if function == 6:
        return _salary_band(age, s + c)
    if function == 7:
        return 2.0 * (s + c) / 3.0 - loan / 5.0 - 20000.0 > 0
    if function == 8:
        return 2.0 * (s + c) / 3.0 - 5000.0 * e - 20000.0 > 0
    if function == 9:
        return 2.0 * (s + c) / 3.0 - 5000.0 * e - loan / 5.0 - 10000.0 > 0
    equity = np.where(hy >= 20, hv * (hy - 20.0) / 10.0, 0.0)
    return 2.0 * (s + c) / 3.0 - 5000.0 * e + equity / 5.0 - 10000.0 > 0


class Agrawal(Generator):
    """Nine attributes of a loan applicant; the label is one of the paper's ten functions.

    Attributes as MOA's ``AgrawalGenerator`` (the paper's table, MOA's zipcode coding):
    salary uniform in [20k, 150k); commission 0 if salary >= 75k else uniform in [10k, 75k);
    age integer 20..80; elevel 0..4, car 0..19, zipcode 0..8 (nominal, category index);
    hvalue (9 - zipcode) * 100k * uniform [0.5, 1.5); hyears integer 1..30; loan uniform
    [0, 500k). Label 0 ("group A") when the function holds, else 1.

    Perturbation (MOA's, after the label is fixed, so it is feature noise): each numeric
    value moves by ``perturbation`` x its range x uniform(-1, 1) and is clipped to the range;
    age and hyears are rounded. As MOA (and River), hvalue is clipped to [0, 135000] once
    perturbed, which caps it; only function 10 reads hvalue.

    Args:
        classification_function: 1..10 (the paper's numbering).
        perturbation: fraction in [0, 1] (MOA's default 0.05).
        balance_classes: alternate labels 1, 0, 1, ... (MOA's ``-b``).
        n_samples, seed: see `Generator`.

    Samples: x float64 (9,) in `FEATURES` order; y int 0 or 1.

    Raises:
        ValueError: function outside 1..10, perturbation outside [0, 1].
    """

    def __init__(self, classification_function: int = 1, perturbation: float = 0.05,
                 balance_classes: bool = False, n_samples: int | None = None, seed: int | None = None):
        super().__init__(n_samples, seed)
        self.classification_function = check_count("classification_function", classification_function, 1, 10)
        self.perturbation = check_fraction("perturbation", perturbation)
        self.balance_classes = bool(balance_classes)
        self.schema = Schema(FEATURES, "class", (0, 1))

    def _params(self):
        return {"classification_function": self.classification_function,
                "perturbation": self.perturbation, "balance_classes": self.balance_classes,
                **super()._params()}

    def _sampler(self):
        rng = self._rng()
        function = self.classification_function

        def candidates(m):
            X = np.empty((m, 9))
            X[:, SALARY] = 20000.0 + 130000.0 * rng.random(m)
            X[:, COMMISSION] = np.where(X[:, SALARY] >= 75000.0, 0.0, 10000.0 + 65000.0 * rng.random(m))
            X[:, AGE] = rng.integers(20, 81, m)
            X[:, ELEVEL] = rng.integers(0, 5, m)
            X[:, CAR] = rng.integers(0, 20, m)
            X[:, ZIPCODE] = rng.integers(0, 9, m)
            X[:, HVALUE] = (9.0 - X[:, ZIPCODE]) * 100000.0 * (0.5 + rng.random(m))
            X[:, HYEARS] = rng.integers(1, 31, m)
            X[:, LOAN] = 500000.0 * rng.random(m)
            return X, (~group_a(function, X)).astype(np.int64)

        finish = self._perturb(rng) if self.perturbation > 0.0 else None
        return iid_sampler(candidates, finish, self.balance_classes)

    def _perturb(self, rng):
        p = self.perturbation

        def moved(v, span, low, high):
            return np.clip(v + span * (2.0 * rng.random(len(v)) - 1.0) * p, low, high)

        def finish(X, y):
            X[:, SALARY] = moved(X[:, SALARY], 130000.0, 20000.0, 150000.0)
            c = X[:, COMMISSION]
            X[:, COMMISSION] = np.where(c > 0, moved(c, 65000.0, 10000.0, 75000.0), c)
            X[:, AGE] = np.floor(moved(X[:, AGE], 60.0, 20.0, 80.0) + 0.5)  # Java's Math.round
            X[:, HVALUE] = moved(X[:, HVALUE], (9.0 - X[:, ZIPCODE]) * 100000.0, 0.0, 135000.0)
            X[:, HYEARS] = np.floor(moved(X[:, HYEARS], 29.0, 1.0, 30.0) + 0.5)
            X[:, LOAN] = moved(X[:, LOAN], 500000.0, 0.0, 500000.0)
            return X, y

        return finish
