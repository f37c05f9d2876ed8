# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The Hoeffding tree's per-sample path compiled: one C call per ``learn_one`` or
``predict_proba_one``.

:class:`HoeffdingTreeClassifier` here is :class:`edgebayes.tree.HoeffdingTreeClassifier`
(parameters, state, memory, the arena and its re-layouts, new classes and values, splits,
leaf ranking) with those two methods replaced, over the reference's own fields and ``array``
buffers: ``state()`` and ``memory_bytes()`` are the reference's code. What runs per sample is
here, each function the reference function of the same name (`edgebayes.tree.learning`,
`leaves`, `observers`, `criterion`), loop for loop and in the same operation order, built
with ``-ffp-contract=off``: every float of ``state()`` and every probability is
bit-identical to the reference's. What changes the tree's shape (a new class or value, a
split, a ranking of the leaves) calls the reference functions themselves, but for their two
re-layout passes, which they call as the tree's ``_rebuild`` and ``_active_slots``: those are
`arena.rebuild` and `arena.active_slots` in C loops here (a young tree re-lays at each of its
first classes and splits, and numpy's per-call cost made those re-lays most of its samples' time).

Hooks, the reference code called from here: ``HoeffdingTreeClassifier.learn_one`` and
``predict_proba_one`` before the first sample fixes the schema; `learning.make_room` for a
new class or nominal value; `learning.split` when the Hoeffding test passes;
`learning.rebalance` every `REBALANCE_PERIOD` samples learned.

`tree.pxd` declares `value_codes`, `predict_index` and `learn_codes` for the compiled SRP
(`edgebayes._core.srp`), which drives its members through them, looking a member's nominal
codes up once per sample for its test, training and second test, and taking the test's naive
Bayes votes for the training's nba score at the same leaf (`Tested`).
"""

from cpython cimport array
from cpython.dict cimport PyDict_Next
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.object cimport PyObject
from libc.math cimport INFINITY, erf, exp, isfinite, log, log2, sqrt
from libc.stdlib cimport free, malloc, qsort
from libc.string cimport memcpy

from edgebayes._core.inputs cimport read_x
from edgebayes.base import MAX_ABS_X, MAX_WEIGHT, check_label, check_weight
from edgebayes.tree import arena, criterion, leaves, learning, observers
from edgebayes.tree.hoeffding_tree import HoeffdingTreeClassifier as _Reference

# the layouts and constants of the reference, checked rather than retyped
cdef enum:
    SPLIT_FEATURE, FIRST_CHILD, N_BRANCHES, DEPTH, SLOT, N_NODE_INTS
cdef enum:
    THRESHOLD, WEIGHT_SEEN, WEIGHT_SINCE_ATTEMPT, MC_CORRECT, NB_CORRECT, N_NODE_FLOATS
cdef enum:
    WEIGHT, MEAN, M2, MIN, MAX, LOG_NORM, HALF_INV_VAR, N_FIELDS
assert (arena.SPLIT_FEATURE, arena.FIRST_CHILD, arena.N_BRANCHES, arena.DEPTH, arena.SLOT, arena.N_NODE_INTS) == (0, 1, 2, 3, 4, 5)
assert (arena.THRESHOLD, arena.WEIGHT_SEEN, arena.WEIGHT_SINCE_ATTEMPT, arena.MC_CORRECT, arena.NB_CORRECT, arena.N_NODE_FLOATS) == (0, 1, 2, 3, 4, 5)
assert (observers.WEIGHT, observers.MEAN, observers.M2, observers.MIN, observers.MAX,
        observers.LOG_NORM, observers.HALF_INV_VAR, observers.N_FIELDS) == (0, 1, 2, 3, 4, 5, 6, 7)
cdef double LOG_2PI = observers._LOG_2PI
cdef double TINY_PRODUCT = leaves.TINY_PRODUCT
cdef double SQRT2 = observers._SQRT2
cdef double MIN_BRANCH_FRACTION = criterion.MIN_BRANCH_FRACTION
cdef double MAX_SHARE_TO_SPLIT = criterion.MAX_SHARE_TO_SPLIT
cdef Py_ssize_t REBALANCE_PERIOD = learning.REBALANCE_PERIOD
cdef Py_ssize_t UNSEEN = -2  # a nominal value the tree's vocabulary lacks (learning makes room)
cdef Py_ssize_t SCAN_MAX = 16  # vocabularies up to this size are scanned, larger ones hashed
cdef double LIMIT = MAX_ABS_X
cdef double WEIGHT_LIMIT = MAX_WEIGHT


cdef class Fields:
    """The reference's attributes, as C fields (declared in tree.pxd; `edgebayes.tree.arena`
    describes the arrays), the two per-sample methods and the re-layout's two passes."""

    def learn_one(self, x, y, w=1.0):
        """Learn one sample (see the reference's ``learn_one``: same arguments, errors, result)."""
        check_label(y)
        cdef double wt
        if type(w) is float and 0.0 <= <double>w <= WEIGHT_LIMIT:
            wt = w
        else:
            wt = check_weight(w)
        if self.n_features_in_ is None:  # the first sample fixes the schema: the reference's way
            _Reference.learn_one(self, x, y, wt)
            return
        cdef Py_ssize_t n
        cdef double* xs = read_x(x, self.n_features_in_, LIMIT, True, &n)
        try:
            if wt != 0.0:
                learn_sample(self, xs, y, wt)
        finally:
            free(xs)

    def predict_proba_one(self, x):
        """Class probabilities at the leaf x reaches (see the reference's ``predict_proba_one``)."""
        cdef Py_ssize_t n, k, K
        if self.n_features_in_ is None:
            return _Reference.predict_proba_one(self, x)
        cdef double* xs = read_x(x, self.n_features_in_, INFINITY, False, &n)
        cdef double* out = NULL
        try:
            if not self._n_nodes:
                return {}
            K = len(self.classes_)
            out = <double*>malloc(2 * K * sizeof(double))
            if out == NULL:
                raise MemoryError()
            if not predict_proba(self, xs, out):
                return {}
            return {self.classes_[k]: out[k] for k in range(K)}
        finally:
            free(xs)
            free(out)

    def _rebuild(self, Py_ssize_t node_cap, Py_ssize_t slot_cap, Py_ssize_t ccap, list vcaps, keep):
        """`arena.rebuild` (same arguments, same arrays written)."""
        _rebuild(self, node_cap, slot_cap, ccap, vcaps, keep)

    def _active_slots(self, Py_ssize_t exclude=-1):
        """`arena.active_slots` (the same slots in the same order)."""
        return _active_slots(self, exclude)


