"""pytest plugin for deploy/pi/check.sh: the test selection run under ARM emulation.

Keeps every test that needs no broker (uses no fixture with "broker" in its name, directly or
through another fixture) and matches none of the space-separated fnmatch patterns in
``EDGEBAYES_PI_EXCLUDE`` (for tests that start brokers of their own), plus the end-to-end tests
whose node id matches a pattern in ``EDGEBAYES_PI_E2E`` (those run against Mosquitto inside the
emulated root). Writes how many end-to-end tests it kept to ``EDGEBAYES_PI_E2E_COUNT_FILE`` so
that the script can fail when the end-to-end pattern matched nothing.
"""

import fnmatch
import os


def _matches(nodeid: str, patterns: list[str]) -> bool:
    return any(fnmatch.fnmatchcase(nodeid, p) for p in patterns)


def _needs_broker(item) -> bool:
    return any("broker" in name for name in getattr(item, "fixturenames", ()))


def pytest_collection_modifyitems(config, items):
    e2e = os.environ.get("EDGEBAYES_PI_E2E", "").split()
    exclude = os.environ.get("EDGEBAYES_PI_EXCLUDE", "").split()
    keep, drop, n_e2e = [], [], 0
    for item in items:
        if _matches(item.nodeid, e2e):
            keep.append(item)
            n_e2e += 1
        elif _needs_broker(item) or _matches(item.nodeid, exclude):
            drop.append(item)
        else:
            keep.append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep
    count_file = os.environ.get("EDGEBAYES_PI_E2E_COUNT_FILE")
    if count_file:
        with open(count_file, "w") as f:
            f.write(f"{n_e2e}\n")
