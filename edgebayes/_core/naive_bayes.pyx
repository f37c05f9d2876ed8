# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""GaussianNB's per-sample path compiled: one C call per ``learn_one`` or ``predict_proba_one``.

:class:`GaussianNB` here is :class:`edgebayes.naive_bayes.GaussianNB` (parameters, batch
methods, state, memory) with those two methods replaced, over the reference's own fields and
``array("d")`` buffers, so ``state()`` and ``memory_bytes()`` are the reference's code. ``x``
is read into doubles once (`edgebayes._core.inputs`), with the reference's errors. Each function
below is the `edgebayes.naive_bayes_kernel` function (or reference method) its docstring names,
loop for loop and in the same operation order (built with ``-ffp-contract=off`` so that no multiply-add is fused): every
float of ``state()`` and every probability is bit-identical to the reference's.

The three modes of the reference (exact, Algorithm 1; learning rate with the warm-up; the
paper's Algorithm 2 as written, ``warm_up=False``) differ only in ``_top``, the count up to
which a step is 1/n (inf, floor(1/alpha), 1), set by the reference's ``__init__`` and read by
`update_rate` below exactly as the reference reads it: every mode runs these same loops.

Hooks: the only reference code called per sample is a new class's, the reference's methods
``_new_label`` (checks the label), ``_check_room`` (the size bound) and ``_add_class`` (grows
the buffers), in that order, as the reference's ``learn_one`` calls them.
"""

from cpython cimport array
from libc.math cimport INFINITY, exp, expm1, log
from libc.stdlib cimport free, malloc

from edgebayes._core.inputs cimport any_nan, read_x
from edgebayes.base import MAX_ABS_X, MAX_WEIGHT, check_weight
from edgebayes.naive_bayes import _LOG_2PI, EPS_FLOOR, FAR_SCALE
from edgebayes.naive_bayes import GaussianNB as _Reference

# the reference's constants, not recomputed: the compiler would round log(2 pi) itself
cdef double LOG_2PI = _LOG_2PI
cdef double EPS = EPS_FLOOR
cdef double SCALE = FAR_SCALE
cdef double LIMIT = MAX_ABS_X
cdef double WEIGHT_LIMIT = MAX_WEIGHT


cdef class Estimates:
    """The fields the per-sample path reads and writes (the reference's attributes of the
    same names) and the two per-sample methods."""

    cdef public list classes_
    cdef public dict _index
    cdef public object n_features_in_, var_smoothing
    cdef public double _n, _eps, _top, _log_keep
    cdef public array.array _priors, _counts, _means, _vars, _fcounts, _fmeans, _fvars

    def learn_one(self, x, y, w=1.0):
        """Learn one sample (see the reference's ``learn_one``: same arguments, errors, result)."""
        cdef double wt
        if type(w) is float and 0.0 <= <double>w <= WEIGHT_LIMIT:
            wt = w
        else:
            wt = check_weight(w)
        cdef Py_ssize_t d
        cdef bint has_nan
        cdef double* xs = NULL
        try:
            xs = _read_x(self, x, LIMIT, &d, &has_nan)
            try:
                k = self._index.get(y)
            except TypeError:
                k = None
            if k is None:
                y = self._new_label(y)
            if wt == 0.0:
                return
            if k is None:
                self._check_room([y], d)
                k = self._add_class(y, d)
            _learn(self, xs, d, k, wt)
        finally:
            free(xs)

    def predict_proba_one(self, x):
        """Class probabilities {label: float} (see the reference's ``predict_proba_one``)."""
        if not self.classes_:
            return {}
        cdef bint has_nan
        cdef Py_ssize_t d, k, K = len(self.classes_)
        cdef double* xs = NULL
        cdef double* out = <double*>malloc(3 * K * sizeof(double))
        if out == NULL:
            raise MemoryError()
        try:
            xs = _read_x(self, x, INFINITY, &d, &has_nan)
            _proba(self, xs, has_nan, out)
            return {self.classes_[k]: out[k] for k in range(K)}
        finally:
            free(xs)
            free(out)


cdef double* _read_x(Estimates self, object x, double limit, Py_ssize_t* n,
                     bint* has_nan) except NULL:
    """``x`` as a malloc'ed array of ``n[0]`` doubles (the caller frees it), by the input rule
    (`edgebayes._core.inputs`), with ``limit`` = MAX_ABS_X when learning, inf to predict;
    ``has_nan[0]`` says whether a value is missing."""
    cdef Py_ssize_t d = -1 if self.n_features_in_ is None else self.n_features_in_
    cdef double* xs = read_x(x, d, limit, limit != INFINITY, n)
    has_nan[0] = any_nan(xs, n[0])
    return xs


cdef inline double update_rate(double m, double w, double top, double log_keep):
    """`edgebayes.naive_bayes_kernel.update_rate`: rate w/n while the count stays
    within ``top`` (inf: exact, Algorithm 1 Eqs. (8)-(10); floor(1/alpha): the warm-up; 1: the
    first sample of Algorithm 2 as written), 1 - (1-alpha)^w past it (Eqs. (12)-(14)), and the
    telescoped mix of both when the weight straddles it."""
    cdef double n = m + w, t
    if n <= top:
        return w / n
    if m >= top:
        return -expm1(w * log_keep)
    t = top - m
    return (t - m * expm1((w - t) * log_keep)) / top


cdef void _update(double* counts, double* means, double* variances, Py_ssize_t base,
                  const double* xs, Py_ssize_t d, double w, double top, double log_keep):
    """`edgebayes.naive_bayes_kernel.update`: one sample into the row at ``base``, feature by feature."""
    cdef double last = -1.0, r = -1.0, a, m, e
    cdef Py_ssize_t j, i
    for j in range(d):
        a = xs[j]
        if a != a:  # missing
            continue
        i = base + j
        m = counts[i]
        if m != last:
            last = m
            r = update_rate(m, w, top, log_keep)
        e = a - means[i]
        means[i] += r * e
        variances[i] = (1.0 - r) * (variances[i] + r * e * e)
        counts[i] = m + w


cdef int _learn(Estimates self, const double* xs, Py_ssize_t d, Py_ssize_t k, double w) except -1:
    """The end of the reference's ``learn_one``: priors, class ``k``'s row, the all-class
    statistics and eps."""
    cdef double top = self._top, lk = self._log_keep
    cdef double r = update_rate(self._n, w, top, lk)
    cdef double keep = 1.0 - r
    cdef double* priors = self._priors.data.as_doubles
    cdef Py_ssize_t c, j
    for c in range(len(self._priors)):
        priors[c] *= keep
    priors[k] += r
    self._n += w
    _update(self._counts.data.as_doubles, self._means.data.as_doubles, self._vars.data.as_doubles,
            k * d, xs, d, w, top, lk)
    _update(self._fcounts.data.as_doubles, self._fmeans.data.as_doubles,
            self._fvars.data.as_doubles, 0, xs, d, w, top, lk)
    cdef double* fvars = self._fvars.data.as_doubles
    cdef double top_var = fvars[0]
    for j in range(1, d):
        if fvars[j] > top_var:
            top_var = fvars[j]
    cdef double eps = <double>self.var_smoothing * top_var
    self._eps = EPS if EPS > eps else eps  # Python's max(eps, EPS_FLOOR)
    return 0


cdef void _terms(Estimates self, const double* xs, bint has_nan, double* cs, double* qs):
    """`edgebayes.naive_bayes_kernel.terms`: per class c (log prior minus the normaliser) into ``cs``
    and q (the scaled squared distance) into ``qs``."""
    cdef Py_ssize_t d = self.n_features_in_, K = len(self._priors), k, j, i, base
    cdef double eps = self._eps, p, log_p, q, prod, v, e, log_det, c, a
    cdef double* priors = self._priors.data.as_doubles
    cdef double* counts = self._counts.data.as_doubles
    cdef double* means = self._means.data.as_doubles
    cdef double* variances = self._vars.data.as_doubles
    cdef bint full
    for k in range(K):
        base = k * d
        p = priors[k]
        log_p = log(p) if p > 0.0 else -INFINITY
        q = 0.0
        full = not has_nan
        if full:
            for j in range(d):
                if not counts[base + j] > 0.0:
                    full = False
                    break
        if full:
            prod = 1.0
            for j in range(d):
                v = variances[base + j] + eps
                prod *= v
                e = xs[j] - means[base + j]
                q += e * e / v
            if 0.0 < prod < INFINITY:
                log_det = log(prod)
            else:
                log_det = 0.0
                for j in range(d):
                    log_det += log(variances[base + j] + eps)
            c = log_p - 0.5 * (<double>d * LOG_2PI + log_det)
        else:
            c = log_p
            for j in range(d):
                a = xs[j]
                i = base + j
                if a == a and counts[i] > 0.0:
                    v = variances[i] + eps
                    c -= 0.5 * (LOG_2PI + log(v))
                    e = a - means[i]
                    q += e * e / v
        cs[k] = c
        qs[k] = q


cdef void _far(Estimates self, const double* xs, double* out, double* u, double* c):
    """`edgebayes.naive_bayes_kernel.far_proba`: probabilities into ``out`` when every log-likelihood is -inf;
    ``u`` and ``c`` are scratch of n_classes doubles."""
    cdef Py_ssize_t d = self.n_features_in_, K = len(self._priors), k, j, i, base
    cdef double eps = self._eps, p, uk, ck, v, e, a, best, top
    cdef double* priors = self._priors.data.as_doubles
    cdef double* counts = self._counts.data.as_doubles
    cdef double* means = self._means.data.as_doubles
    cdef double* variances = self._vars.data.as_doubles
    for k in range(K):
        base = k * d
        p = priors[k]
        uk = 0.0
        ck = 0.0
        for j in range(d):
            a = xs[j]
            i = base + j
            if a == a and counts[i] > 0.0:
                v = variances[i] + eps
                e = a * SCALE - means[i] * SCALE
                uk += e * e / v
                ck -= 0.5 * (LOG_2PI + log(v))
        u[k] = uk if p > 0.0 else INFINITY
        c[k] = ck + log(p) if p > 0.0 else -INFINITY
    best = u[0]
    for k in range(1, K):
        if u[k] < best:
            best = u[k]
    top = -INFINITY
    for k in range(K):
        if u[k] == best and c[k] > -INFINITY and c[k] > top:
            top = c[k]
    for k in range(K):
        out[k] = exp(c[k] - top) if u[k] == best and c[k] > -INFINITY else 0.0
    _normalise(out, K)


cdef void _proba(Estimates self, const double* xs, bint has_nan, double* out):
    """`edgebayes.naive_bayes_kernel.proba`: probabilities into ``out[:K]``; ``out[K:3K]`` is scratch."""
    cdef Py_ssize_t K = len(self._priors), k
    cdef double* cs = out + K
    cdef double* qs = out + 2 * K
    cdef double q0, top
    _terms(self, xs, has_nan, cs, qs)
    q0 = qs[0]
    for k in range(1, K):
        if qs[k] < q0:
            q0 = qs[k]
    if q0 == INFINITY:
        _far(self, xs, out, cs, qs)
        return
    top = -INFINITY
    for k in range(K):
        out[k] = cs[k] - 0.5 * (qs[k] - q0)
        if out[k] > top:
            top = out[k]
    if top == -INFINITY:
        _far(self, xs, out, cs, qs)
        return
    for k in range(K):
        out[k] = exp(out[k] - top)
    _normalise(out, K)


cdef inline void _normalise(double* e, Py_ssize_t K):
    """`edgebayes.naive_bayes_kernel.normalised`: ``e`` divided by its sum, added left to right."""
    cdef double s = 0.0
    cdef Py_ssize_t k
    for k in range(K):
        s += e[k]
    for k in range(K):
        e[k] = e[k] / s


class GaussianNB(Estimates, _Reference):
    __doc__ = _Reference.__doc__
