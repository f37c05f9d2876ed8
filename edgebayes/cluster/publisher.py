"""The worker's client in a cluster: outputs go to NATS under the normal prefix, and each
message the worker is done with is told to the partition feed (``ack``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from edgebayes.cluster.subjects import subject

log = logging.getLogger(__name__)


class NatsPublisher:
    """The worker's `edgebayes.runtime.publisher.Session` in a cluster (``publish``, ``ack``,
    ``wait_for_room``), called from the worker thread; the NATS connection lives on ``loop``
    (another thread). ``n_connects`` stays 0: a message id is the partition feed's, valid across
    NATS reconnects.

    Args:
        loop: nats-py's event loop.
        on_done: ``on_done(mid)``: the worker processed (or dropped) message ``mid``.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, on_done: Callable[[int], None]):
        self.loop = loop
        self.on_done = on_done
        self.nc = None  # set once connected
        self.n_connects = 0
        self.n_publish_failed = 0

    def publish(self, topic: str, payload: bytes, qos: int = 0, retain: bool = False):
        """Publish ``payload`` on the subject of MQTT topic ``topic`` (NATS keeps no retained
        message; an MQTT subscriber of the gateway gets it as any NATS message)."""
        nc = self.nc
        if nc is None or nc.is_closed:
            self.n_publish_failed += 1
            return None
        fut = asyncio.run_coroutine_threadsafe(nc.publish(subject(topic), payload), self.loop)
        fut.add_done_callback(self._published)
        return None

    def _published(self, fut) -> None:
        if fut.cancelled() or fut.exception() is not None:
            self.n_publish_failed += 1

    def ack(self, mid: int, qos: int) -> None:
        self.on_done(mid)

    def wait_for_room(self, timeout_s: float) -> bool:
        """True while connected (nats-py buffers what is published during a reconnect)."""
        nc = self.nc
        if nc is not None and not nc.is_closed:
            return True
        time.sleep(timeout_s)
        return False
