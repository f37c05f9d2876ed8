"""The learner API every edgebayes model follows, and the registry of model kinds.

A learner is a plain object (DESIGN.md 3):

- ``learn_one(x, y, w=1.0)``: learn one sample. ``x`` is a 1-D sequence of floats (numpy array
  or list) in the stream's schema order, fixed length (the first sample fixes it); ``y`` any
  hashable label (str or int); ``w`` a non-negative sample weight (SRP's Poisson k).
- ``predict_proba_one(x) -> dict[label, float]``: an empty dict before any learning.
- ``predict_one(x) -> label | None``.
- ``learn_many(X, y)``, ``predict_proba_many(X) -> ndarray (n, n_classes)`` in the order of
  ``classes_``, ``predict_many(X) -> list``.
- ``memory_bytes() -> int``: bytes held (numpy buffers by ``nbytes`` plus an estimate of the
  Python objects).
- ``state() -> dict``: plain lists/numbers/strings, msgpack-serialisable, with a ``"kind"`` key
  naming the registry entry; ``cls.from_state(state)`` rebuilds an identical learner.

Bad input (wrong length, non-numeric, +/-inf, a None or NaN label) raises ``ValueError`` and
leaves the model unchanged. The registry maps the config's ``kind`` names to classes, so the
runtime, the budget tool and checkpoints build learners without importing them all.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
from typing import Any

import numpy as np

#: config ``kind`` -> "module:Class". Modules are imported on first use.
KINDS: dict[str, str] = {
    "gaussian_nb": "edgebayes.naive_bayes:GaussianNB",
    "mixed_nb": "edgebayes.naive_bayes_mixed:MixedNB",
    "hoeffding_tree": "edgebayes.tree:HoeffdingTreeClassifier",
    "srp": "edgebayes.ensemble:SRPClassifier",
    "nb_committee": "edgebayes.ensemble:NaiveBayesCommittee",
}


def learner_class(kind: str) -> type:
    """The class registered under ``kind``.

    Raises:
        ValueError: ``kind`` is not registered (the message lists the known kinds).
    """
    try:
        module, name = KINDS[kind].split(":")
    except KeyError:
        raise ValueError(f"unknown model kind {kind!r}; known: {', '.join(sorted(KINDS))}") from None
    return getattr(importlib.import_module(module), name)


def make_learner(kind: str, **params: Any) -> "Learner":
    """Build a learner from its config ``kind`` and its API parameters.

    Raises:
        ValueError: unknown kind, or a parameter the learner does not take (named).
    """
    cls = learner_class(kind)
    accepted = inspect.signature(cls).parameters
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"{kind}: unknown parameter(s) {', '.join(unknown)}; accepted: {', '.join(accepted)}"
        )
    return cls(**params)


def learner_from_state(state: dict) -> "Learner":
    """Rebuild any registered learner from the dict its ``state()`` returned.

    Raises:
        ValueError: the state has no known ``kind``.
    """
    if not isinstance(state, dict) or "kind" not in state:
        raise ValueError("not a learner state: no 'kind' key")
    return learner_class(state["kind"]).from_state(state)


def check_label(y: Any) -> None:
    """Raise ``ValueError`` for a label a learner must refuse: None, NaN, or unhashable."""
    if y is None:
        raise ValueError("label is None")
    if isinstance(y, float) and math.isnan(y):
        raise ValueError("label is NaN")
    try:
        hash(y)
    except TypeError:
        raise ValueError(f"label {y!r} is not hashable") from None


def check_weight(w: float) -> float:
    """Return ``w`` as a float; raise ``ValueError`` unless it is finite and >= 0."""
    try:
        w = float(w)
    except (TypeError, ValueError):
        raise ValueError(f"sample weight {w!r} is not a number") from None
    if not (w >= 0.0 and math.isfinite(w)):
        raise ValueError(f"sample weight must be finite and >= 0, got {w}")
    return w


def _number(v, j: int) -> float:
    if isinstance(v, numbers.Real):
        return float(v)
    raise ValueError(f"x[{j}] = {v!r} is not a number")


def as_floats(x, d: int | None) -> tuple[list, bool]:
    """``x`` (a 1-D numpy array or sequence of real numbers) as a list of Python floats, and
    whether it holds a NaN (a missing value). ``d`` is the expected length (None: any, not 0).

    Raises:
        ValueError: not a 1-D sequence of numbers, wrong length (``d``), empty, or +/-inf.
    """
    if type(x) is np.ndarray:
        if x.ndim != 1:
            raise ValueError(f"x must be 1-D, got shape {x.shape}")
        if x.dtype.kind not in "fiub":
            raise ValueError(f"x must hold numbers, got dtype {x.dtype}")
        xs = x.tolist()
    else:
        if isinstance(x, (str, bytes, dict)):
            raise ValueError(f"x must be a 1-D sequence of numbers, got {type(x).__name__}")
        try:
            xs = list(x)
        except TypeError:
            raise ValueError(f"x must be a 1-D sequence of numbers, got {type(x).__name__}") from None
        if not set(map(type, xs)) <= {float}:
            xs = [_number(v, j) for j, v in enumerate(xs)]
    if d is None:
        if not xs:
            raise ValueError("x is empty")
    elif len(xs) != d:
        raise ValueError(f"x has {len(xs)} features, the model {d}")
    s = sum(xs)
    if s - s == 0.0:
        return xs, False
    for j, v in enumerate(xs):
        if v == math.inf or v == -math.inf:
            raise ValueError(f"x[{j}] is {v}: features must be finite (NaN marks a missing value)")
    return xs, any(v != v for v in xs)



class Learner:
    """Base class: the generic parts of the learner API, built on the three a learner writes.

    Subclasses implement ``learn_one``, ``predict_proba_one``, ``memory_bytes``, ``state`` and
    ``from_state``, and keep their labels in ``classes_``. Every constructor argument is stored
    under its own name, unchanged, so ``repr`` and ``clone`` come from the signature.
    """

    classes_: list

    def predict_one(self, x) -> Any:
        """The most probable label for ``x``, or None before any learning."""
        proba = self.predict_proba_one(x)
        if not proba:
            return None
        return max(proba, key=proba.get)

    def learn_many(self, X, y, w=None) -> None:
        """Learn the rows of ``X`` (shape (n, n_features)) with labels ``y`` (length n) in order."""
        if w is None:
            for xi, yi in zip(X, y):
                self.learn_one(xi, yi)
        else:
            for xi, yi, wi in zip(X, y, w):
                self.learn_one(xi, yi, wi)

    def predict_proba_many(self, X) -> np.ndarray:
        """Class probabilities, float64 array of shape (n, len(classes_)), columns as ``classes_``."""
        classes = list(getattr(self, "classes_", []))
        out = np.zeros((len(X), len(classes)))
        index = {c: j for j, c in enumerate(classes)}
        for i, xi in enumerate(X):
            for c, p in self.predict_proba_one(xi).items():
                out[i, index[c]] = p
        return out

    def predict_many(self, X) -> list:
        """The most probable label of each row of ``X`` (None before any learning)."""
        return [self.predict_one(xi) for xi in X]

    def _params(self) -> dict:
        return {name: getattr(self, name) for name in inspect.signature(type(self)).parameters}

    def clone(self) -> "Learner":
        """A fresh, untrained learner with the same parameters."""
        return type(self)(**self._params())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"
