"""The `Stream` interface shared by file readers and generators."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from edgebayes.streams.schema import Schema


class Stream:
    """An iterable of samples ``(x, y)``: ``x`` a 1-D float64 numpy vector in ``schema`` order,
    ``y`` the label (str for files, int for generators).

    Every ``iter()`` starts again from the first sample (a file is re-read, a generator re-seeded),
    so a stream can be evaluated twice with identical results.

    Attributes:
        schema: the `Schema` of the samples.
        n_samples: number of samples when known in advance (generators), else None.
        endless: True for a generator without ``n_samples`` (it never stops).
    """

    schema: Schema
    n_samples: int | None = None
    endless: bool = False

    def __iter__(self) -> Iterator[tuple[np.ndarray, Any]]:
        raise NotImplementedError

    def to_arrays(self, max_samples: int | None = None) -> tuple[np.ndarray, list]:
        """Load the whole stream (or its first ``max_samples``) in memory: for small files.

        Returns:
            ``(X, y)``: X float64 array (n, n_features), y a list of n labels.

        Raises:
            ValueError: the stream is endless (no ``n_samples``) and ``max_samples`` is None.
        """
        if max_samples is None and self.endless:
            raise ValueError("endless stream: give max_samples")
        rows, labels = [], []
        for i, (x, y) in enumerate(self):
            if max_samples is not None and i >= max_samples:
                break
            rows.append(x)
            labels.append(y)
        X = np.array(rows, dtype=np.float64).reshape(len(rows), self.schema.n_features)
        return X, labels


class Head(Stream):
    """The first ``n`` samples of ``stream`` (fewer if it ends sooner)."""

    def __init__(self, stream: Stream, n: int):
        if int(n) != n or n < 0:
            raise ValueError(f"number of samples must be a non-negative integer, got {n!r}")
        self.stream = stream
        self.n = int(n)
        self.schema = stream.schema
        known = stream.n_samples
        self.n_samples = self.n if stream.endless else (None if known is None else min(known, self.n))

    def __iter__(self):
        n = self.n
        if n == 0:
            return
        for i, sample in enumerate(self.stream, 1):
            yield sample
            if i >= n:
                return

    def __repr__(self):
        return f"Head({self.stream!r}, {self.n})"
