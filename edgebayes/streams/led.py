"""LED display digits (Breiman et al., "Classification and Regression Trees", 1984), with
MOA's drifting attributes (``LEDGeneratorDrift``)."""

from __future__ import annotations

import numpy as np

from edgebayes.streams.generator import Generator, check_count, check_fraction
from edgebayes.streams.schema import Feature, Schema

#: segments (top, top-left, top-right, middle, bottom-left, bottom-right, bottom) of 0..9
SEGMENTS = np.array([
    [1, 1, 1, 0, 1, 1, 1], [0, 0, 1, 0, 0, 1, 0], [1, 0, 1, 1, 1, 0, 1], [1, 0, 1, 1, 0, 1, 1],
    [0, 1, 1, 1, 0, 1, 0], [1, 1, 0, 1, 0, 1, 1], [1, 1, 0, 1, 1, 1, 1], [1, 0, 1, 0, 0, 1, 0],
    [1, 1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 1, 1],
], dtype=np.float64)
N_RELEVANT = 7
N_IRRELEVANT = 17


def attribute_positions(n_drift_features: int) -> np.ndarray:
    """Column of x that holds each generated attribute (segments first, then noise bits).

    MOA's drift: segment i and irrelevant attribute i swap columns for i < n_drift_features.
    """
    position = np.arange(N_RELEVANT + N_IRRELEVANT)
    for i in range(n_drift_features):
        position[i], position[N_RELEVANT + i] = N_RELEVANT + i, i
    return position


class LED(Generator):
    """Predict the digit (0..9) shown by a seven-segment display whose segments are noisy.

    Each segment is inverted with probability ``noise``; 17 more binary attributes are random
    bits. With ``n_drift_features = d`` the first d segments trade places with the first d
    irrelevant attributes (MOA's ``LEDGeneratorDrift -d``): a concept change when d changes.

    Args:
        noise: probability that a segment is inverted (MOA's default 10 %).
        irrelevant_features: add the 17 random attributes (24 in all) or keep the 7 segments.
        n_drift_features: 0..7 swapped segments; needs ``irrelevant_features``.
        n_samples, seed: see `Generator`.

    Samples: x float64 (24,) or (7,) of 0.0 / 1.0 (nominal, categories "0", "1"); y int 0..9.

    Raises:
        ValueError: noise outside [0, 1], n_drift_features outside 0..7 or without irrelevant
            features.
    """

    def __init__(self, noise: float = 0.1, irrelevant_features: bool = True, n_drift_features: int = 0,
                 n_samples: int | None = None, seed: int | None = None):
        super().__init__(n_samples, seed)
        self.noise = check_fraction("noise", noise)
        self.irrelevant_features = bool(irrelevant_features)
        self.n_drift_features = check_count("n_drift_features", n_drift_features, 0, N_RELEVANT)
        if self.n_drift_features and not self.irrelevant_features:
            raise ValueError("n_drift_features > 0 needs irrelevant_features=True (segments swap with them)")
        n = N_RELEVANT + (N_IRRELEVANT if self.irrelevant_features else 0)
        self.schema = Schema(tuple(Feature(f"att{i + 1}", "nominal", ("0", "1")) for i in range(n)),
                             "class", tuple(range(10)))

    def _params(self):
        return {"noise": self.noise, "irrelevant_features": self.irrelevant_features,
                "n_drift_features": self.n_drift_features, **super()._params()}

    def _sampler(self):
        rng = self._rng()
        n = self.schema.n_features
        position = attribute_positions(self.n_drift_features)[:n]

        def draw(k):
            y = rng.integers(0, 10, k)
            values = np.empty((k, n))
            segments = SEGMENTS[y]
            values[:, :N_RELEVANT] = np.where(rng.random((k, N_RELEVANT)) < self.noise, 1.0 - segments, segments)
            if n > N_RELEVANT:
                values[:, N_RELEVANT:] = rng.integers(0, 2, (k, n - N_RELEVANT))
            X = np.empty((k, n))
            X[:, position] = values
            return X, y

        return draw