# ---------------------------------------------------------------- the SRP's entry points


cdef Py_ssize_t predict_index(Fields t, const double* xs, const Py_ssize_t* codes, double* scratch,
                              Tested* tested) except -2:
    """The class index the reference's ``predict_one`` names (the first most probable), -1
    for no prediction; ``codes`` from `value_codes` (an unseen value's code routes and votes
    as a missing one, as in the reference's prediction); ``scratch`` holds at least
    2 len(classes_) doubles. ``tested`` (or NULL) receives the naive Bayes votes' winner, for
    a `learn_codes` of the same sample and codes right after."""
    if tested != NULL:
        tested.node = -1
    if not t._n_nodes:
        return -1
    cdef Py_ssize_t K = len(t.classes_), k, best = 0
    if not _predict_proba(t, xs, codes, scratch, tested):
        return -1
    for k in range(1, K):
        if scratch[k] > scratch[best]:
            best = k
    return best


cdef int learn_sample(Fields t, const double* xs, object y, double w) except -1:
    """The reference's ``learn_one`` after its checks (schema fixed, ``w`` > 0)."""
    return learn_codes(t, xs, _value_codes(t, xs, UNSEEN), y, w, NULL)


cdef Codes value_codes(Fields t, const double* xs):
    """The codes of ``xs``'s nominal values in ``t``'s vocabularies, `UNSEEN` for a value
    they lack, for `predict_index` and `learn_codes`."""
    return _value_codes(t, xs, UNSEEN)


cdef int learn_codes(Fields t, const double* xs, Codes gc, object y, double w, const Tested* tested) except -1:
    """`learn_sample` with the codes of `value_codes`: a new class or nominal value first
    makes room (`learning.make_room`), then `learn`. The codes of new values are written into
    ``gc``, which then holds no `UNSEEN` (valid for this tree until it learns again).
    ``tested``: `predict_index`'s of this sample and codes just before (NULL for none), whose
    naive Bayes winner nba's score takes at the same leaf instead of voting again."""
    cdef Py_ssize_t k, g
    cdef bint new = False
    c = t._class_index.get(y)
    for g in t._nominal_features:
        new = new or gc.at[g] == UNSEEN
    if c is None or new:  # the reference's value codes (None: new), then the codes make_room gave
        xl = [xs[k] for k in range(t.n_features_in_)]
        codes = [None if gc.at[g] == UNSEEN else gc.at[g] for g in t._nominal_features]
        c, codes = learning.make_room(t, y, c is None, xl, codes)
        for k in range(len(codes)):
            gc.at[<Py_ssize_t>t._nominal_features[k]] = codes[k]
        tested = NULL  # re-laid, and the votes' vocabulary sizes changed
    _learn(t, xs, gc.at, c, w, tested)
    return 0


cdef class Codes:
    """Per global feature, the code of a sample's nominal value (-1: missing; for a value the
    vocabulary lacks -1 or `UNSEEN`, see `_value_codes`), looked up once and read by routing,
    naive Bayes votes and observers (fields in tree.pxd)."""

    def __cinit__(self, Fields t):
        cdef Py_ssize_t d = t.n_features_in_
        self.at = &self.stack[0]
        if d > 32:
            self.at = <Py_ssize_t*>malloc(d * sizeof(Py_ssize_t))
            if self.at == NULL:
                raise MemoryError()

    def __dealloc__(self):
        if self.at != &self.stack[0]:
            free(self.at)


cdef Codes _value_codes(Fields t, const double* xs, Py_ssize_t unseen):
    """The codes of ``xs``'s nominal values (`Codes`): -1 for a missing value, ``unseen`` for a
    value the vocabulary lacks (-1 to predict, as the reference's ``vocab.get(v, -1)``;
    `UNSEEN` to learn, where the reference's ``learning.value_codes`` says None)."""
    cdef Codes gc = Codes(t)
    cdef Py_ssize_t k, g
    cdef double v
    for k in range(len(t._nominal_features)):
        g = t._nominal_features[k]
        v = xs[g]
        gc.at[g] = _code_of(<dict>t._vocabs[k], v, unseen) if v == v else -1
    return gc


