"""Base of the synthetic streams: numpy draws in chunks, samples yielded one at a time.

A generator's samples come from a *sampler*, a closure ``draw(k) -> (X, y)`` that returns the
next ``k`` samples (X float64 (k, n_features), y int64 (k,)) and keeps whatever state the
stream has (moving centroids, a rotating hyperplane, the position inside a drift). Drawing
in chunks costs about one numpy call per feature per chunk instead of per sample, while
``iter(stream)`` still hands out one ``(x, y)`` at a time. `ConceptDriftStream` pulls from its
two streams' samplers only the samples it uses, as MOA does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from edgebayes.streams.base import Stream

Sampler = Callable[[int], tuple[np.ndarray, np.ndarray]]

#: samples drawn per numpy chunk: large enough to amortise numpy's per-call cost, small
#: enough to stay in cache and keep memory constant
CHUNK = 2048


def check_fraction(name: str, value: float) -> float:
    """``value`` as a float in [0, 1]; ``ValueError`` naming ``name`` otherwise."""
    value = float(value)
    if not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value}")
    return value


def check_count(name: str, value, low: int = 0, high: int | None = None) -> int:
    """``value`` as an int in [low, high]; ``ValueError`` naming ``name`` otherwise."""
    if isinstance(value, bool) or int(value) != value or value < low or (high is not None and value > high):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"{name} must be an integer {bound}, got {value!r}")
    return int(value)


class Generator(Stream):
    """A seeded synthetic stream.

    Args:
        n_samples: number of samples; None = endless (use `Head`, ``to_arrays(max_samples)``
            or ``itertools.islice``).
        seed: seed of the numpy Generator (``numpy.random.default_rng``). None draws fresh
            entropy once, at construction, so iterating the same object twice still gives
            the same samples.

    Subclasses implement ``_sampler() -> draw(k)``, built from ``self._rng()``.
    """

    def __init__(self, n_samples: int | None = None, seed: int | None = None):
        self.n_samples = None if n_samples is None else check_count("n_samples", n_samples)
        self.seed = seed
        self._entropy = np.random.SeedSequence(seed).entropy

    @property
    def endless(self) -> bool:
        return self.n_samples is None

    def _rng(self, stream: int = 0) -> np.random.Generator:
        """The numpy Generator of this stream's ``stream``-th independent random sequence."""
        return np.random.default_rng(np.random.SeedSequence(self._entropy, spawn_key=(stream,)))

    def _sampler(self) -> Sampler:
        raise NotImplementedError

    def sampler(self) -> Sampler:
        """A fresh ``draw(k)`` from the start of the stream whose samples do not depend on how
        they are requested: k at a time or all at once give the same sequence (what
        `ConceptDriftStream` uses, so a concept inside a drift is the concept alone)."""
        return buffered(self._sampler(), self.schema.n_features)

    def batches(self) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The stream as consecutive chunks ``(X, y)``: X float64 (<= `CHUNK`, n_features), y int64.

        The same samples as ``iter(self)`` and `to_arrays` (the chunk size is fixed because a
        sampler's draws depend on it), for batch learners (``learn_many``).
        """
        draw = self.sampler()
        remaining = self.n_samples
        while remaining is None or remaining > 0:
            k = CHUNK if remaining is None else min(CHUNK, remaining)
            yield draw(k)
            if remaining is not None:
                remaining -= k

    def __iter__(self) -> Iterator[tuple[np.ndarray, int]]:
        for X, y in self.batches():
            yield from zip(X, y.tolist())

    def to_arrays(self, max_samples: int | None = None) -> tuple[np.ndarray, list]:
        """The first ``max_samples`` samples (default all) as ``(X, y)``: X float64
        (n, n_features), y a list of int labels; the same samples as ``iter(self)``.

        Raises:
            ValueError: endless stream and no ``max_samples``.
        """
        if max_samples is None and self.endless:
            raise ValueError("endless stream: give max_samples")
        n = self.n_samples if max_samples is None else check_count("max_samples", max_samples)
        if self.n_samples is not None:
            n = min(n, self.n_samples)
        Xs, ys, have = [], [], 0
        for X, y in self.batches():
            if have >= n:
                break
            Xs.append(X[: n - have])
            ys.append(y[: n - have])
            have += len(Xs[-1])
        if not Xs:
            return np.empty((0, self.schema.n_features)), []
        return np.concatenate(Xs), np.concatenate(ys).tolist()

    def __repr__(self):
        params = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({params})"

    def _params(self) -> dict:
        return {"n_samples": self.n_samples, "seed": self.seed}


def buffered(draw: Sampler, n_features: int) -> Sampler:
    """``draw`` called with `CHUNK` only, its chunks served in pieces of any size."""
    chunk: list = [None, None]
    used = [CHUNK]

    def take(k: int):
        parts = []
        while k > 0:
            if used[0] == CHUNK:
                chunk[:] = draw(CHUNK)
                used[0] = 0
            m = min(k, CHUNK - used[0])
            parts.append((chunk[0][used[0]:used[0] + m], chunk[1][used[0]:used[0] + m]))
            used[0] += m
            k -= m
        if len(parts) == 1:
            return parts[0]
        if not parts:
            return np.empty((0, n_features)), np.empty(0, dtype=np.int64)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    return take


def iid_sampler(
    candidates: Callable[[int], tuple[np.ndarray, np.ndarray]],
    finish: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
    balance_classes: bool = False,
) -> Sampler:
    """A sampler for streams whose samples are independent draws.

    Args:
        candidates: ``m -> (X, y)``, m fresh samples with their noise-free labels (0/1 when
            balancing).
        finish: applied to the chosen samples (label noise, perturbation of values), or None.
        balance_classes: labels alternate 1, 0, 1, ... (MOA's ``balanceClasses``, which
            starts with class 1): each chosen sample is the next candidate of the wanted
            class, other candidates wait in a pool. Every kept sample is still an
            independent draw from its class, as with MOA's rejection loop.
    """
    pools: list[np.ndarray] = []
    first = [1]  # class of the next balanced sample

    def balanced(k: int):
        y = (first[0] + np.arange(k, dtype=np.int64)) % 2
        need = (k - int(y.sum()), int(y.sum()))
        while not pools or len(pools[0]) < need[0] or len(pools[1]) < need[1]:
            Xc, yc = candidates(max(2 * k, 256))
            if not pools:
                pools.extend(Xc[:0] for _ in range(2))
            for c in (0, 1):
                pools[c] = np.concatenate([pools[c], Xc[yc == c]])
        X = np.empty((k, pools[0].shape[1]))
        for c in (0, 1):
            X[y == c] = pools[c][: need[c]]
            # surplus of the frequent class is dropped (as MOA's rejection loop): memory stays bounded
            pools[c] = pools[c][need[c]: need[c] + 2 * CHUNK]
        first[0] = (first[0] + k) % 2
        return X, y

    def draw(k: int):
        X, y = balanced(k) if balance_classes else candidates(k)
        return (X, y) if finish is None else finish(X, y)

    return draw


def flip(rng: np.random.Generator, y: np.ndarray, noise: float) -> np.ndarray:
    """Binary labels with each flipped with probability ``noise`` (MOA's noisePercentage)."""
    if noise <= 0.0:
        return y
    return np.where(rng.random(len(y)) < noise, 1 - y, y)
