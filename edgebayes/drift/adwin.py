"""ADWIN2: adaptive windowing over an exponential histogram (Bifet and Gavalda 2007).

Semantics follow MOA's ``moa.classifiers.core.driftdetection.ADWIN`` line for line where it
decides anything (cut test, arithmetic order, the window kept after a cut), so that the
reference vectors in ``../shared/vectors/adwin/`` are reproduced exactly.
"""

from __future__ import annotations

import math
import sys

_log = math.log
_sqrt = math.sqrt
_TWO_THIRDS = 2.0 / 3  # MOA's ``(double) 2 / 3``
_LIST_BYTES = sys.getsizeof([])  # empty list header
_FLOAT_BYTES = sys.getsizeof(0.0)


def _as_input(x) -> float:
    """``x`` as a float; ValueError for anything that is not a real number (str, None, ...)."""
    if isinstance(x, (str, bytes)) or not hasattr(x, "__float__"):
        raise ValueError(f"ADWIN input must be a real number, got {x!r}")
    return float(x)


class ADWIN:
    """ADaptive WINdowing change detector and mean estimator (ADWIN2).

    The window of recent inputs is summarised by an exponential histogram: row ``i`` holds up
    to ``max_buckets`` buckets of ``2**i`` inputs each (total and variance per bucket); when a
    row gets one bucket too many, its two oldest buckets merge into one bucket of the next row.
    Every ``clock`` inputs, once the window holds more than ``grace_period`` inputs, every
    split of the window into an older part W0 and a newer part W1 at a bucket boundary is
    tested (Bifet and Gavalda 2007, ADWIN2, with the Bernstein-type bound of MOA's 2008
    version):

        |mean(W0) - mean(W1)| > sqrt(2 m v dd) + 2/3 dd m,
        dd = ln(2 ln(n) / delta),  m = 1/(n0 - min_window_length + 1) + 1/(n1 - min_window_length + 1),

    with ``n`` the window length and ``v`` the window's population variance; only splits with
    both parts longer than ``min_window_length + 1`` count. While some split passes, the
    oldest bucket is dropped and the test starts again. An input that dropped anything is a
    *drift*: ``update`` returns True. The shrunken window is kept (the algorithm's own
    behaviour, as MOA; later checks may cut it again); call ``reset()`` for a fresh detector.

    Parameters are River's names. ``grace_period`` is the smallest window length (exclusive)
    at which the cut test runs: MOA hard-codes it to 10 (``mintMinimLongitudWindow``), River
    exposes it with the same meaning and default, so the default reproduces MOA. Where River
    differs from MOA we follow MOA: sub-windows need more than ``min_window_length + 1``
    inputs (River: at least ``min_window_length``), and River resets the whole detector on the
    input after a drift while this keeps the window.

    Args:
        delta: confidence of the cut test, in (0, 1); smaller means fewer, later detections.
        clock: the cut test runs every ``clock`` inputs (int >= 1); detection may lag by up to
            ``clock - 1`` inputs (casebook C24).
        max_buckets: buckets per histogram row before two merge (int >= 2).
        min_window_length: sub-windows shorter than ``min_window_length + 2`` are not tested
            (int >= 1).
        grace_period: no cut test while the window holds ``grace_period`` inputs or fewer
            (int >= 0).

    Memory is O(max_buckets * log2(width / max_buckets)) floats; one input costs O(1)
    amortised, one cut test O(max_buckets * log2(width)).

    Example:
        >>> adwin = ADWIN()
        >>> drifts = [i for i, x in enumerate([0.0] * 1000 + [1.0] * 1000) if adwin.update(x)]
        >>> drifts
        [1023, 1055, 1087]
        >>> adwin.width, adwin.estimation
        (1000, 1.0)

    Reference: A. Bifet and R. Gavalda, "Learning from time-changing data with adaptive
    windowing", SIAM SDM 2007; MOA ``ADWIN.java``.
    """

    __slots__ = (
        "delta", "clock", "max_buckets", "min_window_length", "grace_period",
        "drift_detected", "_width", "_total", "_variance", "_time", "_n_detections",
        "_estimation_before_drift", "_totals", "_variances",
    )  # fmt: skip

    def __init__(
        self,
        delta: float = 0.002,
        clock: int = 32,
        max_buckets: int = 5,
        min_window_length: int = 5,
        grace_period: int = 10,
    ):
        if not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
            raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
        for name, value, low in (
            ("clock", clock, 1),
            ("max_buckets", max_buckets, 2),
            ("min_window_length", min_window_length, 1),
            ("grace_period", grace_period, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
        self.delta = delta
        self.clock = clock
        self.max_buckets = max_buckets
        self.min_window_length = min_window_length
        self.grace_period = grace_period
        self.reset()

    def reset(self) -> None:
        """Empty the window and clear all counters and flags; parameters are kept."""
        self.drift_detected = False
        self._width = 0
        self._total = 0.0
        self._variance = 0.0  # sum of squared deviations from the window mean
        self._time = 0  # inputs since reset; the cut test runs when it is a multiple of clock
        self._n_detections = 0
        self._estimation_before_drift = 0.0
        # Histogram rows, newest row (size 1) first; within a row, oldest bucket first.
        self._totals: list[list[float]] = [[]]
        self._variances: list[list[float]] = [[]]

    # -- the hot path -------------------------------------------------------------------------

    def update(self, x: float) -> bool:
        """Add one input; True when it made the window shrink (a drift).

        Args:
            x: a finite real number (bool, int, float, numpy scalar). For an error stream:
                1 = wrong, 0 = right.

        Returns:
            bool, also kept in ``drift_detected``.

        Raises:
            ValueError: ``x`` is NaN, +/-inf or not a real number; the detector is unchanged.
        """
        if x.__class__ is not float:
            x = _as_input(x)
        if x - x:  # NaN for NaN and +/-inf, 0.0 otherwise
            raise ValueError(f"ADWIN input must be finite, got {x}")
        w = self._width
        total = self._total
        if w:  # MOA insertElement: incremental sum of squared deviations
            d = x - total / w
            self._variance += w * d * d / (w + 1)
        self._width = w + 1
        self._total = total + x
        row = self._totals[0]
        row.append(x)
        self._variances[0].append(0.0)
        if len(row) > self.max_buckets:
            self._compress()
        t = self._time + 1
        self._time = t
        if t % self.clock or w + 1 <= self.grace_period:
            self.drift_detected = False
            return False
        return self._check(total / w if w else 0.0)

    def _compress(self) -> None:
        """Merge the two oldest buckets of each overfull row into the next row (MOA order)."""
        totals, variances, limit = self._totals, self._variances, self.max_buckets
        i = 0
        while True:
            row, vrow = totals[i], variances[i]
            if len(row) <= limit:
                return
            if i + 1 == len(totals):
                totals.append([])
                variances.append([])
            n = 1 << i
            a, b = row[0], row[1]
            du = a / n - b / n
            totals[i + 1].append(a + b)
            variances[i + 1].append(vrow[0] + vrow[1] + n * n * du * du / (n + n))
            del row[:2], vrow[:2]
            i += 1

    def _check(self, estimation_before: float) -> bool:
        """MOA's reduce-window loop: drop the oldest bucket while any split passes the test."""
        totals = self._totals
        longer = self.min_window_length + 1  # both parts must hold more than this
        shift = self.min_window_length - 1  # n - min_window_length + 1 == n - shift
        delta = self.delta
        cut = False
        while True:
            w = self._width
            v = self._variance / w
            dd = _log(2 * _log(w) / delta)
            n0, n1, u0, u1 = 0, w, 0.0, self._total
            found = False
            for i in range(len(totals) - 1, -1, -1):
                size = 1 << i
                for t in totals[i]:
                    n0 += size
                    n1 -= size
                    u0 += t
                    u1 -= t
                    if n1 <= longer:
                        break
                    if n0 > longer:
                        m = 1.0 / (n0 - shift) + 1.0 / (n1 - shift)
                        eps = _sqrt(2 * m * v * dd) + _TWO_THIRDS * dd * m
                        if abs(u0 / n0 - u1 / n1) > eps:
                            found = True
                            break
                else:
                    continue
                break  # a split passed, or W1 got too short for any later split
            if not found:
                break
            cut = True
            self._drop_oldest()
        if cut:
            self._n_detections += 1
            self._estimation_before_drift = estimation_before
        self.drift_detected = cut
        return cut

    def _drop_oldest(self) -> None:
        """Remove the oldest bucket and its share of width, total and variance (MOA)."""
        last = len(self._totals) - 1
        row, vrow = self._totals[last], self._variances[last]
        n = 1 << last
        t = row[0]
        w = self._width - n
        total = self._total - t
        d = t / n - total / w
        self._variance -= vrow[0] + n * w * d * d / (n + w)
        self._width = w
        self._total = total
        del row[0], vrow[0]
        if not row and last:
            del self._totals[last], self._variances[last]

    # -- read-outs ----------------------------------------------------------------------------

    @property
    def width(self) -> int:
        """Number of inputs in the window."""
        return self._width

    @property
    def estimation(self) -> float:
        """Mean of the window (0.0 for an empty window; MOA gives NaN there)."""
        return self._total / self._width if self._width else 0.0

    @property
    def variance(self) -> float:
        """Population variance of the window (MOA's ``getVariance``); 0.0 when empty."""
        return self._variance / self._width if self._width else 0.0

    @property
    def total(self) -> float:
        """Sum of the inputs in the window."""
        return self._total

    @property
    def n_detections(self) -> int:
        """Inputs that made the window shrink, since construction or the last ``reset()``."""
        return self._n_detections

    @property
    def estimation_before_drift(self) -> float:
        """Window mean just before the latest input that caused a drift (0.0 before any)."""
        return self._estimation_before_drift

    @property
    def n_buckets(self) -> int:
        """Buckets currently in the histogram."""
        return sum(len(row) for row in self._totals)

    def memory_bytes(self) -> int:
        """Bytes held, counted from shapes: two row lists (totals, variances) per histogram row
        sized for ``max_buckets + 1`` pointers, two floats per bucket, and the object itself."""
        rows = len(self._totals)
        per_row = 2 * (_LIST_BYTES + 8 * (self.max_buckets + 1))
        outer = 2 * (_LIST_BYTES + 8 * rows)
        return sys.getsizeof(self) + outer + rows * per_row + 2 * _FLOAT_BYTES * self.n_buckets

    # -- copies and checkpoints ---------------------------------------------------------------

    def _params(self) -> dict:
        return {
            "delta": self.delta,
            "clock": self.clock,
            "max_buckets": self.max_buckets,
            "min_window_length": self.min_window_length,
            "grace_period": self.grace_period,
        }

    def clone(self) -> "ADWIN":
        """A fresh, empty detector with the same parameters."""
        return ADWIN(**self._params())

    def state(self) -> dict:
        """Plain-data state (``"kind": "adwin"``); floats are stored exactly."""
        return {
            "kind": "adwin",
            "params": self._params(),
            "drift_detected": self.drift_detected,
            "width": self._width,
            "total": self._total,
            "variance": self._variance,
            "time": self._time,
            "n_detections": self._n_detections,
            "estimation_before_drift": self._estimation_before_drift,
            "totals": [list(row) for row in self._totals],
            "variances": [list(row) for row in self._variances],
        }

    @classmethod
    def from_state(cls, state: dict) -> "ADWIN":
        """Rebuild the detector ``state()`` described.

        Raises:
            ValueError: not an ADWIN state, or its histogram does not fit its parameters.
        """
        if not isinstance(state, dict) or state.get("kind") != "adwin":
            raise ValueError("not an ADWIN state (kind must be 'adwin')")
        out = cls(**state["params"])
        totals = [[float(t) for t in row] for row in state["totals"]]
        variances = [[float(v) for v in row] for row in state["variances"]]
        if (
            not totals
            or [len(r) for r in totals] != [len(r) for r in variances]
            or any(len(r) > out.max_buckets for r in totals)
            or sum(len(r) << i for i, r in enumerate(totals)) != state["width"]
        ):
            raise ValueError("ADWIN state: histogram rows do not match width and max_buckets")
        out.drift_detected = bool(state["drift_detected"])
        out._width = int(state["width"])
        out._total = float(state["total"])
        out._variance = float(state["variance"])
        out._time = int(state["time"])
        out._n_detections = int(state["n_detections"])
        out._estimation_before_drift = float(state["estimation_before_drift"])
        out._totals = totals
        out._variances = variances
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"ADWIN({args})"
