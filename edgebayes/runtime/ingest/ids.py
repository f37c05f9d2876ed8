"""Which topic name holds each device id of the ``[[sources]]``: ``DeviceIds``.

A device id made from a topic level (`edgebayes.runtime.names.device_id`) replaces the
characters outside ``[A-Za-z0-9_-]``, so distinct names can make one id: "Room.1", "Room 1"
and "Room_1" all make ``Room_1``. The first name to make an id holds it; another name making
the same id is refused (kind ``device_id_taken``, on the runtime's error topic), never merged
into the holder's model. A ``[[sources]] device`` is its own name: sources naming the same
``device`` are one device on purpose. The holders are kept in ``<[checkpoint] dir>/
source-device-ids.json`` (written at most once a second, atomically), so the holder of an id
stays the holder after a restart; ``check_literal_ids`` refuses at start two literal topics
whose names make one id.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from edgebayes.runtime.config import ConfigError
from edgebayes.runtime.names import device_id

log = logging.getLogger(__name__)

#: the file, in the checkpoint folder, that keeps the holders across restarts
FILE_NAME = "source-device-ids.json"
#: seconds between two writes of that file
SAVE_EVERY_S = 1.0


class DeviceIds:
    """id -> the name that holds it (worker thread only).

    Args:
        folder: where ``FILE_NAME`` is kept (None: held in memory only, for this run).
        limit: ids remembered at most (more are served without a holder: no collision check).
    """

    def __init__(self, folder: Path | None, limit: int):
        self.path = Path(folder) / FILE_NAME if folder is not None else None
        self.limit = limit
        self.holders: dict[str, str] = self._load()
        self.n_untracked = 0  # ids past ``limit``
        self._dirty = False
        self._failing = False  # the last write failed: logged once until one succeeds
        self._saved_at = 0.0

    def _load(self) -> dict[str, str]:
        if self.path is None or not self.path.exists():
            return {}
        try:
            doc = json.loads(self.path.read_text(encoding="utf-8"))
            if not isinstance(doc, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in doc.items()):
                raise ValueError("not a map of strings")
        except (OSError, ValueError) as exc:
            log.warning("%s cannot be read (%s): device ids are checked from this run's names only", self.path, exc)
            return {}
        return doc

    def claim(self, name: str, device: str, where: str) -> str | None:
        """None when ``name`` may use ``device`` (logged once when the id differs from the
        name); else why not: another name holds it."""
        holder = self.holders.get(device)
        if holder == name:
            return None
        if holder is not None:
            return (f"topic name {name!r} makes device id {device!r}, which {holder!r} already holds: "
                    f"refused, not merged into its model (rename one of them, or give its [[sources]] a device)")
        if len(self.holders) >= self.limit:
            self.n_untracked += 1
            return None
        self.holders[device] = name
        self._dirty = True
        if name != device:
            log.info("%s: topic name %r is device id %s", where, name, device)
        return None

    def save(self, now: float | None = None) -> None:
        """Write the holders if they changed, at most every ``SAVE_EVERY_S`` (worker tick)."""
        now = time.monotonic() if now is None else now
        if not self._dirty or self.path is None or now - self._saved_at < SAVE_EVERY_S:
            return
        self._saved_at = now
        tmp = self.path.with_suffix(".tmp")
        try:
            tmp.write_text(json.dumps(self.holders, ensure_ascii=False, sort_keys=True), encoding="utf-8")
            os.replace(tmp, self.path)
            self._dirty = self._failing = False
        except OSError as exc:
            if not self._failing:
                log.warning("cannot write %s (%s); retrying every %g s", self.path, exc, SAVE_EVERY_S)
            self._failing = True


def check_literal_ids(adapters) -> None:
    """Refuse two ``[[sources]]`` topics without wildcards whose names make one device id
    (``Room 1`` and ``Room_1``), one line each; a shared ``device`` is one device on purpose.

    Raises:
        ConfigError: one problem per topic whose id another name already makes.
    """
    seen: dict[str, tuple[str, str]] = {}  # id -> (name, where)
    problems = []
    for a in adapters:
        if a.cfg.kind == "edgebayes":
            continue  # its ids are checked as they are, never rewritten
        where = f"[[sources]] #{a.index + 1} ({a.cfg.kind})"
        for topic in a.data_filters():
            if a.cfg.device is None and ("+" in topic.split("/") or topic.endswith("#")):
                continue  # names known at run time: DeviceIds
            name = a.cfg.device or a.publisher(topic)
            device = a.cfg.device or device_id(name)
            first = seen.setdefault(device, (name, where))
            if first[0] != name:
                problems.append(f"{where}: topic {topic!r} makes device id {device!r} from {name!r}, as "
                                f"{first[1]} does from {first[0]!r}: rename one, or give both the same "
                                f"device = \"{device}\" to make them one device")
    if problems:
        raise ConfigError(problems, "[[sources]]")
