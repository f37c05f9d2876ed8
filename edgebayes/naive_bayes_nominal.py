"""MixedNB's nominal features: per-class value counts, their update, their log-probability tables.

For each nominal feature i the learner keeps ``values[i]`` (value -> column, in order of first
appearance), ``counts[i]`` (per class, the weight of each value: K lists of V floats),
``totals[i]`` (per class, the sum of those weights, n_k of the frequencies) and ``seen[i]``
(per class, the weight learned, for the rates). The functions here update and read those
lists; the zero-frequency rules are the ``MixedNB`` module doc's (Artiemjew and Idzikowski
2019, section 2).
"""

from __future__ import annotations

import math
import sys

import numpy as np

from edgebayes.base import FLOAT_IN_LIST_BYTES, LIST_BYTES
from edgebayes.naive_bayes_kernel import update_rate
from edgebayes.naive_bayes_state import read_nominal
from edgebayes.sizes import insert_bytes

__all__ = ["NominalCounts", "columns", "log_table", "posterior_one", "posterior_rows"]

#: bytes of a cached table beside its data (the numpy array object)
_TABLE_BYTES = 112


class NominalCounts:
    """The counts of a learner's nominal features (the module doc's four lists, one entry per
    nominal feature; empty before the first sample).

    Attributes:
        values: per feature, value -> column (dict, in order of first appearance).
        counts: per feature, K lists of V floats: the weight of each value per class.
        totals: per feature, K floats: n_k of the frequencies.
        seen: per feature, K floats: the weight learned per class (for the rates).
    """

    __slots__ = ("counts", "seen", "totals", "values")

    def __init__(self, n_nominal: int = 0):
        self.values: list[dict] = [{} for _ in range(n_nominal)]
        self.counts: list[list[list[float]]] = [[] for _ in range(n_nominal)]
        self.totals: list[list[float]] = [[] for _ in range(n_nominal)]
        self.seen: list[list[float]] = [[] for _ in range(n_nominal)]

    def add_class(self) -> None:
        """A zero row for a new class."""
        for i, vals in enumerate(self.values):
            self.counts[i].append([0.0] * len(vals))
            self.totals[i].append(0.0)
            self.seen[i].append(0.0)

    def learn(self, vs: list, k: int, w: float, top: float, log_keep: float, bounds) -> None:
        """One sample's nominal values ``vs`` (NaN = missing) for class k, weight w.

        Exact mode (and a learning rate while the class has seen at most 1/alpha): the value's
        count and the class total grow by w. Past that, the frequencies move by the rate r of
        docs/design.md 2.1 towards the new value, p <- (1 - r) p + r e_v, and the counts are kept
        as T p with T = ``top`` = floor(1/alpha) (GaussianNB's switch point): effective weights
        for Laplace smoothing that, like the frequencies, do not depend on how a weight is
        split. ``bounds``: MOA's value bounds per feature and class
        (`edgebayes.naive_bayes_moa.value_bounds`), kept up to date here, or None.
        """
        counts, totals = self.counts, self.totals
        for i, v in enumerate(vs):
            if v != v:
                continue
            col = self.values[i].get(v)
            if col is None:
                self.values[i][v] = col = len(self.values[i])
                for row in counts[i]:
                    row.append(0.0)
            m = self.seen[i][k]
            self.seen[i][k] = m + w
            if m + w <= top:
                counts[i][k][col] += w
                totals[i][k] += w
                if bounds is not None:
                    bounds[i][k] = max(bounds[i][k], int(v) + 1)
                continue
            r = update_rate(m, w, top, log_keep)
            s = totals[i][k]
            keep = (1.0 - r) * top / s if s > 0.0 else 0.0
            row = [c * keep for c in counts[i][k]]
            row[col] += r * top
            counts[i][k] = row
            totals[i][k] = float(top)

    def _known(self, n_nominal: int) -> list[dict]:
        return self.values or [{}] * n_nominal

    def new_values(self, nominal: list[int], xs: list) -> dict:
        """The values of the checked sample ``xs`` at the ``nominal`` columns not seen yet:
        position among the nominal features -> [value]; NaN (missing) is no value."""
        known = self._known(len(nominal))
        return {i: [xs[j]] for i, j in enumerate(nominal) if xs[j] == xs[j] and xs[j] not in known[i]}

    def new_row_values(self, nominal: list[int], X: np.ndarray) -> dict:
        """`new_values` of every row of ``X`` (n, d): position among the nominal features -> the
        values not seen yet, in order of first appearance."""
        known = self._known(len(nominal))
        out = {}
        for i, j in enumerate(nominal):
            col = [v for v in dict.fromkeys(X[:, j].tolist()) if v == v and v not in known[i]]
            if col:
                out[i] = col
        return out

    def held_bytes(self, tables) -> int:
        """Bytes of this object, its lists and value dicts, and the cached ``tables`` (None:
        none): 32 per count float, 56 per list."""
        floats = sum(len(r) for rows in self.counts for r in rows) + 2 * sum(map(len, self.totals))
        lists = sum(len(rows) for rows in self.counts) + 3 * len(self.counts) + 4
        dicts = sum(sys.getsizeof(v) + FLOAT_IN_LIST_BYTES * len(v) for v in self.values)
        cached = sum(t.nbytes + _TABLE_BYTES for t in tables) if tables is not None else 0
        return sys.getsizeof(self) + FLOAT_IN_LIST_BYTES * floats + LIST_BYTES * lists + dicts + cached

    def planned_bytes(self, nominal: list[int], new: dict, K: int) -> int:
        """`held_bytes` once the ``nominal`` features gain the ``new`` values (position -> list
        of values) for K classes, the tables built."""
        known = self._known(len(nominal))
        sizes = [len(v) + len(new.get(i, ())) for i, v in enumerate(known)]
        dicts = 0
        for i, (v, n) in enumerate(zip(known, sizes)):
            dicts += sys.getsizeof(v) + insert_bytes(v, new.get(i, ())) + FLOAT_IN_LIST_BYTES * n
        floats = K * sum(sizes) + 2 * len(sizes) * K
        lists = len(sizes) * K + 3 * len(sizes) + 4
        tables = sum(K * (n + 1) * 8 + _TABLE_BYTES for n in sizes)
        return sys.getsizeof(self) + FLOAT_IN_LIST_BYTES * floats + LIST_BYTES * lists + dicts + tables

    def tables(self, build, *args) -> list[np.ndarray]:
        """Per nominal feature, ``build(counts, totals, V, *args)`` (`log_table`,
        `edgebayes.naive_bayes_paper.frequency_table`)."""
        return [build(c, t, len(v), *args) for v, c, t in zip(self.values, self.counts, self.totals)]

    def state(self) -> dict:
        """The lists as plain values: ``values`` (per feature, the values in column order),
        ``counts``, ``totals``, ``seen``."""
        return {
            "values": [list(v) for v in self.values],
            "counts": [[list(r) for r in rows] for rows in self.counts],
            "totals": [list(t) for t in self.totals],
            "seen": [list(s) for s in self.seen],
        }

    @classmethod
    def from_state(cls, state: dict, n_nominal: int, K: int) -> NominalCounts:
        """The counts `state` saved (`edgebayes.naive_bayes_state.read_nominal` checks them)."""
        out = cls()
        out.values, out.counts, out.totals, out.seen = read_nominal(state, n_nominal, K)
        return out


