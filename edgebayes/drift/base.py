"""The drift-detector protocol, the error-stream change signal, and the detector registry.

A detector is a plain object fed one real number at a time:

- ``update(x) -> bool``: take one input (a finite real; ``ValueError`` otherwise, detector
  unchanged) and return True when this input made the detector see a change.
- ``drift_detected`` (bool): the value the latest ``update`` returned; False after ``reset()``.
- ``estimation`` (float): the detector's current estimate of the input's mean.
- ``n_detections`` (int): changes seen since construction or the last ``reset()``.
- ``reset()``: forget everything (same parameters). ``clone()``: a fresh detector, same parameters.
- ``memory_bytes() -> int``: bytes held, counted from shapes.
- optional ``max_memory_bytes(max_width) -> int``: the most bytes ``memory_bytes()`` can reach
  while the window holds at most ``max_width`` inputs (memory budgets reserve this); a
  detector without it is taken to have a constant size.
- ``state() -> dict``: plain lists/numbers/strings, msgpack-serialisable, with a ``"kind"`` key
  naming a :data:`DETECTOR_KINDS` entry; ``cls.from_state(state)`` rebuilds an identical
  detector (:func:`detector_from_state` dispatches on ``kind``).
"""

from __future__ import annotations

import importlib
import sys
from typing import Protocol, runtime_checkable

from edgebayes.base import STATE_ERRORS, check_count, refuse_malformed

#: state ``kind`` -> "module:Class". Modules are imported on first use.
DETECTOR_KINDS: dict[str, str] = {
    "adwin": "edgebayes.drift.adwin:ADWIN",
    "error_detector": "edgebayes.drift.base:ErrorDetector",
}


@runtime_checkable
class DriftDetector(Protocol):
    """What SRP and the runtime need from a change detector (see the module docstring)."""

    drift_detected: bool

    @property
    def estimation(self) -> float: ...

    @property
    def n_detections(self) -> int: ...

    def update(self, x: float) -> bool: ...

    def reset(self) -> None: ...

    def clone(self) -> DriftDetector: ...

    def memory_bytes(self) -> int: ...

    def state(self) -> dict: ...


def detector_from_state(state: dict) -> DriftDetector:
    """Rebuild any registered detector from the dict its ``state()`` returned.

    Raises:
        ValueError: the state is not a dict with a known ``"kind"``, or is malformed.
    """
    if not isinstance(state, dict) or "kind" not in state:
        raise ValueError("not a detector state: no 'kind' key")
    try:
        module, name = DETECTOR_KINDS[state["kind"]].split(":")
    except (KeyError, TypeError):
        known = ", ".join(sorted(DETECTOR_KINDS))
        raise ValueError(f"unknown detector kind {state['kind']!r}; known: {known}") from None
    cls = getattr(importlib.import_module(module), name)
    try:
        return cls.from_state(state)
    except STATE_ERRORS as exc:
        raise ValueError(f"invalid {state['kind']} state: {exc!r}") from None


class ErrorDetector:
    """Change signal for a learner's error stream (MOA's ``ADWINChangeDetector``).

    Feed it the 0/1 error of each prediction (1 = wrong, 0 = right; any real loss works). It
    signals only when the wrapped detector saw a change *and* its estimate rose across that
    input: a learner whose error went down is not flagged (docs/design.md 2.4, docs/cases.md C25).

    Args:
        detector: the detector to wrap (default: ``ADWIN()``). It must also expose
            ``estimation_before_drift``: its estimate just before the latest input that
            returned True from ``update``.

    Attributes:
        drift_detected: True only after the ``update`` that signalled.
        detector: the wrapped detector; its own ``drift_detected`` and ``n_detections`` count
            every change, rises and falls alike.
    """

    __slots__ = ("_n_detections", "detector", "drift_detected")

    def __init__(self, detector: DriftDetector | None = None):
        if detector is None:
            from edgebayes.drift.adwin import ADWIN

            detector = ADWIN()
        if not hasattr(detector, "estimation_before_drift"):
            raise ValueError(
                f"{type(detector).__name__} has no estimation_before_drift; cannot tell a rise"
            )
        self.detector = detector
        self.drift_detected = False
        self._n_detections = 0

    def update(self, x: float) -> bool:
        """Feed one error value; True when the detector cut and its estimate went up.

        Raises:
            ValueError: ``x`` is not a finite real (detector unchanged).
        """
        return self.judge(self.detector.update(x))

    def judge(self, cut: bool) -> bool:
        """The signal's rule, once the wrapped detector took an input and answered ``cut``
        (what its ``update`` returned): signal when it cut and its estimate rose across that
        input (MOA's ADWINChangeDetector.input). A caller that feeds the wrapped detector
        itself (the compiled SRP member) calls this with the answer; ``judge(False)`` with no
        signal standing (``drift_detected`` False) changes nothing."""
        d = self.detector
        rose = cut and d.estimation > d.estimation_before_drift
        if rose:
            self._n_detections += 1
        self.drift_detected = rose
        return rose

    @property
    def estimation(self) -> float:
        """The wrapped detector's estimate of the error rate."""
        return self.detector.estimation

    @property
    def n_detections(self) -> int:
        """Signals (rises) since construction or the last ``reset()``."""
        return self._n_detections

    def reset(self) -> None:
        """Forget everything, keep the parameters."""
        self.detector.reset()
        self.drift_detected = False
        self._n_detections = 0

    def clone(self) -> ErrorDetector:
        """A fresh signal over a fresh copy of the wrapped detector."""
        return ErrorDetector(self.detector.clone())

    def memory_bytes(self) -> int:
        """Bytes held: this wrapper plus the wrapped detector."""
        return sys.getsizeof(self) + self.detector.memory_bytes()

    def max_memory_bytes(self, max_width: int = 2**32) -> int:
        """The most bytes ``memory_bytes()`` can report while the wrapped detector's window holds
        at most ``max_width`` inputs; a detector without ``max_memory_bytes`` is taken to have
        a constant size (its ``memory_bytes()`` now).

        Raises:
            ValueError: ``max_width`` is not an int >= 0 (from the wrapped detector).
        """
        bound = getattr(self.detector, "max_memory_bytes", None)
        inner = bound(max_width) if bound is not None else self.detector.memory_bytes()
        return sys.getsizeof(self) + inner

    def state(self) -> dict:
        """Plain-data state with ``"kind": "error_detector"`` and the wrapped detector's state."""
        return {
            "kind": "error_detector",
            "detector": self.detector.state(),
            "drift_detected": self.drift_detected,
            "n_detections": self._n_detections,
        }

    @classmethod
    @refuse_malformed("error_detector")
    def from_state(cls, state: dict) -> ErrorDetector:
        """Rebuild from ``state()``. Raises ``ValueError`` for a state of another kind or a
        malformed one."""
        if not isinstance(state, dict) or state.get("kind") != "error_detector":
            raise ValueError(f"not an error_detector state: kind {state.get('kind')!r}")
        out = cls(detector_from_state(state["detector"]))
        out.drift_detected = bool(state["drift_detected"])
        out._n_detections = check_count("n_detections", state["n_detections"])
        return out

    def __repr__(self) -> str:
        return f"ErrorDetector({self.detector!r})"
