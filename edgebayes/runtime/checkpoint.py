"""Per-device checkpoints: msgpack, versioned, checksummed, two generations, never pickle.

One device has up to two files, its newest checkpoint ``<dir>/<device>.ckpt`` and the one
before it, ``<dir>/<device>.ckpt.1``. Each (version 2) is a frame ``b"EBCK" <u32 length>
<u32 crc32>`` (little-endian) followed by ``length`` bytes of msgpack
``{"format": "edgebayes-checkpoint", "version": 2, "features": [...], "device": {...}}``, where
``features`` are the ``[schema] features`` it was written under and ``device`` is
``Device.state()``, whose ``journal`` is the position of the write-ahead journal its state
includes (``edgebayes.runtime.journal``: what is after it is replayed at start). A version 1
file (older releases: the same map, unframed, no checksum) is still read.

A write goes to ``<device>.ckpt.tmp``, is fsynced and read back to verify it; only then does the
newest file become ``.ckpt.1`` and the new one ``.ckpt`` (folder fsynced), so a crash or a bad
write leaves a good generation whatever happens. Reading (`CheckpointStore.read`) takes the
newest generation that passes its checksum and decodes; the caller tries the next one when a
generation's state cannot be restored. Three kinds of failure are kept apart:

- `CheckpointError`: the bytes are damaged (checksum, length, not msgpack, not a checkpoint):
  no config could use them, so they are moved aside (``<name>.corrupt-<unix time>``, kept for
  inspection) once an older generation or a fresh start replaces them;
- `CheckpointReadError`: the file could not be read (EACCES, EIO, a folder in its place): it
  may be perfectly good, so it is left alone and the read is retried later;
- `CheckpointForeign`: a sound file of another format version: left alone for the release
  that wrote it.

A checkpoint written under other ``[schema] features`` is returned with its features; the
device maps its models to the configured features by name (``Device.load_state``).

The device state has its own version, ``"version"`` in ``Device.state()`` (`STATE_VERSION`),
one number per shape it has had; a state without one (written before states were numbered) is
version 1. `migrate_device_state` brings a state of any version to the current one, one
migration per old version, applied in order: each adds what its version lacked, with the value
that means what the older release did, and keeps any key already there.
"""

from __future__ import annotations

import logging
import os
import struct
import time
import zlib
from pathlib import Path
from typing import NamedTuple

import msgpack

FORMAT = "edgebayes-checkpoint"
VERSION = 2
#: magic, body length in bytes, zlib.crc32 of the body; version 1 files have no frame
FRAME = struct.Struct("<4sII")
MAGIC = b"EBCK"
#: the generations kept: the newest, then the one before it
SUFFIXES = (".ckpt", ".ckpt.1")

#: the shape of ``Device.state()`` this release writes (see `MIGRATIONS`)
STATE_VERSION = 7

log = logging.getLogger(__name__)


class CheckpointError(ValueError):
    """A checkpoint file whose bytes are damaged (no config could use it)."""


class CheckpointReadError(OSError):
    """A checkpoint file that could not be read (permissions, an I/O error): it may be good."""


class CheckpointForeign(ValueError):
    """A sound checkpoint this release does not read (another format version)."""


def read_document(data: bytes, path: Path, what: str, fmt: str, version: int | tuple[int, ...], features: list | None,
                  error: type[Exception], foreign: type[Exception] | None = None) -> dict:
    """The msgpack map in ``data`` (the bytes of ``path``), checked to be an edgebayes ``what``
    ("checkpoint", "journal") of format name ``fmt`` and ``version`` (or one of them), made for ``features``
    (None: any; the caller maps them).

    Raises:
        error: not msgpack, not a map of that format, another feature schema, or (unless
            ``foreign`` is given) another version.
        foreign: another version.
    """
    try:
        doc = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (msgpack.UnpackException, ValueError, TypeError) as exc:
        raise error(f"{path}: not msgpack: {type(exc).__name__}: {exc}") from None
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        raise error(f"{path}: not an edgebayes {what}")
    if doc.get("version") not in (version if isinstance(version, tuple) else (version,)):
        raise (foreign or error)(f"{path}: {what} version {doc.get('version')!r}, this release reads {version}")
    if features is not None and doc.get("features") != features:
        raise error(f"{path}: made for features {doc.get('features')!r}, the schema has {features}")
    return doc


