"""Concept drift between two streams with MOA's sigmoid (``moa.streams.ConceptDriftStream``)."""

from __future__ import annotations

import numpy as np

from edgebayes.streams.generator import Generator, check_count
from edgebayes.streams.schema import Schema


def drift_probability(t: np.ndarray, position: float, width: float) -> np.ndarray:
    """MOA's probability that sample ``t`` (1-based) comes from the new concept:
    ``1 / (1 + exp(-4 (t - position) / width))`` (0.5 at ``position``; 0.018 to 0.982 over
    ``position -/+ width``)."""
    z = np.clip(-4.0 * (np.asarray(t, dtype=np.float64) - position) / width, -700.0, 700.0)
    return 1.0 / (1.0 + np.exp(z))


class ConceptDriftStream(Generator):
    """``stream`` before the drift, ``drift_stream`` after, mixed around ``position``.

    Sample t (1-based) is the next sample of ``drift_stream`` with probability
    `drift_probability` (t, position, width), else the next sample of ``stream``; a stream
    only advances when it is used, so nesting ConceptDriftStreams chains drifts: in
    ``CDS(a, CDS(b, c, p), p)`` the drift to c comes p samples after the inner stream first
    serves, about 2p. ``width`` 1 is an abrupt change, larger widths gradual ones.

    Args:
        stream, drift_stream: generators with the same number of features (their own
            ``n_samples`` are ignored: they are drawn from as needed).
        position: centre of the change, in samples (>= 0).
        width: length of the change, in samples (>= 1).
        n_samples, seed: see `Generator`; ``seed`` drives the choice between the two streams,
            each stream keeps its own seed.

    Schema: ``stream``'s features; classes the union of both streams' classes.

    Raises:
        ValueError: not generators, different numbers of features, position < 0, width < 1.
    """

    def __init__(self, stream: Generator, drift_stream: Generator, position: int = 5000, width: int = 1000,
                 n_samples: int | None = None, seed: int | None = None):
        super().__init__(n_samples, seed)
        for s in (stream, drift_stream):
            if not isinstance(s, Generator):
                raise ValueError(f"ConceptDriftStream mixes generators, got {type(s).__name__}")
        if stream.schema.n_features != drift_stream.schema.n_features:
            raise ValueError(
                f"streams differ in number of features: {stream.schema.n_features} and "
                f"{drift_stream.schema.n_features}")
        self.stream = stream
        self.drift_stream = drift_stream
        self.position = check_count("position", position, 0)
        self.width = check_count("width", width, 1)
        a, b = stream.schema.classes, drift_stream.schema.classes
        classes = None if a is None or b is None else tuple(dict.fromkeys(a + b))
        self.schema = Schema(stream.schema.features, stream.schema.target, classes)

    def _params(self):
        return {"stream": self.stream, "drift_stream": self.drift_stream, "position": self.position,
                "width": self.width, **super()._params()}

    def _sampler(self):
        rng = self._rng()
        before, after = self.stream.sampler(), self.drift_stream.sampler()
        seen = [0]

        def draw(k):
            t = np.arange(seen[0] + 1, seen[0] + k + 1)
            seen[0] += k
            new = rng.random(k) <= drift_probability(t, self.position, self.width)
            n_new = int(new.sum())
            if n_new == 0:
                return before(k)
            if n_new == k:
                return after(k)
            Xa, ya = before(k - n_new)
            Xb, yb = after(n_new)
            X = np.empty((k, Xa.shape[1]))
            y = np.empty(k, dtype=np.result_type(ya, yb))
            X[~new], y[~new] = Xa, ya
            X[new], y[new] = Xb, yb
            return X, y

        return draw
