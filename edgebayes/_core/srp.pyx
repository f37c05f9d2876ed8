# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""SRP's per-sample member loop compiled: one C call per sample for the members' tests,
training and votes.

:class:`SRPClassifier` here is :class:`edgebayes.ensemble.SRPClassifier` (parameters, input
checks, Poisson draws, warnings and drifts, state, memory) with ``_learn_members``,
``predict_proba_one`` and ``predict_one`` replaced. The sample is read into doubles once;
members whose learner is the compiled tree (`edgebayes._core.tree`) and sees the whole ``x``
are tested, trained and polled through the tree's C entry points, any other learner through
its Python methods; detectors that are an `ErrorDetector` over the compiled ADWIN are fed
through ADWIN's C entry point and judged by `ErrorDetector.judge`.
The loops are the reference's, in the same order: ``state()`` and every probability are
bit-identical to the reference's.
"""

from libc.stdlib cimport free, malloc

from edgebayes._core.adwin cimport Window, window_update
from edgebayes._core.tree cimport Codes, Fields, learn_codes, predict_index, predict_proba, value_codes

from edgebayes._core.adwin import ADWIN as _ADWIN
from edgebayes.drift.base import ErrorDetector
from edgebayes.ensemble.srp import SRPClassifier as _Reference


cdef class Sample:
    """One checked sample: its values as doubles and as the reference's list, its subspace
    array (``v``, for learners fed a slice) and scratch for class probabilities."""

    cdef double* xd
    cdef double* scratch
    cdef list xs
    cdef object v

    def __cinit__(self, list xs, object v, Py_ssize_t n_classes):
        cdef Py_ssize_t j, d = len(xs)
        self.xs, self.v = xs, v
        self.xd = <double*>malloc(max(d, 1) * sizeof(double))
        self.scratch = <double*>malloc(max(2 * n_classes, 1) * sizeof(double))  # the tree's 2 K
        if self.xd == NULL or self.scratch == NULL:
            raise MemoryError()
        for j in range(d):
            self.xd[j] = xs[j]

    def __dealloc__(self):
        free(self.xd)
        free(self.scratch)


cdef inline bint _compiled(learner, take):
    """Whether ``learner`` is a compiled tree with its schema fixed, fed the whole ``x``."""
    return take is None and isinstance(learner, Fields) and (<Fields>learner).n_features_in_ is not None


cdef object _predict_one(learner, take, Sample x, Codes codes):
    """``learner.predict_one`` on the member's view of the sample; ``codes``: the compiled
    tree's `value_codes` of it (None for any other learner)."""
    cdef Py_ssize_t k
    if codes is not None:
        k = predict_index(<Fields>learner, x.xd, codes.at, x.scratch)
        return None if k < 0 else (<Fields>learner).classes_[k]
    return learner.predict_one(x.xs if take is None else x.v[take])


cdef bint _signal(detector, double error) except -1:
    """``detector.update(error)``; an `ErrorDetector` over the compiled ADWIN has its window
    fed in C, then its own rule (`ErrorDetector.judge`) decides, skipped when it would change
    nothing (no cut, no signal standing)."""
    if type(detector) is not ErrorDetector or type(detector.detector) is not _ADWIN:
        return detector.update(error)
    cdef bint cut = window_update(<Window>detector.detector, error)
    if not cut and not detector.drift_detected:
        return False
    return detector.judge(cut)


cdef Codes _codes(learner, take, Sample x):
    """The compiled tree's `value_codes` of the sample, None for any other learner."""
    return value_codes(<Fields>learner, x.xd) if _compiled(learner, take) else None


cdef Codes _learn_one(learner, take, Sample x, y, double w, Codes codes):
    """``learner.learn_one(x, y, w)`` on the member's view (``w`` > 0, ``y`` checked); returns
    the codes to test it with next (a tree's first sample fixes its schema in Python, after
    which it is compiled)."""
    if codes is None:
        if not _compiled(learner, take):
            learner.learn_one(x.xs if take is None else x.v[take], y, w)
            return _codes(learner, take, x)
        codes = value_codes(<Fields>learner, x.xd)
    learn_codes(<Fields>learner, x.xd, codes, y, w)
    return codes


