"""Hoeffding tree classifier (VFDT) in flat arrays, with a hard memory bound.

Domingos and Hulten (2000), "Mining high-speed data streams", with the semantics of MOA's
``HoeffdingTree`` (information gain, Gaussian numeric observers, mc / nb / nba leaves, memory
management by leaf deactivation). See DESIGN.md 2.3 and 3 and the package docstring.
"""

from __future__ import annotations

import math
import sys
from array import array

import numpy as np

from edgebayes.base import (
    MAX_ABS_X,
    ClassLimitError,
    Learner,
    as_floats,
    check_count,
    check_finite,
    check_label,
    check_weight,
    refuse_malformed,
)
from edgebayes.sizes import append_bytes, insert_bytes
from edgebayes.tree import storage
from edgebayes.tree.criterion import MAX_SHARE_TO_SPLIT, hoeffding_bound, merit_range
from edgebayes.tree.observers import (
    INV2VAR,
    LOGNORM,
    MAX,
    MEAN,
    MIN,
    N_FIELDS,
    W,
    nominal_splits,
    numeric_splits,
    softmax_log,
)

# Node record (struct of arrays, one int record and one float record per node).
_FEAT, _CHILD, _NBR, _DEPTH, _SLOT = range(5)  # ints: split feature (-1 leaf), first child,
_NI = 5  # branches of a nominal split (0 numeric), depth, stats slot (-1 inactive / split)
_THR, _NW, _SINCE, _MCOK, _NBOK = range(5)  # floats: threshold, weight seen, weight seen since
_NF = 5  # the last split evaluation, weight predicted right by majority class / by naive Bayes

_LEAF_PREDICTIONS = ("mc", "nb", "nba")
#: Smallest accepted ``max_size_bytes``: the Python objects of an empty tree plus a root.
MIN_SIZE_BYTES = 4096
#: Learned samples between two rankings of the leaves by promise (bounded trees only).
REBALANCE_PERIOD = 1000
_LOG_2PI = math.log(2.0 * math.pi)
#: Largest ``n_features_in`` a state may claim (its feature lists are built before any size check).
_MAX_FEATURES = 1 << 24