cdef Py_ssize_t _code_of(dict vocab, double v, Py_ssize_t unseen) except? -3:
    """``vocab.get(v, unseen)`` for a number ``v``: a small vocabulary of float keys is scanned
    with C's ``==`` (the same key as the dict's hash lookup finds: a float equals a float key
    exactly when their doubles compare equal), which spares a float object and its hash."""
    cdef Py_ssize_t pos = 0
    cdef PyObject* key
    cdef PyObject* code
    if len(vocab) <= SCAN_MAX:
        while PyDict_Next(vocab, &pos, &key, &code):
            if not PyFloat_CheckExact(<object>key):
                return vocab.get(v, unseen)
            if PyFloat_AS_DOUBLE(<object>key) == v:
                return <Py_ssize_t>(<object>code)
        return unseen
    return vocab.get(v, unseen)


# ---------------------------------------------------------------- learning (`learning`)


cdef int _learn(Fields t, const double* xs, const Py_ssize_t* codes, Py_ssize_t c, double w,
                const Tested* tested) except -1:
    """`learning.learn`: route adding ``w`` on the way, score nba, observe, attempt a split
    every grace period, rank the leaves every `REBALANCE_PERIOD` samples (bounded trees)."""
    cdef Py_ssize_t parent
    cdef Py_ssize_t node = _route(t, xs, codes, w, &parent)
    cdef double* nf = t._node_floats.data.as_doubles
    cdef Py_ssize_t s = t._node_ints.data.as_ints[node * N_NODE_INTS + SLOT]
    cdef double since
    if s >= 0:
        if t.leaf_prediction == "nba":
            _score_nba(t, node, s, xs, codes, c, w, tested)
        _observe(t, s, xs, codes, c, w)
    t._class_weights.data.as_doubles[node * t._class_cap + c] += w
    t._n_learned += 1
    if s >= 0:
        since = nf[node * N_NODE_FLOATS + WEIGHT_SINCE_ATTEMPT] + w
        if since >= <double>t.grace_period:
            nf[node * N_NODE_FLOATS + WEIGHT_SINCE_ATTEMPT] = 0.0
            _attempt_split(t, node)
        else:
            nf[node * N_NODE_FLOATS + WEIGHT_SINCE_ATTEMPT] = since
    if t.max_size_bytes is not None and t._n_learned % REBALANCE_PERIOD == 0:
        learning.rebalance(t)
    return 0


cdef Py_ssize_t _route(Fields t, const double* xs, const Py_ssize_t* codes, double w,
                       Py_ssize_t* parent) except -1:
    """`learning.route`: the leaf ``xs`` reaches, its parent (-1 for the root) in
    ``parent[0]``; ``w`` (0 to predict) added to each node's weight seen as it is passed
    (the reference adds it after routing: the same, as routing compares only children not
    yet passed)."""
    cdef int* ni = t._node_ints.data.as_ints
    cdef double* nf = t._node_floats.data.as_doubles
    cdef Py_ssize_t node = 0, b, g, ch, nbr, code
    cdef double v, thr
    parent[0] = -1
    while True:
        if w:
            nf[node * N_NODE_FLOATS + WEIGHT_SEEN] += w
        b = node * N_NODE_INTS
        g = ni[b + SPLIT_FEATURE]
        if g < 0:
            return node
        v = xs[g]
        ch = ni[b + FIRST_CHILD]
        nbr = ni[b + N_BRANCHES]
        parent[0] = node
        if nbr:
            code = codes[g]
            node = ch + code if 0 <= code < nbr else _heaviest_branch(nf, ch, nbr)
        else:
            thr = nf[node * N_NODE_FLOATS + THRESHOLD]
            if v <= thr:
                node = ch
            elif v > thr:
                node = ch + 1
            else:
                node = _heaviest_branch(nf, ch, 2)


cdef inline Py_ssize_t _heaviest_branch(const double* nf, Py_ssize_t ch, Py_ssize_t nbr):
    """`learning._heaviest_branch`: the child with the most weight seen, the first on a tie."""
    cdef Py_ssize_t i, best = 0
    for i in range(1, nbr):
        if nf[(ch + i) * N_NODE_FLOATS + WEIGHT_SEEN] > nf[(ch + best) * N_NODE_FLOATS + WEIGHT_SEEN]:
            best = i
    return ch + best


cdef int _observe(Fields t, Py_ssize_t s, const double* xs, const Py_ssize_t* codes, Py_ssize_t c,
                  double w) except -1:
    """`observers.observe`: weighted Welford per numeric feature, counts per nominal one."""
    cdef double* st = t._gaussians.data.as_doubles
    cdef Py_ssize_t n_num = len(t._numeric_features), j, k = (s * t._class_cap + c) * n_num * N_FIELDS, code, vcap
    cdef double v, sw, mu, d, m2, var
    for j in range(n_num):
        v = xs[<Py_ssize_t>t._numeric_features[j]]
        if v != v:
            pass
        elif st[k + WEIGHT] <= 0.0:
            st[k + WEIGHT] = w
            st[k + MEAN] = v
            st[k + MIN] = v
            st[k + MAX] = v
        else:
            sw = st[k + WEIGHT] + w
            st[k + WEIGHT] = sw
            mu = st[k + MEAN]
            d = v - mu
            mu += d * w / sw
            st[k + MEAN] = mu
            m2 = st[k + M2] + w * d * (v - mu)
            st[k + M2] = m2
            if v < st[k + MIN]:
                st[k + MIN] = v
            if v > st[k + MAX]:
                st[k + MAX] = v
            if sw > 1.0 and m2 > 0.0:
                var = m2 / (sw - 1.0)
                st[k + LOG_NORM] = -0.5 * (LOG_2PI + log(var))
                st[k + HALF_INV_VAR] = 0.5 / var
        k += N_FIELDS
    for j in range(len(t._nominal_features)):
        code = codes[<Py_ssize_t>t._nominal_features[j]]
        if code >= 0:
            vcap = t._value_caps[j]
            (<array.array>t._nominal_counts[j]).data.as_doubles[(s * t._class_cap + c) * vcap + code] += w
    return 0


