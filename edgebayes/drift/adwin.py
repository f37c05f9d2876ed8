"""ADWIN2: adaptive windowing over an exponential histogram (Bifet and Gavalda 2007).

Semantics follow MOA's ``moa.classifiers.core.driftdetection.ADWIN`` line for line where it
decides anything (cut test, arithmetic order, the window kept after a cut), so that MOA's
reference vectors (tests/test_adwin.py, when the reference material is present) are
reproduced exactly.

`ReferenceADWIN` is the pure-Python reference; `ADWIN` is the compiled one
(`edgebayes._core.adwin`, same fields, same results bit for bit) when `edgebayes.backend()`,
chosen at import, is ``"compiled"``, the reference otherwise. What both share (parameters,
read-outs, memory, state) is `ADWINShared`.
"""

from __future__ import annotations

import math
import struct
import sys
from array import array

from edgebayes._backend import choose
from edgebayes.base import check_count, check_finite, refuse_malformed

_log = math.log
_sqrt = math.sqrt
_TWO_THIRDS = 2.0 / 3  # MOA's ``(double) 2 / 3``
#: most doubles a buffer sized by ``clock`` or ``max_buckets`` holds (a corrupt 10**18 is refused)
MAX_ALLOCATED = 65536
_ZERO = array("d", [0.0])
_ONE_COUNT = array("q", [0])
_ARRAY_BYTES = sys.getsizeof(array("d"))  # header of an empty array; items are 8 bytes each


#: input type -> converter; 0/1 error streams often arrive as int or bool
_CONVERT = {int: float, bool: float}


def as_input(x) -> float:
    """An ADWIN input that is not a float (int, bool, numpy scalar, ...) as a float.

    Raises:
        ValueError: ``x`` is not a real number (str, None, ...) or too large for a float.
    """
    convert = _CONVERT.get(x.__class__)
    if convert is None:
        if isinstance(x, (str, bytes)) or not hasattr(x, "__float__"):
            raise ValueError(f"ADWIN input must be a real number, got {x!r}")
        convert = float
    try:
        return convert(x)
    except OverflowError:
        raise ValueError(f"ADWIN input too large for a float: {x!r}") from None


def _zeros(n: int) -> array:
    """``n`` zero doubles, allocated exactly (``array * n`` does not over-allocate)."""
    return array("d", _ZERO) * n