class HoeffdingTreeClassifier(Learner):
    """Hoeffding tree (VFDT) with information gain, nb/nba leaves and a hard byte budget.

    Args:
        grace_period: weight a leaf must see between two split evaluations (MOA's
            ``gracePeriod``, 200; SRP uses 50).
        delta: 1 - confidence of the Hoeffding bound, in (0, 1) (MOA's ``splitConfidence``).
        tau: tie threshold: split on the best candidate once the bound falls below it, >= 0.
        leaf_prediction: "mc" (majority class), "nb" (naive Bayes) or "nba" (naive Bayes
            adaptive: whichever of mc and nb predicted the leaf's training samples better).
        nb_threshold: weight a leaf must have seen before its naive Bayes is used, >= 0.
        max_depth: leaves at this depth (root = 0) never split; None = unbounded (routing is
            iterative, so depth is limited by memory only; casebook C20).
        n_split_points: candidate thresholds per numeric feature (MOA's numBins, 10).
        nominal_attributes: indices of x holding nominal values (multiway splits); others are
            numeric.
        max_size_bytes: hard bound on `memory_bytes()`, >= `MIN_SIZE_BYTES`; None = unbounded.
            Whatever the classes, nominal values or features, the tree stays within it: a new
            class or value first takes the room of deactivated leaves, and one that would
            not fit even with no active leaf (every node keeps a weight per class) is
            refused with `edgebayes.base.ClassLimitError`, the tree unchanged.
        features: indices of x the tree learns from and splits on (SRP's subspace); the
            sample is read in place, never copied. None = all features.
        seed: accepted for a uniform learner API; VFDT is deterministic and draws nothing.

    Learned state: ``classes_`` (labels in order of first appearance), ``n_features_in_``.

    Raises:
        ValueError: an invalid parameter (named in the message).

    Example:
        >>> tree = HoeffdingTreeClassifier(grace_period=50, delta=0.01)
        >>> for i in range(400):
        ...     tree.learn_one([i / 400, 0.5], "hot" if i >= 200 else "cold")
        >>> tree.predict_one([0.9, 0.5]), tree.n_nodes
        ('hot', 3)
    """

    def __init__(
        self,
        grace_period=200,
        delta=1e-7,
        tau=0.05,
        leaf_prediction="nba",
        nb_threshold=0,
        max_depth=None,
        n_split_points=10,
        nominal_attributes=None,
        max_size_bytes=None,
        features=None,
        seed=None,
    ):
        self._check_params(
            grace_period, delta, tau, leaf_prediction, nb_threshold, max_depth, n_split_points,
            nominal_attributes, max_size_bytes, features,
        )
        self.grace_period = grace_period
        self.delta = delta
        self.tau = tau
        self.leaf_prediction = leaf_prediction
        self.nb_threshold = nb_threshold
        self.max_depth = max_depth
        self.n_split_points = n_split_points
        self.nominal_attributes = nominal_attributes
        self.max_size_bytes = max_size_bytes
        self.features = features
        self.seed = seed
        self.classes_ = []
        self.n_features_in_ = None
        self._cidx = {}
        self._gnum = []  # global indices of the numeric features learned, in record order
        self._gnom = []  # global indices of the nominal features learned
        self._vocab = []  # per nominal feature: value -> code
        self._vocab_of = {}  # global index -> vocabulary dict (routing at nominal splits)
        self._n_nodes = 0
        self._node_cap = 0
        self._slot_cap = 0
        self._ccap = 0
        self._vcaps = []
        self._n_free = 0
        self._n_learned = 0
        # (x, leaf, naive Bayes log-votes) of the latest prediction or learn: a learn_one on
        # the same x (SRP's test then train) scores the leaf's nba with them, and a prediction
        # after it (SRP's detectors) reads them, instead of recomputing every class's vote
        self._memo = None
        self._ni = array("i")
        self._nf = array("d")
        self._cc = array("d")
        self._st = array("d")
        self._nc = []
        self._free = array("i")

    @staticmethod
    def _check_params(grace_period, delta, tau, leaf_prediction, nb_threshold, max_depth,
                      n_split_points, nominal_attributes, max_size_bytes, features):
        def number(name, v):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise ValueError(f"{name} must be a finite number, got {v!r}")

        def index_list(name, v):
            if v is None:
                return
            try:
                items = list(v)
            except TypeError:
                raise ValueError(f"{name} must be a sequence of feature indices, got {v!r}") from None
            for i in items:
                if isinstance(i, bool) or not isinstance(i, (int, np.integer)) or i < 0:
                    raise ValueError(f"{name} must hold non-negative ints, got {i!r}")
            if len(set(items)) != len(items):
                raise ValueError(f"{name} holds a duplicate index: {items}")

        number("grace_period", grace_period)
        if grace_period <= 0:
            raise ValueError(f"grace_period must be > 0, got {grace_period}")
        number("delta", delta)
        if not 0.0 < delta < 1.0:
            raise ValueError(f"delta must be in (0, 1), got {delta}")
        number("tau", tau)
        if tau < 0:
            raise ValueError(f"tau must be >= 0, got {tau}")
        if leaf_prediction not in _LEAF_PREDICTIONS:
            raise ValueError(f"leaf_prediction must be one of {_LEAF_PREDICTIONS}, got {leaf_prediction!r}")
        number("nb_threshold", nb_threshold)
        if nb_threshold < 0:
            raise ValueError(f"nb_threshold must be >= 0, got {nb_threshold}")
        if max_depth is not None and (isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 0):
            raise ValueError(f"max_depth must be None or an int >= 0, got {max_depth!r}")
        if isinstance(n_split_points, bool) or not isinstance(n_split_points, int) or n_split_points < 1:
            raise ValueError(f"n_split_points must be an int >= 1, got {n_split_points!r}")
        index_list("nominal_attributes", nominal_attributes)
        index_list("features", features)
        if features is not None and len(list(features)) == 0:
            raise ValueError("features must name at least one index")
        if max_size_bytes is not None and (
            isinstance(max_size_bytes, bool) or not isinstance(max_size_bytes, int) or max_size_bytes < MIN_SIZE_BYTES
        ):
            raise ValueError(f"max_size_bytes must be None or an int >= {MIN_SIZE_BYTES}, got {max_size_bytes!r}")

    # ------------------------------------------------------------------ introspection

    @property
    def n_nodes(self) -> int:
        """Nodes in the tree (split nodes and leaves)."""
        return self._n_nodes

    @property
    def n_leaves(self) -> int:
        """Leaves, active and inactive."""
        if not self._n_nodes:
            return 0
        return int((self._ints()[:, _FEAT] < 0).sum())

    @property
    def n_active_leaves(self) -> int:
        """Leaves holding attribute observers (they learn splits and naive Bayes)."""
        if not self._n_nodes:
            return 0
        ints = self._ints()
        return int(((ints[:, _FEAT] < 0) & (ints[:, _SLOT] >= 0)).sum())

    @property
    def depth(self) -> int:
        """Depth of the deepest leaf (root alone = 0; empty tree = 0)."""
        return int(self._ints()[:, _DEPTH].max()) if self._n_nodes else 0

    def _ints(self) -> np.ndarray:
        return storage.view(self._ni, (self._node_cap, _NI))[: self._n_nodes]

    def _floats(self) -> np.ndarray:
        return storage.view(self._nf, (self._node_cap, _NF))[: self._n_nodes]

    # ------------------------------------------------------------------ memory

    def _py_bytes(self) -> int:
        """Bytes of the Python objects around the arrays (labels, vocabularies, lists)."""
        size = sys.getsizeof
        total = size(self) + size(self.__dict__) + size(self.classes_) + size(self._cidx)
        total += sum(size(c) for c in self.classes_) + size(self._gnum) + size(self._gnom)
        total += size(self._vocab) + size(self._vocab_of) + size(self._vcaps) + size(self._nc)
        for voc in self._vocab:
            total += size(voc) + sum(size(k) + size(v) for k, v in voc.items())
        for p in (self.features, self.nominal_attributes):
            if p is not None:
                total += size(p) + sum(size(i) for i in p)
        if self.n_features_in_ is not None:  # room for the memo, held or not: x's copy and votes
            n, d = len(self.classes_), self.n_features_in_
            total += size((0, 0, 0)) + size([0.0] * d) + size([0.0] * n) + (d + n) * size(0.0)
        return total

    def _array_bytes(self, node_cap, slot_cap, ccap, vcaps) -> int:
        b = storage.array_bytes("i", _NI * node_cap) + storage.array_bytes("d", _NF * node_cap)
        b += storage.array_bytes("d", node_cap * ccap) + storage.array_bytes("i", slot_cap)
        b += storage.array_bytes("d", slot_cap * ccap * len(self._gnum) * N_FIELDS)
        return b + sum(storage.array_bytes("d", slot_cap * ccap * v) for v in vcaps)

    def memory_bytes(self) -> int:
        """Bytes held: every array's allocation plus the Python objects around them.

        Never above ``max_size_bytes`` when one is set: capacities are planned with the same
        formula before any allocation.
        """
        arrays = (self._ni, self._nf, self._cc, self._st, self._free, *self._nc)
        return self._py_bytes() + sum(sys.getsizeof(a) for a in arrays)

    def _growth_bytes(self, labels: list, values: dict) -> int:
        """Most bytes `_py_bytes` gains when ``labels`` (new classes) and ``values`` (nominal
        feature k -> a new value) are added: the labels, the list and dict growth, the
        memo's room for more votes, the vocabulary entries."""
        size = sys.getsizeof
        extra = 0
        if labels:
            n = len(self.classes_)
            extra += sum(size(y) for y in labels) + append_bytes(self.classes_, len(labels))
            extra += insert_bytes(self._cidx, labels)
            if self.n_features_in_ is not None:
                m = n + len(labels)
                extra += size([0.0] * m) - size([0.0] * n) + (m - n) * size(0.0)
        for k, v in values.items():
            voc = self._vocab[k]
            extra += insert_bytes(voc, [v]) + size(v) + size(len(voc))
        return extra

    def _fits(self, node_cap, slot_cap, ccap, vcaps) -> bool:
        if self.max_size_bytes is None:
            return True
        return self._py_bytes() + self._array_bytes(node_cap, slot_cap, ccap, vcaps) <= self.max_size_bytes

    def _slots_that_fit(self, node_cap, ccap, vcaps, extra: int = 0) -> int:
        """Largest slot capacity within the budget (-1 if even zero slots do not fit), with
        ``extra`` bytes more of Python objects."""
        if self.max_size_bytes is None:
            return sys.maxsize
        room = self.max_size_bytes - self._py_bytes() - extra - self._array_bytes(node_cap, 0, ccap, vcaps)
        per_slot = self._array_bytes(0, 1, ccap, vcaps) - self._array_bytes(0, 0, ccap, vcaps)
        return room // per_slot if room >= 0 else -1

    # ------------------------------------------------------------------ storage layout

    def _rebuild(self, node_cap, slot_cap, ccap, vcaps, keep) -> None:
        """Re-lay every array at new capacities; ``keep`` lists the old slots that survive,
        new slot i holding old slot keep[i]; leaves of the other slots become inactive."""
        self._memo = None
        n, old_c, n_num = self._n_nodes, self._ccap, len(self._gnum)
        ints = np.zeros((node_cap, _NI), np.intc)
        ints[:n] = self._ints()
        floats = np.zeros((node_cap, _NF))
        floats[:n] = self._floats()
        cc = np.zeros((node_cap, ccap))
        cc[:n, :old_c] = storage.view(self._cc, (self._node_cap, old_c))[:n]
        keep = np.asarray(keep, dtype=np.intp)
        st = _empty_stats(slot_cap, ccap, n_num)
        st[: keep.size, :old_c] = storage.view(self._st, (self._slot_cap, old_c, n_num, N_FIELDS))[keep]
        nc = [storage.from_numpy("d", self._relaid_counts(k, v, slot_cap, ccap, keep)) for k, v in enumerate(vcaps)]
        remap = np.full(max(self._slot_cap, 1), -1, np.intc)
        remap[keep] = np.arange(keep.size, dtype=np.intc)
        slots = ints[:n, _SLOT]
        was_active = slots >= 0
        ints[:n, _SLOT] = np.where(was_active, remap[np.maximum(slots, 0)], -1)
        self._ni = storage.from_numpy("i", ints)
        self._nf = storage.from_numpy("d", floats)
        self._cc = storage.from_numpy("d", cc)
        self._st = storage.from_numpy("d", st)
        self._nc = nc
        free = np.zeros(slot_cap, np.intc)  # a stack: the lowest free slot on top
        free[: slot_cap - keep.size] = np.arange(slot_cap - 1, keep.size - 1, -1)
        self._free = storage.from_numpy("i", free)
        self._n_free = slot_cap - keep.size
        self._node_cap, self._slot_cap, self._ccap, self._vcaps = node_cap, slot_cap, ccap, list(vcaps)

    def _relaid_counts(self, k, vcap, slot_cap, ccap, keep) -> np.ndarray:
        new = np.zeros((slot_cap, ccap, vcap))
        old_c, old_v = self._ccap, self._vcaps[k]
        if old_v:
            new[: keep.size, :old_c, :old_v] = storage.view(self._nc[k], (self._slot_cap, old_c, old_v))[keep]
        return new

    def _active_slots(self, exclude=-1) -> list:
        """Slots of the active leaves, highest promise (weight x error) first."""
        ints = self._ints()
        leaves = np.flatnonzero((ints[:, _FEAT] < 0) & (ints[:, _SLOT] >= 0))
        leaves = leaves[leaves != exclude]
        order = np.argsort(-self._promise(leaves), kind="stable")
        return ints[leaves[order], _SLOT].tolist()

    def _promise(self, nodes: np.ndarray) -> np.ndarray:
        """Weight seen minus the majority class weight (MOA's ``calculatePromise``)."""
        if not nodes.size:
            return np.zeros(0)
        cc = storage.view(self._cc, (self._node_cap, self._ccap))[nodes]
        return self._floats()[nodes, _NW] - cc.max(axis=1)

    def _relayout(self, node_cap, ccap, vcaps, exclude=-1) -> bool:
        """Move to new node/class/value capacities within the budget, growing the slot pool to
        what fits (up to twice the active leaves) or shedding the least promising active
        leaves. False (nothing changed) when even zero slots would not fit."""
        fit = self._slots_that_fit(node_cap, ccap, vcaps)
        if fit < 0:
            return False
        active = self._active_slots(exclude)
        slot_cap = min(fit, max(self._slot_cap, 2 * len(active), 1))
        self._rebuild(node_cap, slot_cap, ccap, vcaps, active[:slot_cap])
        return True

    def _take_slot(self) -> int:
        """A free stats slot, growing the pool geometrically within the budget; -1 if none."""
        if not self._n_free:
            fit = self._slots_that_fit(self._node_cap, self._ccap, self._vcaps)
            slot_cap = min(fit, 2 * self._slot_cap or 1)
            if slot_cap <= self._slot_cap:
                return -1
            self._rebuild(self._node_cap, slot_cap, self._ccap, self._vcaps, self._active_slots())
        self._n_free -= 1
        return self._free[self._n_free]

    def _clear_slot(self, s: int) -> None:
        """Reset slot ``s`` to empty estimators."""
        view = storage.view(self._st, (self._slot_cap, self._ccap, len(self._gnum), N_FIELDS))
        view[s] = _empty_stats(1, self._ccap, len(self._gnum))[0]
        for k, a in enumerate(self._nc):
            storage.view(a, (self._slot_cap, self._ccap, self._vcaps[k]))[s] = 0.0

    def _release_slot(self, s: int) -> None:
        """Clear slot ``s`` and return it to the pool."""
        self._clear_slot(s)
        self._free[self._n_free] = s
        self._n_free += 1

    def _activate(self, node: int) -> bool:
        s = self._take_slot()
        if s < 0:
            return False
        b, fb = node * _NI, node * _NF
        self._ni[b + _SLOT] = s
        self._nf[fb + _SINCE] = 0.0
        self._nf[fb + _MCOK] = self._nf[fb + _NBOK] = 0.0
        return True

    def _rebalance(self) -> None:
        """Give the stats slots to the most promising leaves (MOA's ``enforceTrackerLimit``):
        deactivate the others, reactivate inactive leaves that now rank higher or for which
        room has freed."""
        ints = self._ints()
        leaves = np.flatnonzero(ints[:, _FEAT] < 0)
        inactive = ints[leaves, _SLOT] < 0
        if not inactive.any():
            return
        fit = self._slots_that_fit(self._node_cap, self._ccap, self._vcaps)
        n_active = min(leaves.size, max(fit, 0))
        order = leaves[np.argsort(-self._promise(leaves), kind="stable")]
        top = order[:n_active]
        top_slots = ints[top, _SLOT]
        if (top_slots >= 0).all() and n_active <= self._slot_cap:
            return  # the most promising leaves already learn
        keep = top_slots[top_slots >= 0].tolist()
        self._rebuild(self._node_cap, max(n_active, len(keep)), self._ccap, self._vcaps, keep)
        for node in top[top_slots < 0].tolist():
            self._activate(node)

    def shed_leaves(self) -> int:
        """Deactivate the less promising half of the active leaves (at least one) and free their
        statistics: the runtime's response to memory pressure (edgebayes.runtime.memory). The
        leaves keep predicting their majority class; a bounded tree may reactivate them at its
        next ranking. Returns the number of leaves deactivated."""
        active = self._active_slots()
        keep = active[: len(active) // 2]
        if len(keep) == len(active):
            return 0
        self._rebuild(self._node_cap, len(keep), self._ccap, self._vcaps, keep)
        return len(active) - len(keep)

    # ------------------------------------------------------------------ input

    def _check_x(self, x, learning: bool = False) -> list:
        """``x`` as a list of numbers, by the rule of `edgebayes.base.as_floats` (the same
        errors; ``learning`` also refuses |x| > MAX_ABS_X)."""
        # fast path: a float64 vector or a list of floats without NaN, checked by one Python
        # sum (finite: no inf, no NaN) and, to learn, a min and a max; the rest: as_floats
        if type(x) is np.ndarray and x.dtype == np.float64 and x.ndim == 1:
            xl = x.tolist()
        elif type(x) is list:
            xl = x
        else:
            xl = None
        if xl is not None and (self.n_features_in_ is None or len(xl) == self.n_features_in_):
            try:
                total = sum(xl)
            except (TypeError, OverflowError):
                total = None
            if type(total) is float and total - total == 0.0:
                if not learning or -MAX_ABS_X <= min(xl) <= max(xl) <= MAX_ABS_X:
                    return xl
        return as_floats(x, self.n_features_in_, learning)[0]

    def _init_features(self, n: int) -> None:
        """Fix the schema from the first sample and allocate the root."""
        feats = list(range(n)) if self.features is None else [int(i) for i in self.features]
        bad = [i for i in feats if i >= n]
        if bad:
            raise ValueError(f"features {bad} out of range for x of {n} features")
        nominal = set() if self.nominal_attributes is None else {int(i) for i in self.nominal_attributes}
        self.n_features_in_ = n
        self._gnum = [g for g in feats if g not in nominal]
        self._gnom = [g for g in feats if g in nominal]
        self._vocab = [{} for _ in self._gnom]
        self._vocab_of = dict(zip(self._gnom, self._vocab))
        self._vcaps = [0] * len(self._gnom)
        self._nc = [array("d") for _ in self._gnom]

    def _make_room(self, y, add_class: bool, xl: list, codes: list) -> tuple[int, list]:
        """Add class ``y`` (if ``add_class``) and the nominal values of ``xl`` that ``codes``
        marks None (new), re-laying the arrays: first the class, then each value, each at
        twice its capacity where the rest still fits, else exactly; leaves are deactivated
        to make room. Returns (class index, codes).

        Raises:
            ClassLimitError: even a tree with no active leaf could not hold them; nothing
                has changed.
        """
        new, ccap, vcaps = self._needs(add_class, xl, codes)
        if self._slots_that_fit(self._node_cap or 1, ccap, vcaps, self._growth_bytes([y] if add_class else [], new)) < 0:
            what = f"class {y!r}" if add_class else f"nominal value(s) {new}"
            raise ClassLimitError(
                f"{what} refused: max_size_bytes={self.max_size_bytes} cannot hold "
                f"{len(self.classes_) + add_class} classes and the nominal values of this tree"
            )
        self._memo = None  # a new class or value changes every class's votes
        c = self._cidx.get(y, -1)
        if add_class:
            self.classes_.append(y)
            self._cidx[y] = c = len(self.classes_) - 1
            self._settle(ccap, self._vcaps, ccap, vcaps, new)
            if not self._n_nodes:
                self._new_root()
        for k in list(new):
            v = new.pop(k)
            voc = self._vocab[k]
            voc[v] = codes[k] = len(voc)
            step = list(self._vcaps)
            step[k] = vcaps[k]
            self._settle(self._ccap, step, ccap, vcaps, new)
        return c, codes

    def _needs(self, add_class: bool, xl: list, codes: list) -> tuple[dict, int, list]:
        """(nominal feature k -> new value, class capacity, value capacities) that learning
        ``xl`` with a class needs at least; ``codes`` marks the new values None."""
        new = {k: xl[self._gnom[k]] for k, code in enumerate(codes) if code is None}
        ccap = max(self._ccap, len(self.classes_) + 1) if add_class else self._ccap
        vcaps = [max(vc, len(self._vocab[k]) + 1) if k in new else vc for k, vc in enumerate(self._vcaps)]
        return new, ccap, vcaps

    def _codes(self, xl: list) -> list:
        """Per nominal feature, the code of ``xl``'s value: -1 for NaN, None for a new value."""
        vocab = self._vocab
        return [vocab[k].get(xl[g]) if xl[g] == xl[g] else -1 for k, g in enumerate(self._gnom)]

    def has_room(self, x, y) -> bool:
        """Whether `learn_one` would take ``y`` and ``x``'s nominal values within
        ``max_size_bytes`` (always True without a bound); changes nothing.

        Args:
            x, y: a sample `learn_one` accepts (a bad ``x`` raises ValueError as there; the
                label is not checked again: an ensemble asks every member about one sample).
        """
        if self.max_size_bytes is None or (not self._gnom and y in self._cidx):
            return True
        xl = self._check_x(x, learning=True)
        tree = self
        if self.n_features_in_ is None:  # a fresh copy fixes the schema, this one stays untouched
            tree = self.clone()
            tree._init_features(len(xl))
        codes = tree._codes(xl)
        add_class = y not in tree._cidx
        if not add_class and None not in codes:
            return True
        new, ccap, vcaps = tree._needs(add_class, xl, codes)
        extra = tree._growth_bytes([y] if add_class else [], new)
        return tree._slots_that_fit(tree._node_cap or 1, ccap, vcaps, extra) >= 0

    def _settle(self, ccap: int, vcaps: list, final_ccap: int, final_vcaps: list, later: dict) -> None:
        """Re-lay to at least ``ccap`` / ``vcaps`` (one of them grown), doubling the grown
        capacity when the ``later`` values still fit at ``final_*`` beside it; with unchanged
        capacities, only shed leaves if the Python objects outgrew the budget."""
        node_cap = self._node_cap or 1
        if ccap == self._ccap and vcaps == self._vcaps:
            if not self._fits(node_cap, self._slot_cap, ccap, vcaps):
                self._relayout(node_cap, ccap, vcaps)
            return
        if ccap > self._ccap:
            doubled = (max(2 * self._ccap, 1), vcaps)
            after = (doubled[0], final_vcaps)
        else:
            k = next(k for k, (a, b) in enumerate(zip(vcaps, self._vcaps)) if a > b)
            grown = list(vcaps)
            grown[k] = 2 * self._vcaps[k] or 1
            doubled = (ccap, grown)
            after = (final_ccap, [max(a, b) for a, b in zip(grown, final_vcaps)])
        fits_later = self._slots_that_fit(node_cap, *after, self._growth_bytes([], later)) >= 0
        if not (fits_later and self._relayout(node_cap, *doubled)):
            self._relayout(node_cap, ccap, vcaps)  # cannot fail: _make_room checked the exact capacities

    def _new_root(self) -> None:
        self._n_nodes = 1
        self._ni[_FEAT] = -1
        self._ni[_SLOT] = -1
        self._activate(0)

    # ------------------------------------------------------------------ learning

    def learn_one(self, x, y, w=1.0) -> None:
        """Learn one sample: route it to its leaf, update the leaf, maybe split (VFDT).

        Args:
            x: 1-D sequence of floats (list or numpy array), fixed length; NaN means missing
                (skipped by the observers; at a split on it the sample follows the branch that
                has seen more weight).
            y: any hashable label; a class first seen mid-stream is added.
            w: sample weight >= 0 (SRP's Poisson k); weight k equals k repeated learns.

        Raises:
            ValueError: wrong length, non-numeric (None included) or infinite x, a value of
                magnitude above `edgebayes.base.MAX_ABS_X`, a None/NaN/unhashable label, a
                bad weight (`edgebayes.base.check_weight`), or ``features`` out of range; the
                tree is unchanged.
            ClassLimitError: (a ValueError) a new class or nominal value that
                ``max_size_bytes`` cannot hold even with every leaf deactivated; the tree is
                unchanged.
        """
        check_label(y)
        w = check_weight(w)
        xl = self._check_x(x, learning=True)
        if self.n_features_in_ is None:
            if not self.has_room(xl, y):  # the schema's own bytes (memo room) count too
                raise ClassLimitError(f"class {y!r} refused: max_size_bytes={self.max_size_bytes} "
                                      f"cannot hold a tree over {len(xl)} features")
            self._init_features(len(xl))
        if w == 0.0:
            return
        c = self._cidx.get(y)
        codes = self._codes(xl)
        if c is None or None in codes:  # a new class or value may re-lay the arrays
            c, codes = self._make_room(y, c is None, xl, codes)
        self._learn(xl, c, w, codes)

    def _learn(self, xl: list, c: int, w: float, codes: list) -> None:
        memo, self._memo = self._memo, None
        ni, nf = self._ni, self._nf
        node = 0
        while True:  # iterative routing: no recursion however deep (casebook C20)
            b = node * _NI
            nf[node * _NF + _NW] += w
            g = ni[b]
            if g < 0:
                break
            v = xl[g]
            if ni[b + _NBR]:
                node = self._branch(b, v)
                continue
            thr = nf[node * _NF]
            ch = ni[b + _CHILD]
            if v <= thr:
                node = ch
            elif v > thr:
                node = ch + 1
            else:
                node = self._branch(b, v)
        ccap = self._ccap
        s = ni[b + _SLOT]
        votes = None
        if s >= 0:
            if self.leaf_prediction == "nba":
                votes = self._score_leaf(node, s, xl, c, w, memo)
                if not self._holds_values(s, c, xl):
                    votes = None  # c's first value of a feature here rules other classes out
            self._observe(s, xl, c, w, codes)
        self._cc[node * ccap + c] += w
        self._n_learned += 1
        if s >= 0:
            # weight since the last evaluation counted on its own: exact for integer weights,
            # where MOA's and River's difference of two fractional totals can miss by an ulp
            k = node * _NF + _SINCE
            since = nf[k] + w
            if since >= self.grace_period:
                nf[k] = 0.0
                votes = None
                self._attempt_split(node)
            else:
                nf[k] = since
        if self.max_size_bytes is not None and self._n_learned % REBALANCE_PERIOD == 0:
            votes = None
            self._rebalance()
        if votes is not None:  # only class c's vote changed: a prediction on this x reuses the rest
            x_copy = memo[0] if memo is not None and votes is memo[2] else list(xl)
            self._memo = (x_copy, node, self._nb_log_votes(node, s, xl, votes, c))

    def _branch(self, b: int, v: float) -> int:
        """The child of split node record ``b`` that value ``v`` goes to."""
        ni, nf = self._ni, self._nf
        ch = ni[b + _CHILD]
        nbr = ni[b + _NBR]
        if not nbr:
            thr = nf[(b // _NI) * _NF + _THR]
            if v <= thr:
                return ch
            if v > thr:
                return ch + 1
            return ch if nf[ch * _NF + _NW] >= nf[(ch + 1) * _NF + _NW] else ch + 1
        code = self._vocab_of[ni[b + _FEAT]].get(v, -1)
        if 0 <= code < nbr:
            return ch + code
        weights = [nf[(ch + i) * _NF + _NW] for i in range(nbr)]  # NaN / unseen value
        return ch + weights.index(max(weights))

    def _observe(self, s: int, xl: list, c: int, w: float, codes: list) -> None:
        """Update slot ``s``'s observers with class ``c`` (weighted Welford, West 1979)."""
        st = self._st
        log = math.log
        k = (s * self._ccap + c) * len(self._gnum) * N_FIELDS
        for g in self._gnum:
            v = xl[g]
            if v != v:  # NaN is not learned
                pass
            elif st[k] <= 0.0:  # the first value as the mean, exactly (MOA's GaussianEstimator):
                st[k], st[k + 1], st[k + 3], st[k + 4] = w, v, v, v  # Welford's v * w / w can miss
            else:  # v by an ulp, and a point mass would get a variance of 1e-17
                sw = st[k] + w
                st[k] = sw
                mu = st[k + 1]
                d = v - mu
                mu += d * w / sw
                st[k + 1] = mu
                m2 = st[k + 2] + w * d * (v - mu)
                st[k + 2] = m2
                st[k + 3] = min(st[k + 3], v)
                st[k + 4] = max(st[k + 4], v)
                if sw > 1.0 and m2 > 0.0:  # sample variance, as MOA's GaussianEstimator
                    var = m2 / (sw - 1.0)
                    st[k + 5] = -0.5 * (_LOG_2PI + log(var))
                    st[k + 6] = 0.5 / var
            k += N_FIELDS
        for k, code in enumerate(codes):
            if code >= 0:
                self._nc[k][(s * self._ccap + c) * self._vcaps[k] + code] += w

    def _score_leaf(self, node: int, s: int, xl: list, c: int, w: float, memo=None) -> None:
        """nba bookkeeping before learning: credit mc and nb with the weight they got right.

        A prediction is MOA's ``maxIndex`` of the votes: the first maximum, the first class
        when every vote is zero (an empty leaf; naive Bayes with every density zero).
        """
        fb = node * _NF
        if _argmax(self._class_row(node)) == c:
            self._nf[fb + _MCOK] += w
        if memo is not None and memo[1] == node and memo[0] == xl:
            votes = memo[2]
        else:
            votes = self._nb_log_votes(node, s, xl)
        if max(_argmax(votes), 0) == c:
            self._nf[fb + _NBOK] += w
        return votes

    def _holds_values(self, s: int, c: int, xl: list) -> bool:
        """Whether class ``c`` at slot ``s`` has weight on every numeric feature ``xl`` has a
        value for: then learning ``xl`` changes no other class's naive Bayes vote."""
        st = self._st
        k = (s * self._ccap + c) * len(self._gnum) * N_FIELDS
        for g in self._gnum:
            if st[k] <= 0.0 and xl[g] == xl[g]:
                return False
            k += N_FIELDS
        return True

    def _class_row(self, node: int) -> list:
        b = node * self._ccap
        return self._cc[b : b + len(self.classes_)].tolist()

    def _nb_log_votes(self, node: int, s: int, xl: list, prev: list | None = None, only: int = -1) -> list:
        """Unnormalised naive Bayes log-votes per class at a leaf (MOA's
        ``doNaiveBayesPrediction`` in log space, so nothing underflows: casebook C08).

        With ``prev`` (the votes before class ``only`` learned ``xl`` here), only that class's
        vote is recomputed: the same arithmetic, so the same floats as a full recomputation.

        Densities are MOA's ``GaussianEstimator.probabilityDensity``: a class whose Gaussian
        has zero variance (one distinct value so far) is a point mass, density 1 at its value
        and 0 elsewhere; a class the leaf has not observed on a feature that other classes
        have values for has density 0 there. A zero density gives -inf, as does a class with
        no weight at the leaf. A missing value adds nothing. A nominal value adds
        log P(value | class) with Laplace correction (MOA's NominalAttributeClassObserver),
        nothing for a class the observer has not seen (MOA's observer rules such a class out:
        with that rule SRP lost 0.7 points on LED_A and changed nothing on AGR and ELEC,
        bench/srp.py at 100,000 samples).

        These zeros matter through the nba choice: MOA's young leaves, whose naive Bayes rules
        out most classes, keep predicting the majority class until naive Bayes has earned the
        lead, and a member of an SRP ensemble starts with a low error after training that then
        rises, which its drift detectors see (bench/srp.py on RBF_M and RBF_F).
        """
        st, ccap, nfe = self._st, self._ccap, len(self._gnum) * N_FIELDS
        gnum = self._gnum
        log = math.log
        cc, cb = self._cc, node * ccap
        n_classes = len(self.classes_)
        if prev is None:
            votes, classes = [-math.inf] * n_classes, range(n_classes)
        else:
            votes, classes = list(prev), (only,)
        observed = None  # per numeric feature: has any class a value for it at this leaf?
        for c in classes:
            n_c = cc[cb + c]
            if n_c <= 0.0:
                votes[c] = -math.inf
                continue
            ll = log(n_c)
            k = (s * ccap + c) * nfe
            for j, g in enumerate(gnum):
                d = xl[g] - st[k + 1]
                if d == d:  # a missing value adds nothing
                    iv = st[k + INV2VAR]
                    if iv:
                        ll += st[k + LOGNORM] - d * d * iv
                    else:  # no variance: a point mass, or no value of this class here
                        if st[k] > 0.0:
                            zero = d != 0.0
                        else:
                            if observed is None:
                                observed = self._observed_features(s)
                            zero = observed[j]
                        if zero:
                            ll = -math.inf
                            break
                k += N_FIELDS
            votes[c] = ll
        # nominal features outermost: the value's code is looked up once; each class still
        # adds its terms in feature order, so every vote is the same sum as class by class
        for j, g in enumerate(self._gnom):
            v = xl[g]
            if v != v:
                continue
            counts, vcap, vocab = self._nc[j], self._vcaps[j], self._vocab[j]
            code, n_values = vocab.get(v, -1), len(vocab)
            for c in classes:
                if votes[c] == -math.inf:
                    continue
                b = (s * ccap + c) * vcap
                total = sum(counts[b : b + vcap])
                if total > 0.0:
                    votes[c] += log(((counts[b + code] if code >= 0 else 0.0) + 1.0) / (total + n_values))
        return votes

    def _observed_features(self, s: int) -> list:
        """Per numeric feature, whether slot ``s`` holds weight for it in any class."""
        block = storage.view(self._st, (self._slot_cap, self._ccap, len(self._gnum), N_FIELDS))
        return (block[s, : len(self.classes_), :, W] > 0.0).any(axis=0).tolist()

    def _attempt_split(self, node: int) -> None:
        """VFDT split attempt (MOA's ``attemptToSplit``, River's ``_attempt_to_split``):

        1. a pure leaf never splits (casebook C17); nor one at ``max_depth``;
        2. best candidate per feature by information gain, plus the null split (merit -inf);
           among equal merits the later feature wins (MOA's stable sort);
        3. eps = hoeffding_bound(log2(n_classes), delta, weight seen);
        4. split on the best when G(best) - G(second) > eps, or on a tie, eps < tau; the
           children start with the split's class weights and fresh observers;
        5. a *near-pure* leaf (majority class above `MAX_SHARE_TO_SPLIT` of its weight) never
           splits on a tie (casebook C17), only on a won Hoeffding test;
        6. otherwise the null split wins when the leaf is near-pure, or on a tie with no valid
           candidate: the leaf clears its observers, keeping its class weights and nba
           scores (MOA and River deactivate it there and their memory manager, with room to
           spare, reactivates it at once with fresh observers).

        Near-pure leaves are what AGR_A turns on: after each concept change the old leaves
        stay near-pure for a while, far past the tie point; MOA splits them on ties over
        stale statistics, River (``max_share_to_split``) and we clear the statistics instead
        and split on the new concept later (3 points, bench/tree.py).
        """
        ints = storage.view(self._ni, (self._node_cap, _NI))
        if self.max_depth is not None and ints[node, _DEPTH] >= self.max_depth:
            return
        n_classes = len(self.classes_)
        pre = np.array(self._class_row(node))
        if (pre > 0.0).sum() < 2:
            return
        s = int(ints[node, _SLOT])
        suggestions = [(-math.inf, -1, 0.0, None)]  # (merit, feature, threshold, dists)
        if self._gnum:
            block = storage.view(self._st, (self._slot_cap, self._ccap, len(self._gnum), N_FIELDS))
            merit, thr, dists = numeric_splits(block[s, :n_classes], pre, self.n_split_points)
            for j, g in enumerate(self._gnum):
                suggestions.append((float(merit[j]), g, float(thr[j]), dists[j]))
        if self._gnom:
            counts = [
                storage.view(self._nc[k], (self._slot_cap, self._ccap, self._vcaps[k]))[s, :n_classes]
                for k in range(len(self._gnom))
            ]
            for g, (merit, dists) in zip(self._gnom, nominal_splits(counts, pre)):
                suggestions.append((merit, g, math.nan, dists))
        suggestions.sort(key=lambda t: (t[0], t[1]))
        best, second = suggestions[-1], suggestions[-2]
        total = float(pre.sum())
        eps = hoeffding_bound(merit_range(pre), self.delta, total)
        near_pure = pre.max() / total > MAX_SHARE_TO_SPLIT
        tie = eps < self.tau
        if math.isfinite(best[0]) and (best[0] - second[0] > eps or (tie and not near_pure)):
            self._split(node, best[1], best[2], best[3])
        elif near_pure or tie:
            self._clear_slot(s)

    def _split(self, node: int, g: int, thr: float, dists: np.ndarray) -> None:
        """Turn leaf ``node`` into a split on global feature ``g`` with children for the rows
        of ``dists``; skipped when the budget cannot hold the new nodes even without slots."""
        n_br = dists.shape[0]
        need = self._n_nodes + n_br
        if need > self._node_cap:
            grown = False
            for cap in (max(2 * self._node_cap, need), need):
                if self._fits(cap, self._slot_cap, self._ccap, self._vcaps):
                    self._rebuild(cap, self._slot_cap, self._ccap, self._vcaps, self._active_slots())
                    grown = True
                    break
            if not grown and not self._relayout(need, self._ccap, self._vcaps, exclude=node):
                return  # the tree is full: no more splits
        b = node * _NI
        s = self._ni[b + _SLOT]
        if s >= 0:
            self._release_slot(s)
        first = self._n_nodes
        depth = self._ni[b + _DEPTH] + 1
        for i in range(n_br):
            child = first + i
            cb, fb = child * _NI, child * _NF
            self._ni[cb + _FEAT] = -1
            self._ni[cb + _DEPTH] = depth
            self._ni[cb + _SLOT] = -1
            row = dists[i]
            for c, v in enumerate(row.tolist()):
                self._cc[child * self._ccap + c] = v
            self._nf[fb + _NW] = float(row.sum())
        self._n_nodes = first + n_br
        self._ni[b + _FEAT] = g
        self._ni[b + _CHILD] = first
        self._ni[b + _NBR] = 0 if g not in self._vocab_of else n_br
        self._ni[b + _SLOT] = -1
        self._nf[node * _NF + _THR] = 0.0 if g in self._vocab_of else thr
        for child in range(first, first + n_br):
            if not self._activate(child):
                break

    # ------------------------------------------------------------------ prediction

    def predict_proba_one(self, x) -> dict:
        """Class probabilities at the leaf x reaches: {label: p} over every class in
        ``classes_`` (0 for a class unseen there; casebook C11); {} before any learning.

        Raises:
            ValueError: wrong length, non-numeric or infinite x.
        """
        xl = self._check_x(x)
        if not self._n_nodes:
            return {}
        return dict(zip(self.classes_, self._proba(xl)))

    def _proba(self, xl: list) -> list:
        ni, nf = self._ni, self._nf
        node = parent = 0
        while True:
            b = node * _NI
            g = ni[b]
            if g < 0:
                break
            parent = node
            v = xl[g]
            if ni[b + _NBR]:
                node = self._branch(b, v)
                continue
            thr = nf[node * _NF]
            ch = ni[b + _CHILD]
            if v <= thr:
                node = ch
            elif v > thr:
                node = ch + 1
            else:
                node = self._branch(b, v)
        fb = node * _NF
        if nf[fb + _NW] <= 0.0:  # a branch no sample has reached: the split node's counts
            node, fb = parent, parent * _NF
        counts = self._class_row(node)
        s = ni[node * _NI + _SLOT]
        if (
            s >= 0
            and self.leaf_prediction != "mc"
            and nf[fb + _NW] >= self.nb_threshold
            and not (self.leaf_prediction == "nba" and nf[fb + _MCOK] > nf[fb + _NBOK])
        ):
            memo = self._memo
            if self.leaf_prediction != "nba":
                votes = self._nb_log_votes(node, s, xl)
            elif memo is not None and memo[1] == node and memo[0] == xl:
                votes = memo[2]
            else:
                votes = self._nb_log_votes(node, s, xl)
                self._memo = (list(xl), node, votes)  # a copy: the caller may reuse its list
            proba = softmax_log(votes)
            if proba is not None:
                return proba
        total = sum(counts)
        return [v / total for v in counts] if total > 0.0 else []

    # ------------------------------------------------------------------ state

    def state(self) -> dict:
        """Everything needed to rebuild this tree exactly: parameters and the used parts of
        the arrays, as plain lists (msgpack/JSON-ready). ``"kind": "hoeffding_tree"``."""
        params = self._params()
        for name in ("features", "nominal_attributes"):
            if params[name] is not None:
                params[name] = [int(i) for i in params[name]]
        return {
            "kind": "hoeffding_tree",
            "params": params,
            "classes": list(self.classes_),
            "n_features_in": self.n_features_in_,
            "n_learned": self._n_learned,
            "vocab": [list(v) for v in self._vocab],
            "caps": [self._node_cap, self._slot_cap, self._ccap, list(self._vcaps)],
            "n_nodes": self._n_nodes,
            "ints": self._ni[: self._n_nodes * _NI].tolist(),
            "floats": self._nf[: self._n_nodes * _NF].tolist(),
            "class_weights": self._cc[: self._n_nodes * self._ccap].tolist(),
            "stats": self._st.tolist(),
            "nominal_counts": [a.tolist() for a in self._nc],
            "free": self._free[: self._n_free].tolist(),
        }

    @classmethod
    @refuse_malformed("hoeffding_tree")
    def from_state(cls, state: dict) -> HoeffdingTreeClassifier:
        """Rebuild the tree ``state()`` described.

        Raises:
            ValueError: not a hoeffding_tree state, or a malformed one: a missing key, a
                value of the wrong type, sizes that do not match the capacities, a node
                record that is not a tree (`_check_records`), a non-finite statistic.
        """
        if not isinstance(state, dict) or state.get("kind") != "hoeffding_tree":
            raise ValueError("not a hoeffding_tree state")
        tree = cls(**state["params"])
        # what the capacities and n_features_in allocate is checked against the data first
        node_cap, slot_cap, ccap, vcaps = state["caps"]
        held = sum(len(state[k]) for k in ("ints", "floats", "class_weights", "stats", "free"))
        if any(type(c) is not int or c < 0 for c in (node_cap, slot_cap, ccap)) or (
                node_cap * (_NI + _NF + ccap) + slot_cap > 2 * held + 64):
            raise ValueError(f"invalid hoeffding_tree state: capacities {state['caps']!r:.80} "
                             f"beyond twice the {held} values it holds")
        n_in, slab = state["n_features_in"], slot_cap * ccap
        if n_in is not None:
            if type(n_in) is not int or not 1 <= n_in <= _MAX_FEATURES or (
                    tree.features is None and slab and n_in > len(state["vocab"]) + len(state["stats"]) // slab):
                raise ValueError(f"invalid hoeffding_tree state: n_features_in {n_in!r}")
            tree._init_features(n_in)
        for c in state["classes"]:
            tree._cidx[c] = len(tree.classes_)
            tree.classes_.append(c)
        for voc, values in zip(tree._vocab, state["vocab"]):
            for i, v in enumerate(values):
                voc[v] = i
        tree._node_cap, tree._slot_cap, tree._ccap, tree._vcaps = node_cap, slot_cap, ccap, list(vcaps)
        tree._n_nodes = n = state["n_nodes"]
        tree._n_learned = state["n_learned"]
        tree._ni = storage.filled("i", node_cap * _NI)
        tree._ni[: n * _NI] = array("i", state["ints"])
        tree._nf = storage.filled("d", node_cap * _NF)
        tree._nf[: n * _NF] = array("d", state["floats"])
        tree._cc = storage.filled("d", node_cap * ccap)
        tree._cc[: n * ccap] = array("d", state["class_weights"])
        tree._st = storage.from_numpy("d", np.array(state["stats"], dtype=np.float64))
        tree._nc = [storage.from_numpy("d", np.array(a, dtype=np.float64)) for a in state["nominal_counts"]]
        tree._free = storage.filled("i", slot_cap)
        tree._n_free = len(state["free"])
        tree._free[: tree._n_free] = array("i", state["free"])
        tree._check_records(state)
        return tree

    def _check_records(self, state: dict) -> None:
        """ValueError unless the rebuilt arrays are a tree this class could have grown: sizes
        match the capacities, children come after their parent and lie inside the records,
        split features are learned ones, slots are unique, statistics finite (min/max of an
        empty estimator excepted) and within the range learning keeps (MAX_ABS_X)."""

        def bad(what):
            return ValueError(f"invalid hoeffding_tree state: {what}")

        n, K = self._n_nodes, len(self.classes_)
        for c in self.classes_:
            check_label(c)
        if len(self._cidx) != K:
            raise bad("two classes are equal labels")
        check_count("n_learned", state["n_learned"])
        caps = [self._node_cap, self._slot_cap, self._ccap, *self._vcaps]
        if any(type(c) is not int or c < 0 for c in caps) or len(self._vcaps) != len(self._gnom):
            raise bad("capacities must be ints >= 0, one per nominal feature")
        if (n > 0) != (K > 0) or type(n) is not int or not n <= self._node_cap <= max(1, 2 * n):
            raise bad(f"{n!r} nodes for {K} classes and node capacity {self._node_cap}")
        if self._ccap < K or any(len(v) > c for v, c in zip(self._vocab, self._vcaps)):
            raise bad("fewer class or value columns than classes or values")
        if len(state["vocab"]) != len(self._gnom) or any(len(v) != len(r) for v, r in zip(self._vocab, state["vocab"])):
            raise bad("vocabularies do not match the nominal features")
        for values in state["vocab"]:
            check_finite("vocab", values, -MAX_ABS_X, MAX_ABS_X)
        sizes = [len(state["ints"]), len(state["floats"]), len(state["class_weights"]), len(self._st)]
        sizes += [len(a) for a in self._nc]
        slab = self._slot_cap * self._ccap
        want = [n * _NI, n * _NF, n * self._ccap, slab * len(self._gnum) * N_FIELDS]
        want += [slab * v for v in self._vcaps]
        if sizes != want or len(self._nc) != len(self._gnom):
            raise bad("array sizes do not match the capacities")
        ints, floats = self._ints(), self._floats()
        feat, child, nbr, depth, slot = (ints[:, i].astype(np.int64) for i in range(_NI))
        split = feat >= 0
        nominal = np.isin(feat, self._gnom) if self._gnom else np.zeros(n, bool)
        width = np.where(nominal, nbr, 2)
        if (
            (feat < -1).any() or not np.isin(feat[split], self._gnum + self._gnom).all()
            or (split & ((child <= np.arange(n)) | (child + width > n) | (slot != -1))).any()
            or (split & ~nominal & (nbr != 0)).any() or (nominal & (nbr < 1)).any()
            or (depth < 0).any() or (slot < -1).any() or (slot >= self._slot_cap).any()
        ):
            raise bad("node records do not form a tree")
        used = np.concatenate([slot[slot >= 0], np.asarray(state["free"], dtype=np.int64)])
        if len(np.unique(used)) != len(used) or ((used < 0) | (used >= self._slot_cap)).any():
            raise bad("stats slots are not unique")
        if not np.isfinite(floats).all() or (floats[:, _NW:] < 0).any():
            raise bad("node weights must be finite and >= 0")
        cc = storage.view(self._cc)
        if not (np.isfinite(cc).all() and (cc >= 0).all()):
            raise bad("class weights must be finite and >= 0")
        st = storage.view(self._st, (-1, N_FIELDS))
        finite = np.delete(st, [MIN, MAX], axis=1)
        bounds = np.abs(st[:, [MEAN, MIN, MAX]])
        if not np.isfinite(finite).all() or (st[:, W] < 0).any() or ((bounds > MAX_ABS_X) & np.isfinite(bounds)).any():
            raise bad("Gaussian statistics must be finite, weights >= 0, means within MAX_ABS_X")
        if np.isnan(st).any():
            raise bad("Gaussian statistics hold NaN")
        for a in self._nc:
            v = storage.view(a)
            if not (np.isfinite(v).all() and (v >= 0).all()):
                raise bad("nominal counts must be finite and >= 0")


def _empty_stats(n_slots: int, ccap: int, n_num: int) -> np.ndarray:
    """Stats records of empty Gaussian estimators: zero weight, min +inf, max -inf."""
    st = np.zeros((n_slots, ccap, n_num, N_FIELDS))
    st[..., MIN] = np.inf
    st[..., MAX] = -np.inf
    return st


def _argmax(values: list) -> int:
    """Index of the first maximum (MOA's ``maxIndex``); -1 for an empty list."""
    best, arg = -math.inf, -1
    for i, v in enumerate(values):
        if v > best:
            best, arg = v, i
    return arg
