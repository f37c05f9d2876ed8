"""Rotating hyperplane (Hulten, Spencer and Domingos, "Mining time-changing data streams",
KDD 2001), as MOA's ``HyperplaneGenerator``."""

from __future__ import annotations

import numpy as np

from edgebayes.streams.generator import Generator, check_count, check_fraction, flip
from edgebayes.streams.schema import Schema


class Hyperplane(Generator):
    """Label 1 when ``sum_i w_i x_i >= sum_i w_i / 2``, x uniform in [0, 1)^n_features.

    Weights start uniform in [0, 1). After each sample the first ``n_drift_features`` weights
    move by ``mag_change`` in their current direction, and each direction reverses with
    probability ``sigma`` (MOA's sigmaPercentage): the plane rotates, an incremental drift.

    Args:
        n_features: >= 1. n_drift_features: 0..n_features (MOA's default 2).
        mag_change: weight change per sample (>= 0; 0 = no drift).
        noise: probability that a label is flipped (MOA's default 5 %).
        sigma: probability that a weight's direction reverses after a sample (MOA's 10 %).
        n_samples, seed: see `Generator`.

    Samples: x float64 (n_features,); y int 0 or 1.
    """

    def __init__(self, n_features: int = 10, n_drift_features: int = 2, mag_change: float = 0.0,
                 noise: float = 0.05, sigma: float = 0.1, n_samples: int | None = None,
                 seed: int | None = None):
        super().__init__(n_samples, seed)
        self.n_features = check_count("n_features", n_features, 1)
        self.n_drift_features = check_count("n_drift_features", n_drift_features, 0, self.n_features)
        self.mag_change = check_fraction("mag_change", mag_change)
        self.noise = check_fraction("noise", noise)
        self.sigma = check_fraction("sigma", sigma)
        self.schema = Schema.numeric([f"att{i + 1}" for i in range(self.n_features)], classes=(0, 1))

    def _params(self):
        return {"n_features": self.n_features, "n_drift_features": self.n_drift_features,
                "mag_change": self.mag_change, "noise": self.noise, "sigma": self.sigma,
                **super()._params()}

    def _sampler(self):
        rng = self._rng()
        d, nd = self.n_features, self.n_drift_features
        weights = rng.random(d)
        direction = np.ones(nd)

        def draw(k):
            nonlocal direction
            X = rng.random((k, d))
            if nd and self.mag_change > 0.0:
                # direction in force after sample j, then the weights sample j sees
                signs = np.where(rng.random((k, nd)) < self.sigma, -1.0, 1.0)
                after = direction * np.cumprod(signs, axis=0)
                before = np.vstack([direction, after[:-1]])
                steps = np.cumsum(before, axis=0) - before
                W = np.tile(weights, (k, 1))
                W[:, :nd] += self.mag_change * steps
                weights[:nd] += self.mag_change * (steps[-1] + before[-1])
                direction = after[-1]
                y = (np.einsum("ij,ij->i", W, X) >= 0.5 * W.sum(axis=1)).astype(np.int64)
            else:
                y = (X @ weights >= 0.5 * weights.sum()).astype(np.int64)
            return X, flip(rng, y, self.noise)

        return draw