class SRPClassifier(_Reference):
    __doc__ = _Reference.__doc__

    def _learn_members(self, list xs, v, y, double w, list ks):
        """The reference's ``_learn_members``, loop for loop."""
        cdef list members = self._members
        cdef Py_ssize_t i, n = len(members)
        cdef Sample x = Sample(xs, v, len(self.classes_))
        cdef double kw, error = 0.0
        cdef long k
        codes = [_codes(m.learner, m.take, x) for m in members]  # each member's, once
        preds = [_predict_one(m.learner, m.take, x, codes[i]) for i, m in enumerate(members)]
        self._last_predictions = preds
        self.n_samples_seen_ += 1
        for i in range(n):
            m = members[i]
            m.n_tested += w
            if preds[i] == y:
                m.n_correct += w
            k = ks[i]
            if not k:
                continue
            kw = k * w
            learner, take = m.learner, m.take
            mc = _learn_one(learner, take, x, y, kw, codes[i])
            if m.drift is not None:
                error = 0.0 if _predict_one(learner, take, x, mc) == y else 1.0
            if m.bkg is not None:
                _learn_one(m.bkg, m.bkg_take, x, y, kw, _codes(m.bkg, m.bkg_take, x))
            elif m.promoted:
                _learn_one(learner, take, x, y, kw, mc)
            if m.drift is None:
                continue
            if m.warning is not None and _signal(m.warning, error):
                self._on_warning(i, m)
            if _signal(m.drift, error):
                self._on_drift(i, m)

    def predict_proba_one(self, x):
        """Weighted vote {label: probability} (see the reference's ``predict_proba_one``)."""
        if not self._members:
            return {}
        cdef Py_ssize_t K = len(self.classes_), c
        cdef double total
        cdef double* acc = _votes(self, x, &total)
        try:
            if total > 0.0:
                return {self.classes_[c]: acc[c] / total for c in range(K)}
            return {label: 1.0 / K for label in self.classes_}
        finally:
            free(acc)

    def predict_one(self, x):
        """The label the reference's ``predict_one`` gives (the first most probable of
        ``predict_proba_one``), without building the probabilities' dict."""
        if not self._members or not self.classes_:
            return None
        cdef Py_ssize_t K = len(self.classes_), c, best = 0
        cdef double total
        cdef double* acc = _votes(self, x, &total)
        try:
            if total > 0.0:
                for c in range(1, K):
                    if acc[c] / total > acc[best] / total:  # the dict's values, compared as max does
                        best = c
            return self.classes_[best]
        finally:
            free(acc)


cdef double* _votes(model, x, double* total) except NULL:
    """The members' weighted votes summed per class into a new array of len(classes_)
    doubles (the caller frees it), their sum into ``total`` (`combine_votes`)."""
    xs, v = model._check_x(x)
    cdef Py_ssize_t K = len(model.classes_), i, c, Kt
    cdef Sample sample = Sample(xs, v, K)
    cdef double* acc = <double*>malloc(max(K, 1) * sizeof(double))
    if acc == NULL:
        raise MemoryError()
    cdef double s, f, wt
    cdef dict index = model._index
    try:
        for c in range(K):
            acc[c] = 0.0
        weights = model._weights()
        for i, m in enumerate(model._members):
            learner = m.learner
            wt = weights[i]
            if not _compiled(learner, m.take):
                _add_vote(acc, learner.predict_proba_one(xs if m.take is None else v[m.take]), wt, index)
                continue
            if not (<Fields>learner)._n_nodes or not predict_proba(<Fields>learner, sample.xd, sample.scratch):
                continue
            Kt = len((<Fields>learner).classes_)
            s = 0.0
            for c in range(Kt):
                s += sample.scratch[c]
            if s > 0.0 and wt > 0.0:
                f = wt / s
                labels = (<Fields>learner).classes_
                for c in range(Kt):
                    acc[<Py_ssize_t>index[labels[c]]] += sample.scratch[c] * f
        total[0] = 0.0
        for c in range(K):
            total[0] += acc[c]
    except BaseException:
        free(acc)
        raise
    return acc


cdef int _add_vote(double* acc, dict vote, double wt, dict index) except -1:
    """One member's vote from its Python ``predict_proba_one`` (the reference's `combine_votes` step)."""
    cdef double s = 0.0, f
    for p in vote.values():
        s += <double>p
    if s > 0.0 and wt > 0.0:
        f = wt / s
        for label, p in vote.items():
            acc[<Py_ssize_t>index[label]] += <double>p * f
    return 0