class Saved(NamedTuple):
    """One generation of a device's checkpoint, as read back."""

    state: dict  #: ``Device.state()``
    features: list[str]  #: the ``[schema] features`` it was written under
    generation: int  #: 0 the newest, 1 the one before it
    path: Path


class CheckpointStore:
    """Reads and writes the checkpoints of one runtime.

    Args:
        directory: the folder (created if missing; one that cannot be created now, a read-only or
            full file system, is logged at ERROR; the worker makes it at its next checkpoint round).
        features: the schema's feature names, written into each checkpoint.

    Raises:
        NotADirectoryError: ``directory`` is a file (a one-line message).
    """

    def __init__(self, directory: str | Path, features: tuple[str, ...]):
        self.dir = Path(directory)
        if self.dir.exists() and not self.dir.is_dir():
            raise NotADirectoryError(f"checkpoint dir {self.dir} is not a directory")
        try:
            self.dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # the worker serves without durability and says so (Durability)
            log.error("checkpoint dir %s: cannot create it (%s); nothing can be saved until it can",
                      self.dir, exc.strerror)
        self.features = list(features)

    def path(self, device: str, generation: int = 0) -> Path:
        return self.dir / f"{device}{SUFFIXES[generation]}"

    def saved_devices(self) -> list[str]:
        """The ids of the devices with a checkpoint generation in the folder, sorted; [] when
        the folder cannot be listed."""
        try:
            names = os.listdir(self.dir)
        except OSError:
            return []
        return sorted({n.removesuffix(suffix) for n in names for suffix in SUFFIXES if n.endswith(suffix)})

    def exists(self, device: str) -> bool:
        """Whether any generation of ``device``'s checkpoint may be there: True also when the
        folder cannot be searched (EACCES), so that `read` reports it instead of a fresh model
        later overwriting a good checkpoint."""
        for g in range(len(SUFFIXES)):
            try:
                os.lstat(self.path(device, g))
                return True
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError:
                return True
        return False

    def save(self, device: str, device_state: dict) -> Path:
        """Write one device's state as its newest generation; the newest so far becomes the
        previous one only after the new file is fsynced and read back intact.

        Raises:
            OSError: the write failed (the generations on disk are unchanged).
            CheckpointError: the file read back differs from what was written.
        """
        body = msgpack.packb({"format": FORMAT, "version": VERSION, "features": self.features,
                              "device": device_state}, use_bin_type=True)
        data = FRAME.pack(MAGIC, len(body), zlib.crc32(body)) + body
        path = self.path(device)
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        if tmp.read_bytes() != data:
            raise CheckpointError(f"{tmp}: reads back differently from what was written")
        if os.path.lexists(path):
            os.replace(path, self.path(device, 1))
        os.replace(tmp, path)
        fsync_dir(self.dir)
        return path

    def read(self, device: str) -> dict | None:
        """The saved ``Device.state()`` of ``device`` (its newest generation that reads back
        intact), None if there is none. Raises as `read_generation`."""
        saved = self.read_generation(device)
        return None if saved is None else saved.state

    def read_generation(self, device: str, generation: int = 0) -> Saved | None:
        """The newest generation of ``device``'s checkpoint from ``generation`` on (0: the
        newest) that reads back intact; None if there is none from there.

        Raises:
            CheckpointReadError: a generation could not be read (left alone, not skipped: an
                older one would lose what the newer one holds).
            CheckpointForeign: a generation is of another format version (left alone).
            CheckpointError: every generation there is damaged (the newest one's reason).
        """
        damaged = None
        for g in range(generation, len(SUFFIXES)):
            path = self.path(device, g)
            try:
                data = path.read_bytes()
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise CheckpointReadError(exc.errno, f"{path}: cannot read: {exc.strerror}") from None
            try:
                state, features = _decode(data, path)
            except CheckpointError as exc:
                damaged = damaged or exc
                log.error("checkpoint of device %s: %s", device, exc)
                continue
            return Saved(state, features, g, path)
        if damaged is not None:
            raise damaged
        return None

    def move_aside(self, device: str, reason: str, generations: tuple[int, ...] = (0,)) -> list[Path]:
        """Rename damaged generations out of the way (kept for inspection) and log why."""
        moved = []
        stamp = int(time.time())
        for g in generations:
            path = self.path(device, g)
            if os.path.lexists(path):
                aside = path.with_name(f"{path.name}.corrupt-{stamp}")
                os.replace(path, aside)
                moved.append(aside)
        if moved:
            log.error("checkpoint of device %s is unusable (%s); moved to %s", device, reason,
                      ", ".join(map(str, moved)))
        return moved


