"""Split criterion of the Hoeffding tree: information gain and the Hoeffding bound.

Domingos and Hulten (2000), "Mining high-speed data streams" (VFDT), as in MOA's
``InfoGainSplitCriterion`` and ``HoeffdingTree.computeHoeffdingBound``.
"""

from __future__ import annotations

import math

#: A candidate split in which fewer than two branches hold more than this fraction of the
#: weight is worthless (merit -inf): MOA's and River's ``min_branch_fraction`` default.
MIN_BRANCH_FRACTION = 0.01
#: A leaf whose majority class holds more than this share of its weight is near-pure: it
#: never splits on a tie (docs/cases.md C17); River's ``max_share_to_split`` default.
MAX_SHARE_TO_SPLIT = 0.99


def hoeffding_bound(range_: float, delta: float, n: float) -> float:
    """eps = sqrt(R^2 ln(1/delta) / (2 n)) (VFDT, Domingos and Hulten 2000, eq. 1).

    Args:
        range_: R, the range of the merit (log2(n_classes) for information gain).
        delta: 1 - confidence, in (0, 1).
        n: weight seen at the leaf, > 0.
    """
    return math.sqrt(range_ * range_ * math.log(1.0 / delta) / (2.0 * n))


def merit_range(class_weights) -> float:
    """R = log2(n_classes) for information gain, n_classes the length of the leaf's class
    weight vector (every class the tree knows, zero weights included), at least 2: MOA's
    ``getRangeOfMerit`` takes the length of the class distribution array, River the classes
    its leaf has a count for. Counting only classes with weight at the leaf gave a smaller
    bound, so earlier splits than MOA's on the 5-class RBF streams."""
    return math.log2(max(len(class_weights), 2))


def entropy(weights) -> float:
    """Shannon entropy in bits of a class-weight vector (zero weights ignored); 0 if empty.

    H = log2(W) - sum_k w_k log2(w_k) / W, summed in class order (the compiled core's order).
    """
    total = 0.0
    acc = 0.0
    for v in weights:
        if v > 0.0:
            total += v
            acc -= v * math.log2(v)
    if total <= 0.0:
        return 0.0
    return acc / total + math.log2(total)


def info_gain(h_pre: float, branches: list) -> float:
    """Information gain of one candidate split (MOA's ``InfoGainSplitCriterion.getMeritOfSplit``).

    Args:
        h_pre: entropy of the class weights at the leaf (`entropy`), in bits.
        branches: per branch, its class weights (a list of floats per branch, classes in order).

    Returns:
        H(pre) - sum_b (w_b / w) H(branch_b), w the candidate's total weight; -inf when
        fewer than two branches hold more than `MIN_BRANCH_FRACTION` of w. Every sum runs
        in branch and class order, one term at a time.
    """
    sizes = []
    w = 0.0
    for row in branches:
        wb = 0.0
        for v in row:
            wb += v
        sizes.append(wb)
        w += wb
    big = 0
    for wb in sizes:
        if wb > MIN_BRANCH_FRACTION * w:
            big += 1
    if big < 2:
        return -math.inf
    post = 0.0
    for row, wb in zip(branches, sizes):
        if wb > 0.0:
            post += wb * entropy(row)
    return h_pre - post / w
