"""VFDT learning over the tree's arrays: route, update, attempt a split, split, and the
memory management that activates and deactivates leaves.

Domingos and Hulten (2000), "Mining high-speed data streams": the Hoeffding tree algorithm
of its Table 1 with the refinements of its section 3 (the VFDT system), and MOA's
``HoeffdingTree`` as the semantic reference. For each example (x, y):

1. "Sort (x, y) into a leaf l using HT": `route`;
2. "For each x_ij in x such that X_i in X_l, increment n_ijk(l)" and "label l with the
   majority class": `learn` (class weights, `observers.observe`, the nba scores of
   `leaves.score_nba`);
3. "If the examples seen so far at l are not all of the same class", every ``grace_period``
   of weight (section 3, "G computation": n_min): "compute G_l(X_i) for each attribute",
   take the best two, "compute eps using equation 1" and, if their difference exceeds eps
   (or eps < tau, section 3 "Ties"), "replace l by an internal node that splits on X_a",
   with a new leaf per branch: `attempt_split`, `split`;
4. section 3, "Memory": the least promising leaves (p_l e_l) are deactivated, their
   observers freed, and reactivated when they rank higher: `activate`, `rebalance`,
   `shed_leaves`.

Every function takes the tree (`edgebayes.tree.hoeffding_tree`); node and slot indices are
those of `arena`.
"""

from __future__ import annotations

import math

import numpy as np

from edgebayes.base import ClassLimitError
from edgebayes.tree import arena
from edgebayes.tree.arena import (
    DEPTH,
    FIRST_CHILD,
    N_BRANCHES,
    N_NODE_FLOATS,
    N_NODE_INTS,
    SLOT,
    SPLIT_FEATURE,
    THRESHOLD,
    WEIGHT_SEEN,
)
from edgebayes.tree.criterion import MAX_SHARE_TO_SPLIT, entropy, hoeffding_bound, merit_range
from edgebayes.tree.leaves import class_row, score_nba
from edgebayes.tree.observers import nominal_splits, numeric_splits, observe

#: Learned samples between two rankings of the leaves by promise (bounded trees only).
REBALANCE_PERIOD = 1000


# ---------------------------------------------------------------- routing


def route(tree, xl: list) -> list:
    """The nodes ``xl`` passes from the root to its leaf, root first ("sort (x, y) into a
    leaf"). Iterative: no recursion however deep the tree (docs/cases.md C20).

    A numeric split sends ``x <= threshold`` to its first child, ``x > threshold`` to the
    second; a nominal split sends a value to the child of its code. A missing value (NaN),
    or a nominal value the split has no branch for, follows the branch that has seen the
    most weight (`_heaviest_branch`).
    """
    ni, nf = tree._node_ints, tree._node_floats
    node = 0
    path = [0]
    while True:
        b = node * N_NODE_INTS
        g = ni[b + SPLIT_FEATURE]
        if g < 0:
            return path
        v = xl[g]
        ch = ni[b + FIRST_CHILD]
        nbr = ni[b + N_BRANCHES]
        if nbr:
            code = tree._vocab_of[g].get(v, -1)
            node = ch + code if 0 <= code < nbr else _heaviest_branch(nf, ch, nbr)
        else:
            thr = nf[node * N_NODE_FLOATS + THRESHOLD]
            if v <= thr:
                node = ch
            elif v > thr:
                node = ch + 1
            else:
                node = _heaviest_branch(nf, ch, 2)
        path.append(node)


def _heaviest_branch(nf, ch: int, nbr: int) -> int:
    """The child among ``ch .. ch + nbr - 1`` with the most weight seen, the first on a tie."""
    weights = [nf[(ch + i) * N_NODE_FLOATS + WEIGHT_SEEN] for i in range(nbr)]
    return ch + weights.index(max(weights))


# ---------------------------------------------------------------- one sample


