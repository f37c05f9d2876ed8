# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""How the compiled core reads one sample ``x`` into doubles: once per sample, by the rule of
`edgebayes.base.as_floats` (the reference's), with its errors.

The common cases are read here: a list or tuple of floats, or a 1-D float64 numpy array
through the buffer protocol (no numpy C API). Anything else, and any value the rule refuses,
goes through `edgebayes.base.as_floats`, which converts it or raises the reference's error.
"""

from cpython.buffer cimport PyBUF_RECORDS_RO, PyBuffer_Release, PyObject_GetBuffer
from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc

from numpy import ndarray  # the type, to recognise an array: no numpy C API

from edgebayes.base import as_floats


cdef double* read_x(object x, Py_ssize_t d, double limit, bint learning, Py_ssize_t* n) except NULL:
    """``x`` as a malloc'ed array of ``n[0]`` doubles (the caller frees it): the reference's
    ``as_floats(x, d or None, learning)``; ``d`` < 0 before the schema is fixed (then ``n[0]``
    is x's length); ``limit`` the largest magnitude the fast path takes (MAX_ABS_X when
    learning, inf to predict)."""
    cdef Py_ssize_t j
    cdef double* xs = NULL
    if d > 0:
        xs = <double*>malloc(d * sizeof(double))
        if xs == NULL:
            raise MemoryError()
        n[0] = d
        if _read_fast(x, d, limit, xs):
            return xs
    try:
        values = as_floats(x, None if d < 0 else d, learning)[0]
        if d < 0:
            d = n[0] = len(values)
            xs = <double*>malloc(max(d, 1) * sizeof(double))
            if xs == NULL:
                raise MemoryError()
        for j in range(d):
            xs[j] = values[j]
    except BaseException:
        free(xs)
        raise
    return xs


cdef bint any_nan(const double* xs, Py_ssize_t d):
    """Whether a value of ``xs[:d]`` is missing (NaN)."""
    cdef Py_ssize_t j
    for j in range(d):
        if xs[j] != xs[j]:
            return True
    return False


cdef bint _read_fast(object x, Py_ssize_t d, double limit, double* xs) except -1:
    """Read the common cases into ``xs``: a list or tuple of ``d`` floats, or a 1-D float64
    numpy array of ``d`` values, each NaN or finite of magnitude <= ``limit``. False when ``x``
    is anything else (the caller then applies the reference's rule and its errors)."""
    if type(x) is list:
        return _read_items(<list>x, d, limit, xs)
    if type(x) is tuple:
        return _read_items(list(<tuple>x), d, limit, xs)
    if type(x) is not ndarray:
        return False
    cdef Py_ssize_t j
    cdef double v
    cdef Py_buffer view
    PyObject_GetBuffer(x, &view, PyBUF_RECORDS_RO)
    try:
        if view.ndim != 1 or view.shape[0] != d or view.itemsize != 8 or view.format == NULL \
                or view.format[0] != c'd' or view.format[1] != 0:
            return False
        for j in range(d):
            v = (<double*>(<char*>view.buf + j * view.strides[0]))[0]
            if not _admissible(v, limit):
                return False
            xs[j] = v
        return True
    finally:
        PyBuffer_Release(&view)


cdef bint _read_items(list x, Py_ssize_t d, double limit, double* xs) except -1:
    """`_read_fast` for a list."""
    cdef Py_ssize_t j
    cdef double v
    if len(x) != d:
        return False
    for j in range(d):
        item = x[j]
        if type(item) is not float:
            return False
        v = item
        if not _admissible(v, limit):
            return False
        xs[j] = v
    return True


cdef inline bint _admissible(double v, double limit):
    """NaN (a missing value), or finite with |v| <= limit: what `edgebayes.base.to_float`
    takes."""
    return v != v or (-limit <= v <= limit and v != INFINITY and v != -INFINITY)
