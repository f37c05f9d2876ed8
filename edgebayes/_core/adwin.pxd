# The compiled ADWIN's fields and the per-input entry point the compiled SRP calls (adwin.pyx).

from cpython cimport array

cdef class Window:
    cdef public double delta
    cdef public Py_ssize_t clock, max_buckets, min_window_length, grace_period
    cdef public long long _width, _n_detections
    cdef public double _total, _variance, _estimation_before_drift
    cdef public Py_ssize_t _ticks, _top
    cdef public bint _drifted
    cdef public array.array _totals, _variances, _counts, _pending

cdef bint window_update(Window self, double v) except -1
