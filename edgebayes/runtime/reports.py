"""Error reports: every refusal counted, at most one report per error topic per interval.

A report goes out on the device's error topic (the runtime's when no device can be named)
unless that topic had one under ``[output] error_interval_s`` ago; the reports dropped are
counted and the next one sent says how many (``n_suppressed``). At most
``MAX_ERROR_TOPICS`` topics' last report times are remembered: past them the other topics
share one limit, so junk device ids cannot grow the runtime's memory (docs/protocol.md
"Error report").
"""

from __future__ import annotations

import logging
import time
from collections import Counter

from edgebayes.runtime import payloads
from edgebayes.runtime.messages import ProtocolError
from edgebayes.runtime.payloads import Outbox

log = logging.getLogger(__name__)

#: error topics whose last report time is remembered at once (about 260 bytes each); quiet ones
#: are forgotten after error_interval_s
MAX_ERROR_TOPICS = 4096


class ErrorReports:
    """Counts and rate-limits the error reports of one runtime (worker thread).

    Args:
        interval_s: ``[output] error_interval_s``.

    Attributes:
        errors: error kind -> count (every refusal, reported or not).
        n_errors_suppressed: reports dropped by the rate limit.
    """

    def __init__(self, interval_s: float):
        self.interval_s = interval_s
        self.errors: Counter = Counter()
        self.n_errors_suppressed = 0
        self.last_error: dict[str | None, float] = {}  # at most MAX_ERROR_TOPICS + 1 (None: the rest)
        self.suppressed: Counter = Counter()

    def report(self, exc: ProtocolError, topic: str, device: str | None, out: Outbox, logged: bool = False) -> None:
        """Count a problem with a message on ``topic`` and publish it through ``out`` on
        ``device``'s error topic unless the rate limit holds it. ``logged``: the caller
        logged it already."""
        out_topic = out.error_topic(device)
        self.errors[exc.kind] += 1
        now = time.monotonic()
        last_error = self.last_error
        key = out_topic if out_topic in last_error or len(last_error) < MAX_ERROR_TOPICS else None
        last = last_error.get(key)
        if last is not None and now - last < self.interval_s:
            self.suppressed[key] += 1
            self.n_errors_suppressed += 1
            return
        last_error[key] = now
        if not logged:
            log.warning("%s on %s: %s", exc.kind, topic, exc)
        out.error(device, payloads.error_report(topic, exc.seq, exc.kind, str(exc), self.suppressed.pop(key, 0)))

    def forget_quiet(self) -> None:
        """Forget the topics without a report for ``interval_s`` and none suppressed since."""
        horizon = time.monotonic() - self.interval_s
        for t in [t for t, last in self.last_error.items() if last < horizon and not self.suppressed[t]]:
            del self.last_error[t]
