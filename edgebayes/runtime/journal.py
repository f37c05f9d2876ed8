"""The write-ahead journal: every reading and label is on disk before the broker is told so.

One file per runtime, ``<checkpoint dir>/journal``: a sequence of frames, each
``<u32 length><u32 crc32>`` (little-endian) followed by ``length`` bytes of msgpack. The first
frame is the header ``{"format": "edgebayes-journal", "version": 1, "features": [...],
"id": "<16 hex digits>"}``; every other frame is one message as it came from the broker,
``[topic, payload]`` (str, bytes). The worker appends a message before processing it and
acknowledges it to the broker only after ``sync`` (one ``fdatasync`` for a whole group of
messages), so a message the broker holds as acknowledged is in the journal, in a checkpoint,
or both.

A device's checkpoint records the journal position its state includes (``position``:
``[id, offset]``). At start the runtime replays, for each device, the entries after that
position (all of them when the checkpoint names another journal id), so a crash between a
checkpoint write and the start of a new journal never learns an entry twice. After every
checkpoint round that wrote all changed devices, ``rotate`` starts a new, empty journal with
a new random id (written to a temporary file, fsynced, renamed, folder fsynced), which bounds
the journal to one checkpoint interval of messages.

Reading back (``recover``): a torn or corrupt frame (a power cut mid-append: short, longer
than the longest message accepted, bad checksum, not msgpack) ends the journal: it and whatever follows
are dropped with a logged warning, never an exception. A journal whose header is unreadable,
of another format or version, or made for another feature schema is moved aside to
``journal.corrupt-<unix time>`` with a logged error, as a corrupt checkpoint is.
"""

from __future__ import annotations

import logging
import os
import secrets
import struct
import time
import zlib
from pathlib import Path

import msgpack

from edgebayes.runtime.checkpoint import fsync_dir, read_document

FORMAT = "edgebayes-journal"
VERSION = 1
FRAME = struct.Struct("<II")  # body length in bytes, zlib.crc32 of the body

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
        self.max_entry_bytes = max_payload_bytes + 65535 + 16  # + topic + msgpack's framing
        self.id: str | None = None
        self.size = self.n_entries = 0
        self.n_syncs = 0
        self._f = None
        self._unsynced = False

    # --- reading back ---------------------------------------------------------------------
    def recover(self) -> tuple[str | None, list[tuple[int, str, bytes]]]:
        """The journal left by the last run: its id and its entries ``(offset, topic, payload)``
        in append order (offset: the frame's first byte in the file). ``(None, [])`` when there
        is no journal or it was moved aside. Never raises for a bad file (see the module
        docstring); an ``OSError`` reading it propagates."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return None, []
        try:
            jid, pos = self._header(data)
        except JournalError as exc:
            self._move_aside(str(exc))
            return None, []
        entries = []
        while pos < len(data):
            body, end = self._frame(data, pos)
            entry = _entry(body)
            if entry is None:
                log.warning("journal %s: torn or corrupt entry at byte %d; its last %d bytes are dropped "
                            "(a write cut short by a crash or power cut)", self.path, pos, len(data) - pos)
                break
            entries.append((pos, *entry))
            pos = end
        return jid, entries

    def _header(self, data: bytes) -> tuple[str, int]:
        body, end = self._frame(data, 0)
        if body is None:
            raise JournalError(f"{self.path}: no readable header")
        doc = read_document(body, self.path, "journal", FORMAT, VERSION, self.features, JournalError)
        if not isinstance(doc.get("id"), str):
            raise JournalError(f"{self.path}: no journal id")
        return doc["id"], end

    def _frame(self, data: bytes, pos: int) -> tuple[bytes | None, int]:
        """The body of the frame at ``pos`` and the offset after it; None for a torn frame."""
        if pos + FRAME.size > len(data):
            return None, pos
        length, crc = FRAME.unpack_from(data, pos)
        start, end = pos + FRAME.size, pos + FRAME.size + length
        if length > self.max_entry_bytes or end > len(data):
            return None, pos
        body = data[start:end]
        if zlib.crc32(body) != crc:
            return None, pos
        return body, end

    def _move_aside(self, reason: str) -> Path:
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        os.replace(self.path, aside)
        log.error("journal is unusable (%s); moved to %s, its messages are not replayed", reason, aside)
        return aside

    # --- writing --------------------------------------------------------------------------
    def rotate(self, keep: list[tuple[str, bytes]] = ()) -> None:
        """Start a new journal with a new id holding ``keep`` (``(topic, payload)`` pairs, in
        order): written to a temporary file, fsynced, renamed over the old one, folder fsynced.

        Raises:
            OSError: the new journal could not be written; appends still go to the old one.
        """
        jid = secrets.token_hex(8)
        tmp = self.path.with_name(self.path.name + ".tmp")
        f = open(tmp, "wb")  # noqa: SIM115 (kept open for appends after the rename)
        try:
            header = msgpack.packb({"format": FORMAT, "version": VERSION, "features": self.features,
                                    "id": jid}, use_bin_type=True)
            size = _write_frame(f, header)
            for topic, payload in keep:
                size += _write_frame(f, msgpack.packb([topic, bytes(payload)], use_bin_type=True))
            f.flush()
            os.fsync(f.fileno())
            os.replace(tmp, self.path)
            fsync_dir(self.dir)
        except BaseException:
            f.close()
            raise
        self.close()
        self._f, self.id, self.size, self.n_entries, self._unsynced = f, jid, size, len(keep), False
        self.n_syncs += 1

    def append(self, topic: str, payload: bytes) -> None:
        """Add one message (buffered; durable after the next ``sync``)."""
        self.size += _write_frame(self._f, msgpack.packb([topic, bytes(payload)], use_bin_type=True))
        self.n_entries += 1
        self._unsynced = True

    def sync(self) -> None:
        """Make every append so far durable (flush, ``fdatasync``); nothing to do: no call."""
        if self._unsynced:
            self._f.flush()
            os.fdatasync(self._f.fileno())
            self._unsynced = False
            self.n_syncs += 1

    def position(self) -> list:
        """``[id, offset]``: every entry appended so far starts before ``offset`` in this journal."""
        return [self.id, self.size]

    def close(self) -> None:
        if self._f is not None:
            self._f.close()
            self._f = None


def _write_frame(f, body: bytes) -> int:
    f.write(FRAME.pack(len(body), zlib.crc32(body)))
    f.write(body)
    return FRAME.size + len(body)


def _entry(body: bytes | None) -> tuple[str, bytes] | None:
    """``(topic, payload)`` of an entry frame's body, None if it is not one."""
    if body is None:
        return None
    try:
        doc = msgpack.unpackb(body, raw=False)
    except (msgpack.UnpackException, ValueError, TypeError):
        return None
    if not (isinstance(doc, list) and len(doc) == 2 and isinstance(doc[0], str) and isinstance(doc[1], bytes)):
        return None
    return doc[0], doc[1]

