"""The worker's inbox: the bounded FIFO between the network thread and the worker.

A ``queue.Queue`` takes its lock and notifies its condition on every ``put`` and every
``get``: for a reading that is two lock rounds and a wake-up of the other thread, each a
hand-over of the GIL. Here the producer appends to a ``collections.deque`` (atomic under the
GIL) and wakes the consumer only when it sleeps, and the consumer takes items with
``popleft`` until the deque is empty before it sleeps again. A producer that hands over a
round of messages at once (the MQTT network thread, one socket read) puts them with
``wake=False`` and calls ``wake`` after the round: a round costs one wake-up, not one per
message (after ``WAKE_AFTER`` items the consumer is woken anyway, so a long round does not
leave it idle). The FIFO order is the deque's.
"""

from __future__ import annotations

import collections
import threading
from typing import Any

#: items put with wake=False while the consumer sleeps before it is woken all the same
WAKE_AFTER = 32


class Inbox:
    """A bounded FIFO of messages: one producer thread (``put``, ``drop_oldest``), one consumer
    (``take``, ``wait``).

    Args:
        max_size: most items held; ``full`` says when it is reached (``put`` then waits).
    """

    def __init__(self, max_size: int):
        self.max_size = max_size
        self._items: collections.deque = collections.deque()
        self._ready = threading.Event()  # set by put while the consumer sleeps in wait
        self._space = threading.Event()  # set by take while a producer waits in put
        self._sleeping = False
        self._producer_waiting = False

    def put(self, item: Any, wake: bool = True) -> None:
        """Append ``item``, first waiting while the inbox is full (the consumer makes room).
        ``wake=False``: the producer calls ``wake`` after more (``WAKE_AFTER``)."""
        items = self._items
        while len(items) >= self.max_size:
            self._space.clear()
            self._producer_waiting = True
            if len(items) >= self.max_size:  # a take between the check and the flag set it
                self._space.wait(0.1)
            self._producer_waiting = False
        items.append(item)
        if self._sleeping and (wake or len(items) >= WAKE_AFTER):  # after the append: see wait
            self._ready.set()

    def wake(self) -> None:
        """Wake the consumer if it sleeps with items waiting (after puts with ``wake=False``)."""
        if self._sleeping and self._items:
            self._ready.set()

    def drop_oldest(self) -> Any | None:
        """Remove and return the oldest item (the producer, to make room), None if empty."""
        try:
            return self._items.popleft()
        except IndexError:
            return None

    def take(self) -> Any | None:
        """The oldest item, removed, or None when the inbox is empty (never waits)."""
        try:
            item = self._items.popleft()
        except IndexError:
            return None
        if self._producer_waiting:
            self._space.set()
        return item

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` seconds for an item (the consumer, when ``take`` gave None);
        whether there is one."""
        if self._items:
            return True
        self._ready.clear()
        self._sleeping = True
        try:
            if not self._items:  # a put before the flag was set did not set the event
                self._ready.wait(timeout_s)
        finally:
            self._sleeping = False
        return bool(self._items)

    def full(self) -> bool:
        return len(self._items) >= self.max_size

    def empty(self) -> bool:
        return not self._items

    def qsize(self) -> int:
        return len(self._items)
