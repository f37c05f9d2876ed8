"""Hoeffding tree classifier (VFDT) in flat arrays, with a hard memory bound: the API, the
state and the memory account.

Domingos and Hulten (2000), "Mining high-speed data streams", with the semantics of MOA's
``HoeffdingTree`` (information gain, Gaussian numeric observers, mc / nb / nba leaves, memory
management by leaf deactivation). See docs/design.md 2.3 and 3 and the package docstring. The
algorithm lives in the modules this one calls, as functions over the tree's arrays:
`learning` (the VFDT loop), `leaves` (leaf predictions), `observers` and
`criterion` (split evaluation), `arena` (the arrays and their byte plan), `checks`.
"""

from __future__ import annotations

from array import array

import numpy as np

from edgebayes._backend import choose
from edgebayes.base import (
    MAX_ABS_X,
    ClassLimitError,
    Learner,
    as_floats,
    check_label,
    check_weight,
    refuse_malformed,
)
from edgebayes.tree import arena, learning, leaves
from edgebayes.tree.arena import DEPTH, N_NODE_FLOATS, N_NODE_INTS, SLOT, SPLIT_FEATURE
from edgebayes.tree.checks import check_allocation, check_params, check_records


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
            iterative, so depth is limited by memory only; docs/cases.md C20).
        n_split_points: candidate thresholds per numeric feature (MOA's numBins, 10).
        nominal_attributes: indices of x holding nominal values (multiway splits); others are
            numeric.
        max_size_bytes: hard bound on `memory_bytes()`, >= `checks.MIN_SIZE_BYTES`; None = unbounded.
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
        check_params(
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
        self._class_index = {}
        self._numeric_features = []  # global indices of the numeric features learned, in record order
        self._nominal_features = []  # global indices of the nominal features learned
        self._vocabs = []  # per nominal feature: value -> code
        self._vocab_of = {}  # global index -> vocabulary dict (routing at nominal splits)
        # the arena (`arena` describes each array): counts, capacities, then the arrays
        self._n_nodes = 0
        self._node_cap = 0
        self._slot_cap = 0
        self._class_cap = 0
        self._value_caps = []
        self._n_free_slots = 0
        self._n_learned = 0
        self._node_ints = array("i")
        self._node_floats = array("d")
        self._class_weights = array("d")
        self._gaussians = array("d")
        self._nominal_counts = []
        self._free_slots = array("i")
        self._bytes = None  # memory_bytes() until the arena next changes a size (arena.resized)

    # the arena's two re-layout passes, called through the tree: the compiled core
    # (`edgebayes._core.tree`) replaces them with C loops that write the same arrays
    _rebuild = arena.rebuild
    _active_slots = arena.active_slots

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
        return int((arena.node_ints(self)[:, SPLIT_FEATURE] < 0).sum())

    @property
    def n_active_leaves(self) -> int:
        """Leaves holding attribute observers (they learn splits and naive Bayes)."""
        if not self._n_nodes:
            return 0
        ints = arena.node_ints(self)
        return int(((ints[:, SPLIT_FEATURE] < 0) & (ints[:, SLOT] >= 0)).sum())

    @property
    def depth(self) -> int:
        """Depth of the deepest leaf (root alone = 0; empty tree = 0)."""
        return int(arena.node_ints(self)[:, DEPTH].max()) if self._n_nodes else 0

    # ------------------------------------------------------------------ memory

    def memory_bytes(self) -> int:
        """Bytes held: every array's allocation plus the Python objects around them.

        Never above ``max_size_bytes`` when one is set: capacities are planned with the same
        formula (`arena.array_bytes`, `arena.py_bytes`) before any allocation.
        """
        return arena.measured(self)

    def shed_leaves(self) -> int:
        """Deactivate the less promising half of the active leaves (at least one) and free their
        statistics: the runtime's response to memory pressure (edgebayes.runtime.memory). The
        leaves keep predicting their majority class; a bounded tree may reactivate them at its
        next ranking. Returns the number of leaves deactivated."""
        return learning.shed_leaves(self)

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
            finite = type(total) is float and total - total == 0.0
            if finite and (not learning or -MAX_ABS_X <= min(xl) <= max(xl) <= MAX_ABS_X):
                return xl
        return as_floats(x, self.n_features_in_, learning)[0]

    def _init_features(self, n: int) -> None:
        """Fix the schema from the first sample: which features are numeric and nominal."""
        feats = list(range(n)) if self.features is None else [int(i) for i in self.features]
        bad = [i for i in feats if i >= n]
        if bad:
            raise ValueError(f"features {bad} out of range for x of {n} features")
        nominal = set() if self.nominal_attributes is None else {int(i) for i in self.nominal_attributes}
        self.n_features_in_ = n
        arena.fix_schema(self, [g for g in feats if g not in nominal], [g for g in feats if g in nominal])

    def has_room(self, x, y) -> bool:
        """Whether `learn_one` would take ``y`` and ``x``'s nominal values within
        ``max_size_bytes`` (always True without a bound); changes nothing.

        Args:
            x, y: a sample `learn_one` accepts (a bad ``x`` raises ValueError as there; the
                label is not checked again: an ensemble asks every member about one sample).
        """
        if self.max_size_bytes is None or (not self._nominal_features and y in self._class_index):
            return True
        xl = self._check_x(x, learning=True)
        tree = self
        if self.n_features_in_ is None:  # a fresh copy fixes the schema, this one stays untouched
            tree = self.clone()
            tree._init_features(len(xl))
        codes = learning.value_codes(tree, xl)
        add_class = y not in tree._class_index
        if not add_class and None not in codes:
            return True
        new, ccap, vcaps = arena.needs(tree, add_class, xl, codes)
        extra = arena.growth_bytes(tree, [y] if add_class else [], new)
        return arena.slots_that_fit(tree, tree._node_cap or 1, ccap, vcaps, extra) >= 0

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
            if not self.has_room(xl, y):  # the schema's own bytes count too
                raise ClassLimitError(f"class {y!r} refused: max_size_bytes={self.max_size_bytes} "
                                      f"cannot hold a tree over {len(xl)} features")
            self._init_features(len(xl))
        if w == 0.0:
            return
        c = self._class_index.get(y)
        codes = learning.value_codes(self, xl)
        if c is None or None in codes:  # a new class or value may re-lay the arrays
            c, codes = learning.make_room(self, y, c is None, xl, codes)
        learning.learn(self, xl, c, w, codes)

    # ------------------------------------------------------------------ prediction

    def predict_proba_one(self, x) -> dict:
        """Class probabilities at the leaf x reaches: {label: p} over every class in
        ``classes_`` (0 for a class unseen there; docs/cases.md C11); {} before any learning.

        Raises:
            ValueError: wrong length, non-numeric or infinite x.
        """
        xl = self._check_x(x)
        if not self._n_nodes:
            return {}
        return dict(zip(self.classes_, leaves.predict(self, learning.route(self, xl), xl)))

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
            "vocab": [list(v) for v in self._vocabs],
            "caps": [self._node_cap, self._slot_cap, self._class_cap, list(self._value_caps)],
            "n_nodes": self._n_nodes,
            "ints": self._node_ints[: self._n_nodes * N_NODE_INTS].tolist(),
            "floats": self._node_floats[: self._n_nodes * N_NODE_FLOATS].tolist(),
            "class_weights": self._class_weights[: self._n_nodes * self._class_cap].tolist(),
            "stats": self._gaussians.tolist(),
            "nominal_counts": [a.tolist() for a in self._nominal_counts],
            "free": self._free_slots[: self._n_free_slots].tolist(),
        }

    @classmethod
    @refuse_malformed("hoeffding_tree")
    def from_state(cls, state: dict) -> HoeffdingTreeClassifier:
        """Rebuild the tree ``state()`` described.

        Raises:
            ValueError: not a hoeffding_tree state, or a malformed one: a missing key, a
                value of the wrong type, sizes that do not match the capacities, a node
                record that is not a tree (`checks.check_records`), a non-finite statistic.
        """
        if not isinstance(state, dict) or state.get("kind") != "hoeffding_tree":
            raise ValueError("not a hoeffding_tree state")
        tree = cls(**state["params"])
        check_allocation(state, tree.features is None)  # before anything is allocated
        if state["n_features_in"] is not None:
            tree._init_features(state["n_features_in"])
        arena.load(tree, state)
        check_records(tree, state)
        return tree


#: the pure-Python reference, by name whichever class `HoeffdingTreeClassifier` is
ReferenceHoeffdingTreeClassifier = HoeffdingTreeClassifier
HoeffdingTreeClassifier = choose(ReferenceHoeffdingTreeClassifier, "edgebayes._core.tree")