def learn(tree, xl: list, c: int, w: float, codes: list) -> None:
    """Learn ``xl`` with class index ``c`` and weight ``w`` > 0 (``codes``: its nominal
    values' codes, every one known): route, add ``w`` to the weight seen along the path,
    score nba, update the leaf's observers and class weight, attempt a split every
    ``grace_period`` of weight, rank the leaves every `REBALANCE_PERIOD` samples (bounded
    trees)."""
    path = route(tree, xl)
    node = path[-1]
    s = tree._node_ints[node * N_NODE_INTS + SLOT]
    if s >= 0:
        if tree.leaf_prediction == "nba":
            score_nba(tree, node, s, xl, c, w)
        observe(tree, s, xl, c, w, codes)
    arena.add_weight(tree, path, c, w)
    if s >= 0 and arena.due_for_attempt(tree, node, w):
        attempt_split(tree, node)
    if tree.max_size_bytes is not None and tree._n_learned % REBALANCE_PERIOD == 0:
        rebalance(tree)


# ---------------------------------------------------------------- new classes and values


def value_codes(tree, xl: list) -> list:
    """Per nominal feature, the code of ``xl``'s value: -1 for NaN, None for a new value."""
    vocab = tree._vocabs
    return [vocab[k].get(xl[g]) if xl[g] == xl[g] else -1 for k, g in enumerate(tree._nominal_features)]


def make_room(tree, y, add_class: bool, xl: list, codes: list) -> tuple[int, list]:
    """Add class ``y`` (if ``add_class``) and the nominal values of ``xl`` that ``codes``
    marks None (new), re-laying the arrays: first the class, then each value, each at
    twice its capacity where the rest still fits, else exactly; leaves are deactivated
    to make room. The first class creates the root. When every grown value capacity fits
    doubled, the values take one re-lay, not one each (a young tree of d nominal features
    would re-lay d times at its first sample). Returns (class index, codes).

    Raises:
        ClassLimitError: even a tree with no active leaf could not hold them; nothing
            has changed.
    """
    new, ccap, vcaps = arena.needs(tree, add_class, xl, codes)
    extra = arena.growth_bytes(tree, [y] if add_class else [], new)
    if arena.slots_that_fit(tree, tree._node_cap or 1, ccap, vcaps, extra) < 0:
        what = f"class {y!r}" if add_class else f"nominal value(s) {new}"
        raise ClassLimitError(
            f"{what} refused: max_size_bytes={tree.max_size_bytes} cannot hold "
            f"{len(tree.classes_) + add_class} classes and the nominal values of this tree"
        )
    c = tree._class_index.get(y, -1)
    if add_class:
        c = arena.add_class(tree, y)
        arena.settle(tree, ccap, tree._value_caps, ccap, vcaps, new)
        if not tree._n_nodes:  # VFDT's start: a single active leaf, the root
            arena.add_root(tree)
            activate(tree, 0)
    if new and arena.doubled_caps_fit(tree, vcaps, new):
        for k in list(new):  # one re-lay for them all: what settling them one by one ends at
            codes[k] = arena.add_value(tree, k, new.pop(k))
        arena.relayout(tree, tree._node_cap or 1, tree._class_cap, arena.doubled(tree, vcaps))
    for k in list(new):
        codes[k] = arena.add_value(tree, k, new.pop(k))
        step = list(tree._value_caps)
        step[k] = vcaps[k]
        arena.settle(tree, tree._class_cap, step, ccap, vcaps, new)
    return c, codes


# ---------------------------------------------------------------- splits


def attempt_split(tree, node: int) -> None:
    """VFDT split attempt (MOA's ``attemptToSplit``, River's ``_attempt_to_split``):

    1. a pure leaf never splits (docs/cases.md C17); nor one at ``max_depth``;
    2. best candidate per feature by information gain, plus the null split (merit -inf);
       among equal merits the later feature wins (MOA's stable sort);
    3. eps = hoeffding_bound(log2(n_classes), delta, weight seen);
    4. split on the best when G(best) - G(second) > eps, or on a tie, eps < tau; the
       children start with the split's class weights and fresh observers;
    5. a *near-pure* leaf (majority class above `MAX_SHARE_TO_SPLIT` of its weight) never
       splits on a tie (docs/cases.md C17), only on a won Hoeffding test;
    6. otherwise the null split wins when the leaf is near-pure, or on a tie with no valid
       candidate: the leaf clears its observers, keeping its class weights and nba
       scores (MOA and River deactivate it there and their memory manager, with room to
       spare, reactivates it at once with fresh observers).

    Near-pure leaves are what AGR_A turns on: after each concept change the old leaves
    stay near-pure for a while, far past the tie point; MOA splits them on ties over
    stale statistics, River (``max_share_to_split``) and we clear the statistics instead
    and split on the new concept later (docs/results.md, "Figures behind choices in the
    code").
    """
    b = node * N_NODE_INTS
    if tree.max_depth is not None and tree._node_ints[b + DEPTH] >= tree.max_depth:
        return
    pre = class_row(tree, node)
    total, n_nonzero = 0.0, 0
    for v in pre:
        total += v
        n_nonzero += v > 0.0
    if n_nonzero < 2:
        return
    s = tree._node_ints[b + SLOT]
    suggestions = _split_suggestions(tree, s, pre)
    suggestions.sort(key=lambda t: (t[0], t[1]))
    best, second = suggestions[-1], suggestions[-2]
    eps = hoeffding_bound(merit_range(pre), tree.delta, total)
    near_pure = max(pre) / total > MAX_SHARE_TO_SPLIT
    tie = eps < tree.tau
    if math.isfinite(best[0]) and (best[0] - second[0] > eps or (tie and not near_pure)):
        split(tree, node, best[1], best[2], best[3])
    elif near_pure or tie:
        arena.clear_slot(tree, s)