# ---------------------------------------------------------------- splits (`learning`, `observers`, `criterion`)


cdef int _attempt_split(Fields t, Py_ssize_t node) except -1:
    """`learning.attempt_split`: evaluate every feature's best split, split on the best when
    the Hoeffding test (or a tie) allows, clear a near-pure or tied leaf's observers."""
    cdef double thr1 = 0.0  # the winner's threshold
    cdef int* ni = t._node_ints.data.as_ints
    cdef Py_ssize_t b = node * N_NODE_INTS
    if t.max_depth is not None and ni[b + DEPTH] >= t.max_depth:
        return 0
    cdef Py_ssize_t K = len(t.classes_), c, n_nonzero = 0, s = ni[b + SLOT]
    cdef double* pre = t._class_weights.data.as_doubles + node * t._class_cap
    cdef double total = 0.0, top = -INFINITY
    for c in range(K):
        total += pre[c]
        n_nonzero += pre[c] > 0.0
        if pre[c] > top:
            top = pre[c]
    if n_nonzero < 2:
        return 0
    cdef double h_pre = _entropy(pre, K, 1)
    # the best two suggestions by (merit, global feature), the null split (-inf, -1) included
    cdef double m1 = -INFINITY, m2 = -INFINITY, merit, thr
    cdef Py_ssize_t g1 = -1, g2 = -1, g, j
    cdef Py_ssize_t n_num = len(t._numeric_features), n_nom = len(t._nominal_features)
    cdef double* scratch = <double*>malloc(3 * K * sizeof(double))
    if scratch == NULL:
        raise MemoryError()
    try:
        for j in range(n_num + n_nom):
            if j < n_num:
                g = t._numeric_features[j]
                merit = _numeric_split(t, s, j, K, h_pre, &thr, scratch)
            else:
                g = t._nominal_features[j - n_num]
                merit = _nominal_split(t, s, j - n_num, K, h_pre)
                thr = 0.0
            if merit > m1 or (merit == m1 and g > g1):
                m2, g2 = m1, g1
                m1, g1, thr1 = merit, g, thr
            elif merit > m2 or (merit == m2 and g > g2):
                m2, g2 = merit, g
    finally:
        free(scratch)
    cdef double R = log2(<double>(K if K > 2 else 2))
    cdef double eps = sqrt(R * R * log(1.0 / <double>t.delta) / (2.0 * total))
    cdef bint near_pure = top / total > MAX_SHARE_TO_SPLIT
    cdef bint tie = eps < <double>t.tau
    if isfinite(m1) and (m1 - m2 > eps or (tie and not near_pure)):
        _split(t, node, s, g1, thr1)
    elif near_pure or tie:
        _clear_slot(t, s)
    return 0


cdef int _split(Fields t, Py_ssize_t node, Py_ssize_t s, Py_ssize_t g, double thr) except -1:
    """`learning.split` on the winner, its class weights per branch computed again (the same
    floats as in the evaluation)."""
    cdef Py_ssize_t K = len(t.classes_), c
    cdef double* sides = <double*>malloc(3 * K * sizeof(double))
    cdef double* st = t._gaussians.data.as_doubles
    cdef Py_ssize_t first, step = len(t._numeric_features) * N_FIELDS
    if sides == NULL:
        raise MemoryError()
    try:
        if g in t._vocab_of:
            dists = _nominal_branches(t, s, t._nominal_features.index(g), K)
            learning.split(t, node, g, float("nan"), dists)
        else:
            first = _first(t, s, t._numeric_features.index(g))
            _spreads(st, first, step, K, sides + 2 * K)
            _sides(st, first, step, K, thr, sides + 2 * K, sides)
            dists = [[sides[c] for c in range(K)], [sides[K + c] for c in range(K)]]
            learning.split(t, node, g, thr, dists)
    finally:
        free(sides)
    return 0


cdef inline Py_ssize_t _first(Fields t, Py_ssize_t s, Py_ssize_t j):
    """Index of class 0's record of numeric feature ``j`` at slot ``s``."""
    return s * t._class_cap * len(t._numeric_features) * N_FIELDS + j * N_FIELDS


cdef double _numeric_split(Fields t, Py_ssize_t s, Py_ssize_t j, Py_ssize_t K, double h_pre,
                           double* thr, double* sides) except? -1:
    """`observers.numeric_splits` for numeric feature ``j``: the best merit (-inf for none)
    and its threshold in ``thr[0]``; ``sides`` is scratch of 3 K doubles."""
    cdef double* st = t._gaussians.data.as_doubles
    cdef Py_ssize_t step = len(t._numeric_features) * N_FIELDS, first = _first(t, s, j), c, k, i
    cdef Py_ssize_t n_points = t.n_split_points
    cdef double lo = INFINITY, hi = -INFINITY, bin_size, cand, merit, best = -INFINITY
    thr[0] = 0.0
    for c in range(K):
        k = first + c * step
        if st[k + MIN] < lo:
            lo = st[k + MIN]
        if st[k + MAX] > hi:
            hi = st[k + MAX]
    if not lo < hi:
        return best
    bin_size = (hi - lo) / (n_points + 1.0)
    _spreads(st, first, step, K, sides + 2 * K)  # the same for every candidate
    for i in range(1, n_points + 1):
        cand = lo + bin_size * <double>i
        if not (lo < cand < hi):
            continue
        _sides(st, first, step, K, cand, sides + 2 * K, sides)
        merit = _info_gain(h_pre, sides, 2, K)
        if merit > best:
            best = merit
            thr[0] = cand
    return best


