"""What a leaf predicts: majority class, naive Bayes over its observers, or the better of
the two on its own training samples (mc / nb / nba; MOA's ``LearningNodeNB`` and
``LearningNodeNBAdaptive``).

Every function takes the tree (`edgebayes.tree.hoeffding_tree`) and a leaf's node index;
``s`` is the leaf's stats slot (`arena`), >= 0 for an active leaf. Every sum is a scalar
loop in the compiled core's order (`edgebayes._core.tree`): the same floats on any CPU and
any Python (``sum`` of floats is compensated from Python 3.12 on).
"""

from __future__ import annotations

import math

from edgebayes.tree import arena
from edgebayes.tree.arena import MC_CORRECT, N_NODE_FLOATS, N_NODE_INTS, NB_CORRECT, SLOT, WEIGHT_SEEN
from edgebayes.tree.observers import HALF_INV_VAR, LOG_NORM, MEAN, N_FIELDS, WEIGHT, count_at, gaussian_at

#: A product of nominal likelihoods below this goes into the log-vote before the next factor:
#: each factor is at least 1 / (weight seen + values), above 1e-100 for any weight a leaf
#: can gather (`edgebayes.base.MAX_WEIGHT` per sample), so nothing underflows.
TINY_PRODUCT = 1e-200


def softmax_log(log_votes) -> list | None:
    """Probabilities from log-votes by log-sum-exp; None when no vote is finite (all zero)."""
    top = -math.inf
    for v in log_votes:
        top = max(top, v)
    if not math.isfinite(top):
        return None
    exps = [math.exp(v - top) for v in log_votes]
    total = 0.0
    for e in exps:
        total += e
    return [e / total for e in exps]


def class_row(tree, node: int) -> list:
    """Class weights at ``node``, one per class of ``classes_``."""
    b = node * tree._class_cap
    return tree._class_weights[b : b + len(tree.classes_)].tolist()


def argmax(values: list) -> int:
    """Index of the first maximum (MOA's ``maxIndex``); -1 for an empty list."""
    best, arg = -math.inf, -1
    for i, v in enumerate(values):
        if v > best:
            best, arg = v, i
    return arg


def predict(tree, path: list, xl: list) -> list:
    """Class probabilities, one per class of ``classes_``, at the end of ``path`` (the
    nodes `learning.route` passed); [] where no class has weight.

    A leaf no sample has reached predicts with its split node's class weights. An active
    leaf predicts by naive Bayes when ``leaf_prediction`` is "nb", or "nba" and naive Bayes
    has been right at least as often as the majority class, once the leaf has seen
    ``nb_threshold`` of weight; otherwise by its class weights.
    """
    nf = tree._node_floats
    node = path[-1]
    if nf[node * N_NODE_FLOATS + WEIGHT_SEEN] <= 0.0 and len(path) > 1:
        node = path[-2]
    fb = node * N_NODE_FLOATS
    s = tree._node_ints[node * N_NODE_INTS + SLOT]
    mode = tree.leaf_prediction
    if (
        s >= 0
        and mode != "mc"
        and nf[fb + WEIGHT_SEEN] >= tree.nb_threshold
        and not (mode == "nba" and nf[fb + MC_CORRECT] > nf[fb + NB_CORRECT])
    ):
        proba = softmax_log(nb_log_votes(tree, node, s, xl))
        if proba is not None:
            return proba
    counts = class_row(tree, node)
    total = 0.0
    for v in counts:
        total += v
    return [v / total for v in counts] if total > 0.0 else []


def score_nba(tree, node: int, s: int, xl: list, c: int, w: float) -> None:
    """nba bookkeeping before leaf ``node`` learns ``xl`` with class ``c``: credit the
    majority class and naive Bayes with ``w`` where each predicted ``c``.

    A prediction is MOA's ``maxIndex`` of the votes: the first maximum, the first class
    when every vote is zero (an empty leaf; naive Bayes with every density zero).
    """
    if argmax(class_row(tree, node)) == c:
        arena.credit(tree, node, MC_CORRECT, w)
    if max(argmax(nb_log_votes(tree, node, s, xl)), 0) == c:
        arena.credit(tree, node, NB_CORRECT, w)


