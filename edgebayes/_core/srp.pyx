# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""SRP's member compiled: :class:`Member` is `edgebayes.ensemble.srp_member.Member` with its
two hot methods, ``vote`` and ``train``, over the compiled tree's C entry points, and
:class:`Sample` the sample they read (its values as doubles, read once for every member,
scratch for class probabilities, the votes' sums). :class:`SRPClassifier` is
`edgebayes.ensemble.SRPClassifier` with these members, reading each ``x`` once in C
(``_check_x``, by `edgebayes._core.inputs.read_x`).

A member whose learner is the compiled tree (`edgebayes._core.tree`) and sees the whole ``x``
is tested, trained and polled in C; any other learner through its Python methods. A signal
that is an `ErrorDetector` over the compiled ADWIN has its window fed in C and its rule
applied by `ErrorDetector.judge`. The steps are the reference's, in the same order:
``state()`` and every probability are bit-identical to the reference's.
"""

from libc.math cimport INFINITY
from libc.stdlib cimport free, malloc

from edgebayes._core.adwin cimport Window, window_update
from edgebayes._core.inputs cimport read_x
from edgebayes._core.tree cimport Codes, Fields, Tested, learn_codes, predict_index, predict_proba, value_codes

import numpy as np

from edgebayes._core.adwin import ADWIN as _ADWIN
from edgebayes.base import MAX_ABS_X
from edgebayes.drift.base import ErrorDetector
from edgebayes.ensemble.srp import SRPClassifier as _Reference
from edgebayes.ensemble.srp_member import DRIFT, UNKNOWN_ACCURACY_WEIGHT, WARNING
from edgebayes.ensemble.srp_member import Member as _ReferenceMember


cdef class Sample:
    """`edgebayes.ensemble.srp_member.Sample` in C: ``xs``, ``v``, ``index`` and
    ``predictions`` as there; the values as doubles, scratch for a tree's class probabilities
    and the votes' sums in one allocation."""

    cdef double* xd
    cdef double* scratch
    cdef double* acc
    cdef readonly list xs, predictions
    cdef readonly object v
    cdef readonly dict index

    def __cinit__(self, list xs, object v, dict index):
        cdef Py_ssize_t j, d = len(xs), K = len(index)
        self.xs, self.v, self.index = xs, v, index
        self.predictions = []
        self.xd = <double*>malloc((d + 3 * K + 1) * sizeof(double))  # x, the tree's 2 K, the votes
        if self.xd == NULL:
            raise MemoryError()
        self.scratch = self.xd + d
        self.acc = self.scratch + 2 * K
        for j in range(d):
            self.xd[j] = xs[j]
        for j in range(K):
            self.acc[j] = 0.0

    def __dealloc__(self):
        free(self.xd)

    def view(self, take):
        """What a learner fed ``take`` (None = the whole x) reads."""
        return self.xs if take is None else self.v[take]

    def proba(self, list classes):
        """The reference's ``Sample.proba``."""
        cdef Py_ssize_t c, K = len(classes)
        cdef double total = self._total()
        if total > 0.0:
            return {classes[c]: self.acc[c] / total for c in range(K)}
        return {label: 1.0 / K for label in classes}

    def best(self, list classes):
        """The reference's ``Sample.best`` (the first most probable label of `proba`),
        without building the probabilities' dict."""
        cdef Py_ssize_t c, K = len(classes), best = 0
        cdef double total = self._total()
        if total > 0.0:
            for c in range(1, K):
                if self.acc[c] / total > self.acc[best] / total:  # the dict's values, compared as max does
                    best = c
        return classes[best]

    cdef double _total(self):
        cdef Py_ssize_t c
        cdef double total = 0.0
        for c in range(len(self.index)):
            total += self.acc[c]
        return total


cdef inline bint _compiled(learner, take):
    """Whether ``learner`` is a compiled tree with its schema fixed, fed the whole ``x``."""
    return take is None and isinstance(learner, Fields) and (<Fields>learner).n_features_in_ is not None


cdef object _predict_one(learner, take, Sample x, Codes codes, Tested* tested):
    """``learner.predict_one`` on the member's view of the sample; ``codes``: the compiled
    tree's `value_codes` of it (None for any other learner); ``tested``: see `predict_index`."""
    cdef Py_ssize_t k
    if tested != NULL:
        tested.node = -1
    if codes is not None:
        k = predict_index(<Fields>learner, x.xd, codes.at, x.scratch, tested)
        return None if k < 0 else (<Fields>learner).classes_[k]
    return learner.predict_one(x.xs if take is None else x.v[take])


cdef Codes _codes(learner, take, Sample x):
    """The compiled tree's `value_codes` of the sample, None for any other learner."""
    return value_codes(<Fields>learner, x.xd) if _compiled(learner, take) else None


cdef Codes _learn_one(learner, take, Sample x, y, double w, Codes codes, const Tested* tested):
    """``learner.learn_one(x, y, w)`` on the member's view (``w`` > 0, ``y`` checked); returns
    the codes to test it with next (a tree's first sample fixes its schema in Python, after
    which it is compiled). ``tested``: `_predict_one`'s of this sample just before, or NULL."""
    if codes is None:
        if not _compiled(learner, take):
            learner.learn_one(x.xs if take is None else x.v[take], y, w)
            return _codes(learner, take, x)
        codes = value_codes(<Fields>learner, x.xd)
        tested = NULL
    learn_codes(<Fields>learner, x.xd, codes, y, w, tested)
    return codes


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


cdef int _add(Sample x, dict vote, double weight) except -1:
    """The reference's ``Sample.add``: one vote from a learner's Python ``predict_proba_one``."""
    cdef double s = 0.0, f
    for p in vote.values():
        s += <double>p
    if s > 0.0 and weight > 0.0:
        f = weight / s
        for label, p in vote.items():
            x.acc[<Py_ssize_t>x.index[label]] += <double>p * f
    return 0


class Member(_ReferenceMember):
    __doc__ = _ReferenceMember.__doc__
    __slots__ = ()
    sample = Sample

    def vote(self, Sample x, bint weighted):
        """The reference's ``Member.vote``."""
        cdef Py_ssize_t c, K
        cdef double s, f, weight = 1.0, n_correct
        if weighted:  # the reference's `Member.weight`
            n_correct = self.n_correct
            weight = n_correct / <double>self.n_tested if n_correct > 0.0 else UNKNOWN_ACCURACY_WEIGHT
        learner, take = self.learner, self.take
        if not _compiled(learner, take):
            _add(x, learner.predict_proba_one(x.xs if take is None else x.v[take]), weight)
            return
        if not (<Fields>learner)._n_nodes or not predict_proba(<Fields>learner, x.xd, x.scratch):
            return
        K = len((<Fields>learner).classes_)
        s = 0.0
        for c in range(K):
            s += x.scratch[c]
        if s > 0.0 and weight > 0.0:
            f = weight / s
            labels = (<Fields>learner).classes_
            for c in range(K):
                x.acc[<Py_ssize_t>x.index[labels[c]]] += x.scratch[c] * f

    def train(self, Sample x, y, double w, long k):
        """The reference's ``Member.train``, step for step; the test's codes serve the
        training and the test after it, and its naive Bayes votes the training's nba score."""
        cdef double kw, error = 0.0
        cdef Tested tested
        learner, take = self.learner, self.take
        codes = _codes(learner, take, x)
        prediction = _predict_one(learner, take, x, codes, &tested)
        x.predictions.append(prediction)
        self.n_tested += w
        if prediction == y:
            self.n_correct += w
        if not k:
            return 0
        kw = k * w
        codes = _learn_one(learner, take, x, y, kw, codes, &tested)
        if self.drift is not None:
            error = 0.0 if _predict_one(learner, take, x, codes, NULL) == y else 1.0
        if self.bkg is not None:
            _learn_one(self.bkg, self.bkg_take, x, y, kw, _codes(self.bkg, self.bkg_take, x), NULL)
        elif self.promoted:
            _learn_one(learner, take, x, y, kw, codes, NULL)
        if self.drift is None:
            return 0
        signals = WARNING if self.warning is not None and _signal(self.warning, error) else 0
        if _signal(self.drift, error):
            signals |= DRIFT
        return signals


cdef double LIMIT = MAX_ABS_X


class SRPClassifier(_Reference):
    __doc__ = _Reference.__doc__
    _member_type = Member

    def _check_x(self, x, learning=False):
        """The reference's ``_check_x``, ``x`` read by `edgebayes._core.inputs.read_x` (the
        reference's rule and errors, the common cases without a Python float per check)."""
        cdef Py_ssize_t j, n
        d = self.n_features_
        cdef double* xd = read_x(x, -1 if d is None else <Py_ssize_t>d, LIMIT if learning else INFINITY,
                                 learning, &n)
        try:
            xs = [xd[j] for j in range(n)]
        finally:
            free(xd)
        return xs, None if self._has_features else np.array(xs, dtype=np.float64)