def _decode(data: bytes, path: Path) -> tuple[dict, list[str]]:
    """``(device state, features)`` of a checkpoint file's bytes, version 2 (framed) or 1.

    Raises:
        CheckpointError: damaged; CheckpointForeign: another version.
    """
    if data[:len(MAGIC)] == MAGIC:
        if len(data) < FRAME.size:
            raise CheckpointError(f"{path}: cut short ({len(data)} bytes)")
        _, length, crc = FRAME.unpack_from(data)
        body = data[FRAME.size:]
        if len(body) != length:
            raise CheckpointError(f"{path}: {len(body)} bytes after the header, it says {length}")
        if zlib.crc32(body) != crc:
            raise CheckpointError(f"{path}: checksum mismatch (a damaged byte)")
        doc = read_document(body, path, "checkpoint", FORMAT, VERSION, None, CheckpointError, CheckpointForeign)
    else:  # version 1; any other version is framed, so an unframed one is a damaged byte
        doc = read_document(data, path, "checkpoint", FORMAT, 1, None, CheckpointError)
    features = doc.get("features")
    if not isinstance(doc.get("device"), dict) or not (
            isinstance(features, list) and all(isinstance(f, str) for f in features)
            and len(set(features)) == len(features)):
        raise CheckpointError(f"{path}: no device state or no feature list")
    return doc["device"], features


def fsync_dir(directory: Path) -> None:
    """Make a rename in ``directory`` durable (fsync the folder itself)."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _v1_to_v2(state: dict) -> dict:
    """Reboots tracked: no reading time yet, no reboot counted, no reading dropped by one."""
    return {"last_ts": None, "n_reboots": 0, **state,
            "pending": {"n_rebooted": 0, **state["pending"]}, "version": 2}


def _v2_to_v3(state: dict) -> dict:
    """The device's label type: that of the first class a saved model learned (None: none yet)."""
    classes = [c for m in state["models"] if isinstance(m, dict) and isinstance(m.get("learner"), dict)
               for c in m["learner"].get("classes") or ()]
    return {"label_type": type(classes[0]).__name__ if classes else None, **state, "version": 3}


def _v3_to_v4(state: dict) -> dict:
    """The journal position the state includes: none, so the whole journal is replayed."""
    return {"journal": None, **state, "version": 4}


def _v4_to_v5(state: dict) -> dict:
    """When the last reading was received: unknown, so no seq_jump bound until the next one."""
    return {"last_recv": None, **state, "version": 5}


def _v5_to_v6(state: dict) -> dict:
    """The seqs accepted, as runs (``SeqRuns``): every seq from 0 up to the last one."""
    last_seq = state["last_seq"]
    runs = [0, last_seq] if type(last_seq) is int and last_seq >= 0 else []
    return {"accepted": runs, **state, "version": 6}


def _v6_to_v7(state: dict) -> dict:
    """Labels held for their reading: none (before, a label ahead of its reading was refused)."""
    return {**state, "pending": {"early": [], **state["pending"]}, "version": 7}


#: ``MIGRATIONS[v - 1]`` takes a device state of version ``v`` to ``v + 1``
MIGRATIONS = (_v1_to_v2, _v2_to_v3, _v3_to_v4, _v4_to_v5, _v5_to_v6, _v6_to_v7)


def migrate_device_state(state: dict) -> dict:
    """``state`` (a ``Device.state()`` of any version) as a state of `STATE_VERSION`: a new
    dict, the argument unchanged; a current state is returned as it is.

    Raises:
        ValueError: ``"version"`` is not an int from 1 to `STATE_VERSION`.
        KeyError, TypeError: a state without ``pending``, ``models`` or ``last_seq``.
    """
    version = state.get("version", 1)
    if type(version) is not int or not 1 <= version <= STATE_VERSION:
        raise ValueError(f"device state version {version!r:.40}, this release reads 1 to {STATE_VERSION}")
    for migrate in MIGRATIONS[version - 1:]:
        state = migrate(state)
    return state
