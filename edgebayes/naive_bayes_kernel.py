"""GaussianNB's per-sample kernel: the update rule and the class probabilities over its buffers.

The statistics are flat ``array("d")`` buffers, one row of ``d`` values per class (counts,
means, variances) and one per-class prior; the compiled twin (`edgebayes._core.naive_bayes`)
mirrors these functions loop for loop, in the same operation order. The rule (docs/design.md
2.1; Wu and Xiong 2023, Eqs. (8)-(10) and (12)-(14)) is, for an estimate that has seen weight
m and takes a sample of weight w at rate r = `update_rate`:

    mean: d = x - mu ; mu <- mu + r d ;  variance: var <- (1 - r)(var + r d^2)

The prediction is argmax_k log P(k) + sum_j log N(x_j; mu_kj, var_kj + eps) in log space.
"""

from __future__ import annotations

import math
from array import array

__all__ = ["FAR_SCALE", "far_proba", "normalised", "proba", "terms", "update", "update_rate"]

_LOG_2PI = math.log(2.0 * math.pi)
#: 2^-600: scales x and the means when every density underflows (see `far_proba`)
FAR_SCALE = 2.0**-600
_INF = math.inf


def update_rate(m: float, w: float, top: float, log_keep: float) -> float:
    """The rate of one update of weight ``w`` on an estimate that has seen weight ``m``.

    docs/design.md 2.1 with the rule applied to w unit steps: the steps that take the count to at
    most ``top`` have rate 1/n (their retentions telescope to m/(m+t)), the others alpha
    (retention (1-alpha) each), so the total rate is 1 - m/(m+t) (1-alpha)^(w-t) with
    t = clip(top - m, 0, w). ``top`` is floor(1/alpha) with the warm-up (for w = 1 the rate is
    then max(alpha, 1/n)), 1 without it (the paper's Algorithm 2: rate 1 for the first unit of
    weight, alpha after) and inf in the exact mode (rate w/(m+w), Algorithm 1);
    ``log_keep`` = log(1 - alpha). For any weights, learning w1 then w2 equals learning w1 + w2.
    """
    n = m + w
    if n <= top:
        return w / n
    if m >= top:
        return -math.expm1(w * log_keep)
    t = top - m
    return (t - m * math.expm1((w - t) * log_keep)) / top


def update(counts: array, means: array, variances: array, base: int, xs: list, w: float,
           top: float, log_keep: float) -> None:
    """One sample of weight ``w`` into the counts, means and variances at ``base`` (a class's
    row, or 0 for the all-class statistics), in place: docs/design.md 2.1, feature by feature.
    Features with equal counts share one rate, so a dense row computes it once."""
    last = r = -1.0
    for j, a in enumerate(xs):
        if a != a:  # missing
            continue
        i = base + j
        m = counts[i]
        if m != last:
            last, r = m, update_rate(m, w, top, log_keep)
        e = a - means[i]
        means[i] += r * e
        variances[i] = (1.0 - r) * (variances[i] + r * e * e)
        counts[i] = m + w


def normalised(e: list) -> list:
    """``e`` divided by its sum, added left to right."""
    s = 0.0
    for v in e:
        s += v
    return [v / s for v in e]


def terms(priors: array, counts: array, means: array, variances: array, eps: float, xs: list,
          has_nan: bool) -> tuple[list, list]:
    """Per class: log P(k) - 0.5 sum_j log(2 pi v_kj), and sum_j (x_j - mu_kj)^2 / v_kj,
    with v = var + eps; the joint log-likelihood is the first minus half the second.

    ``xs``: the checked sample, one float per feature (NaN = missing). A class with every
    feature seen, for x without a missing value, takes log of the product of its v (one log, or
    the sum of the logs if the product over- or underflows); otherwise only the features
    present in x and seen in the class count.
    """
    d = len(xs)
    cs, qs = [], []
    for k, p in enumerate(priors):
        base = k * d
        log_p = math.log(p) if p > 0.0 else -_INF
        q = 0.0
        if not has_nan and min(counts[base:base + d]) > 0.0:
            prod = 1.0
            for j, a in enumerate(xs):
                v = variances[base + j] + eps
                prod *= v
                e = a - means[base + j]
                q += e * e / v
            if 0.0 < prod < _INF:
                log_det = math.log(prod)
            else:
                log_det = 0.0
                for j in range(d):
                    log_det += math.log(variances[base + j] + eps)
            c = log_p - 0.5 * (d * _LOG_2PI + log_det)
        else:
            c = log_p
            for j, a in enumerate(xs):
                i = base + j
                if a == a and counts[i] > 0.0:
                    v = variances[i] + eps
                    c -= 0.5 * (_LOG_2PI + math.log(v))
                    e = a - means[i]
                    q += e * e / v
        cs.append(c)
        qs.append(q)
    return cs, qs


def far_proba(priors: array, counts: array, means: array, variances: array, eps: float, xs: list) -> list:
    """Probabilities when every class's log-likelihood is -inf (x extremely far): the limit
    as x moves away, found with the squared distances scaled by 2^-1200."""
    d, scale = len(xs), FAR_SCALE
    u, c = [], []
    for k, p in enumerate(priors):
        base = k * d
        uk = ck = 0.0
        for j, a in enumerate(xs):
            i = base + j
            if a == a and counts[i] > 0.0:
                v = variances[i] + eps
                e = a * scale - means[i] * scale
                uk += e * e / v
                ck -= 0.5 * (_LOG_2PI + math.log(v))
        u.append(uk if p > 0.0 else _INF)
        c.append(ck + math.log(p) if p > 0.0 else -_INF)
    best = min(u)
    win = [uk == best and ck > -_INF for uk, ck in zip(u, c)]
    top = max(ck for ck, won in zip(c, win) if won)
    e = [math.exp(ck - top) if won else 0.0 for ck, won in zip(c, win)]
    return normalised(e)


def proba(priors: array, counts: array, means: array, variances: array, eps: float, xs: list,
          has_nan: bool) -> list:
    """Class probabilities of a checked ``xs``, in class order: log-sum-exp of `terms`."""
    cs, qs = terms(priors, counts, means, variances, eps, xs, has_nan)
    # shift by the smallest squared distance: when it is huge (a variance at the floor),
    # the log priors would otherwise be absorbed and tied distances no longer tie
    q0 = min(qs)
    if q0 == _INF:
        return far_proba(priors, counts, means, variances, eps, xs)
    jll = [c - 0.5 * (q - q0) for c, q in zip(cs, qs)]
    top = max(jll)
    if top == -_INF:
        return far_proba(priors, counts, means, variances, eps, xs)
    return normalised([math.exp(v - top) for v in jll])
