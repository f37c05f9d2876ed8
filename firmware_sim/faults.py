"""The seeded fault plan of one simulated device: what goes wrong with each of its readings.

Real sensor nodes lose readings on a bad radio link, repeat them (an application-level retry
after a missed acknowledgement), send garbage (a buffer overrun truncates a payload, a firmware
bug writes a string where a number belongs, a sensor driver returns inf), reboot (brown-out or
watchdog: the connection drops, the node comes back and its counter starts again) and flush
buffered readings all at once (a Wi-Fi hiccup, then a burst).

`fault_plan` turns the rates into one `Fault` per reading from its own random generator. The
plan is a pure function of the seed: it draws the same four uniforms per reading whatever the
data and whatever happened before, so a test can rebuild it and compare what a device sent
with what a consumer received.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

#: the kinds of malformed payloads (see `device.corrupt`)
MALFORMED_KINDS = ("truncated", "wrong_type", "wrong_length", "nonfinite")

#: what happens to a reading on its way to the broker
DELIVERIES = ("ok", "lost", "duplicated", "malformed")

_BLOCK = 1024  # readings drawn at once: one numpy call per block instead of one per reading


def _check_rate(name: str, value: float) -> None:
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")


@dataclass(frozen=True)
class FaultRates:
    """How often each fault happens, as a probability per reading.

    Attributes:
        loss_rate: a reading is never published (its ``seq`` is used up, so consumers see a gap).
        duplicate_rate: a reading is published twice, byte for byte.
        malformed_rate: a reading is published corrupted, in one of ``malformed_kinds``
            chosen uniformly. Loss, duplication and corruption exclude each other, so the
            three rates must sum to at most 1.
        reboot_rate: the device reboots before the reading: it disconnects, stays down for
            the simulator's ``reboot_s`` and reconnects, and its ``seq`` starts again from 0.
            Drawn only outside bursts.
        burst_rate: a burst starts at the reading: this reading and the next
            ``burst_size - 1`` are held back and published back to back when the last of
            them is taken. Drawn only outside bursts.
        burst_size: readings per burst (at least 2).
        malformed_kinds: the corruptions to choose from (a subset of `MALFORMED_KINDS`).

    Raises:
        ValueError: a rate outside [0, 1], loss + duplicate + malformed over 1, a burst size
            below 2, an unknown or empty list of malformed kinds.
    """

    loss_rate: float = 0.0
    duplicate_rate: float = 0.0
    malformed_rate: float = 0.0
    reboot_rate: float = 0.0
    burst_rate: float = 0.0
    burst_size: int = 10
    malformed_kinds: tuple[str, ...] = MALFORMED_KINDS

    def __post_init__(self):
        for name in ("loss_rate", "duplicate_rate", "malformed_rate", "reboot_rate", "burst_rate"):
            _check_rate(name, getattr(self, name))
        total = self.loss_rate + self.duplicate_rate + self.malformed_rate
        if total > 1.0 + 1e-12:
            raise ValueError(
                f"loss_rate + duplicate_rate + malformed_rate must be at most 1 (they exclude "
                f"each other), got {total:g}"
            )
        size = self.burst_size
        if isinstance(size, bool) or not isinstance(size, int) or size < 2:
            raise ValueError(f"burst_size must be an integer >= 2, got {self.burst_size!r}")
        kinds = tuple(self.malformed_kinds)
        unknown = sorted(set(kinds) - set(MALFORMED_KINDS))
        if not kinds or unknown:
            raise ValueError(
                f"malformed_kinds must be a non-empty subset of {MALFORMED_KINDS}, got {kinds!r}"
            )
        object.__setattr__(self, "malformed_kinds", kinds)


@dataclass(frozen=True)
class Fault:
    """What happens to one reading.

    Attributes:
        delivery: one of `DELIVERIES`.
        malformed: the corruption (one of `MALFORMED_KINDS`) when ``delivery`` is
            "malformed", else None.
        detail: a uniform number in [0, 1) that picks the corruption's variant and position.
        reboot: the device reboots just before taking this reading.
        flush: the device publishes what it holds once this reading is taken: True outside
            bursts; inside a burst, only for its last reading.
        burst_start: a burst starts with this reading.
    """

    delivery: str = "ok"
    malformed: str | None = None
    detail: float = 0.0
    reboot: bool = False
    flush: bool = True
    burst_start: bool = False


def fault_plan(rates: FaultRates, rng: np.random.Generator) -> Iterator[Fault]:
    """The endless sequence of faults of one device, one `Fault` per reading, from ``rng``.

    Per reading it draws four uniforms u (in blocks, the same numbers as one draw of four per
    reading): u0 picks the delivery (lost below ``loss_rate``, then duplicated, then
    malformed), u1 the malformed kind and its ``detail``, u2 a reboot, u3 a burst. The first
    reading never reboots (the device has just booted).
    """
    kinds = rates.malformed_kinds
    n_kinds = len(kinds)
    lost = rates.loss_rate
    duplicated = lost + rates.duplicate_rate
    malformed = duplicated + rates.malformed_rate
    left_in_burst = 0
    first = True
    while True:
        for u0, u1, u2, u3 in rng.random((_BLOCK, 4)).tolist():
            if u0 < lost:
                delivery, kind, detail = "lost", None, 0.0
            elif u0 < duplicated:
                delivery, kind, detail = "duplicated", None, 0.0
            elif u0 < malformed:
                scaled = u1 * n_kinds
                k = min(int(scaled), n_kinds - 1)
                delivery, kind, detail = "malformed", kinds[k], scaled - k
            else:
                delivery, kind, detail = "ok", None, 0.0
            if left_in_burst:
                left_in_burst -= 1
                yield Fault(delivery, kind, detail, flush=left_in_burst == 0)
                continue
            reboot = not first and u2 < rates.reboot_rate
            first = False
            if u3 < rates.burst_rate:
                left_in_burst = rates.burst_size - 1
                yield Fault(delivery, kind, detail, reboot, flush=False, burst_start=True)
            else:
                yield Fault(delivery, kind, detail, reboot)

