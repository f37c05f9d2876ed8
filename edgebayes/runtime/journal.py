"""The write-ahead journal: every reading and label is on disk before the broker is told so.

One file per runtime, ``<checkpoint dir>/journal``: a sequence of frames, each
``<u32 length><u32 crc32>`` (little-endian) followed by ``length`` bytes of msgpack. The first
frame is the header ``{"format": "edgebayes-journal", "version": 2, "features": [...],
"id": "<16 hex digits>"}``, its CRC-32 plain; every other frame is one message as it came from
the broker, ``[topic, payload, t]`` (str, bytes, its receive time in Unix seconds: a replay
takes its decisions at the time the message came), its CRC-32 started from the CRC-32 of the id
(``zlib.crc32(body, zlib.crc32(id))``): a frame that a client wrote inside its own payload does not
check out as this journal's, so a reader resynchronising past a damaged frame never takes one
for an entry (version 1 journals, with plain CRCs and no times, are still read). The worker appends a
message before processing it and acknowledges it to the broker only after ``sync`` (one
``fdatasync`` for a whole group of messages), so a message the broker holds as acknowledged is
in the journal, in a checkpoint, or both.

A device's checkpoint records the journal position its state includes (``position``:
``[id, offset]``). At start the runtime replays, for each device, the entries after that
position (all of them when the checkpoint names another journal id), so a crash between a
checkpoint write and the start of a new journal never learns an entry twice. After every
checkpoint round, ``rotate`` starts a new journal with a new random id, empty or holding the
entries the caller keeps (those of a device whose checkpoint failed), written to a temporary
file, fsynced, renamed, folder fsynced; this bounds the journal to one checkpoint interval of
messages plus what failing devices keep.

Reading back (``recover``) is streamed, one frame at a time. A frame that does not read (short,
longer than the longest message accepted, bad checksum, not msgpack) is skipped byte by byte
to the next frame that reads, with a logged warning: a corrupt middle costs its own entry, not
the entries after it. Unreadable bytes with no frame after them are a torn tail (a power cut
mid-append), dropped with a logged warning, never an exception. ``append`` refuses a frame
the reader would not take. A journal whose header is unreadable
or of another format or version is moved aside to ``journal.corrupt-<unix time>`` with a logged
error, as a corrupt checkpoint is; one made under other ``[schema] features`` is read
(``recovered_features`` says which: its readings are replayed by name). ``check``
tells whether the path still names the open file (the folder deleted or replaced underneath).
"""

from __future__ import annotations

import logging
import math
import os
import secrets
import struct
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path

import msgpack

from edgebayes.runtime.checkpoint import fsync_dir, read_document

FORMAT = "edgebayes-journal"
VERSION = 2
VERSIONS = (1, 2)  # read back; version 1: entry CRCs not seeded with the journal id
FRAME = struct.Struct("<II")  # body length in bytes, zlib.crc32 of the body
READ_BYTES = 1 << 18  # bytes read at once when reading a journal back

log = logging.getLogger(__name__)


class JournalError(ValueError):
    """A journal file that cannot be used (its header is unreadable or foreign)."""


