"""Incremental classification metrics for prequential evaluation (docs/design.md 2.6).

Each metric takes ``update(y_true, y_pred)`` one sample at a time in O(1) and answers ``get()``
at any moment. A prediction of None (a model that has learned nothing yet) is a wrong answer.
Names as River's ``metrics.Accuracy`` and ``metrics.CohenKappa``.
"""

from __future__ import annotations

from collections import deque


class Accuracy:
    """Fraction of correct predictions (0.0 before any sample)."""

    def __init__(self):
        self.n = 0
        self.n_correct = 0

    def update(self, y_true, y_pred) -> None:
        self.n += 1
        self.n_correct += bool(y_true == y_pred)

    def get(self) -> float:
        return self.n_correct / self.n if self.n else 0.0


class CohenKappa:
    """Cohen's kappa: (p0 - pe) / (1 - pe), agreement beyond chance.

    p0 is the accuracy, pe = sum_c (true_c / n)(pred_c / n) the agreement expected from the two
    marginals. 0.0 before any sample and when pe = 1 (one class everywhere), as River.
    """

    def __init__(self):
        self.n = 0
        self.n_correct = 0
        self.true_counts: dict = {}
        self.pred_counts: dict = {}

    def update(self, y_true, y_pred) -> None:
        self.n += 1
        self.n_correct += bool(y_true == y_pred)
        self.true_counts[y_true] = self.true_counts.get(y_true, 0) + 1
        self.pred_counts[y_pred] = self.pred_counts.get(y_pred, 0) + 1

    def get(self) -> float:
        if not self.n:
            return 0.0
        n = self.n
        p0 = self.n_correct / n
        pe = sum(c * self.pred_counts.get(y, 0) for y, c in self.true_counts.items()) / (n * n)
        return (p0 - pe) / (1.0 - pe) if pe != 1.0 else 0.0


class WindowAccuracy:
    """Accuracy over the last ``window`` samples (fewer at the start; 0.0 before any).

    Raises:
        ValueError: ``window`` is not a positive integer.
    """

    def __init__(self, window: int = 1000):
        if isinstance(window, bool) or not isinstance(window, int) or window < 1:
            raise ValueError(f"window must be a positive integer, got {window!r}")
        self.window = window
        self._hits: deque = deque(maxlen=window)
        self.n_correct = 0

    def update(self, y_true, y_pred) -> None:
        hit = bool(y_true == y_pred)
        if len(self._hits) == self.window:
            self.n_correct -= self._hits[0]
        self._hits.append(hit)
        self.n_correct += hit

    def get(self) -> float:
        return self.n_correct / len(self._hits) if self._hits else 0.0
