"""The devices a runtime serves: in memory, restored from their checkpoints, admitted, evicted.

A device not in memory is restored from the newest checkpoint generation that reads back intact
(``CheckpointStore``; a file that cannot be read, EACCES or EIO, refuses the device and is read
again every ``READ_RETRY_S`` seconds instead of being taken for damage), else made new. A new
device is admitted while the model budget (``plan_memory``) and ``[memory] max_devices`` hold
it; when either is full, idle devices are checkpointed and evicted, least recently served first
(``Admission``), and each source brings at most ``[memory] new_devices_per_min`` new ids.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from edgebayes.runtime.admission import Admission
from edgebayes.runtime.checkpoint import CheckpointError, CheckpointForeign, CheckpointReadError, CheckpointStore
from edgebayes.runtime.config import Config
from edgebayes.runtime.device import Device
from edgebayes.runtime.durability import Durability
from edgebayes.runtime.memory import MemoryPlan, ModelBytes
from edgebayes.runtime.messages import ProtocolError
from edgebayes.runtime.pending import PendingLabels
from edgebayes.runtime.remap import SchemaChange

log = logging.getLogger(__name__)

#: seconds between two attempts to read a checkpoint that could not be read (EACCES, EIO)
READ_RETRY_S = 5.0


class DeviceRegistry:
    """The model sets of the devices served (see the module docstring); used by the worker
    thread only.

    Args:
        config: the validated config.
        store: checkpoint store, or None for no checkpoints (then nothing is evicted).
        memory: the memory plan (``plan_memory(config)``): the models' shares and the budget.
        admission: new-id rates per source and the least-recently-served order.
        durability: where a failing checkpoint write is told.
        position: the journal position a checkpoint written now includes (None: no journal).
        readable_again: ``readable_again(device)``, called once a device whose checkpoint could
            not be read is restored, before anything else is served to it (the worker learns
            the journal entries it refused meanwhile).

    Attributes:
        devices: device id -> ``Device``, the devices in memory.
        dirty: ids of the devices changed since their last checkpoint.
        replaying: set while the journal is replayed at start: no new-id rate, no limit (``fit``
            evicts after it), no eviction (a checkpoint then would claim entries not replayed yet).
        n_evicted: idle devices checkpointed and dropped to make room.
        sizes: the bytes the devices' models hold, kept up to date as devices are served,
            admitted and evicted (``ModelBytes``; call ``sizes.changed_all()`` after shedding).
    """

    def __init__(self, config: Config, store: CheckpointStore | None, memory: MemoryPlan, admission: Admission,
                 durability: Durability, position: Callable[[], list | None],
                 readable_again: Callable[[str], None] = lambda device: None):
        self.config = config
        self.store = store
        self.memory = memory
        self.admission = admission
        self.durability = durability
        self.position = position
        self.readable_again = readable_again
        self.devices: dict[str, Device] = {}
        self.dirty: set[str] = set()
        self.replaying = False
        self.n_evicted = 0
        self.sizes = ModelBytes(memory.device_bytes or 0)
        self._unreadable: dict[str, tuple[float, str]] = {}  # device -> (next read attempt, why)
        self._refused: set[str] = set()  # checkpoints of another version or of removed features

    def check_new(self, device: str, topic: str, seq: int) -> None:
        """A reading of a device not in memory: unless it has a checkpoint, it counts against
        its source's rate of new ids (``Admission``); ``ProtocolError`` ``device_limit`` past it."""
        if self.replaying or (self.store is not None and self.store.exists(device)):
            return  # acknowledged before the crash, or known
        why = self.admission.take_new(device, topic)
        if why is not None:
            raise ProtocolError("device_limit", why, seq)

    def admit(self, device: str) -> str | None:
        """Why a new device cannot be served (None: it can): the model budget, then max_devices.
        While either is full, idle devices are evicted to make room (``_evict``)."""
        if self.replaying:  # its messages were acknowledged: served over the limits, then ``fit``
            return None
        idle = None
        while True:
            refusal = self._no_room(device)
            if refusal is None:
                return None
            if idle is None:  # least recently served first; none without checkpoints
                idle = self.admission.idle() if self.store is not None else []
            evicted = False
            while idle and not evicted:
                evicted = self._evict(idle.pop(0))
            if not evicted:
                return refusal

    def fit(self) -> int:
        """Evict devices, least recently served first, until ``[memory] max_devices`` holds the
        rest (after a journal replay, which serves every device its entries name); returns how
        many. A device whose checkpoint cannot be written stays."""
        n = 0
        for device in self.admission.least_recent():
            if len(self.devices) <= self.config.memory.max_devices:
                break
            n += self._evict(device)
        return n

    def _no_room(self, device: str) -> str | None:
        refusal = self.memory.refusal(device, self.devices, self.sizes.committed(self.devices))
        limit = self.config.memory.max_devices
        if not refusal and len(self.devices) >= limit:
            refusal = f"device {device} refused: the runtime serves at most {limit} devices"
        return refusal

    def _evict(self, device: str) -> bool:
        """Write ``device``'s checkpoint and drop it from memory (its next reading restores it);
        False, and it stays, if the checkpoint cannot be written."""
        if device not in self.devices or not self.save(device):
            return False
        del self.devices[device]
        self.sizes.dropped(device)
        self.admission.forget(device)
        self.n_evicted += 1
        log.info("device %s evicted (idle, checkpointed) to make room; %d evicted so far", device, self.n_evicted)
        return True

    def drop(self, device: str) -> None:
        """Forget ``device`` without writing its checkpoint (another runtime serves it now)."""
        self.devices.pop(device, None)
        self.sizes.dropped(device)
        self.dirty.discard(device)
        self.admission.forget(device)

    def save(self, device: str, pos: list | None = None) -> bool:
        """Write ``device``'s checkpoint with the journal position it includes (None: the
        journal's position now); False if it cannot be written (told through ``Durability``)."""
        if pos is None:
            pos = self.position()
        try:
            self.store.save(device, self.devices[device].state(pos))
        except Exception as exc:  # noqa: BLE001 (any failure: retried at the next interval)
            self.durability.checkpoint_failed(device, exc)
            return False
        self.devices[device].journal_pos = pos
        self.dirty.discard(device)
        self.durability.checkpoint_written(device)
        return True

    def new_device(self, device: str) -> Device:
        """A fresh model set for ``device``: the configured models with their memory-plan shares."""
        c = self.config
        return Device(device, self.memory.models, c.evaluation.accuracy_window, c.drift.delta,
                      PendingLabels(c.labels.max_pending, c.labels.max_age_s), c.schema.features)

    def get(self, device: str, create: bool) -> Device | None:
        """The device's model set: in memory, else restored from its checkpoint, else new
        (when ``create``). Raises ``ProtocolError``: ``device_limit`` when not admitted,
        ``checkpoint_unreadable`` or ``checkpoint_refused`` while its checkpoint cannot be
        restored (left as it is: the device is not served, so no fresh model overwrites it)."""
        dev = self.devices.get(device)
        if dev is not None:
            self.admission.served(device)
            self.sizes.changed(device)  # served: it may learn
            return dev
        saved = self.store is not None and self.store.exists(device)
        if not saved and not create:
            return None
        refusal = self.admit(device)
        if refusal:
            raise ProtocolError("device_limit", refusal)
        was_unreadable = device in self._unreadable
        dev = self._restore(device) if saved else None
        how = f"restored from its checkpoint (last seq {dev.last_seq})" if dev is not None else "new"
        dev = dev or self.new_device(device)
        self.devices[device] = dev
        self.admission.served(device)
        self.sizes.changed(device)
        log.info("device %s admitted, %s; %d of at most %d devices", device, how, len(self.devices),
                 self.config.memory.max_devices)
        if was_unreadable and not self.replaying:
            self.readable_again(device)
        return dev

    def not_restored(self) -> set[str]:
        """The devices refused because their checkpoint cannot be read (yet) or restored under
        this config: the journal keeps their entries until it can."""
        return set(self._unreadable) | self._refused

    def _restore(self, device: str) -> Device | None:
        """The device restored from the newest checkpoint generation that reads back intact and
        restores; damaged generations are moved aside once one works or none is left (None: a
        fresh device). Raises ``ProtocolError`` (see ``_device``) for a file that cannot be
        read (retried every `READ_RETRY_S`), of another version, or for a schema change."""
        now = time.monotonic()
        retry_at, why = self._unreadable.get(device, (0.0, ""))
        if now < retry_at:
            raise ProtocolError("checkpoint_unreadable", why)
        features, damaged, generation = self.config.schema.features, [], 0
        while True:
            try:
                saved = self.store.read_generation(device, generation)
            except CheckpointReadError as exc:
                why = f"checkpoint of device {device} cannot be read ({exc.strerror}); the device is not served, " \
                      f"its checkpoint is left as it is and read again in {READ_RETRY_S:g} s"
                if device not in self._unreadable:
                    log.error("%s", why)
                self._unreadable[device] = (now + READ_RETRY_S, why)
                raise ProtocolError("checkpoint_unreadable", why) from None
            except CheckpointForeign as exc:
                self._refused.add(device)
                raise ProtocolError("checkpoint_refused", f"{exc}; the device is not served") from None
            except CheckpointError as exc:
                self.store.move_aside(device, f"{exc}; the device starts fresh", (0, 1))
                return None
            if self._unreadable.pop(device, None) is not None:
                log.info("checkpoint of device %s can be read again", device)
            if saved is None:
                self.store.move_aside(device, f"{'; '.join(damaged)}; the device starts fresh", (0, 1))
                return None
            dev = self.new_device(device)
            try:
                dev.load_state(saved.state, len(features), saved.features)
            except SchemaChange as exc:
                if device not in self._refused:
                    log.error("device %s: %s; its checkpoint and the readings it is sent meanwhile are kept, "
                              "and the device is not served", device, exc)
                self._refused.add(device)
                raise ProtocolError("checkpoint_refused", f"{exc}") from None
            except Exception as exc:  # noqa: BLE001 (any unusable state: the next generation, else fresh)
                damaged.append(f"{saved.path.name}: {type(exc).__name__}: {exc}")
                log.error("checkpoint of device %s cannot be restored (%s)", device, damaged[-1])
                generation = saved.generation + 1
                continue
            self._refused.discard(device)
            if saved.generation or damaged:
                self.store.move_aside(device, "; ".join(damaged) or "the newest generation is damaged",
                                      tuple(range(saved.generation)))
                log.warning("device %s: restored from the previous checkpoint generation %s (last seq %d, "
                            "journal position %s); what it learned after that is replayed if the journal still "
                            "holds it, else lost (at most its readings and labels of one checkpoint round)",
                            device, saved.path.name, dev.last_seq, saved.state.get("journal"))
            return dev