class Journal:
    """The runtime's write-ahead journal of incoming messages (see the module docstring).

    Args:
        directory: the checkpoint folder (must exist); the journal is ``directory/journal``.
        features: the schema's feature names; a journal made for others is moved aside.
        max_payload_bytes: ``[queue] max_payload_bytes``; a frame longer than that plus the
            longest MQTT topic (65,535 bytes) is treated as torn when reading back.

    Attributes:
        size: bytes in the journal file, including appends not yet synced.
        n_entries: messages in the journal file.
        n_syncs: ``fdatasync`` calls made on the journal since start.
    """

    def __init__(self, directory: str | Path, features: tuple[str, ...], max_payload_bytes: int):
        self.dir = Path(directory)
        self.path = self.dir / "journal"
        self.features = list(features)
        self.max_entry_bytes = max_payload_bytes + 65535 + 32  # + topic + time + msgpack's framing
        self.id: str | None = None
        self.size = self.n_entries = 0
        self.n_syncs = 0
        self._f = None
        self._first_entry = 0  # offset of the first entry (after the header) of the open journal
        self.recovered_features: list[str] = self.features  # [schema] features of the journal recover() read
        self._unsynced = False

    # --- reading back ---------------------------------------------------------------------
    def recover(self) -> tuple[str | None, Iterator[tuple[int, str, bytes, float | None]]]:
        """The journal left by the last run: its id and its entries ``(offset, topic, payload,
        t)`` in append order (offset: the frame's first byte in the file; ``t``: when it was
        received, Unix s, None in a version 1 journal), read one frame at a time (memory: about
        two of the longest frames, whatever the journal's length). ``(None, no entries)`` when
        there is no journal or it was moved aside. Until ``rotate``, ``position()`` is the end of
        that journal. Never raises for a bad file (see the module docstring); an ``OSError``
        reading it propagates."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return None, iter(())
        try:
            jid, pos, seed = self._header(fd)
        except JournalError as exc:
            os.close(fd)
            self.move_aside(str(exc))
            return None, iter(())
        except BaseException:
            os.close(fd)
            raise
        self.id, self.size = jid, os.fstat(fd).st_size
        return jid, self._closing(fd, self._scan(fd, pos, seed))

    @staticmethod
    def _closing(fd: int, frames: Iterator) -> Iterator:
        try:
            yield from frames
        finally:
            os.close(fd)

    def entries(self) -> Iterator[tuple[int, str, bytes, float | None]]:
        """The entries of the open journal, as ``recover`` gives them (appends flushed first)."""
        self._f.flush()
        return self._scan(self._f.fileno(), self._first_entry, _seed(self.id))

    def _header(self, fd: int) -> tuple[str, int, int]:
        """The journal's id, the offset of its first entry and its entries' CRC seed."""
        head = os.pread(fd, FRAME.size, 0)
        length, crc = FRAME.unpack(head) if len(head) == FRAME.size else (0, None)
        body = os.pread(fd, length, FRAME.size) if length <= self.max_entry_bytes else b""
        if crc is None or len(body) != length or zlib.crc32(body) != crc:
            raise JournalError(f"{self.path}: no readable header")
        doc = read_document(body, self.path, "journal", FORMAT, VERSIONS, None, JournalError)
        if not isinstance(doc.get("id"), str):
            raise JournalError(f"{self.path}: no journal id")
        features = doc.get("features")
        if not (isinstance(features, list) and all(isinstance(f, str) for f in features)):
            raise JournalError(f"{self.path}: no feature list")
        self.recovered_features = features
        return doc["id"], FRAME.size + length, _seed(doc["id"]) if doc["version"] >= 2 else 0

    def _scan(self, fd: int, pos: int, seed: int) -> Iterator[tuple[int, str, bytes, float | None]]:
        """The entries of the file ``fd`` from byte ``pos`` (CRCs from ``seed``). An unreadable frame is skipped up
        to the next frame that reads (a sane length, its CRC-32, an entry's msgpack): logged as
        corruption when entries follow, as a torn tail when none does."""
        size = os.fstat(fd).st_size
        window = FRAME.size + self.max_entry_bytes  # the longest frame the writer writes
        buf, base = b"", pos  # buf: the file's bytes from offset base
        bad = None  # offset of the first unreadable byte since the last good frame
        while pos < size:
            i = pos - base
            if len(buf) - i < window and base + len(buf) < size:
                more = os.pread(fd, max(READ_BYTES, window), base + len(buf))
                if not more:  # shorter than it was: read what there is
                    size = base + len(buf)
                buf, base = buf[i:] + more, pos
                continue
            entry, end = self._frame(buf, i, seed)
            if entry is None:
                bad = pos if bad is None else bad
                pos += 1
                continue
            if bad is not None:
                log.warning("journal %s: %d unreadable bytes at byte %d skipped (corrupt, not a torn write: "
                            "entries follow); the entries after them are replayed", self.path, pos - bad, bad)
                bad = None
            yield pos, *entry
            pos = base + end
        if bad is not None:
            log.warning("journal %s: torn or corrupt entry at byte %d; its last %d bytes are dropped "
                        "(a write cut short by a crash or power cut)", self.path, bad, size - bad)

    def _frame(self, data: bytes, i: int, seed: int) -> tuple[tuple[str, bytes, float | None] | None, int]:
        """The entry of the frame at ``data[i:]`` and the index after it; None if none reads."""
        if i + FRAME.size > len(data):
            return None, i
        length, crc = FRAME.unpack_from(data, i)
        start, end = i + FRAME.size, i + FRAME.size + length
        if length > self.max_entry_bytes or end > len(data):
            return None, i
        body = data[start:end]
        if zlib.crc32(body, seed) != crc:
            return None, i
        return _entry(body), end

    def move_aside(self, reason: str) -> Path:
        """Rename the journal to ``journal.corrupt-<unix time>`` (kept for inspection), logged
        at ERROR with ``reason``; ``OSError`` if it cannot be renamed."""
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        os.replace(self.path, aside)
        log.error("journal is unusable (%s); moved to %s, its messages are not replayed", reason, aside)
        return aside

    # --- writing --------------------------------------------------------------------------
    def rotate(self, keep: Iterable[tuple[str, bytes, float | None]] = ()) -> None:
        """Start a new journal with a new id holding ``keep`` (``(topic, payload, t)``, in
        order, taken one at a time): written to a temporary file, fsynced, renamed over the old
        one, folder fsynced; the folder is created again if it is gone.

        Raises:
            OSError: the new journal could not be written; appends still go to the old one.
        """
        self.dir.mkdir(parents=True, exist_ok=True)
        jid = secrets.token_hex(8)
        tmp = self.path.with_name(self.path.name + ".tmp")
        f = open(tmp, "w+b")  # noqa: SIM115 (kept open for appends after the rename; read by entries())
        try:
            header = msgpack.packb({"format": FORMAT, "version": VERSION, "features": self.features,
                                    "id": jid}, use_bin_type=True)
            size = first = _write_frame(f, header)
            n = 0
            for topic, payload, t in keep:
                size += _write_frame(f, self._body(topic, payload, t), _seed(jid))
                n += 1
            f.flush()
            os.fsync(f.fileno())
            os.replace(tmp, self.path)
            fsync_dir(self.dir)
        except BaseException:
            f.close()
            raise
        self.close()
        self._f, self.id, self.size, self.n_entries, self._unsynced = f, jid, size, n, False
        self._first_entry = first
        self.n_syncs += 1

    def append(self, topic: str, payload: bytes, t: float | None = None) -> None:
        """Add one message received at ``t`` (Unix s; None: now), buffered; durable after the
        next ``sync``.

        Raises:
            JournalError: the entry is longer than a reader accepts (nothing written).
        """
        self.size += _write_frame(self._f, self._body(topic, payload, time.time() if t is None else t),
                                  _seed(self.id))
        self.n_entries += 1
        self._unsynced = True

    def _body(self, topic: str, payload: bytes, t: float | None) -> bytes:
        body = msgpack.packb([topic, bytes(payload), t], use_bin_type=True)
        if len(body) > self.max_entry_bytes:
            raise JournalError(f"an entry of {len(body)} bytes is longer than a journal reader accepts "
                               f"({self.max_entry_bytes})")
        return body

    def sync(self) -> None:
        """Make every append so far durable (flush, ``fdatasync``); nothing to do: no call."""
        if self._unsynced:
            self._f.flush()
            os.fdatasync(self._f.fileno())
            self._unsynced = False
            self.n_syncs += 1

    def check(self) -> None:
        """Check that the journal's path still names the open file.

        Raises:
            JournalError: the file was deleted or replaced (the checkpoint folder deleted or
                swapped underneath): what is appended to it is on no path a restart reads.
        """
        own = os.fstat(self._f.fileno())
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            raise JournalError(f"{self.path} is gone (the checkpoint folder was deleted?)") from None
        if own.st_nlink == 0 or (st.st_ino, st.st_dev) != (own.st_ino, own.st_dev):
            raise JournalError(f"{self.path} was deleted or replaced underneath the runtime")

    def position(self) -> list:
        """``[id, offset]``: every entry appended so far starts before ``offset`` in this journal."""
        return [self.id, self.size]

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def _seed(jid: str) -> int:
    """Where the CRC-32 of a journal's entries starts: the CRC-32 of its id."""
    return zlib.crc32(jid.encode())


def _write_frame(f, body: bytes, seed: int = 0) -> int:
    f.write(FRAME.pack(len(body), zlib.crc32(body, seed)) + body)  # one buffered write, not two
    return FRAME.size + len(body)


def _entry(body: bytes | None) -> tuple[str, bytes, float | None] | None:
    """``(topic, payload, t)`` of an entry frame's body, None if it is not one."""
    if body is None:
        return None
    try:
        doc = msgpack.unpackb(body, raw=False)
    except (msgpack.UnpackException, ValueError, TypeError):
        return None
    if not (isinstance(doc, list) and len(doc) in (2, 3) and isinstance(doc[0], str) and isinstance(doc[1], bytes)):
        return None
    t = doc[2] if len(doc) == 3 else None
    if t is not None and not (type(t) is float and math.isfinite(t)):
        return None
    return doc[0], doc[1], t