cdef void _spreads(const double* st, Py_ssize_t first, Py_ssize_t step, Py_ssize_t K, double* std):
    """`observers._sides`'s standard deviation of each class into ``std[:K]``."""
    cdef Py_ssize_t c, k
    cdef double w
    for c in range(K):
        k = first + c * step
        w = st[k + WEIGHT]
        if w > 1.0:
            std[c] = sqrt((st[k + M2] if st[k + M2] > 0.0 else 0.0) / (w - 1.0))
        else:
            std[c] = 0.0


cdef void _sides(const double* st, Py_ssize_t first, Py_ssize_t step, Py_ssize_t K, double t,
                 const double* stds, double* out):
    """`observers._sides`: class weights at or below ``t`` into ``out[:K]``, above into
    ``out[K:2K]``; ``stds`` from `_spreads`."""
    cdef Py_ssize_t c, k
    cdef double w, mean, lo_c, hi_c, std, frac, below, above
    for c in range(K):
        k = first + c * step
        w = st[k + WEIGHT]
        mean = st[k + MEAN]
        lo_c = st[k + MIN]
        hi_c = st[k + MAX]
        std = stds[c]
        if t < lo_c:
            frac = 0.0
        elif t >= hi_c:
            frac = 1.0
        elif std > 0.0:
            frac = 0.5 * (1.0 + erf((t - mean) / (std * SQRT2)))
        else:
            frac = 1.0 if t >= mean else 0.0
        below = frac * w
        above = w - below
        out[c] = below
        out[K + c] = above if above > 0.0 else 0.0


cdef double _nominal_split(Fields t, Py_ssize_t s, Py_ssize_t k, Py_ssize_t K, double h_pre) except? -1:
    """`observers.nominal_splits` for nominal feature ``k``: the multiway split's merit, -inf
    with fewer than two values seen at slot ``s``."""
    cdef Py_ssize_t vcap = t._value_caps[k], v, c, last = 0, n_seen = 0
    cdef double* counts = (<array.array>t._nominal_counts[k]).data.as_doubles
    cdef Py_ssize_t base = s * t._class_cap * vcap
    cdef bint seen
    for v in range(vcap):
        seen = False
        for c in range(K):
            seen = seen or counts[base + c * vcap + v] > 0.0
        if seen:
            last = v + 1
            n_seen += 1
    if n_seen < 2:
        return -INFINITY
    cdef double* branches = <double*>malloc(last * K * sizeof(double))
    if branches == NULL:
        raise MemoryError()
    try:
        for v in range(last):
            for c in range(K):
                branches[v * K + c] = counts[base + c * vcap + v]
        return _info_gain(h_pre, branches, last, K)
    finally:
        free(branches)


cdef list _nominal_branches(Fields t, Py_ssize_t s, Py_ssize_t k, Py_ssize_t K):
    """The class weights per branch of nominal feature ``k``'s split (as `observers.nominal_splits`)."""
    cdef Py_ssize_t vcap = t._value_caps[k], v, c, last = 0
    cdef double* counts = (<array.array>t._nominal_counts[k]).data.as_doubles
    cdef Py_ssize_t base = s * t._class_cap * vcap
    rows = []
    for v in range(vcap):
        row = [counts[base + c * vcap + v] for c in range(K)]
        rows.append(row)
        if any(x > 0.0 for x in row):
            last = v + 1
    return rows[:last]


cdef double _entropy(const double* weights, Py_ssize_t n, Py_ssize_t stride):
    """`criterion.entropy` of ``weights[0], weights[stride], ...`` (n of them)."""
    cdef double total = 0.0, acc = 0.0, v
    cdef Py_ssize_t i
    for i in range(n):
        v = weights[i * stride]
        if v > 0.0:
            total += v
            acc -= v * log2(v)
    if total <= 0.0:
        return 0.0
    return acc / total + log2(total)


cdef double _info_gain(double h_pre, const double* branches, Py_ssize_t n_br, Py_ssize_t K):
    """`criterion.info_gain` of ``n_br`` branches of K class weights each, row after row."""
    cdef double w = 0.0, wb, post = 0.0
    cdef Py_ssize_t b, c, big = 0
    cdef double stack[64]
    cdef double* size = &stack[0]
    if n_br > 64:
        size = <double*>malloc(n_br * sizeof(double))
    for b in range(n_br):
        wb = 0.0
        for c in range(K):
            wb += branches[b * K + c]
        size[b] = wb
        w += wb
    for b in range(n_br):
        if size[b] > MIN_BRANCH_FRACTION * w:
            big += 1
    if big >= 2:
        for b in range(n_br):
            if size[b] > 0.0:
                post += size[b] * _entropy(branches + b * K, K, 1)
    if size != &stack[0]:
        free(size)
    if big < 2:
        return -INFINITY
    return h_pre - post / w