def log_table(counts: list, totals: list, V: int, zero_frequency: str, alpha: float,
              borrow_factor: float) -> np.ndarray:
    """log P(v | k) of one nominal feature of V values, float64 (K, V + 1); the last column
    (unseen value) and the columns of values absent from every class are 0 (disregarded).

    ``zero_frequency`` ``"laplace"``: (n_kv + alpha) / (n_k + alpha V); ``"borrow"``: a zero
    frequency takes the smallest non-zero one of that value in another class, times
    ``borrow_factor``.
    """
    K = len(totals)
    C = np.array(counts, dtype=float).reshape(K, V)
    n = np.array(totals, dtype=float)[:, None]
    out = np.zeros((K, V + 1))
    if V == 0:
        return out
    if zero_frequency == "laplace":
        a = float(alpha)  # an int beyond int64 would make numpy build object arrays
        out[:, :V] = np.log((C + a) / (n + a * V))
        return out
    with np.errstate(invalid="ignore", divide="ignore"):
        P = np.where(n > 0.0, C / np.where(n > 0.0, n, 1.0), 0.0)
    low = np.where(P > 0.0, P, np.inf).min(axis=0)  # smallest non-zero frequency per value
    seen = np.isfinite(low)
    P = np.where(P > 0.0, P, borrow_factor * low)
    out[:, :V][:, seen] = np.log(P[:, seen])
    return out


def columns(values: dict, x: np.ndarray) -> np.ndarray:
    """The table column of each of the values ``x`` (n,) of one nominal feature (V, the
    number of ``values``, for an unseen or missing value), intp (n,)."""
    miss = len(values)
    uniq, inverse = np.unique(x, return_inverse=True)
    cols = np.array([values.get(v, miss) if v == v else miss for v in uniq.tolist()], dtype=np.intp)
    return cols[inverse.reshape(-1)]


def posterior_one(post: list, xs: list, nominal: list[int], values: list[dict], tables: list) -> list:
    """The Gaussian part's posterior ``post`` (K floats) times P(v_j | k) of each nominal value
    of ``xs`` seen in training, in log space, normalised (log-sum-exp): K floats."""
    logs = [math.log(p) if p > 0.0 else -math.inf for p in post]
    for i, (j, table) in enumerate(zip(nominal, tables)):
        v = xs[j]
        col = values[i].get(v) if v == v else None
        if col is not None:
            logs = [a + b for a, b in zip(logs, table[:, col].tolist())]
    top = max(logs)
    e = [math.exp(v - top) for v in logs]
    s = sum(e)
    return [v / s for v in e]


def posterior_rows(P: np.ndarray, tables: list, cols: list) -> np.ndarray:
    """`posterior_one` of many rows: ``P`` (n, K) the Gaussian part's posteriors, ``cols`` per
    nominal feature the table column of each row (`columns`)."""
    with np.errstate(divide="ignore"):
        L = np.log(P)
    for table, c in zip(tables, cols):
        L += table[:, c].T
    L -= L.max(axis=1, keepdims=True)
    E = np.exp(L)
    return E / E.sum(axis=1, keepdims=True)
