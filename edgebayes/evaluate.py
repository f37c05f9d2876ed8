"""Prequential (test-then-train) evaluation of a learner on a stream (docs/design.md 2.6).

Every labelled sample is first predicted, scored, then learned; the scores are accuracy,
Cohen's kappa and accuracy over a sliding window (`edgebayes.metrics`). Works with any
iterable of ``(x, y)`` and any learner of `edgebayes.base` (it needs ``predict_one``,
``learn_one`` and ``memory_bytes``).
"""

from __future__ import annotations

import dataclasses
import itertools
import sys
import time
from collections.abc import Callable, Iterable

from tqdm import tqdm

from edgebayes.metrics import Accuracy, CohenKappa, WindowAccuracy

__all__ = ["PrequentialResult", "prequential"]


@dataclasses.dataclass(frozen=True)
class PrequentialResult:
    """Scores after ``n_samples`` test-then-train steps.

    Attributes:
        n_samples: samples predicted and learned.
        accuracy: fraction predicted right (a None prediction is wrong).
        kappa: Cohen's kappa of the predictions against the labels.
        window_accuracy: accuracy over the last ``window`` samples.
        window: the window length.
        samples_per_s: samples per second of model time (predict + learn; reading the stream
            excluded), 0.0 before any sample.
        elapsed_s: wall-clock seconds, stream reading included.
        model_bytes: the model's ``memory_bytes()`` at that point.
    """

    n_samples: int
    accuracy: float
    kappa: float
    window_accuracy: float
    window: int
    samples_per_s: float
    elapsed_s: float
    model_bytes: int

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _is_int(value, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


def prequential(
    model,
    stream: Iterable,
    window: int = 1000,
    every: int | None = None,
    callback: Callable[[PrequentialResult], None] | None = None,
    progress: bool = False,
    n_samples: int | None = None,
) -> PrequentialResult:
    """Test-then-train ``model`` on ``stream`` and return the scores.

    Args:
        model: a learner (``predict_one``, ``learn_one``, ``memory_bytes``); it is trained.
        stream: iterable of ``(x, y)``: x a 1-D float vector, y the label.
        window: length of the sliding window of `PrequentialResult.window_accuracy`.
        every: call ``callback`` after every ``every`` samples (default: every ``window``).
        callback: receives a `PrequentialResult` of the scores so far (for learning curves).
        progress: show a tqdm progress bar on stderr.
        n_samples: stop after this many samples (default: the end of the stream).

    Raises:
        ValueError: a bad ``window``, ``every`` or ``n_samples``; or a sample the model refuses
            (the message names the sample's 0-based index).
    """
    if every is not None and not _is_int(every, minimum=1):
        raise ValueError(f"every must be a positive integer, got {every!r}")
    if n_samples is not None and not _is_int(n_samples, minimum=0):
        raise ValueError(f"n_samples must be a non-negative integer, got {n_samples!r}")
    accuracy, kappa, recent = Accuracy(), CohenKappa(), WindowAccuracy(window)
    every = (every or window) if callback is not None else 0
    samples = stream if n_samples is None else itertools.islice(stream, n_samples)
    total = n_samples if n_samples is not None else getattr(stream, "n_samples", None)
    bar = tqdm(samples, total=total, file=sys.stderr, unit=" samples", unit_scale=True,
               mininterval=0.5, disable=not progress)
    clock = time.perf_counter
    model_s = 0.0
    n = 0
    start = clock()

    def result() -> PrequentialResult:
        return PrequentialResult(
            n_samples=n, accuracy=accuracy.get(), kappa=kappa.get(), window_accuracy=recent.get(),
            window=window, samples_per_s=n / model_s if model_s > 0 else 0.0,
            elapsed_s=clock() - start, model_bytes=int(model.memory_bytes()),
        )

    with bar:
        for x, y in bar:
            t0 = clock()
            try:
                y_pred = model.predict_one(x)
                model.learn_one(x, y)
            except ValueError as exc:
                raise ValueError(f"sample {n}: {exc}") from exc
            model_s += clock() - t0
            accuracy.update(y, y_pred)
            kappa.update(y, y_pred)
            recent.update(y, y_pred)
            n += 1
            if every and n % every == 0:
                callback(result())
    return result()