cdef void _clear_slot(Fields t, Py_ssize_t s):
    """`arena.clear_slot`: slot ``s``'s observers empty (zero weight, min +inf, max -inf)."""
    cdef Py_ssize_t n = t._class_cap * len(t._numeric_features), i, k, vcap
    cdef double* st = t._gaussians.data.as_doubles + s * n * N_FIELDS
    cdef double* counts
    for i in range(n * N_FIELDS):
        st[i] = 0.0
    for i in range(n):
        st[i * N_FIELDS + MIN] = INFINITY
        st[i * N_FIELDS + MAX] = -INFINITY
    for k in range(len(t._nominal_counts)):
        vcap = t._value_caps[k]
        counts = (<array.array>t._nominal_counts[k]).data.as_doubles + s * t._class_cap * vcap
        for i in range(t._class_cap * vcap):
            counts[i] = 0.0


# ---------------------------------------------------------------- re-layout (`arena`)


cdef array.array INTS = array.array("i"), DOUBLES = array.array("d")


cdef int _rebuild(Fields t, Py_ssize_t node_cap, Py_ssize_t slot_cap, Py_ssize_t ccap, list vcaps,
                  object keep_slots) except -1:
    """`arena.rebuild`: each array re-laid at the new capacities (``array.clone``: exactly
    sized, zeroed), the used records copied, slot keep[i] of the old pool as slot i."""
    cdef list keep = list(keep_slots)
    cdef Py_ssize_t n = t._n_nodes, old_c = t._class_cap, old_s = t._slot_cap, ks = len(keep)
    cdef Py_ssize_t rec = len(t._numeric_features) * N_FIELDS, i, j, c, k, vcap, old_v, s
    if node_cap < n or ccap < old_c or not 0 <= ks <= slot_cap or len(vcaps) != len(t._value_caps):
        raise ValueError(f"cannot re-lay {n} nodes, {old_c} classes and {ks} kept slots at "
                         f"({node_cap}, {slot_cap}, {ccap}, {vcaps})")
    _check_lengths(t)
    cdef Py_ssize_t* kp = <Py_ssize_t*>malloc((ks + old_s + 1) * sizeof(Py_ssize_t))
    if kp == NULL:
        raise MemoryError()
    cdef Py_ssize_t* remap = kp + ks  # old slot -> new slot, -1 for a slot not kept
    cdef array.array ints, floats, weights, stats, counts, slots
    cdef double* dst
    cdef list nominal = []
    try:
        for j in range(old_s):
            remap[j] = -1
        for j in range(ks):
            kp[j] = keep[j]
            if not 0 <= kp[j] < old_s:
                raise IndexError(f"slot {kp[j]} is not in a pool of {old_s}")
            remap[kp[j]] = j
        ints = array.clone(INTS, node_cap * N_NODE_INTS, True)
        memcpy(ints.data.as_ints, t._node_ints.data.as_ints, n * N_NODE_INTS * sizeof(int))
        for i in range(n):
            s = ints.data.as_ints[i * N_NODE_INTS + SLOT]
            if s >= old_s:
                raise IndexError(f"node {i}'s slot {s} is not in a pool of {old_s}")
            ints.data.as_ints[i * N_NODE_INTS + SLOT] = remap[s] if s >= 0 else -1
        floats = array.clone(DOUBLES, node_cap * N_NODE_FLOATS, True)
        memcpy(floats.data.as_doubles, t._node_floats.data.as_doubles, n * N_NODE_FLOATS * sizeof(double))
        weights = array.clone(DOUBLES, node_cap * ccap, True)
        for i in range(n):
            for c in range(old_c):
                weights.data.as_doubles[i * ccap + c] = t._class_weights.data.as_doubles[i * old_c + c]
        stats = array.clone(DOUBLES, slot_cap * ccap * rec, True)
        dst = stats.data.as_doubles
        for i in range(0, slot_cap * ccap * rec, N_FIELDS):  # empty observers (`arena.empty_stats`)
            dst[i + MIN] = INFINITY
            dst[i + MAX] = -INFINITY
        for j in range(ks):
            for c in range(old_c):
                memcpy(dst + (j * ccap + c) * rec, t._gaussians.data.as_doubles + (kp[j] * old_c + c) * rec,
                       rec * sizeof(double))
        for k in range(len(vcaps)):
            vcap, old_v = vcaps[k], t._value_caps[k]
            if vcap < old_v:
                raise ValueError(f"value capacity {vcap} under the {old_v} of feature {k}")
            counts = array.clone(DOUBLES, slot_cap * ccap * vcap, True)
            for j in range(ks):
                for c in range(old_c):
                    memcpy(counts.data.as_doubles + (j * ccap + c) * vcap,
                           (<array.array>t._nominal_counts[k]).data.as_doubles + (kp[j] * old_c + c) * old_v,
                           old_v * sizeof(double))
            nominal.append(counts)
        slots = array.clone(INTS, slot_cap, True)  # a stack: the lowest free slot on top
        for i in range(slot_cap - ks):
            slots.data.as_ints[i] = slot_cap - 1 - i
    finally:
        free(kp)
    t._node_ints, t._node_floats, t._class_weights, t._gaussians = ints, floats, weights, stats
    t._nominal_counts, t._free_slots, t._n_free_slots = nominal, slots, slot_cap - ks
    t._node_cap, t._slot_cap, t._class_cap, t._value_caps = node_cap, slot_cap, ccap, list(vcaps)
    t._bytes = None  # `arena.resized`
    return 0


