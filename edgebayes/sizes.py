"""Bytes Python containers gain when items are added: how learners with ``max_size_bytes``
plan a new class or nominal value before adding it (CPython's sizes, as ``sys.getsizeof``)."""

from __future__ import annotations

import struct
import sys

_PTR = struct.calcsize("P")


def append_bytes(items: list, n: int) -> int:
    """Most bytes appending ``n`` items to the list ``items`` can add to its size (not the
    items'): a full list grows its slots by about an eighth plus a few."""
    slots = (sys.getsizeof(items) - sys.getsizeof([])) // _PTR
    m = len(items) + n
    return 0 if m <= slots else _PTR * (m + m // 8 + 8 - slots)


def insert_bytes(table: dict, keys) -> int:
    """Bytes inserting ``keys`` (new, hashable) adds to the size of the dict ``table``
    (not the keys' or values'): found on a copy, which grows as the dict would when nothing
    was ever deleted from it."""
    trial = table.copy()
    trial.update(dict.fromkeys(keys))
    return sys.getsizeof(trial) - sys.getsizeof(table)
