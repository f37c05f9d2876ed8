"""SINE concepts (Gama, Medas, Castillo and Rodrigues, "Learning with drift detection",
SBIA 2004), as River's ``synth.Sine``."""

from __future__ import annotations

import numpy as np

from edgebayes.streams.generator import Generator, check_count, iid_sampler
from edgebayes.streams.schema import Schema


def below_curve(function: int, X: np.ndarray) -> np.ndarray:
    """True where ``x1`` lies below the curve of ``function`` at ``x2`` (x1 = X[:, 0], x2 = X[:, 1]).

    Functions 0, 1: ``sin(x2)`` (SINE1 and reversed); 2, 3: ``0.5 + 0.3 sin(3 pi x2)`` (SINE2
    and reversed).
    """
    curve = np.sin(X[:, 1]) if function < 2 else 0.5 + 0.3 * np.sin(3.0 * np.pi * X[:, 1])
    return X[:, 0] < curve


class Sine(Generator):
    """Two relevant features uniform in [0, 1); the label says which side of a sine curve.

    Label 1 when the point is below the curve for functions 0 and 2, above or on it for the
    reversed functions 1 and 3 (abrupt drift: switch the function).

    Args:
        classification_function: 0..3 (SINE1, reversed SINE1, SINE2, reversed SINE2).
        balance_classes: alternate labels 1, 0, 1, ...
        has_noise: add two irrelevant features uniform in [0, 1).
        n_samples, seed: see `Generator`.

    Samples: x float64 (2,) or (4,); y int 0 or 1.
    """

    def __init__(self, classification_function: int = 0, balance_classes: bool = False,
                 has_noise: bool = False, n_samples: int | None = None, seed: int | None = None):
        super().__init__(n_samples, seed)
        self.classification_function = check_count("classification_function", classification_function, 0, 3)
        self.balance_classes = bool(balance_classes)
        self.has_noise = bool(has_noise)
        n = 4 if self.has_noise else 2
        self.schema = Schema.numeric([f"att{i + 1}" for i in range(n)], classes=(0, 1))

    def _params(self):
        return {"classification_function": self.classification_function,
                "balance_classes": self.balance_classes, "has_noise": self.has_noise, **super()._params()}

    def _sampler(self):
        rng = self._rng()
        n = self.schema.n_features
        function = self.classification_function

        def candidates(m):
            X = rng.random((m, n))
            below = below_curve(function, X)
            return X, (below if function in (0, 2) else ~below).astype(np.int64)

        return iid_sampler(candidates, None, self.balance_classes)