cdef int _check_lengths(Fields t) except -1:
    """Each array holds what its capacities say (where numpy's reshape of it would fail)."""
    cdef Py_ssize_t n_cap = t._node_cap, s_cap = t._slot_cap, c_cap = t._class_cap, k
    cdef Py_ssize_t rec = len(t._numeric_features) * N_FIELDS
    cdef bint ok = (len(t._node_ints) == n_cap * N_NODE_INTS and len(t._node_floats) == n_cap * N_NODE_FLOATS
                    and len(t._class_weights) == n_cap * c_cap and len(t._gaussians) == s_cap * c_cap * rec
                    and len(t._nominal_counts) == len(t._value_caps) and t._n_nodes <= n_cap)
    for k in range(len(t._nominal_counts) if ok else 0):
        ok = ok and len(t._nominal_counts[k]) == s_cap * c_cap * <Py_ssize_t>t._value_caps[k]
    if not ok:
        raise ValueError("the tree's arrays do not match its capacities")
    return 0


cdef struct Ranked:
    double key  # minus the leaf's promise
    Py_ssize_t at  # its place in node order
    int slot


cdef int _by_key(const void* a, const void* b) noexcept nogil:
    """numpy's stable ascending order: by key, NaN last, then by place."""
    cdef const Ranked* x = <const Ranked*>a
    cdef const Ranked* y = <const Ranked*>b
    cdef bint xn = x.key != x.key, yn = y.key != y.key
    if xn != yn:
        return 1 if xn else -1
    if not xn and x.key != y.key:
        return -1 if x.key < y.key else 1
    return (x.at > y.at) - (x.at < y.at)


cdef list _active_slots(Fields t, Py_ssize_t exclude):
    """`arena.active_slots`: the active leaves but ``exclude`` by promise (`arena.promise`:
    weight seen minus the largest class weight), highest first, ties in node order."""
    cdef Py_ssize_t n = t._n_nodes, ccap = t._class_cap, i, c, m = 0
    cdef const int* ints = t._node_ints.data.as_ints
    cdef const double* cw = t._class_weights.data.as_doubles
    cdef double top, v
    _check_lengths(t)
    cdef Ranked* ranked = <Ranked*>malloc((n + 1) * sizeof(Ranked))
    if ranked == NULL:
        raise MemoryError()
    try:
        for i in range(n):
            if ints[i * N_NODE_INTS + SPLIT_FEATURE] >= 0 or ints[i * N_NODE_INTS + SLOT] < 0 or i == exclude:
                continue
            if ccap == 0:
                raise ValueError("a leaf's promise with no class column")
            top = cw[i * ccap]
            for c in range(1, ccap):
                v = cw[i * ccap + c]
                if top == top and (v > top or v != v):  # numpy's max: a NaN wins
                    top = v
            ranked[m].key = -(t._node_floats.data.as_doubles[i * N_NODE_FLOATS + WEIGHT_SEEN] - top)
            ranked[m].at = m
            ranked[m].slot = ints[i * N_NODE_INTS + SLOT]
            m += 1
        qsort(ranked, m, sizeof(Ranked), _by_key)
        return [ranked[i].slot for i in range(m)]
    finally:
        free(ranked)


# ---------------------------------------------------------------- predictions (`leaves`)


cdef bint predict_proba(Fields t, const double* xs, double* out) except -1:
    """`leaves.predict` at the leaf ``xs`` reaches: probabilities into ``out[:K]`` (``out``
    holds 2 K doubles, the rest scratch); False for no prediction (no class has weight there)."""
    cdef Codes codes = _value_codes(t, xs, -1)  # held while its buffer is read
    return _predict_proba(t, xs, codes.at, out, NULL)


cdef bint _predict_proba(Fields t, const double* xs, const Py_ssize_t* codes, double* out,
                         Tested* tested) except -1:
    """`predict_proba` with the codes of ``xs``'s nominal values (negative: missing or unseen);
    where it computes naive Bayes votes at the leaf, their winner into ``tested`` (or NULL)."""
    cdef Py_ssize_t parent
    cdef Py_ssize_t node = _route(t, xs, codes, 0.0, &parent), K = len(t.classes_), c, s, best
    cdef double* nf = t._node_floats.data.as_doubles
    cdef double total, top
    if nf[node * N_NODE_FLOATS + WEIGHT_SEEN] <= 0.0 and parent >= 0:
        node = parent
    cdef Py_ssize_t fb = node * N_NODE_FLOATS
    s = t._node_ints.data.as_ints[node * N_NODE_INTS + SLOT]
    mode = t.leaf_prediction
    if (s >= 0 and mode != "mc" and nf[fb + WEIGHT_SEEN] >= <double>t.nb_threshold
            and not (mode == "nba" and nf[fb + MC_CORRECT] > nf[fb + NB_CORRECT])):
        _nb_log_votes(t, node, s, xs, codes, out)
        top, best = -INFINITY, -1
        for c in range(K):
            if out[c] > top:
                top, best = out[c], c
        if tested != NULL:
            tested.node, tested.best = node, best
        if isfinite(top):
            total = 0.0
            for c in range(K):
                out[c] = exp(out[c] - top)
                total += out[c]
            for c in range(K):
                out[c] = out[c] / total
            return True
    cdef double* cc = t._class_weights.data.as_doubles + node * t._class_cap
    total = 0.0
    for c in range(K):
        total += cc[c]
    if not total > 0.0:
        return False
    for c in range(K):
        out[c] = cc[c] / total
    return True


