"""pytest plugin for deploy/pi/check.sh: the test selection run under ARM emulation.

Keeps every test that needs no broker (uses no fixture with "broker" in its name, directly or
through another fixture) and matches none of the space-separated fnmatch patterns in
``EDGEBAYES_PI_EXCLUDE`` (for tests that start brokers of their own), plus the end-to-end tests
whose node id matches a pattern in ``EDGEBAYES_PI_E2E`` (those run against Mosquitto inside the
emulated root). ``EDGEBAYES_PI_ONLY``, when set, narrows the broker-free part to the tests
matching one of its patterns. Writes how many end-to-end tests it kept to
``EDGEBAYES_PI_E2E_COUNT_FILE`` so that the script can fail when the end-to-end pattern matched
nothing.

At the end it prints the outcomes per backend: tests parametrised by the ``backend`` fixture
(tests/conftest.py) are counted under "compiled" or "python", the rest under "neither".
"""

import fnmatch
import os

#: node id -> "compiled" / "python" (the backend fixture's parameter) for the kept tests
_BACKEND_OF: dict[str, str] = {}


def _matches(nodeid: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(nodeid, p) for p in patterns)


def _needs_broker(item) -> bool:
    return any("broker" in name for name in getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(config, items):
    e2e = os.environ.get("EDGEBAYES_PI_E2E", "").split()
    exclude = os.environ.get("EDGEBAYES_PI_EXCLUDE", "").split()
    only = os.environ.get("EDGEBAYES_PI_ONLY", "").split()
    keep, drop, n_e2e = [], [], 0
    for item in items:
        if _matches(item.nodeid, e2e):
            keep.append(item)
            n_e2e += 1
        elif (_needs_broker(item) or _matches(item.nodeid, exclude)
              or (only and not _matches(item.nodeid, only))):
            drop.append(item)
        else:
            keep.append(item)
    for item in keep:
        callspec = getattr(item, "callspec", None)
        if callspec is not None and "backend" in callspec.params:
            _BACKEND_OF[item.nodeid] = callspec.params["backend"]
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    count_file = os.environ.get("EDGEBAYES_PI_E2E_COUNT_FILE")
    if count_file:
        with open(count_file, "w") as f:
            f.write(f"{n_e2e}\n")


def pytest_terminal_summary(terminalreporter):
    outcomes = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
    counts: dict[str, dict[str, set]] = {}
    for outcome in outcomes:
        for report in terminalreporter.stats.get(outcome, []):
            nodeid = getattr(report, "nodeid", None)
            if not nodeid:
                continue
            group = _BACKEND_OF.get(nodeid, "neither")
            counts.setdefault(group, {o: set() for o in outcomes})[outcome].add(nodeid)
    terminalreporter.write_sep("=", "outcomes per backend (the backend fixture's parameter)")
    for group in ("compiled", "python", "neither"):
        if group in counts:
            line = ", ".join(f"{len(counts[group][o])} {o}" for o in outcomes
                             if counts[group][o] or o in ("passed", "failed", "skipped"))
            terminalreporter.write_line(f"backend {group:8s} {line}")
