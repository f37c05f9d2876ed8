"""SEA concepts (Street and Kim, "A streaming ensemble algorithm (SEA) for large-scale
classification", KDD 2001), as MOA's ``SEAGenerator`` and River's ``synth.SEA``."""

from __future__ import annotations

import numpy as np

from edgebayes.streams.generator import Generator, check_count, check_fraction, flip, iid_sampler
from edgebayes.streams.schema import Schema

#: threshold on attrib1 + attrib2 for variants 0..3 (MOA's functions 1..4)
THRESHOLDS = (8.0, 9.0, 7.0, 9.5)


class SEA(Generator):
    """Three features uniform in [0, 10); label 1 when ``attrib1 + attrib2 > threshold``.

    ``attrib3`` is irrelevant. Abrupt drift: switch ``variant`` with `ConceptDriftStream`.

    Args:
        variant: 0..3, threshold 8, 9, 7, 9.5.
        noise: probability that a label is flipped (MOA's default 10 %).
        balance_classes: alternate labels 1, 0, 1, ... (MOA's ``-b``).
        n_samples, seed: see `Generator`.

    Samples: x float64 (3,) ``[attrib1, attrib2, attrib3]``; y int 0 or 1.

    Raises:
        ValueError: variant not in 0..3, noise outside [0, 1].
    """

    def __init__(self, variant: int = 0, noise: float = 0.1, balance_classes: bool = False,
                 n_samples: int | None = None, seed: int | None = None):
        super().__init__(n_samples, seed)
        self.variant = check_count("variant", variant, 0, 3)
        self.noise = check_fraction("noise", noise)
        self.balance_classes = bool(balance_classes)
        self.schema = Schema.numeric(["attrib1", "attrib2", "attrib3"], classes=(0, 1))

    def _params(self):
        return {"variant": self.variant, "noise": self.noise,
                "balance_classes": self.balance_classes, **super()._params()}

    def _sampler(self):
        rng = self._rng()
        threshold = THRESHOLDS[self.variant]

        def candidates(m):
            X = 10.0 * rng.random((m, 3))
            return X, (X[:, 0] + X[:, 1] > threshold).astype(np.int64)

        return iid_sampler(candidates, lambda X, y: (X, flip(rng, y, self.noise)), self.balance_classes)