class ADWINShared:
    """What every ADWIN implementation shares: parameter checks, reset, read-outs, memory,
    copies and checkpoints, over the fields listed in :class:`ADWIN`'s ``__slots__``. An
    implementation adds ``update(x)`` and ``_flush()`` (fold the pending inputs in)."""

    __slots__ = ()

    def __init__(
        self,
        delta: float = 0.002,
        clock: int = 32,
        max_buckets: int = 5,
        min_window_length: int = 5,
        grace_period: int = 10,
    ):
        if isinstance(delta, bool) or not (isinstance(delta, (int, float)) and 0.0 < delta < 1.0):
            raise ValueError(f"delta must be a number in (0, 1), got {delta!r}")
        for name, value, low, high in (  # clock and max_buckets size buffers allocated here
            ("clock", clock, 1, MAX_ALLOCATED),
            ("max_buckets", max_buckets, 2, MAX_ALLOCATED),
            ("min_window_length", min_window_length, 1, math.inf),
            ("grace_period", grace_period, 0, math.inf),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                bound = f">= {low}" if high == math.inf else f"in [{low}, {high}]"
                raise ValueError(f"{name} must be an int {bound}, got {value!r}")
        self.delta = delta
        self.clock = clock
        self.max_buckets = max_buckets
        self.min_window_length = min_window_length
        self.grace_period = grace_period
        self.reset()

    def reset(self) -> None:
        """Empty the window and clear all counters and flags; parameters are kept."""
        self._width = 0
        self._total = 0.0
        self._variance = 0.0  # sum of squared deviations from the window mean
        self._ticks = self.clock  # inputs until the next cut test (MOA: time % clock == 0)
        self._drifted = False  # the latest cut test cut
        self._n_detections = 0
        self._estimation_before_drift = 0.0
        # Histogram in flat float64 buffers, ``max_buckets`` slots per row, newest row (bucket
        # size 1) first; within a row, oldest bucket first. Row i's totals live in
        # _totals[i*M : i*M + _counts[i]], its variances (rows >= 1: row 0 holds single inputs,
        # variance 0) in _variances[(i-1)*M : ...]. Buffers are re-allocated exactly when a row
        # is added or removed, so the bytes held follow from the number of rows alone.
        self._totals = _zeros(self.max_buckets)
        self._variances = array("d")
        self._counts = array("q", _ONE_COUNT)
        # Inputs not yet in the histogram, newest at the lowest index: _pending[_ticks:_top].
        # Nothing reads the histogram before the next cut test or read-out, which fold them in
        # oldest first: the same buckets, totals and variances as inserting each on arrival.
        self._pending = _zeros(self.clock)
        self._top = self.clock

    # -- read-outs (they fold pending inputs in first) ----------------------------------------

    @property
    def drift_detected(self) -> bool:
        """True when the latest input caused a drift; False after any other input or reset."""
        return self._drifted and self._ticks == self.clock

    @property
    def width(self) -> int:
        """Number of inputs in the window."""
        self._flush()
        return self._width

    @property
    def estimation(self) -> float:
        """Mean of the window (0.0 for an empty window; MOA gives NaN there)."""
        self._flush()
        return self._total / self._width if self._width else 0.0

    @property
    def variance(self) -> float:
        """Population variance of the window (MOA's ``getVariance``); 0.0 when empty."""
        self._flush()
        return self._variance / self._width if self._width else 0.0

    @property
    def total(self) -> float:
        """Sum of the inputs in the window."""
        self._flush()
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
        """Buckets in the histogram."""
        self._flush()
        return sum(self._counts)

    def _bytes_for(self, rows: int) -> int:
        """Bytes held with ``rows`` histogram rows: the object, four array headers, and 8-byte
        items: ``max_buckets`` totals per row, ``max_buckets`` variances per row above row 0,
        one count per row, ``clock`` pending inputs. The buffers are allocated exactly."""
        items = (2 * rows - 1) * self.max_buckets + rows + self.clock
        return OBJECT_BYTES + 4 * _ARRAY_BYTES + 8 * items

    def memory_bytes(self) -> int:
        """Bytes held, from the shapes of the buffers (see ``max_memory_bytes``): (2 M + 1) * 8
        bytes per histogram row (M = ``max_buckets``) plus a constant."""
        return self._bytes_for(len(self._counts))

    def max_memory_bytes(self, max_width: int = 2**32) -> int:
        """The most bytes ``memory_bytes()`` can report while the window holds at most
        ``max_width`` inputs (with these parameters, whatever the inputs).

        Memory depends only on the number of histogram rows. Below the top row every row holds
        M - 1 or M buckets (a row that overflows to M + 1 merges back to M - 1; cuts only take
        buckets from the top row), and the top row at least one, so a window with R rows holds
        at least (M - 1) (2**(R-1) - 1) + 2**(R-1) = M 2**(R-1) - M + 1 inputs. The bound is
        the size with the largest such R; a detector that reaches that width by inserting
        inputs without a cut has exactly that many rows.

        Args:
            max_width: largest window length to allow for (int >= 0). The window can only
                reach it after that many inputs without a cut; 2**32 inputs take 1.4 years at
                100 per second.

        Returns:
            bytes (int).

        Raises:
            ValueError: ``max_width`` is not an int >= 0.
        """
        if isinstance(max_width, bool) or not isinstance(max_width, int) or max_width < 0:
            raise ValueError(f"max_width must be an int >= 0, got {max_width!r}")
        m, rows = self.max_buckets, 1
        while (m << rows) - m + 1 <= max_width:  # the least width with rows + 1 rows fits
            rows += 1
        return self._bytes_for(rows)

    # -- copies and checkpoints ---------------------------------------------------------------

    def _params(self) -> dict:
        return {
            "delta": self.delta,
            "clock": self.clock,
            "max_buckets": self.max_buckets,
            "min_window_length": self.min_window_length,
            "grace_period": self.grace_period,
        }

    def clone(self) -> ADWIN:
        """A fresh, empty detector with the same parameters and class."""
        return type(self)(**self._params())

    def state(self) -> dict:
        """Plain-data state (``"kind": "adwin"``); floats are stored exactly."""
        self._flush()
        counts, mb = self._counts, self.max_buckets
        return {
            "kind": "adwin",
            "params": self._params(),
            "width": self._width,
            "total": self._total,
            "variance": self._variance,
            "ticks": self._ticks,
            "drifted": self._drifted,
            "n_detections": self._n_detections,
            "estimation_before_drift": self._estimation_before_drift,
            "totals": [self._totals[i * mb : i * mb + c].tolist() for i, c in enumerate(counts)],
            "variances": [[0.0] * counts[0]]
            + [self._variances[(i - 1) * mb : (i - 1) * mb + c].tolist() for i, c in enumerate(counts) if i],
        }

    @classmethod
    @refuse_malformed("adwin")
    def from_state(cls, state: dict) -> ADWIN:
        """Rebuild the detector ``state()`` described.

        Raises:
            ValueError: not an ADWIN state, a malformed one (missing key, wrong type, a
                non-finite number), or its histogram does not fit its parameters.
        """
        if not isinstance(state, dict) or state.get("kind") != "adwin":
            raise ValueError("not an ADWIN state (kind must be 'adwin')")
        out = cls(**state["params"])
        totals = [[float(t) for t in row] for row in state["totals"]]
        variances = [[float(v) for v in row] for row in state["variances"]]
        if (
            not totals
            or [len(r) for r in totals] != [len(r) for r in variances]
            or any(variances[0])  # row 0 holds single inputs
            or any(len(r) > out.max_buckets for r in totals)
            or any(not out.max_buckets - 1 <= len(r) for r in totals[:-1])  # see max_memory_bytes
            or (len(totals) > 1 and not totals[-1])
            or sum(len(r) << i for i, r in enumerate(totals)) != state["width"]
        ):
            raise ValueError("ADWIN state: histogram rows do not match width and max_buckets")
        if not 1 <= int(state["ticks"]) <= out.clock:
            raise ValueError(f"ADWIN state: ticks must be in [1, clock], got {state['ticks']!r}")
        for key in ("width", "n_detections"):  # 64-bit counters in the compiled implementation
            if not 0 <= int(state[key]) < 2**63:
                raise ValueError(f"ADWIN state: {key} must be in [0, 2**63), got {state[key]!r}")
        out._width = int(state["width"])
        out._total = float(state["total"])
        out._variance = float(state["variance"])
        out._ticks = int(state["ticks"])
        out._drifted = bool(state["drifted"])
        out._n_detections = check_count("n_detections", state["n_detections"])
        out._estimation_before_drift = float(state["estimation_before_drift"])
        check_finite("ADWIN state", [out._total, out._variance, out._estimation_before_drift])
        for row in totals + variances:
            check_finite("ADWIN state", row)
        mb = out.max_buckets
        out._totals = array("d", [t for r in totals for t in r + [0.0] * (mb - len(r))])
        out._variances = array("d", [v for r in variances[1:] for v in r + [0.0] * (mb - len(r))])
        out._counts = array("q", [len(r) for r in totals])
        out._top = out._ticks
        return out

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"ADWIN({args})"



class ADWIN(ADWINShared):
    """ADaptive WINdowing change detector and mean estimator (ADWIN2).

    The window of recent inputs is summarised by an exponential histogram: row ``i`` holds up
    to ``max_buckets`` buckets of ``2**i`` inputs each (total and variance per bucket); when a
    row gets one bucket too many, its two oldest buckets merge into one bucket of the next row.
    Every ``clock`` inputs, once the window holds more than ``grace_period`` inputs, every
    split of the window into an older part W0 and a newer part W1 at a bucket boundary is
    tested (Bifet and Gavalda 2007, ADWIN2, with the Bernstein-type bound of MOA's 2008
    version):

        |mean(W0) - mean(W1)| > sqrt(2 m v dd) + 2/3 dd m,
        dd = ln(2 ln(n) / delta),
        m = 1/(n0 - min_window_length + 1) + 1/(n1 - min_window_length + 1),

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
        clock: the cut test runs every ``clock`` inputs (int in [1, 65536]); detection may lag
            by up to ``clock - 1`` inputs (docs/cases.md C24).
        max_buckets: buckets per histogram row before two merge (int in [2, 65536]).
        min_window_length: sub-windows shorter than ``min_window_length + 2`` are not tested
            (int >= 1).
        grace_period: no cut test while the window holds ``grace_period`` inputs or fewer
            (int >= 0).

    Memory is O(max_buckets * log2(width / max_buckets)): the histogram lives in flat float64
    arrays with ``max_buckets`` slots per row, (2 * max_buckets + 1) * 8 bytes per row (about
    3.4 kB in all for a window of 2**32 inputs with the defaults); ``max_memory_bytes(max_width)``
    gives the exact worst case. One input costs O(1) amortised, one cut test
    O(max_buckets * log2(width)).

    Implementation: inputs wait in a buffer until the next cut test (or read-out) and are then
    inserted one by one; the cut test runs MOA's exact test at every bucket boundary, summing
    from the oldest bucket (``tests/test_adwin.py`` checks buckets, sums and decisions against
    a plain port of MOA). MOA multiplies bucket sizes as Java ints, which overflow once a
    window passes about 330,000 inputs; here they are exact. Floats in are fastest; ints and
    bools are converted. This reference is written for reading, its loops in the order of the
    compiled implementation (`edgebayes._core.adwin`, the same method names), which
    `ADWIN` is when `edgebayes.backend()` is ``"compiled"``: same fields and
    buffers, same ``state()``, decisions and ``memory_bytes()`` bit for bit, one C call per
    input.

    For an error stream, wrap it in :class:`~edgebayes.drift.ErrorDetector`, which signals only
    the cuts across which ``estimation`` rose above ``estimation_before_drift``.

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
        "_counts",
        "_drifted",
        "_estimation_before_drift",
        "_n_detections",
        "_pending",
        "_ticks",
        "_top",
        "_total",
        "_totals",
        "_variance",
        "_variances",
        "_width",
        "clock",
        "delta",
        "grace_period",
        "max_buckets",
        "min_window_length",
    )  # fmt: skip

    # -- the hot path -------------------------------------------------------------------------

    def update(self, x: float) -> bool:
        """Add one input; True when it made the window shrink (a drift).

        Args:
            x: a finite real number (bool, int, float, numpy scalar). For an error stream:
                1 = wrong, 0 = right.

        Returns:
            bool, also readable as ``drift_detected`` until the next input.

        Raises:
            ValueError: ``x`` is NaN, +/-inf or not a real number; the detector is unchanged.
        """
        if x.__class__ is not float:
            x = as_input(x)
        if x - x:  # NaN for NaN and +/-inf, 0.0 otherwise
            raise ValueError(f"ADWIN input must be finite, got {x}")
        ticks = self._ticks - 1
        self._pending[ticks] = x
        self._ticks = ticks
        if ticks:
            return False
        return self._check()

    def _flush(self) -> tuple[float, float]:
        """Insert the pending inputs, oldest first (MOA ``insertElement``); return the window's
        width and total as they were before the last of them (0, 0.0 if none pending)."""
        low, top = self._ticks, self._top
        if low == top:
            return 0.0, 0.0
        pending = self._pending
        self._top = low
        w, total, var = float(self._width), self._total, self._variance
        total_before = total
        j = top - 1  # the oldest pending input
        if w == 0.0:  # the first input of an empty window adds no variance (MOA)
            x = pending[j]
            w, total = 1.0, x
            self._insert(x)
            j -= 1
        while j >= low:  # incremental sum of squared deviations, in MOA's operation order
            x = pending[j]
            total_before = total
            d = x - total / w
            w1 = w + 1.0
            var += w * d * d / w1
            w = w1
            total += x
            self._insert(x)
            j -= 1
        self._width, self._total, self._variance = int(w), total, var
        return w - 1.0, total_before

    def _insert(self, x: float) -> None:
        """Append one input to row 0; a full row's two oldest buckets merge into one bucket of
        the next row (MOA ``compressBuckets``: totals add, variances add plus
        n1 n2 (u1 - u2)^2 / (n1 + n2), docs/cases.md C23)."""
        mb = self.max_buckets
        i, t, v = 0, x, 0.0
        while True:
            if i == len(self._counts):  # a new top row
                self._resize(i + 1)
            totals, variances, counts = self._totals, self._variances, self._counts
            base, c = i * mb, counts[i]
            if c < mb:
                totals[base + c] = t
                if i:
                    variances[base - mb + c] = v
                counts[i] = c + 1
                return
            # full: the two oldest merge, the rest move up two slots, the new bucket goes last
            n = float(1 << i)
            a, b = totals[base], totals[base + 1]
            du = a / n - b / n
            merged_t = a + b
            if i:
                va, vb = variances[base - mb], variances[base - mb + 1]
                merged_v = va + vb + n * n * du * du / (n + n)
            else:  # single inputs: variance 0
                merged_v = du * du / 2.0
            totals[base : base + mb - 2] = totals[base + 2 : base + mb]
            totals[base + mb - 2] = t
            if i:
                variances[base - mb : base - 2] = variances[base - mb + 2 : base]
                variances[base - 2] = v
            counts[i] = mb - 1
            t, v = merged_t, merged_v
            i += 1

    def _resize(self, rows: int) -> None:
        """Re-allocate the buffers for ``rows`` histogram rows, exactly; new slots hold 0."""
        mb, old = self.max_buckets, len(self._counts)
        if rows > old:  # a + b is allocated exactly, a += b over-allocates
            self._totals = self._totals + _zeros((rows - old) * mb)
            self._variances = self._variances + _zeros((rows - 1) * mb - len(self._variances))
            self._counts = self._counts + array("q", _ONE_COUNT) * (rows - old)
        else:
            self._totals = self._totals[: rows * mb]
            self._variances = self._variances[: (rows - 1) * mb]
            self._counts = self._counts[:rows]

    def _check(self) -> bool:
        """Fold in the pending inputs, then MOA's reduce-window loop: drop the oldest bucket
        while some split passes the cut test."""
        width_before, total_before = self._flush()
        self._ticks = self._top = self.clock
        cut = False
        if self._width > self.grace_period:
            while self._has_cut():
                cut = True
                self._drop_oldest()
        self._drifted = cut
        if cut:
            self._n_detections += 1
            self._estimation_before_drift = total_before / width_before if width_before else 0.0
        return cut

    def _has_cut(self) -> bool:
        """Whether a bucket boundary splits the window into an older W0 (n0 inputs, sum u0) and
        a newer W1 (n1, u1), both longer than min_window_length + 1, with
        |u0/n0 - u1/n1| > eps (MOA ``blnCutexpression``, same operation order, u0 and u1
        summed bucket by bucket from the oldest)."""
        w = self._width
        longer = self.min_window_length + 1
        if w <= 2 * longer:
            return False  # no admissible split (and ln(2 ln w / delta) may be undefined)
        fw = float(w)
        v = self._variance / fw
        if v < 0.0:
            return False  # rounded below zero: MOA's sqrt gives NaN and NaN never cuts
        dd = _log(2.0 * _log(fw) / self.delta)
        shift = self.min_window_length - 1  # n - min_window_length + 1 == n - shift
        n0, u0, u1 = 0, 0.0, self._total
        totals, counts, mb = self._totals, self._counts, self.max_buckets
        for i in range(len(counts) - 1, -1, -1):
            size = 1 << i
            for j in range(counts[i]):
                bucket = totals[i * mb + j]
                n0 += size
                u0 += bucket
                u1 -= bucket
                n1 = w - n0
                if n0 > longer and n1 > longer:
                    m = 1.0 / (n0 - shift) + 1.0 / (n1 - shift)
                    eps = _sqrt(2.0 * m * v * dd) + _TWO_THIRDS * dd * m
                    if abs(u0 / n0 - u1 / n1) > eps:
                        return True
        return False

    def _drop_oldest(self) -> None:
        """Remove the oldest bucket and its share of width, total and variance (MOA)."""
        totals, variances, counts = self._totals, self._variances, self._counts
        last = len(counts) - 1
        mb, c = self.max_buckets, counts[last]
        base, vbase = last * mb, (last - 1) * mb
        n = 1 << last
        t = totals[base]
        w = self._width - n
        total = self._total - t
        d = t / n - total / w
        oldest_v = variances[vbase] if last else 0.0
        self._variance -= oldest_v + n * w * d * d / (n + w)
        self._width = w
        self._total = total
        if c == 1 and last:  # the top row empties: buffers one row shorter
            self._resize(last)
            return
        totals[base : base + c - 1] = totals[base + 1 : base + c]
        if last:
            variances[vbase : vbase + c - 1] = variances[vbase + 1 : vbase + c]
        counts[last] = c - 1


#: The detector object in ``memory_bytes()``, the same on both backends so that both report the
#: same bytes: the reference's slotted object with each field counted at 8 bytes. That is exact
#: on 64-bit; on 32-bit a slot is a 4-byte pointer while the compiled object's doubles and
#: counters stay 8 bytes, and this bounds both.
OBJECT_BYTES = sys.getsizeof(object.__new__(ADWIN)) + len(ADWIN.__slots__) * (8 - struct.calcsize("P"))


#: the pure-Python reference, by name whichever class `ADWIN` is
ReferenceADWIN = ADWIN
ADWIN = choose(ReferenceADWIN, "edgebayes._core.adwin")
