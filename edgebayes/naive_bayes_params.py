"""The parameters of the naive Bayes learners: their checks and what the update rule derives.

Each check raises ``ValueError`` naming the first invalid parameter; the rules are those of the
``GaussianNB`` and ``MixedNB`` docstrings.
"""

from __future__ import annotations

import math
import numbers

from edgebayes.base import check_label

__all__ = ["SCORING", "ZERO_FREQUENCY", "check_gaussian_params", "check_mixed_params", "check_nominal",
           "rate_constants", "split_columns"]

ZERO_FREQUENCY = ("laplace", "borrow")
#: ``"product"``: log P(k) + sum_j log P(x_j | k) (default); ``"paper_sum"``: Artiemjew and
#: Idzikowski's (2019) P(k) sum_j P(x_j | k) with its worked example's counter increment (see
#: `edgebayes.naive_bayes_mixed.MixedNB`); ``"moa"``: MOA's NaiveBayes (`edgebayes.naive_bayes_moa`).
SCORING = ("product", "paper_sum", "moa")


def _real(v) -> bool:
    return not isinstance(v, bool) and isinstance(v, numbers.Real)


def check_gaussian_params(learning_rate, var_smoothing, warm_up) -> None:
    """ValueError unless ``learning_rate`` is None or in [0, 1), ``var_smoothing`` finite and
    >= 0, and ``warm_up`` a bool, True in the exact mode."""
    if learning_rate is not None and not (_real(learning_rate) and 0.0 <= learning_rate < 1.0):
        raise ValueError(f"learning_rate must be None or in [0, 1), got {learning_rate!r}")
    if not (_real(var_smoothing) and 0.0 <= var_smoothing < math.inf):
        raise ValueError(f"var_smoothing must be finite and >= 0, got {var_smoothing!r}")
    if type(warm_up) is not bool:
        raise ValueError(f"warm_up must be True or False, got {warm_up!r}")
    if not warm_up and not learning_rate:
        raise ValueError("warm_up=False needs a learning_rate in (0, 1): the exact mode "
                         "(Algorithm 1) has no constant rate to warm up")


def rate_constants(learning_rate, warm_up: bool = True) -> tuple[float, float]:
    """``(top, log_keep)`` of `edgebayes.naive_bayes_kernel.update_rate` for a checked
    ``learning_rate`` alpha: the count up to which the rate is 1/n (the warm-up's
    floor(1/alpha), the first sample only in Algorithm 2 as written, every sample in the exact
    mode: inf) and log(1 - alpha)."""
    alpha = float(learning_rate or 0.0)
    top = (float(math.floor(1.0 / alpha)) if warm_up else 1.0) if alpha > 0 else math.inf
    return top, math.log1p(-alpha)


def check_nominal(nominal_attributes, n_features: float = math.inf) -> list[int]:
    """The nominal indices as a sorted list of ints.

    Raises:
        ValueError: not a sequence of ints in [0, n_features), or an index appears twice.
    """
    if nominal_attributes is None:
        return []
    try:
        nominal = list(nominal_attributes)
    except TypeError:
        raise ValueError(f"nominal_attributes must be a sequence of ints, got {nominal_attributes!r}") from None
    for i in nominal:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral) or not 0 <= i < n_features:
            raise ValueError(f"nominal_attributes: {i!r} is not an index of x's {n_features} features")
    if len(set(nominal)) != len(nominal):
        raise ValueError(f"nominal_attributes holds a duplicate index: {nominal}")
    return sorted(int(i) for i in nominal)


def split_columns(nominal_attributes, n_features: int) -> tuple[list[int], list[int]]:
    """(nominal, numeric) column indices of an x of ``n_features`` values, each sorted.

    Raises:
        ValueError: a nominal index is not an int in [0, n_features) or appears twice.
    """
    nominal = check_nominal(nominal_attributes, n_features)
    taken = set(nominal)
    return nominal, [j for j in range(n_features) if j not in taken]


def check_mixed_params(nominal_attributes, learning_rate, zero_frequency, alpha, borrow_factor, scoring,
                       classes) -> list | None:
    """``classes`` as a list (None stays None) once every `MixedNB` parameter but those of its
    Gaussian part is checked.

    Raises:
        ValueError: the first invalid parameter, named.
    """
    check_nominal(nominal_attributes)
    if zero_frequency not in ZERO_FREQUENCY:
        raise ValueError(f"zero_frequency must be one of {ZERO_FREQUENCY}, got {zero_frequency!r}")
    if not (_real(alpha) and 0.0 < alpha < math.inf):
        raise ValueError(f"alpha must be a finite number > 0, got {alpha!r}")
    if not (_real(borrow_factor) and 0.0 < borrow_factor < 1.0):
        raise ValueError(f"borrow_factor must be in (0, 1), got {borrow_factor!r}")
    if scoring not in SCORING:
        raise ValueError(f"scoring must be one of {SCORING}, got {scoring!r}")
    if scoring == "moa" and learning_rate is not None:
        raise ValueError("scoring='moa' is MOA's NaiveBayes, which does not forget: learning_rate must be None")
    if classes is None:
        return None
    classes = list(classes)
    for c in classes:
        check_label(c)
    if len(set(classes)) != len(classes):
        raise ValueError(f"classes holds a duplicate label: {classes}")
    return classes
