"""The learner API every edgebayes model follows, and the registry of model kinds.

A learner is a plain object (docs/design.md 3):

- ``learn_one(x, y, w=1.0)``: learn one sample. ``x`` is a 1-D sequence of floats (numpy array
  or list) in the stream's schema order, fixed length (the first sample fixes it); ``y`` any
  hashable label (str or int); ``w`` a non-negative sample weight (SRP's Poisson k). Learning
  refuses a feature of magnitude above `MAX_ABS_X` and a weight above `MAX_WEIGHT`: beyond
  them the learned sums of squares could overflow to inf (prediction takes any finite x).
- ``predict_proba_one(x) -> dict[label, float]``: an empty dict before any learning.
- ``predict_one(x) -> label | None``.
- ``learn_many(X, y)``, ``predict_proba_many(X) -> ndarray (n, n_classes)`` in the order of
  ``classes_``, ``predict_many(X) -> list``.
- ``memory_bytes() -> int``: bytes held (numpy buffers by ``nbytes`` plus an estimate of the
  Python objects).
- ``state() -> dict``: plain lists/numbers/strings, msgpack-serialisable, with a ``"kind"`` key
  naming the registry entry; ``cls.from_state(state)`` rebuilds an identical learner.

Bad input (wrong length, non-numeric, +/-inf, out of range, a None or NaN label, an int label
beyond 64 bits, a str label that is not valid Unicode) raises ``ValueError`` (for feature
values the `InputError` of `to_float`, the rule the runtime's parser applies too) and leaves
the model unchanged; so does a malformed state given to ``from_state``.
Labels are dict keys, compared by Python equality: ``True``, ``1`` and ``1.0`` are one class
(the first one seen names it), as are ``0``, ``0.0`` and ``False``. The registry maps the
config's ``kind`` names to classes, so the runtime, the budget tool and checkpoints build
learners without importing them all.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import json
import math
import numbers
import struct
import sys
from typing import Any

import numpy as np

#: Largest feature magnitude a learner learns: squared deviations (< 4e200) times the weight
#: learned stay far below the float64 maximum (~1.8e308) for any realistic stream.
MAX_ABS_X = 1e100
#: Largest sample weight (a Poisson k times the caller's weight, in the ensembles).
MAX_WEIGHT = 1e50


class ClassLimitError(ValueError):
    """A new class (or nominal value) that the learner's ``max_size_bytes`` cannot hold.

    Raised by ``learn_one`` before any change to the model: the sample is refused, the model
    keeps everything it learned. The runtime counts it as error kind ``class_limit``.
    """


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
    except (KeyError, TypeError):
        raise ValueError(f"unknown model kind {kind!r}; known: {', '.join(sorted(KINDS))}") from None
    return getattr(importlib.import_module(module), name)


@functools.cache
def init_parameters(cls: type) -> tuple[str, ...]:
    """The names of the parameters ``cls(...)`` takes, in order (read once per class: an
    ensemble clones its base learner for every member it builds)."""
    return tuple(inspect.signature(cls).parameters)


def make_learner(kind: str, **params: Any) -> Learner:
    """Build a learner from its config ``kind`` and its API parameters.

    Raises:
        ValueError: unknown kind, or a parameter the learner does not take (named).
    """
    cls = learner_class(kind)
    accepted = init_parameters(cls)
    unknown = sorted(set(params) - set(accepted))
    if unknown:
        raise ValueError(
            f"{kind}: unknown parameter(s) {', '.join(unknown)}; accepted: {', '.join(accepted)}"
        )
    return cls(**params)


def learner_from_state(state: dict) -> Learner:
    """Rebuild any registered learner from the dict its ``state()`` returned.

    Raises:
        ValueError: the state has no known ``kind``, or is malformed (a missing key, a value of
            the wrong type or out of range; the message names the kind).
    """
    if not isinstance(state, dict) or "kind" not in state:
        raise ValueError("not a learner state: no 'kind' key")
    cls = learner_class(state["kind"])
    try:
        return cls.from_state(state)
    except STATE_ERRORS as exc:
        raise ValueError(f"invalid {state['kind']} state: {exc!r}") from None


#: What reading a malformed state raises before a check catches it; `from_state` methods turn
#: these into ``ValueError("invalid <kind> state: ...")``.
STATE_ERRORS = (KeyError, TypeError, IndexError, AttributeError, OverflowError)


def refuse_malformed(kind: str):
    """Decorator for a ``from_state``: the `STATE_ERRORS` that reading a malformed state raises
    (a missing key, a value of the wrong type or size) become ``ValueError("invalid <kind>
    state: ...")``."""

    def wrap(from_state):
        @functools.wraps(from_state)
        def checked(cls, state):
            try:
                return from_state(cls, state)
            except STATE_ERRORS as exc:
                raise ValueError(f"invalid {kind} state: {exc!r}") from None

        return checked

    return wrap


def check_finite(name: str, values, low: float = -math.inf, high: float = math.inf) -> None:
    """Raise ``ValueError`` unless every number of ``values`` (a number or a flat sequence) is
    finite and in [``low``, ``high``]; for the value checks of ``from_state``."""
    for v in values if isinstance(values, (list, tuple)) else [values]:
        if isinstance(v, bool) or not isinstance(v, numbers.Real) or not (math.isfinite(v) and low <= v <= high):
            raise ValueError(f"invalid state: {name} holds {v!r} (must be finite, in [{low:g}, {high:g}])")


#: int labels are 64-bit signed: the widest int msgpack and JSON peers read back, and what a
#: learner's ``state()`` can hold
LABEL_MIN, LABEL_LIMIT = -2**63, 2**63


def check_label(y: Any) -> None:
    """Raise ``ValueError`` for a label a learner must refuse: None, NaN, unhashable, an int
    outside [-2**63, 2**63), or a str that is not valid Unicode text (a lone surrogate such as
    ``"\\ud800"``: neither msgpack nor a checkpoint can hold it)."""
    t = type(y)
    if t is str:
        if not y.isascii():
            try:
                y.encode()
            except UnicodeEncodeError:
                raise ValueError(f"label {y[:40]!r} is not valid Unicode text (a lone surrogate)") from None
        return
    if y is None:
        raise ValueError("label is None")
    if isinstance(y, numbers.Integral) and not LABEL_MIN <= y < LABEL_LIMIT:
        raise ValueError("label is an int outside [-2**63, 2**63)")
    if isinstance(y, float) and math.isnan(y):
        raise ValueError("label is NaN")
    try:
        hash(y)
    except TypeError:
        raise ValueError(f"label {y!r} is not hashable") from None


def check_weight(w: float) -> float:
    """Return ``w`` as a float; raise ``ValueError`` unless it is a real number (not a bool or
    a string) in [0, `MAX_WEIGHT`]."""
    if isinstance(w, bool) or not isinstance(w, numbers.Real):
        raise ValueError(f"sample weight {w!r} is not a number")
    try:
        w = float(w)
    except OverflowError:
        raise ValueError(f"sample weight {w!r} is out of range (max {MAX_WEIGHT:g})") from None
    if not 0.0 <= w <= MAX_WEIGHT:
        raise ValueError(f"sample weight must be in [0, {MAX_WEIGHT:g}], got {w}")
    return w


def check_weights(w, n: int) -> np.ndarray:
    """``w`` (n sample weights) as a float64 array; ``ValueError`` unless each is a real number
    in [0, `MAX_WEIGHT`] (as `check_weight`; no bools, no strings)."""
    w = np.asarray(w)
    if w.dtype.kind not in "fiu":
        raise ValueError(f"sample weights must be numbers, got dtype {w.dtype}")
    w = w.astype(np.float64).reshape(-1)
    if len(w) != n:
        raise ValueError(f"X has {n} rows but w has {len(w)} weights")
    if not np.all((w >= 0.0) & (w <= MAX_WEIGHT)):
        raise ValueError(f"sample weights must be in [0, {MAX_WEIGHT:g}]")
    return w


class InputError(ValueError):
    """A feature value a learner refuses. ``kind``: ``field`` (not a real number),
    ``not_finite`` (+/-inf, or an int beyond the float range) or ``out_of_range`` (magnitude
    above `MAX_ABS_X`); the runtime reports it under that error kind."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


def to_float(v: Any, name: str, limit: float = MAX_ABS_X) -> float:
    """One feature value ``v`` (a real number; NaN marks a missing value) as a float: the one
    rule for feature values, shared by the learners, the wire protocol and ``[[sources]]``.
    ``name`` names the value in the message (``"x[2]"``, ``"feature 'temp'"``); ``limit``:
    the largest magnitude taken (`MAX_ABS_X` to learn, ``math.inf`` to predict).

    Raises:
        InputError: kind ``field``, ``not_finite`` or ``out_of_range`` (see `InputError`).
    """
    if not isinstance(v, numbers.Real):
        raise InputError("field", f"{name} = {repr(v)[:40]} is not a number")
    try:
        f = float(v)
    except OverflowError:  # an int beyond the float range
        raise InputError("not_finite", f"{name} is an int beyond the float range: out of range") from None
    if f == math.inf or f == -math.inf:
        raise InputError("not_finite", f"{name} is {f}: features must be finite (NaN marks a missing value)")
    if abs(f) > limit:
        raise InputError("out_of_range",
                         f"{name} = {f:.3g} is out of range: learning takes |x| <= {MAX_ABS_X:g}")
    return f


_FLOAT = frozenset({float})
_INT_FLOAT = frozenset({float, int})


def to_floats(values: list, names=None, limit: float = MAX_ABS_X) -> tuple[list, bool]:
    """``values`` (a list of real numbers) as a list of floats by the rule of `to_float`, and
    whether it holds a NaN (a missing value). ``names``: the feature names for messages (None:
    ``x[j]``). The common case (all floats or ints, all finite) costs a few C-level passes.

    Raises:
        InputError: the first value `to_float` refuses.
    """
    types = set(map(type, values))
    xs = None
    if types <= _FLOAT:
        xs = values
    elif types <= _INT_FLOAT:
        with contextlib.suppress(OverflowError):  # a huge int: named below
            xs = list(map(float, values))
    if xs is None:  # other types or a huge int: value by value, naming the first refused
        xs = [to_float(v, _name(names, j), limit) for j, v in enumerate(values)]
    s = sum(xs)
    if s - s == 0.0:  # no inf, no NaN: max and min are exact
        if xs and not -limit <= min(xs) <= max(xs) <= limit:
            j = next(j for j, v in enumerate(xs) if abs(v) > limit)
            to_float(xs[j], _name(names, j), limit)  # raises out_of_range
        return xs, False
    for j, v in enumerate(xs):
        if v != v:
            continue
        if v == math.inf or v == -math.inf or abs(v) > limit:
            to_float(v, _name(names, j), limit)  # raises
    return xs, True


def _name(names, j: int) -> str:
    return f"x[{j}]" if names is None else f"feature {names[j]!r}"


def as_floats(x, d: int | None, learning: bool = False) -> tuple[list, bool]:
    """``x`` (a 1-D numpy array or sequence of real numbers) as a list of Python floats, and
    whether it holds a NaN (a missing value). ``d`` is the expected length (None: any, not 0).
    ``learning``: also refuse a value of magnitude above `MAX_ABS_X` (the learner's sums of
    squares could overflow); prediction takes any finite value. The value rule is `to_floats`.

    Raises:
        ValueError: not a 1-D sequence of numbers (None and strings included), wrong length
            (``d``), empty; `InputError` for +/-inf or (``learning``) out of range.
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
    if d is None:
        if not xs:
            raise ValueError("x is empty")
    elif len(xs) != d:
        raise ValueError(f"x has {len(xs)} features, the model {d}")
    return to_floats(xs, None, MAX_ABS_X if learning else math.inf)




#: bit generators a saved state may name (numpy's own; nothing else is looked up by name)
BIT_GENERATORS = ("PCG64", "PCG64DXSM", "Philox", "SFC64", "MT19937")


def rng_state(rng: np.random.Generator) -> str:
    """The state of ``rng`` as JSON text (its 128-bit integers are too big for msgpack)."""
    return json.dumps(rng.bit_generator.state)


def rng_from_state(text: str) -> np.random.Generator:
    """The generator `rng_state` saved, continuing exactly where it was.

    Raises:
        ValueError: not such a state, or an unknown bit generator.
    """
    try:
        state = json.loads(text)
        name = state["bit_generator"]
        if name not in BIT_GENERATORS:
            raise ValueError(f"unknown bit generator {name!r}")
        bitgen = getattr(np.random, name)()
        bitgen.state = state
    except (TypeError, KeyError, json.JSONDecodeError) as exc:
        raise ValueError(f"invalid random generator state: {exc}") from None
    return np.random.Generator(bitgen)


#: counters in a state stay below this: msgpack holds them as signed 64-bit ints
COUNT_LIMIT = 2**63


def check_size_bound(max_size_bytes: Any, low: int, what: str) -> None:
    """Raise ``ValueError`` unless ``max_size_bytes`` is None or an int (not a bool) >= ``low``,
    the bytes of ``what`` (e.g. "the empty model"), which no bound can go below."""
    if max_size_bytes is not None and (
        isinstance(max_size_bytes, bool) or not isinstance(max_size_bytes, numbers.Integral) or max_size_bytes < low
    ):
        raise ValueError(f"max_size_bytes must be None or an int >= {low} ({what}), got {max_size_bytes!r}")


def check_count(name: str, v: Any) -> int:
    """``v``, a counter read from a saved state; ``ValueError`` unless it is an int (not a
    bool, not a float) in [0, `COUNT_LIMIT`)."""
    if type(v) is not int or not 0 <= v < COUNT_LIMIT:
        raise ValueError(f"invalid state: {name} must be an int in [0, 2**63), got {v!r:.80}")
    return v


#: memory accounting for learners that keep floats in Python lists (this platform's sizes:
#: 32 and 56 bytes on 64-bit CPython, 20 and 28 on 32-bit armhf)
FLOAT_IN_LIST_BYTES = sys.getsizeof(0.0) + struct.calcsize("P")  # the float object + its slot
LIST_BYTES = sys.getsizeof([])


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
        return {name: getattr(self, name) for name in init_parameters(type(self))}

    def clone(self) -> Learner:
        """A fresh, untrained learner with the same parameters."""
        return type(self)(**self._params())

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self._params().items())
        return f"{type(self).__name__}({args})"