def nb_log_votes(tree, node: int, s: int, xl: list) -> list:
    """Unnormalised naive Bayes log-votes per class at a leaf (MOA's
    ``doNaiveBayesPrediction`` in log space, so nothing underflows: docs/cases.md C08).

    Densities are MOA's ``GaussianEstimator.probabilityDensity``: a class whose Gaussian
    has zero variance (one distinct value so far) is a point mass, density 1 at its value
    and 0 elsewhere; a class the leaf has not observed on a feature that other classes
    have values for has density 0 there. A zero density gives -inf, as does a class with
    no weight at the leaf. A missing value adds nothing. A nominal value adds
    log P(value | class) with Laplace correction (MOA's NominalAttributeClassObserver),
    nothing for a class the observer has not seen (MOA's observer rules such a class out,
    which cost SRP accuracy on LED_A: docs/results.md, "Figures behind choices in the code").

    These zeros matter through the nba choice: MOA's young leaves, whose naive Bayes rules
    out most classes, keep predicting the majority class until naive Bayes has earned the
    lead, and a member of an SRP ensemble starts with a low error after training that then
    rises, which its drift detectors see (bench/srp.py on RBF_M and RBF_F).
    """
    st, cc, cb = tree._gaussians, tree._class_weights, node * tree._class_cap
    n_classes = len(tree.classes_)
    votes = [-math.inf] * n_classes
    observed = None  # per numeric feature: has any class a value for it at this leaf?
    for c in range(n_classes):
        n_c = cc[cb + c]
        if n_c <= 0.0:
            continue
        ll = math.log(n_c)
        k = gaussian_at(tree, s, c)
        for j, g in enumerate(tree._numeric_features):
            d = xl[g] - st[k + MEAN]
            if d == d:  # a missing value adds nothing
                iv = st[k + HALF_INV_VAR]
                if iv:
                    ll += st[k + LOG_NORM] - d * d * iv
                else:  # no variance: a point mass, or no value of this class here
                    if st[k + WEIGHT] > 0.0:
                        zero = d != 0.0
                    else:
                        if observed is None:
                            observed = observed_features(tree, s)
                        zero = observed[j]
                    if zero:
                        ll = -math.inf
                        break
            k += N_FIELDS
        votes[c] = ll
    _add_nominal_log_votes(tree, s, xl, votes)
    return votes


def _add_nominal_log_votes(tree, s: int, xl: list, votes: list) -> None:
    """Add the nominal features' log-likelihoods to ``votes`` (classes at -inf stay there):
    per class the product of the Laplace-corrected P(value | class), in feature order, then
    one log; a product that could underflow goes into the vote first."""
    # one log per class, not per term: logs are most of naive Bayes' cost on nominal data
    n_classes = len(votes)
    prods = [1.0] * n_classes
    for j, g in enumerate(tree._nominal_features):
        v = xl[g]
        if v != v:
            continue
        counts, vcap, vocab = tree._nominal_counts[j], tree._value_caps[j], tree._vocabs[j]
        code, n_values = vocab.get(v, -1), len(vocab)
        for c in range(n_classes):
            if votes[c] == -math.inf:
                continue
            b = count_at(tree, j, s, c)
            total = 0.0
            for i in range(vcap):
                total += counts[b + i]
            if total > 0.0:
                if prods[c] < TINY_PRODUCT:
                    votes[c] += math.log(prods[c])
                    prods[c] = 1.0
                prods[c] *= ((counts[b + code] if code >= 0 else 0.0) + 1.0) / (total + n_values)
    for c in range(n_classes):
        if prods[c] != 1.0 and votes[c] != -math.inf:
            votes[c] += math.log(prods[c])


def observed_features(tree, s: int) -> list:
    """Per numeric feature, whether slot ``s`` holds weight for it in any class."""
    st, n_num = tree._gaussians, len(tree._numeric_features)
    seen = [False] * n_num
    for c in range(len(tree.classes_)):
        k = gaussian_at(tree, s, c)
        for j in range(n_num):
            seen[j] = seen[j] or st[k + j * N_FIELDS + WEIGHT] > 0.0
    return seen
