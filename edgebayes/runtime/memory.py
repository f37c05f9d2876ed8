"""The memory budget of the runtime: divided up front, enforced at admission, watched in RSS.

docs/design.md 3, "memory is planned, not discovered". Two limits from ``[memory]``:

- ``model_budget_bytes``: the bytes all models of all devices may hold (``memory_bytes()``).
  `plan_memory` divides it once, at start: each of ``max_devices`` devices gets
  ``model_budget_bytes // max_devices``; within a device, a model with its own
  ``max_size_bytes`` is charged that, and the other models share the rest equally and are
  built with it (every kind takes ``max_size_bytes`` as a hard bound; a class that does not fit
  is refused, error kind ``class_limit``). A device is admitted only if
  its share still fits beside what the admitted devices hold or were promised
  (`MemoryPlan.refusal`).
- ``rss_limit_mb``: the process. `MemoryGuard.check` reads ``/proc/self/statm`` and what the
  models hold (``memory_bytes()`` of every learner). RSS minus the models is what the rest of
  the process holds; its lowest value seen is the process's floor, and what it holds above the
  floor (a large message being copied, allocator slack) is not the models' doing. From
  `SHED_FRACTION` of the limit on, the models' own excess is RSS over that fraction less what
  the rest holds above its floor; while it is positive the guard sheds in a fixed order, one
  step per check: background learners first (``shed_background``), then half of the trees'
  active leaves (``shed_leaves``, repeated while the models' excess lasts). Each step publishes
  a ``memory`` alert (docs/protocol.md). RSS high for other reasons is alerted once
  (``high_rss``) and sheds nothing; the guard is re-armed once RSS falls below
  `CALM_FRACTION` of the limit. If RSS is still at the limit after the leaves were shed, with
  the models' excess left, it checkpoints every device and only then stops the runtime (exit
  1; a service manager restarts it).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import resource
import time
from collections.abc import Callable

from edgebayes.runtime.config import Config, ConfigError, ModelConfig
from edgebayes.runtime.payloads import memory_alert

log = logging.getLogger(__name__)

#: fraction of ``rss_limit_mb`` from which the guard sheds
SHED_FRACTION = 0.9
#: below this fraction the guard starts over (hysteresis)
CALM_FRACTION = 0.8
#: seconds between two RSS reads
CHECK_INTERVAL_S = 1.0


def rss_bytes() -> int:
    """Resident set size of this process in bytes (Linux ``/proc/self/statm``; peak RSS elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


@dataclasses.dataclass(frozen=True)
class MemoryPlan:
    """How ``model_budget_bytes`` is divided (see the module docstring).

    Attributes:
        models: the configured models, those that take a byte bound with ``max_size_bytes``
            set to their share (build every device's models from these).
        budget_bytes: ``model_budget_bytes`` (None: no budget, nothing is bounded).
        device_bytes: each device's share (None without a budget).
        model_bytes: model name -> bytes charged per device (None without a budget).
    """

    models: tuple[ModelConfig, ...]
    budget_bytes: int | None = None
    device_bytes: int | None = None
    model_bytes: dict | None = None

    def refusal(self, device: str, devices: dict, committed: int | None = None) -> str | None:
        """Why ``device`` does not fit (None: it does). Each admitted device counts for what
        its models hold or for its share, whichever is larger.

        Args:
            device: the new device's id.
            devices: id -> ``Device`` already admitted.
            committed: bytes the admitted devices count for (`ModelBytes.committed`); None:
                summed over ``devices`` now (O(devices)).
        """
        if self.budget_bytes is None:
            return None
        if committed is None:
            committed = sum(max(device_model_bytes(d), self.device_bytes) for d in devices.values())
        if committed + self.device_bytes <= self.budget_bytes:
            return None
        return (f"device {device} refused: the model budget of {self.budget_bytes} bytes "
                f"([memory] model_budget_bytes) has {self.budget_bytes - committed} bytes left "
                f"after {len(devices)} devices, a device needs {self.device_bytes}")


def device_model_bytes(device) -> int:
    """Bytes held by a device's learners (``memory_bytes()`` summed)."""
    return sum(slot.learner.memory_bytes() for slot in device.slots)


class ModelBytes:
    """Running totals of the bytes the devices' models hold, kept exact at O(changed devices).

    A device's bytes are read again (``memory_bytes()``) only after it was marked `changed`
    (served: it may have learned; admitted or restored) or after `changed_all` (the guard
    shed); the totals are then brought up to date at the next read, so admission and the
    metrics cost O(devices changed since) rather than O(devices).

    Args:
        floor_bytes: what a device counts for at least in `committed` (its share,
            ``MemoryPlan.device_bytes``; 0 without a budget).
    """

    def __init__(self, floor_bytes: int = 0):
        self.floor_bytes = floor_bytes
        self._held: dict[str, tuple[int, tuple[int, ...]]] = {}  # id -> (learners' bytes, slot bytes)
        self._stale: set[str] = set()
        self._committed = 0
        self._slots: list[int] = []

    def changed(self, device: str) -> None:
        """``device``'s models may have changed size (read again at the next total)."""
        self._stale.add(device)

    def changed_all(self) -> None:
        """Every device's models may have changed size (after shedding)."""
        self._stale.update(self._held)

    def dropped(self, device: str) -> None:
        """``device`` left memory."""
        self._stale.discard(device)
        self._forget(device)

    def committed(self, devices: dict) -> int:
        """Bytes the devices in memory count for: each its learners' bytes
        (`device_model_bytes`) or ``floor_bytes``, whichever is larger."""
        self._update(devices)
        return self._committed

    def slot_bytes(self, devices: dict) -> list[int]:
        """Per model (slot index): the bytes of every device's slot (``Slot.memory_bytes()``:
        learner, drift detector, accuracy window) summed."""
        self._update(devices)
        return list(self._slots)

    def _update(self, devices: dict) -> None:
        for device in self._stale:
            self._forget(device)
            dev = devices.get(device)
            if dev is None:
                continue
            learner = [slot.learner.memory_bytes() for slot in dev.slots]  # read once: an SRP's walks its trees
            slots = tuple(b + slot.signal_bytes() for b, slot in zip(learner, dev.slots))
            learners = sum(learner)
            self._held[device] = (learners, slots)
            self._committed += max(learners, self.floor_bytes)
            self._slots.extend([0] * (len(slots) - len(self._slots)))
            for i, b in enumerate(slots):
                self._slots[i] += b
        self._stale.clear()

    def _forget(self, device: str) -> None:
        held = self._held.pop(device, None)
        if held is not None:
            self._committed -= max(held[0], self.floor_bytes)
            for i, b in enumerate(held[1]):
                self._slots[i] -= b


def plan_memory(config: Config) -> MemoryPlan:
    """Divide ``[memory] model_budget_bytes`` among devices and models (module docstring).

    Raises:
        ConfigError: the budget cannot hold the models of ``max_devices`` devices (every
            problem named, with the bytes involved).
    """
    mem = config.memory
    if mem.model_budget_bytes is None:
        return MemoryPlan(tuple(config.models))
    device_bytes = mem.model_budget_bytes // mem.max_devices
    charged = {m.name: m.params["max_size_bytes"] for m in config.models if "max_size_bytes" in m.params}
    shared = [m.name for m in config.models if m.name not in charged]
    where = (f"[memory] model_budget_bytes = {mem.model_budget_bytes} for max_devices = "
             f"{mem.max_devices} gives {device_bytes} bytes per device")
    left = device_bytes - sum(charged.values())
    if left < 0 or (shared and left < len(shared)):
        detail = ", ".join(f"{name} {b}" for name, b in charged.items())
        raise ConfigError([f"{where}; the models without a share take {detail} bytes, "
                           f"leaving {max(left, 0)} for {', '.join(shared) or 'nothing'}"])
    share = left // len(shared) if shared else 0
    models, problems = [], []
    for m in config.models:
        if m.name in shared:
            m = dataclasses.replace(m, params={**m.params, "max_size_bytes": share})
            charged[m.name] = share
            try:
                m.build()
            except ValueError as exc:
                problems.append(f"{where}; model {m.name!r} gets {share}: {exc}")
        models.append(m)
    if problems:
        raise ConfigError(problems)
    return MemoryPlan(tuple(models), mem.model_budget_bytes, device_bytes,
                      {m.name: charged[m.name] for m in config.models})


class MemoryGuard:
    """Watches the process RSS against ``rss_limit_mb`` and sheds (module docstring).

    Args:
        limit_bytes: the RSS limit in bytes.
        learners: returns every learner of every device (called at each shedding step).
        alert: publishes one alert payload (a dict).
        checkpoint: writes every device's checkpoint.
        stop: makes the runtime stop (after ``checkpoint``).
        read_rss: returns the RSS in bytes (default `rss_bytes`).
        shed: called after each shedding step (the models' sizes changed: ``ModelBytes.changed_all``).

    Attributes:
        level: shedding steps taken since RSS was last calm (0 none, 1 background learners,
            2+ leaves).
        floor_bytes: the lowest RSS minus the models' bytes seen (None before the first check).
        n_alerts: alerts published.
    """

    def __init__(self, limit_bytes: int, learners: Callable[[], list], alert: Callable[[dict], None],
                 checkpoint: Callable[[], object], stop: Callable[[], None],
                 read_rss: Callable[[], int] = rss_bytes, shed: Callable[[], None] = lambda: None):
        self.limit_bytes = limit_bytes
        self._learners = learners
        self._alert = alert
        self._checkpoint = checkpoint
        self._stop = stop
        self._read_rss = read_rss
        self._shed = shed
        self.level = 0
        self.n_alerts = 0
        self.floor_bytes: int | None = None
        self._high_alerted = False  # a high_rss alert went out since RSS was last calm
        self.stopped = False
        self._next = 0.0

    def tick(self) -> None:
        """`check` at most every `CHECK_INTERVAL_S` (for the worker's tick hooks)."""
        now = time.monotonic()
        if now >= self._next:
            self._next = now + CHECK_INTERVAL_S
            self.check()

    def check(self) -> str | None:
        """Read RSS and the models' bytes; take the next step if the models' own excess calls
        for it (module docstring); returns the action taken, if any."""
        if self.stopped:
            return None
        rss = self._read_rss()
        learners = self._learners()
        models = sum(learner.memory_bytes() for learner in learners)
        self.floor_bytes = rss - models if self.floor_bytes is None else min(self.floor_bytes, rss - models)
        if rss < CALM_FRACTION * self.limit_bytes:
            self.level, self._high_alerted = 0, False
            return None
        if rss < SHED_FRACTION * self.limit_bytes:
            return None
        excess = rss - SHED_FRACTION * self.limit_bytes - (rss - models - self.floor_bytes)
        if excess <= 0:  # the rest of the process, not the models: shedding them would not help
            if self._high_alerted:
                return None
            self._high_alerted = True
            self._send("high_rss", rss, 0, models)
            log.warning("RSS %d bytes is %.0f %% of the limit, the models hold %d bytes: the rest of the "
                        "process holds %d bytes above its floor of %d; nothing shed", rss,
                        100.0 * rss / self.limit_bytes, models, rss - models - self.floor_bytes, self.floor_bytes)
            return "high_rss"
        if self.level >= 2 and rss >= self.limit_bytes:
            return self._exit(rss, models)
        self.level += 1
        method = "shed_background" if self.level == 1 else "shed_leaves"
        n_shed = 0
        for learner in learners:
            n_shed += _shed(learner, method)
        self._shed()
        self._send(method, rss, n_shed, models)
        log.warning("RSS %d bytes is %.0f %% of the limit, the models' own excess %d bytes: %s shed %d", rss,
                    100.0 * rss / self.limit_bytes, excess, method, n_shed)
        return method

    def _exit(self, rss: int, models: int) -> str:
        log.critical("RSS %d bytes is at the limit of %d after shedding: checkpointing, then stopping",
                     rss, self.limit_bytes)
        self._checkpoint()
        self._send("exit", rss, 0, models)
        self.stopped = True
        self._stop()
        return "exit"

    def _send(self, action: str, rss: int, n_shed: int, models: int) -> None:
        self.n_alerts += 1
        self._alert(memory_alert(action, rss, self.limit_bytes, n_shed, models))


def _shed(learner, method: str) -> int:
    """Call ``method`` on ``learner``, or on an ensemble's members (trees inside SRP)."""
    own = getattr(learner, method, None)
    if own is not None:
        return own()
    if method == "shed_leaves":
        return sum(_shed(m, method) for m in getattr(learner, "members", ()))
    return 0
