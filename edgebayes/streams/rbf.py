"""Random radial basis function concepts, with MOA's moving centroids (``RandomRBFGenerator``
and ``RandomRBFGeneratorDrift``; Bifet et al., "New ensemble methods for evolving data
streams", KDD 2009)."""

from __future__ import annotations

import numpy as np

from edgebayes.streams.generator import Generator, check_count
from edgebayes.streams.schema import Schema


def reflect(u: np.ndarray) -> np.ndarray:
    """``u`` folded into [0, 1] by reflection at 0 and 1 (a triangle wave of period 2)."""
    r = np.mod(u, 2.0)
    return np.where(r > 1.0, 2.0 - r, r)


class RandomRBF(Generator):
    """Samples scattered around random centroids, each centroid owning a class.

    Model (drawn once from the model seed): ``n_centroids`` centres uniform in
    [0, 1)^n_features, each with a class (uniform), a standard deviation (uniform [0, 1))
    and a weight (uniform [0, 1)). A sample: pick a centroid with probability proportional to
    its weight, a direction uniform in [-1, 1)^n_features normalised to length 1, a length
    N(0, 1) x the centroid's deviation; x = centre + length x direction; y its class.

    Incremental drift (``change_speed`` > 0): each of the first ``n_drift_centroids`` centres
    moves ``change_speed`` per sample along its own unit direction (components uniform in
    [0, 1), normalised), bouncing off the faces of the unit cube; sample t (1-based) sees the
    centres after t moves, as MOA. Positions are computed in closed form by reflection (MOA
    clamps to the face and reverses, the same path up to one step).

    Args:
        n_classes: >= 2. n_features: >= 1. n_centroids: >= 1.
        change_speed: distance moved per sample (>= 0; MOA's ``-s``, the SRP paper's RBF(M)
            uses 0.0001 and RBF(F) 0.001).
        n_drift_centroids: how many centroids move (MOA's default 50 = all of the default 50).
        n_samples, seed: see `Generator`; ``seed_model`` fixes the centroids separately
            (default: derived from ``seed``).

    Samples: x float64 (n_features,); y int 0..n_classes-1.
    """

    def __init__(self, n_classes: int = 2, n_features: int = 10, n_centroids: int = 50,
                 change_speed: float = 0.0, n_drift_centroids: int = 50,
                 n_samples: int | None = None, seed: int | None = None, seed_model: int | None = None):
        super().__init__(n_samples, seed)
        self.n_classes = check_count("n_classes", n_classes, 2)
        self.n_features = check_count("n_features", n_features, 1)
        self.n_centroids = check_count("n_centroids", n_centroids, 1)
        self.change_speed = float(change_speed)
        if not (self.change_speed >= 0.0 and np.isfinite(self.change_speed)):
            raise ValueError(f"change_speed must be finite and >= 0, got {change_speed!r}")
        self.n_drift_centroids = check_count("n_drift_centroids", n_drift_centroids, 0)
        self.seed_model = seed_model
        self.schema = Schema.numeric([f"att{i + 1}" for i in range(self.n_features)],
                                     classes=tuple(range(self.n_classes)))

    def _params(self):
        return {"n_classes": self.n_classes, "n_features": self.n_features,
                "n_centroids": self.n_centroids, "change_speed": self.change_speed,
                "n_drift_centroids": self.n_drift_centroids, **super()._params(),
                "seed_model": self.seed_model}

    def centroids(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The model: ``(centres (c, d), classes (c,) int64, std (c,), weights (c,), velocity (c, d))``.

        ``velocity`` is the unit direction times ``change_speed``, zero for still centroids.
        """
        rng = self._rng(1) if self.seed_model is None else np.random.default_rng(self.seed_model)
        c, d = self.n_centroids, self.n_features
        centres = rng.random((c, d))
        classes = rng.integers(0, self.n_classes, c).astype(np.intp)  # same draw, index type
        std = rng.random(c)
        weights = rng.random(c)
        direction = rng.random((c, d))
        direction /= np.linalg.norm(direction, axis=1, keepdims=True)
        velocity = direction * self.change_speed
        velocity[min(self.n_drift_centroids, c):] = 0.0
        return centres, classes, std, weights, velocity

    def _sampler(self):
        rng = self._rng()
        centres, classes, std, weights, velocity = self.centroids()
        cumulative = np.cumsum(weights)
        moving = bool(np.any(velocity))
        seen = [0]

        def draw(k):
            which = np.minimum(np.searchsorted(cumulative, rng.random(k) * cumulative[-1], side="right"),
                               len(cumulative) - 1)
            direction = 2.0 * rng.random((k, self.n_features)) - 1.0
            length = rng.standard_normal(k) * std[which] / np.linalg.norm(direction, axis=1)
            if moving:
                t = np.arange(seen[0] + 1, seen[0] + k + 1, dtype=np.float64)[:, None]
                centre = reflect(centres[which] + t * velocity[which])
            else:
                centre = centres[which]
            seen[0] += k
            return centre + direction * length[:, None], classes[which]

        return draw
