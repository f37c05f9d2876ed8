"""Where a reading's CPU goes: py-spy's raw (collapsed) samples of ``edgebayes run`` as shares.

Each sample is a stack, root first, ``frame;frame;... count`` with frames like
``publish (edgebayes/runtime/mqtt.py:412)``. A sample is charged to the share of the frame
nearest its leaf that a rule of ``SHARES`` names (a rule: a file path suffix, optionally with
function names); library frames no rule names (json, msgpack, threading) are charged to their
caller's share, so ``json.dumps`` under ``Outbox.prediction`` is "prediction encode" and under
``Journal.append`` is "journal". Samples no rule names at all are "other".

    python bench/profile.py FILE [FILE ...]     # py-spy record --format raw output

``bench/runtime.py --profile DIR`` records one file per run (``py-spy record --gil``: only the
thread holding the GIL is sampled, which is where a Python process's CPU goes) and prints its
shares.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

#: (share, file path suffix or folder, function names or None for any), tried in order for each
#: frame; share None: the frame is a helper its caller's share takes (``codec.encode`` serves the
#: prediction, the metrics and the error reports alike)
RULES: list[tuple[str | None, str, frozenset[str] | None]] = [
    (None, "edgebayes/codec.py", frozenset({"encode", "_plain"})),
    (None, "edgebayes/runtime/mqtt.py", frozenset({"_wake", "<lambda>"})),
    (None, "edgebayes/base.py", None),  # input checks of the parser and of the learners alike
    ("ack", "edgebayes/runtime/mqtt.py", frozenset({"ack"})),
    ("ack", "edgebayes/runtime/acks.py", frozenset({"ack", "ack_all", "_ack_processed"})),
    ("publish", "edgebayes/runtime/mqtt.py", frozenset({"publish", "_count_out", "_done_out", "_on_publish",
                                                        "has_room", "wait_for_room"})),
    ("journal", "edgebayes/runtime/journal.py", None),
    ("journal", "edgebayes/runtime/acks.py", frozenset({"commit", "commit_due"})),
    ("prediction encode", "edgebayes/runtime/payloads.py", frozenset({"prediction", "prediction_json", "_json"})),
    ("metrics and periodic", "edgebayes/runtime/payloads.py", None),
    ("metrics and periodic", "edgebayes/runtime/periodic.py", None),
    ("metrics and periodic", "edgebayes/runtime/memory.py", None),
    ("metrics and periodic", "edgebayes/runtime/worker.py",
     frozenset({"metrics", "_tick_if_due", "_metrics_due", "_expire_pending", "_checkpoint_due", "_assembled"})),
    ("model", "edgebayes/runtime/device.py", frozenset({"predict", "learn"})),
    ("decode", "edgebayes/runtime/ingest/native.py", frozenset({"_decode"})),
    ("decode", "edgebayes/codec.py", frozenset({"decode", "sniff"})),
    ("validation", "edgebayes/runtime/ingest/", None),
    ("validation", "edgebayes/runtime/topics.py", None),
    ("validation", "edgebayes/runtime/device.py", None),
    ("queue handoff", "edgebayes/runtime/worker.py", frozenset({"submit", "can_take", "_run"})),
    ("queue handoff", "edgebayes/runtime/inbox.py", None),
    ("queue handoff", "edgebayes/runtime/mqtt.py", frozenset({"_deliver", "_deliver_held", "_on_message",
                                                              "_reading"})),
    ("queue handoff", "edgebayes/runtime/service.py", frozenset({"_submit", "_can_take"})),
    ("queue handoff", "queue.py", None),
    ("network read and MQTT parsing", "edgebayes/runtime/mqtt.py", frozenset({"_run", "_serve"})),
    ("network read and MQTT parsing", "edgebayes/runtime/paho_client.py", None),
    ("runtime glue", "edgebayes/runtime/", None),
    *(("model", f"edgebayes/{m}", None) for m in
      ("_core/", "tree/", "ensemble/", "drift/", "naive_bayes", "budget.py", "sizes.py", "metrics.py")),
]
#: paho's own frames: charged only when no frame of ``RULES`` is on the stack (our ``publish``
#: calling paho's is "publish"; paho's reading loop calling nothing of ours is the network read)
LIBRARY: list[tuple[str, str, frozenset[str] | None]] = [
    ("network read and MQTT parsing", "paho/mqtt/", None),
    ("network read and MQTT parsing", "selectors.py", None),
    ("network read and MQTT parsing", "socket.py", None),
    ("network read and MQTT parsing", "ssl.py", None),
]

ORDER = ["network read and MQTT parsing", "queue handoff", "decode", "validation", "journal", "model",
         "prediction encode", "publish", "ack", "runtime glue", "metrics and periodic", "other"]

_FRAME = re.compile(r"^(?P<func>[^ ]+) \((?P<file>[^:)]+)(?::\d+)?\)$")
_UNNAMED = object()
_COMPREHENSIONS = frozenset({"<listcomp>", "<genexpr>", "<dictcomp>", "<setcomp>"})


def _match(frame: str, rules) -> str | object | None:
    """The share ``rules`` give a frame (None: a helper), ``_UNNAMED`` when no rule names it."""
    m = _FRAME.match(frame)
    if m is None:
        return _UNNAMED
    parts = m["func"].split(".")
    while len(parts) > 1 and parts[-1] in _COMPREHENSIONS:  # a comprehension: its function's share
        parts = parts[:-2] if parts[-2] == "<locals>" else parts[:-1]
    func, path = parts[-1], m["file"].replace("\\", "/")
    for name, where, funcs in rules:
        at = where in path if where.endswith("/") or "/" not in where else path.endswith(where)
        if at and (funcs is None or func in funcs):
            return name
    return _UNNAMED


def classify(stack: str) -> str:
    """The share of one collapsed stack (``root;...;leaf``): its frame nearest the leaf that a
    rule of ``RULES`` names, else of ``LIBRARY``, else "other"."""
    frames = stack.split(";")[::-1]
    for rules in (RULES, LIBRARY):
        for frame in frames:
            name = _match(frame, rules)
            if name is not _UNNAMED and name is not None:
                return name
    return "other"


def shares(lines) -> Counter:
    """Samples per share of py-spy raw lines (``stack count``)."""
    out: Counter = Counter()
    for line in lines:
        line = line.rstrip("\n")
        if not line:
            continue
        stack, _, count = line.rpartition(" ")
        out[classify(stack)] += int(count)
    return out


def table(counts: Counter, title: str) -> str:
    """A markdown table of ``counts`` as percentages."""
    total = sum(counts.values()) or 1
    rows = [f"| {name} | {100 * counts[name] / total:.1f} % |" for name in ORDER if counts[name]]
    return "\n".join([f"{title} ({total} samples)", "", "| share | of samples |", "|---|---:|", *rows])


def main(argv: list[str]) -> int:
    for path in argv:
        print(table(shares(Path(path).read_text().splitlines()), path), end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
