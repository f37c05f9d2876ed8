"""The seqs a device's current seq epoch has accepted, so that each reading is taken once.

A broker restarted after a crash can deliver a device's new readings before the ones it kept
for the runtime, thousands of seqs apart; so "above the last accepted seq" cannot tell a
redelivery from a reading not seen yet. `SeqRuns` remembers every accepted seq as sorted,
disjoint runs ``[start, end]``: a stream in order is one run, each gap left by a reading still
to come splits one. At most `MAX_RUNS` runs are kept (16 bytes each); past it the two oldest
merge, and the seqs between them count as accepted (a reading among them that arrives later
still is refused as a duplicate).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right

#: most runs of accepted seqs kept per device
MAX_RUNS = 1024


class SeqRuns:
    """Accepted seqs as runs, in a flat int64 array ``start0, end0, start1, end1, ...``.

    Args:
        runs: the flat runs (``state()``), sorted, disjoint and not adjacent.

    Raises:
        ValueError: ``runs`` is not an even-length list of ints in [0, 2**63) that are sorted
            runs with a gap between each two, or holds more than `MAX_RUNS` runs.
    """

    __slots__ = ("runs",)

    def __init__(self, runs: list[int] = ()):
        if not isinstance(runs, list | tuple) or len(runs) % 2 or len(runs) > 2 * MAX_RUNS:
            raise ValueError(f"seq runs must be an even-length list of at most {2 * MAX_RUNS} ints")
        if not all(type(v) is int and 0 <= v < 2**63 for v in runs):
            raise ValueError("seq runs must hold ints in [0, 2**63)")
        if any(runs[i] > runs[i + 1] for i in range(0, len(runs), 2)) or any(
                runs[i] + 1 >= runs[i + 1] for i in range(1, len(runs) - 1, 2)):
            raise ValueError("seq runs must be sorted, each start <= its end, with a gap between runs")
        self.runs = array("q", runs)

    def __contains__(self, seq: int) -> bool:
        runs = self.runs
        i = bisect_right(runs, seq)  # odd: inside a run; even: after the end of run i//2 - 1
        return i % 2 == 1 or (i > 0 and runs[i - 1] == seq)

    def __len__(self) -> int:
        """The number of runs."""
        return len(self.runs) // 2

    def add(self, seq: int) -> None:
        """Record ``seq`` (not in the runs) as accepted, joining the runs it touches."""
        runs = self.runs
        i = bisect_right(runs, seq)  # even: seq lies between run i//2 - 1 and run i//2
        after_prev = i > 0 and runs[i - 1] == seq - 1
        before_next = i < len(runs) and runs[i] == seq + 1
        if after_prev and before_next:
            del runs[i - 1:i + 1]
        elif after_prev:
            runs[i - 1] = seq
        elif before_next:
            runs[i] = seq
        else:
            runs[i:i] = array("q", (seq, seq))
            if len(runs) > 2 * MAX_RUNS:
                del runs[1:3]  # the two oldest runs merge

    def state(self) -> list[int]:
        """The flat runs as plain ints (msgpack and JSON)."""
        return self.runs.tolist()
