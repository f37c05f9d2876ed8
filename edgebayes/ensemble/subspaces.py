"""Random feature subspaces for Streaming Random Patches: how many features, and which.

Two questions, answered as MOA's ``StreamingRandomPatches`` does (Gomes, Read and Bifet 2019,
section III-B):

1. `subspace_size_for` turns the ``subspace_size`` option into a number of features ``k``.
2. `draw_subspaces` gives each member its own ``k`` features. When there are few distinct
   subsets (``C(n, k)`` small), members get distinct subsets as long as there are enough of
   them, and the subsets are reused evenly beyond that, as MOA's "all k-combinations without
   replacement" branch. Otherwise subsets are drawn at random, still without duplicates (MOA
   draws them independently above 20 features; a duplicate is then improbable, and refusing it
   costs nothing). `random_subspace` draws the one subset a reset or a background learner
   gets (MOA: no distinctness there).

Subsets are sorted numpy ``int64`` index arrays into ``x``: never River's lexicographic
first-``n_models`` combinations, which give every member the first features.
"""

from __future__ import annotations

import itertools
import math
import numbers

import numpy as np

#: the string modes of ``subspace_size``
SIZE_MODES = ("sqrt", "rmsqrt")


def check_subspace_size(subspace_size) -> None:
    """Raise ``ValueError`` unless ``subspace_size`` is a valid option value.

    Valid: a non-zero int (negative = all features but that many), a float in (0, 1],
    ``"sqrt"`` or ``"rmsqrt"``. A bool is refused (it is an int to Python, not a size).
    """
    if isinstance(subspace_size, bool):
        raise ValueError(f"subspace_size must be an int, a float or a mode, not {subspace_size!r}")
    if isinstance(subspace_size, numbers.Integral):
        if subspace_size == 0:
            raise ValueError("subspace_size=0 selects no feature; use a non-zero int")
        return
    if isinstance(subspace_size, numbers.Real):
        if not 0.0 < subspace_size <= 1.0:
            raise ValueError(f"a fractional subspace_size must be in (0, 1], got {subspace_size}")
        return
    if subspace_size not in SIZE_MODES:
        raise ValueError(
            f"subspace_size must be an int, a float in (0, 1], 'sqrt' or 'rmsqrt'; got {subspace_size!r}"
        )


def _round_half_up(v: float) -> int:
    # Java's Math.round, as MOA: 2.5 -> 3 (Python's round gives 2)
    return math.floor(v + 0.5)


def subspace_size_for(subspace_size, n_features: int) -> int:
    """The number of features ``k`` each member sees, 1 <= k <= ``n_features``.

    Rules (MOA ``StreamingRandomPatches.initEnsemble``, names as River):

    - int ``m`` > 0: ``m``; int ``m`` < 0: ``n_features + m`` (all but ``-m``).
    - float ``f`` in (0, 1]: ``round(n_features * f)``, halves rounded up as Java does;
      a result below 2 gets one more feature (MOA: a one-feature subspace from a fraction is
      bumped so that members can still combine features).
    - ``"sqrt"``: ``round(sqrt(n_features)) + 1``; ``"rmsqrt"``: ``n_features`` minus that.

    The result is then clipped to [1, ``n_features``]: at least one feature, and a size at or
    above ``n_features`` means every feature (the ensemble then trains by resampling only).

    Raises:
        ValueError: an invalid ``subspace_size`` (see `check_subspace_size`) or
            ``n_features`` < 1.
    """
    check_subspace_size(subspace_size)
    if n_features < 1:
        raise ValueError(f"need at least one feature, got n_features={n_features}")
    if isinstance(subspace_size, numbers.Integral):
        k = int(subspace_size) if subspace_size > 0 else n_features + int(subspace_size)
    elif isinstance(subspace_size, numbers.Real):
        k = _round_half_up(n_features * float(subspace_size))
        if k < 2:
            k += 1
    else:
        root = _round_half_up(math.sqrt(n_features)) + 1
        k = root if subspace_size == "sqrt" else n_features - root
    return min(max(k, 1), n_features)


def random_subspace(n_features: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` distinct feature indices out of ``n_features``, sorted, int64 array of shape (k,)."""
    return np.sort(rng.choice(n_features, size=k, replace=False)).astype(np.int64)


def draw_subspaces(n_features: int, k: int, n_subspaces: int, rng: np.random.Generator) -> list:
    """``n_subspaces`` subsets of ``k`` features each, as distinct as the count allows.

    If ``C(n_features, k)`` >= ``n_subspaces``, all subsets differ (uniform over the sets of
    ``n_subspaces`` distinct subsets). Otherwise every subset is used ``n_subspaces //
    C(n_features, k)`` times and a random choice of them once more, in random order (MOA uses
    the extra ones in lexicographic order).

    Returns:
        list of ``n_subspaces`` sorted int64 index arrays of shape (k,).

    Raises:
        ValueError: ``k`` not in [1, ``n_features``] or ``n_subspaces`` < 1.
    """
    if not 1 <= k <= n_features:
        raise ValueError(f"subspace size {k} is not in [1, {n_features}]")
    if n_subspaces < 1:
        raise ValueError(f"need at least one subspace, got {n_subspaces}")
    n_distinct = math.comb(n_features, k)
    if n_distinct >= n_subspaces:
        seen: set = set()
        out = []
        while len(out) < n_subspaces:
            subset = random_subspace(n_features, k, rng)
            key = subset.tobytes()
            if key not in seen:
                seen.add(key)
                out.append(subset)
        return out
    # few distinct subsets (<= n_subspaces, so enumerating them is cheap)
    every = [np.array(c, dtype=np.int64) for c in itertools.combinations(range(n_features), k)]
    rounds, extra = divmod(n_subspaces, n_distinct)
    chosen = every * rounds + [every[i] for i in rng.choice(n_distinct, size=extra, replace=False)]
    return [chosen[i].copy() for i in rng.permutation(n_subspaces)]