def _split_suggestions(tree, s: int, pre: list) -> list:
    """(merit, global feature, threshold, class weights per branch) of the best split of
    every feature at slot ``s``, after the null split (merit -inf, feature -1)."""
    n_classes, h_pre = len(pre), entropy(pre)
    suggestions = [(-math.inf, -1, 0.0, None)]
    for g, (merit, thr, dists) in zip(tree._numeric_features, numeric_splits(tree, s, n_classes, h_pre)):
        suggestions.append((merit, g, thr, dists))
    for g, (merit, dists) in zip(tree._nominal_features, nominal_splits(tree, s, n_classes, h_pre)):
        suggestions.append((merit, g, math.nan, dists))
    return suggestions


def split(tree, node: int, g: int, thr: float, dists: list) -> None:
    """Turn leaf ``node`` into a split on global feature ``g`` with a child per row of
    ``dists`` (a list of class-weight lists); skipped when the budget cannot hold the new nodes even
    without slots. The children are activated while slots are to be had."""
    n_br = len(dists)
    if not arena.grow_nodes(tree, tree._n_nodes + n_br, exclude=node):
        return  # the tree is full: no more splits
    s = tree._node_ints[node * N_NODE_INTS + SLOT]
    if s >= 0:
        arena.release_slot(tree, s)
    first = arena.split_node(tree, node, g, thr, dists)
    for child in range(first, first + n_br):
        if not activate(tree, child):
            break


# ---------------------------------------------------------------- memory management


def activate(tree, node: int) -> bool:
    """Give leaf ``node`` a stats slot and fresh nba scores; False when no slot fits."""
    s = arena.take_slot(tree)
    if s < 0:
        return False
    arena.start_leaf(tree, node, s)
    return True


def rebalance(tree) -> None:
    """Give the stats slots to the most promising leaves (MOA's ``enforceTrackerLimit``):
    deactivate the others, reactivate inactive leaves that now rank higher or for which
    room has freed."""
    ints = arena.node_ints(tree)
    leaves = np.flatnonzero(ints[:, SPLIT_FEATURE] < 0)
    inactive = ints[leaves, SLOT] < 0
    if not inactive.any():
        return
    fit = arena.slots_that_fit(tree, tree._node_cap, tree._class_cap, tree._value_caps)
    n_active = min(leaves.size, max(fit, 0))
    order = leaves[np.argsort(-arena.promise(tree, leaves), kind="stable")]
    top = order[:n_active]
    top_slots = ints[top, SLOT]
    if (top_slots >= 0).all() and n_active <= tree._slot_cap:
        return  # the most promising leaves already learn
    keep = top_slots[top_slots >= 0].tolist()
    tree._rebuild(tree._node_cap, max(n_active, len(keep)), tree._class_cap, tree._value_caps, keep)
    for node in top[top_slots < 0].tolist():
        activate(tree, node)


def shed_leaves(tree) -> int:
    """Deactivate the less promising half of the active leaves (at least one); returns how
    many were deactivated."""
    active = tree._active_slots()
    keep = active[: len(active) // 2]
    if len(keep) == len(active):
        return 0
    tree._rebuild(tree._node_cap, len(keep), tree._class_cap, tree._value_caps, keep)
    return len(active) - len(keep)
