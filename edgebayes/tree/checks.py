"""Validation of the tree's parameters and of a state before the tree is rebuilt from it.

A state comes from a checkpoint file, which may be truncated, edited or hostile: every
check raises ValueError naming what is wrong, and what a state would allocate is bounded
by the values it holds before anything is allocated.
"""

from __future__ import annotations

import math

import numpy as np

from edgebayes.base import MAX_ABS_X, check_count, check_finite, check_label
from edgebayes.tree import storage
from edgebayes.tree.arena import (
    DEPTH,
    FIRST_CHILD,
    N_BRANCHES,
    N_NODE_FLOATS,
    N_NODE_INTS,
    SLOT,
    SPLIT_FEATURE,
    WEIGHT_SEEN,
    node_floats,
    node_ints,
)
from edgebayes.tree.observers import MAX, MEAN, MIN, N_FIELDS, WEIGHT

LEAF_PREDICTIONS = ("mc", "nb", "nba")
#: Smallest accepted ``max_size_bytes``: the Python objects of an empty tree plus a root.
MIN_SIZE_BYTES = 4096
#: Largest ``n_features_in`` a state may claim (its feature lists are built before any size check).
MAX_FEATURES = 1 << 24


def check_params(grace_period, delta, tau, leaf_prediction, nb_threshold, max_depth,
                 n_split_points, nominal_attributes, max_size_bytes, features) -> None:
    """ValueError naming the first invalid parameter of `HoeffdingTreeClassifier`."""

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
    if leaf_prediction not in LEAF_PREDICTIONS:
        raise ValueError(f"leaf_prediction must be one of {LEAF_PREDICTIONS}, got {leaf_prediction!r}")
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


def check_allocation(state: dict, all_features: bool) -> None:
    """ValueError unless what the state's capacities and ``n_features_in`` would allocate is
    bounded by the values it holds: at most twice them (capacities grow by doubling), and no
    more numeric features than its statistics hold (``all_features``: no ``features``
    parameter, so every feature of x is learned)."""
    node_cap, slot_cap, ccap, _ = state["caps"]
    held = sum(len(state[k]) for k in ("ints", "floats", "class_weights", "stats", "free"))
    if any(type(c) is not int or c < 0 for c in (node_cap, slot_cap, ccap)) or (
            node_cap * (N_NODE_INTS + N_NODE_FLOATS + ccap) + slot_cap > 2 * held + 64):
        raise ValueError(f"invalid hoeffding_tree state: capacities {state['caps']!r:.80} "
                         f"beyond twice the {held} values it holds")
    n_in, slab = state["n_features_in"], slot_cap * ccap
    if n_in is not None and (type(n_in) is not int or not 1 <= n_in <= MAX_FEATURES or (
            all_features and slab and n_in > len(state["vocab"]) + len(state["stats"]) // slab)):
        raise ValueError(f"invalid hoeffding_tree state: n_features_in {n_in!r}")


def check_records(tree, state: dict) -> None:
    """ValueError unless the rebuilt arrays are a tree this class could have grown: sizes
    match the capacities, children come after their parent and lie inside the records,
    split features are learned ones, slots are unique, statistics finite (min/max of an
    empty estimator excepted) and within the range learning keeps (MAX_ABS_X)."""

    def bad(what):
        return ValueError(f"invalid hoeffding_tree state: {what}")

    n, K = tree._n_nodes, len(tree.classes_)
    for c in tree.classes_:
        check_label(c)
    if len(tree._class_index) != K:
        raise bad("two classes are equal labels")
    check_count("n_learned", state["n_learned"])
    caps = [tree._node_cap, tree._slot_cap, tree._class_cap, *tree._value_caps]
    if any(type(c) is not int or c < 0 for c in caps) or len(tree._value_caps) != len(tree._nominal_features):
        raise bad("capacities must be ints >= 0, one per nominal feature")
    if (n > 0) != (K > 0) or type(n) is not int or not n <= tree._node_cap <= max(1, 2 * n):
        raise bad(f"{n!r} nodes for {K} classes and node capacity {tree._node_cap}")
    if tree._class_cap < K or any(len(v) > c for v, c in zip(tree._vocabs, tree._value_caps)):
        raise bad("fewer class or value columns than classes or values")
    if len(state["vocab"]) != len(tree._nominal_features) or any(
            len(v) != len(r) for v, r in zip(tree._vocabs, state["vocab"])):
        raise bad("vocabularies do not match the nominal features")
    for values in state["vocab"]:
        check_finite("vocab", values, -MAX_ABS_X, MAX_ABS_X)
    sizes = [len(state["ints"]), len(state["floats"]), len(state["class_weights"]), len(tree._gaussians)]
    sizes += [len(a) for a in tree._nominal_counts]
    slab = tree._slot_cap * tree._class_cap
    want = [n * N_NODE_INTS, n * N_NODE_FLOATS, n * tree._class_cap, slab * len(tree._numeric_features) * N_FIELDS]
    want += [slab * v for v in tree._value_caps]
    if sizes != want or len(tree._nominal_counts) != len(tree._nominal_features):
        raise bad("array sizes do not match the capacities")
    _check_nodes(tree, state, bad)
    _check_statistics(tree, bad)


def _check_nodes(tree, state: dict, bad) -> None:
    n = tree._n_nodes
    ints = node_ints(tree)
    fields = (SPLIT_FEATURE, FIRST_CHILD, N_BRANCHES, DEPTH, SLOT)
    feat, child, nbr, depth, slot = (ints[:, i].astype(np.int64) for i in fields)
    split = feat >= 0
    nominal = np.isin(feat, tree._nominal_features) if tree._nominal_features else np.zeros(n, bool)
    width = np.where(nominal, nbr, 2)
    if (
        (feat < -1).any() or not np.isin(feat[split], tree._numeric_features + tree._nominal_features).all()
        or (split & ((child <= np.arange(n)) | (child + width > n) | (slot != -1))).any()
        or (split & ~nominal & (nbr != 0)).any() or (nominal & (nbr < 1)).any()
        or (depth < 0).any() or (slot < -1).any() or (slot >= tree._slot_cap).any()
    ):
        raise bad("node records do not form a tree")
    used = np.concatenate([slot[slot >= 0], np.asarray(state["free"], dtype=np.int64)])
    if len(np.unique(used)) != len(used) or ((used < 0) | (used >= tree._slot_cap)).any():
        raise bad("stats slots are not unique")
    floats = node_floats(tree)
    if not np.isfinite(floats).all() or (floats[:, WEIGHT_SEEN:] < 0).any():
        raise bad("node weights must be finite and >= 0")


def _check_statistics(tree, bad) -> None:
    cc = storage.view(tree._class_weights)
    if not (np.isfinite(cc).all() and (cc >= 0).all()):
        raise bad("class weights must be finite and >= 0")
    st = storage.view(tree._gaussians, (-1, N_FIELDS))
    finite = np.delete(st, [MIN, MAX], axis=1)
    bounds = np.abs(st[:, [MEAN, MIN, MAX]])
    if not np.isfinite(finite).all() or (st[:, WEIGHT] < 0).any() or ((bounds > MAX_ABS_X) & np.isfinite(bounds)).any():
        raise bad("Gaussian statistics must be finite, weights >= 0, means within MAX_ABS_X")
    if np.isnan(st).any():
        raise bad("Gaussian statistics hold NaN")
    for a in tree._nominal_counts:
        v = storage.view(a)
        if not (np.isfinite(v).all() and (v >= 0).all()):
            raise bad("nominal counts must be finite and >= 0")
