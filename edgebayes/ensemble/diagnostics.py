"""Ensemble diagnostics over time: diversity (average pairwise kappa) and average tree depth.

Gomes, Read and Bifet (2019), section V (figures 3-6), track along the stream how much the
members agree and how deep their trees grow: random subspaces keep members diverse (low kappa) and shallower, while
resampling alone lets them converge once a concept is stable (kappa rising towards 1).

Kappa between two members is Cohen's kappa of their predictions over a window of samples:
(p_o - p_e) / (1 - p_e), with p_o the fraction of samples where they agree and p_e the
agreement expected by chance from each member's label frequencies (Margineantu and Dietterich
1997, "kappa-error" diagrams). 1 = identical predictions, 0 = agreement by chance only.

`DiversityMonitor` is the evaluation-loop helper: call it after every ``learn_one`` (for
example from the prequential evaluation callback) and read ``kappa()`` / ``average_depth()``
whenever a point of the curve is due.
"""

from __future__ import annotations

import numbers

import numpy as np

__all__ = ["DiversityMonitor", "average_depth", "pairwise_kappa"]


def pairwise_kappa(predictions) -> float:
    """Average Cohen's kappa over all pairs of members.

    Args:
        predictions: array-like (n_samples, n_members) of labels (any hashable; None = no
            prediction, its own category).

    Returns:
        float: the mean over the n_members (n_members - 1) / 2 pairs; a pair whose chance
        agreement is 1 (both always predict the same single label) counts as kappa 1. NaN
        with fewer than 2 members or no sample.
    """
    rows = [list(r) for r in predictions]
    if not rows or len(rows[0]) < 2:
        return float("nan")
    codes: dict = {}
    P = np.array([[codes.setdefault(v, len(codes)) for v in r] for r in rows], dtype=np.intp)
    n, m = P.shape
    L = len(codes)
    freq = np.stack([np.bincount(P[:, j], minlength=L) for j in range(m)]) / n  # (m, L)
    kappas = []
    for a in range(m - 1):
        agree = (P[:, a + 1:] == P[:, [a]]).mean(axis=0)  # (m - a - 1,)
        chance = freq[a + 1:] @ freq[a]
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.where(chance < 1.0, (agree - chance) / (1.0 - chance), 1.0)
        kappas.extend(k.tolist())
    return float(np.mean(kappas))


def average_depth(ensemble) -> float:
    """Mean ``depth`` of the ensemble's member learners (NaN if none has a depth).

    Args:
        ensemble: an object with ``members`` (a list of learners), e.g. `SRPClassifier`.
    """
    depths = [m.depth for m in ensemble.members if hasattr(m, "depth")]
    return float(np.mean(depths)) if depths else float("nan")


class DiversityMonitor:
    """Wraps an ensemble to keep its members' test predictions over the last ``window`` samples.

    Use it in place of the ensemble in an evaluation loop; ``learn_one``, ``predict_one``,
    ``predict_proba_one`` and ``memory_bytes`` are the ensemble's (the bytes of this window are
    not counted: it is a measuring instrument, not part of the model). After each
    ``learn_one`` it stores ``ensemble.last_member_predictions``, so the evaluation callback
    can read `kappa` and `average_depth` whenever a point of the curve is due:

        monitor = DiversityMonitor(srp, window=1000)
        curve = []
        prequential(monitor, stream, every=1000,
                    callback=lambda r: curve.append((r.n_samples, monitor.kappa(), monitor.average_depth())))

    Args:
        ensemble: an ensemble with ``last_member_predictions`` and ``members`` (`SRPClassifier`).
        window: samples the kappa is computed over (int >= 2).

    Raises:
        ValueError: an invalid ``window`` or an object that is not such an ensemble.
    """

    def __init__(self, ensemble, window: int = 1000):
        if isinstance(window, bool) or not isinstance(window, numbers.Integral) or window < 2:
            raise ValueError(f"window must be an int >= 2, got {window!r}")
        if not hasattr(ensemble, "last_member_predictions") or not hasattr(ensemble, "members"):
            raise ValueError(f"{type(ensemble).__name__} exposes no member predictions")
        self.ensemble = ensemble
        self.window = window
        self._rows: list = []
        self._next = 0  # ring position once the window is full

    def learn_one(self, x, y, w: float = 1.0) -> None:
        """The ensemble's ``learn_one``, then record its members' test predictions."""
        self.ensemble.learn_one(x, y, w)
        row = self.ensemble.last_member_predictions
        if len(self._rows) < self.window:
            self._rows.append(row)
        else:
            self._rows[self._next] = row
            self._next = (self._next + 1) % self.window

    def predict_one(self, x):
        return self.ensemble.predict_one(x)

    def predict_proba_one(self, x) -> dict:
        return self.ensemble.predict_proba_one(x)

    def memory_bytes(self) -> int:
        return self.ensemble.memory_bytes()

    def kappa(self) -> float:
        """Average pairwise kappa of the members over the window (NaN before any sample)."""
        return pairwise_kappa(self._rows) if self._rows else float("nan")

    def average_depth(self) -> float:
        """Mean depth of the members' trees now (NaN for learners without a depth)."""
        return average_depth(self.ensemble)
