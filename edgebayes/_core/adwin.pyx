# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""ADWIN's per-input path compiled: one C call per ``update``.

:class:`ADWIN` here is :class:`edgebayes.drift.adwin.ADWIN` (parameters, read-outs, state,
memory) over a C window: the same fields and the same ``array`` buffers as the reference, so
``state()`` and ``memory_bytes()`` are the reference's. The arithmetic is MOA's, in the
reference's operation order (built with ``-ffp-contract=off`` so that no multiply-add is
fused): every float of ``state()`` is bit-identical to the reference's on the same inputs.
Each function below is the reference method of the same name, loop for loop: the pending
inputs inserted one by one (MOA ``insertElement``, ``compressBuckets``), MOA's exact test at
every bucket boundary (``blnCutexpression``).
"""

from cpython cimport array
from libc.math cimport fabs, log, sqrt

from edgebayes.drift.adwin import ADWIN as _Reference
from edgebayes.drift.adwin import ADWINShared, as_input

cdef double TWO_THIRDS = 2.0 / 3  # MOA's ``(double) 2 / 3``


cdef class Window:
    """The window's fields (those of the reference's ``__slots__``, declared in adwin.pxd)
    and its per-input path."""

    def update(self, x):
        """Add one input; True when it made the window shrink (see the reference's ``update``)."""
        cdef double v
        if type(x) is float:
            v = x
        else:
            v = as_input(x)
        return window_update(self, v)

    def _flush(self):
        """Insert the pending inputs (read-outs and ``state()`` call this first)."""
        cdef double width_before, total_before
        _fold(self, &width_before, &total_before)


cdef bint window_update(Window self, double v) except -1:
    """`Window.update` for a double (the compiled SRP feeds its members' errors here)."""
    if v - v != 0.0:  # NaN for NaN and +/-inf
        raise ValueError(f"ADWIN input must be finite, got {v}")
    cdef Py_ssize_t ticks = self._ticks - 1
    self._pending.data.as_doubles[ticks] = v
    self._ticks = ticks
    if ticks:
        return False
    return _check(self)


cdef bint _check(Window self) except -1:
    """Fold in the pending inputs, then drop the oldest bucket while some split cuts (MOA)."""
    cdef double width_before, total_before
    _fold(self, &width_before, &total_before)
    self._ticks = self._top = self.clock
    cdef bint cut = False
    if self._width > self.grace_period:
        while _has_cut(self):
            cut = True
            _drop_oldest(self)
    self._drifted = cut
    if cut:
        self._n_detections += 1
        self._estimation_before_drift = total_before / width_before if width_before else 0.0
    return cut


cdef int _fold(Window self, double* width_before, double* total_before) except -1:
    """The reference's ``_flush``: insert the pending inputs oldest first; the window's width
    and total as they were before the last of them go to ``width_before``, ``total_before``
    (0, 0.0 if none pending)."""
    cdef Py_ssize_t low = self._ticks, top = self._top, j
    width_before[0] = 0.0
    total_before[0] = 0.0
    if low == top:
        return 0
    cdef double* pending = self._pending.data.as_doubles
    self._top = low
    cdef double w = <double>self._width, total = self._total, var = self._variance
    cdef double tb = total, x, d, w1
    j = top - 1  # the oldest pending input
    if w == 0.0:  # the first input of an empty window adds no variance (MOA)
        x = pending[j]
        w, total = 1.0, x
        _insert(self, x)
        j -= 1
    while j >= low:
        x = pending[j]
        tb = total
        d = x - total / w
        w1 = w + 1.0
        var += w * d * d / w1
        w = w1
        total += x
        _insert(self, x)
        j -= 1
    self._width, self._total, self._variance = <long long>w, total, var
    width_before[0] = w - 1.0
    total_before[0] = tb
    return 0


cdef int _insert(Window self, double x) except -1:
    """Append one input to row 0; a full row's two oldest buckets merge into one bucket of the
    next row (totals add, variances add plus n1 n2 (u1 - u2)^2 / (n1 + n2), docs/cases.md C23)."""
    cdef Py_ssize_t mb = self.max_buckets, i = 0, base, c, k
    cdef double t = x, v = 0.0, a, b, n, du, merged_t, merged_v
    cdef double* totals
    cdef double* variances
    cdef long long* counts
    while True:
        if i == len(self._counts):  # a new top row
            _resize(self, i + 1)
            self._counts.data.as_longlongs[i] = 0
        totals = self._totals.data.as_doubles
        variances = self._variances.data.as_doubles
        counts = self._counts.data.as_longlongs
        base, c = i * mb, counts[i]
        if c < mb:
            totals[base + c] = t
            if i:
                variances[base - mb + c] = v
            counts[i] = c + 1
            return 0
        # full: the two oldest merge, the rest move up two slots, the new bucket goes last
        n = <double>(1LL << i)
        a, b = totals[base], totals[base + 1]
        du = a / n - b / n
        merged_t = a + b
        if i:
            merged_v = variances[base - mb] + variances[base - mb + 1] + n * n * du * du / (n + n)
        else:  # single inputs: variance 0
            merged_v = du * du / 2.0
        for k in range(mb - 2):
            totals[base + k] = totals[base + k + 2]
        totals[base + mb - 2] = t
        if i:
            for k in range(mb - 2):
                variances[base - mb + k] = variances[base - mb + k + 2]
            variances[base - mb + mb - 2] = v
        counts[i] = mb - 1
        t, v = merged_t, merged_v
        i += 1


cdef int _resize(Window self, Py_ssize_t rows) except -1:
    """Re-allocate the buffers for ``rows`` histogram rows, exactly (the reference's sizes);
    new slots hold 0."""
    cdef Py_ssize_t mb = self.max_buckets, old = len(self._counts), k
    array.resize(self._totals, rows * mb)
    array.resize(self._variances, (rows - 1) * mb)
    array.resize(self._counts, rows)
    for k in range(old * mb, rows * mb):
        self._totals.data.as_doubles[k] = 0.0
    for k in range(max(old - 1, 0) * mb, (rows - 1) * mb):
        self._variances.data.as_doubles[k] = 0.0
    for k in range(old, rows):
        self._counts.data.as_longlongs[k] = 0
    return 0


cdef bint _has_cut(Window self) except -1:
    """Whether a bucket boundary splits the window into an older W0 (n0 inputs, sum u0) and a
    newer W1 (n1, u1), both longer than min_window_length + 1, with |u0/n0 - u1/n1| > eps
    (MOA ``blnCutexpression``, same operation order, u0 and u1 summed from the oldest)."""
    cdef long long w = self._width, longer = self.min_window_length + 1
    if w <= 2 * longer:
        return False
    cdef double fw = <double>w
    cdef double v = self._variance / fw
    if v < 0.0:
        return False  # rounded below zero: MOA's sqrt gives NaN and NaN never cuts
    cdef double dd = log(2.0 * log(fw) / self.delta)
    cdef long long shift = self.min_window_length - 1, n0 = 0, n1, size
    cdef double u0 = 0.0, u1 = self._total, bucket, m, eps
    cdef Py_ssize_t mb = self.max_buckets, i, j
    cdef double* totals = self._totals.data.as_doubles
    cdef long long* counts = self._counts.data.as_longlongs
    for i in range(len(self._counts) - 1, -1, -1):
        size = 1LL << i
        for j in range(counts[i]):
            bucket = totals[i * mb + j]
            n0 += size
            u0 += bucket
            u1 -= bucket
            n1 = w - n0
            if n0 > longer and n1 > longer:
                m = 1.0 / <double>(n0 - shift) + 1.0 / <double>(n1 - shift)
                eps = sqrt(2.0 * m * v * dd) + TWO_THIRDS * dd * m
                if fabs(u0 / <double>n0 - u1 / <double>n1) > eps:
                    return True
    return False


cdef int _drop_oldest(Window self) except -1:
    """Remove the oldest bucket and its share of width, total and variance (MOA)."""
    cdef Py_ssize_t mb = self.max_buckets, last = len(self._counts) - 1, k
    cdef Py_ssize_t base = last * mb, vbase = (last - 1) * mb
    cdef double* totals = self._totals.data.as_doubles
    cdef double* variances = self._variances.data.as_doubles
    cdef long long* counts = self._counts.data.as_longlongs
    cdef long long c = counts[last], n = 1LL << last
    cdef double t = totals[base]
    cdef long long w = self._width - n
    cdef double total = self._total - t
    cdef double d = t / <double>n - total / <double>w
    cdef double oldest_v = variances[vbase] if last else 0.0
    self._variance -= oldest_v + <double>(n * w) * d * d / <double>(n + w)
    self._width = w
    self._total = total
    if c == 1 and last:  # the top row empties: buffers one row shorter
        _resize(self, last)
        return 0
    for k in range(c - 1):
        totals[base + k] = totals[base + k + 1]
    if last:
        for k in range(c - 1):
            variances[vbase + k] = variances[vbase + k + 1]
    counts[last] = c - 1
    return 0


class ADWIN(Window, ADWINShared):
    __doc__ = _Reference.__doc__
    __slots__ = ()

