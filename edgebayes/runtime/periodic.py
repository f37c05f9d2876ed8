"""The worker's periodic work: named tasks, each in its own ``try``, then the keep-alives.

A task that raises is counted, its first failure logged with its traceback (later ones at
DEBUG, so a task broken for good does not fill the log), and the next task still runs;
the hooks (a systemd watchdog ping) run after every task, whatever the tasks did, so one
failing watcher cannot keep the watchdog from being fed and systemd from seeing a live worker.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)


class Periodic:
    """Runs ``tasks`` then ``hooks`` at each ``run`` (worker thread).

    Args:
        tasks: (name, task) pairs, run in order; the name is logged when the task raises.
        hooks: called after the tasks (e.g. ``Notifier.watchdog``), each in its own ``try``.

    Attributes:
        n_failures: tasks and hooks that raised since start.
    """

    def __init__(self, tasks: Sequence[tuple[str, Callable[[], object]]], hooks: Sequence[Callable[[], None]] = ()):
        self.tasks = list(tasks)
        self.hooks = list(hooks)
        self.n_failures = 0
        self._failed: set[int] = set()  # the tasks and hooks whose traceback was logged

    def run(self) -> None:
        for name, task in self.tasks:
            self._call(name, task)
        for hook in self.hooks:
            self._call(getattr(hook, "__qualname__", repr(hook)), hook)

    def _call(self, name: str, fn: Callable[[], object]) -> None:
        try:
            fn()
        except Exception:
            self.n_failures += 1
            if id(fn) in self._failed:
                log.debug("periodic task %s failed again (%d failures so far)", name, self.n_failures,
                          exc_info=True)
                return
            self._failed.add(id(fn))
            log.exception("periodic task %s failed (%d failures so far; later failures are counted in "
                          "n_internal_errors)", name, self.n_failures)