cdef int _score_nba(Fields t, Py_ssize_t node, Py_ssize_t s, const double* xs, const Py_ssize_t* codes,
                    Py_ssize_t c, double w, const Tested* tested) except -1:
    """`leaves.score_nba`: credit mc and nb with ``w`` where each predicted class ``c``; nb's
    class is ``tested``'s when the test voted at this leaf (the same votes: nothing changed)."""
    cdef Py_ssize_t K = len(t.classes_), k, arg = -1
    cdef double* nf = t._node_floats.data.as_doubles
    cdef double* cc = t._class_weights.data.as_doubles + node * t._class_cap
    cdef double best = -INFINITY
    for k in range(K):
        if cc[k] > best:
            best, arg = cc[k], k
    if arg == c:
        nf[node * N_NODE_FLOATS + MC_CORRECT] += w
    if tested != NULL and tested.node == node:
        arg = tested.best
    else:
        arg = _nb_winner(t, node, s, xs, codes)
    if (arg if arg > 0 else 0) == c:
        nf[node * N_NODE_FLOATS + NB_CORRECT] += w
    return 0


cdef Py_ssize_t _nb_winner(Fields t, Py_ssize_t node, Py_ssize_t s, const double* xs,
                           const Py_ssize_t* codes) except -2:
    """The first class of highest naive Bayes vote at ``node``, -1 when none is finite."""
    cdef Py_ssize_t K = len(t.classes_), k, arg = -1
    cdef double best = -INFINITY
    cdef double* votes = <double*>malloc(2 * K * sizeof(double))
    if votes == NULL:
        raise MemoryError()
    try:
        _nb_log_votes(t, node, s, xs, codes, votes)
        for k in range(K):
            if votes[k] > best:
                best, arg = votes[k], k
    finally:
        free(votes)
    return arg


cdef int _nb_log_votes(Fields t, Py_ssize_t node, Py_ssize_t s, const double* xs, const Py_ssize_t* codes,
                       double* votes) except -1:
    """`leaves.nb_log_votes` into ``votes[:K]``; ``votes[K:2K]`` is scratch (the products).
    The same operations in the same order; the fields read once into locals (C reads them
    again after each store through a double pointer)."""
    cdef double* st = t._gaussians.data.as_doubles
    cdef double* cc = t._class_weights.data.as_doubles + node * t._class_cap
    cdef list numeric = t._numeric_features, nominal = t._nominal_features
    cdef Py_ssize_t K = len(t.classes_), n_num = len(numeric), nfe = n_num * N_FIELDS, base = s * t._class_cap
    cdef Py_ssize_t c, j, k, i, vcap, code, n_values, g
    cdef Py_ssize_t on_stack[32]
    cdef Py_ssize_t* columns = &on_stack[0]
    cdef double n_c, ll, d, iv, total, prod, tiny = TINY_PRODUCT
    cdef double* row
    cdef double* counts
    cdef bint zero
    if n_num > 32:
        columns = <Py_ssize_t*>malloc(n_num * sizeof(Py_ssize_t))
        if columns == NULL:
            raise MemoryError()
    for j in range(n_num):
        columns[j] = numeric[j]
    for c in range(K):
        votes[c] = -INFINITY
        n_c = cc[c]
        if n_c <= 0.0:
            continue
        ll = log(n_c)
        k = (base + c) * nfe
        for j in range(n_num):
            d = xs[columns[j]] - st[k + MEAN]
            if d == d:
                iv = st[k + HALF_INV_VAR]
                if iv:
                    ll += st[k + LOG_NORM] - d * d * iv
                else:
                    if st[k + WEIGHT] > 0.0:
                        zero = d != 0.0
                    else:
                        zero = _observed(t, s, j)
                    if zero:
                        ll = -INFINITY
                        break
            k += N_FIELDS
        votes[c] = ll
    if n_num > 32:
        free(columns)
    cdef double* prods = votes + K
    for c in range(K):
        prods[c] = 1.0
    for j in range(len(nominal)):
        g = nominal[j]
        if xs[g] != xs[g]:
            continue
        vcap = t._value_caps[j]
        counts = (<array.array>t._nominal_counts[j]).data.as_doubles
        code = codes[g]
        n_values = len(<dict>t._vocabs[j])
        for c in range(K):
            if votes[c] == -INFINITY:
                continue
            row = counts + (base + c) * vcap
            total = 0.0
            for i in range(vcap):
                total += row[i]
            if total > 0.0:
                prod = prods[c]
                if prod < tiny:
                    votes[c] += log(prod)
                    prod = 1.0
                prods[c] = prod * (((row[code] if code >= 0 else 0.0) + 1.0) / (total + n_values))
    for c in range(K):
        if prods[c] != 1.0 and votes[c] != -INFINITY:
            votes[c] += log(prods[c])
    return 0


cdef bint _observed(Fields t, Py_ssize_t s, Py_ssize_t j):
    """`leaves.observed_features` for numeric feature ``j``: any class with weight on it at ``s``."""
    cdef double* st = t._gaussians.data.as_doubles
    cdef Py_ssize_t n_num = len(t._numeric_features), c
    for c in range(len(t.classes_)):
        if st[((s * t._class_cap + c) * n_num + j) * N_FIELDS + WEIGHT] > 0.0:
            return True
    return False


class HoeffdingTreeClassifier(Fields, _Reference):
    __doc__ = _Reference.__doc__
