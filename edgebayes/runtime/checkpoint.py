"""Per-device checkpoints: msgpack, versioned, written atomically, never pickle.

One file per device, ``<dir>/<device>.ckpt``, holding
``{"format": "edgebayes-checkpoint", "version": 1, "features": [...], "device": {...}}`` where
``device`` is ``Device.state()``, whose ``journal`` is the position of the write-ahead journal
its state includes (``edgebayes.runtime.journal``: what is after it is replayed at start; an
older checkpoint without it replays the whole journal). A write goes to a temporary file in the same folder, is
fsynced, renamed over the old file and the folder fsynced, so a power cut leaves either the
old checkpoint or the new one, never a torn file. A file that cannot be read back (corrupt,
another format or version, another feature schema) is moved aside to
``<device>.ckpt.corrupt-<unix time>`` with a logged error, and the device starts fresh. So is
one that reads but cannot be restored: the worker treats any exception from
``Device.load_state`` (bad values refused by a learner's ``from_state``, another device's id
inside, a model whose smoke prediction on a zero reading is not finite) as corruption.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

import msgpack

FORMAT = "edgebayes-checkpoint"
VERSION = 1

log = logging.getLogger(__name__)


class CheckpointError(ValueError):
    """A checkpoint file that cannot be used."""


def read_document(data: bytes, path: Path, what: str, fmt: str, version: int, features: list,
                  error: type[Exception]) -> dict:
    """The msgpack map in ``data`` (the bytes of ``path``), checked to be an edgebayes ``what``
    ("checkpoint", "journal") of format name ``fmt`` and ``version``, made for ``features``.

    Raises:
        error: not msgpack, not a map of that format, another version or another feature schema.
    """
    try:
        doc = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (msgpack.UnpackException, ValueError, TypeError) as exc:
        raise error(f"{path}: not msgpack: {type(exc).__name__}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise error(f"{path}: not an edgebayes {what}")
    if doc.get("version") != version:
        raise error(f"{path}: {what} version {doc.get('version')!r}, this release reads {version}")
    if doc.get("features") != features:
        raise error(f"{path}: made for features {doc.get('features')!r}, the schema has {features}")
    return doc


class CheckpointStore:
    """Reads and writes the checkpoints of one runtime.

    Args:
        directory: the folder (created if missing).
        features: the schema's feature names; a checkpoint made for others is not restored.

    Raises:
        OSError: ``directory`` is not a folder or cannot be created (a one-line message).
    """

    def __init__(self, directory: str | Path, features: tuple[str, ...]):
        self.dir = Path(directory)
        if self.dir.exists() and not self.dir.is_dir():
            raise NotADirectoryError(f"checkpoint dir {self.dir} is not a directory")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # one line for the operator, not "[Errno 13] ...: '...'"
            raise OSError(f"checkpoint dir {self.dir}: cannot create: {exc.strerror}") from None
        self.features = list(features)

    def path(self, device: str) -> Path:
        return self.dir / f"{device}.ckpt"

    def save(self, device: str, device_state: dict) -> Path:
        """Write one device's state atomically (temp file, fsync, rename, fsync folder)."""
        data = msgpack.packb({"format": FORMAT, "version": VERSION, "features": self.features,
                              "device": device_state}, use_bin_type=True)
        path = self.path(device)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
        fsync_dir(self.dir)
        return path

    def read(self, device: str) -> dict | None:
        """The saved ``Device.state()`` of ``device``, None if there is none.

        Raises:
            CheckpointError: the file is unreadable, corrupt, of another format/version/schema.
        """
        path = self.path(device)
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise CheckpointError(f"{path}: cannot read: {exc.strerror}") from None
        doc = read_document(data, path, "checkpoint", FORMAT, VERSION, self.features, CheckpointError)
        if not isinstance(doc.get("device"), dict):
            raise CheckpointError(f"{path}: no device state")
        return doc["device"]

    def move_aside(self, device: str, reason: str) -> Path:
        """Rename a bad checkpoint out of the way (kept for inspection) and log why."""
        path = self.path(device)
        aside = path.with_name(f"{path.name}.corrupt-{int(time.time())}")
        os.replace(path, aside)
        log.error("checkpoint of device %s is unusable (%s); moved to %s, the device starts fresh",
                  device, reason, aside)
        return aside


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (fsync the folder itself)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
