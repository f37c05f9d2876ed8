"""Sections of docs/results.md that `bench.report` does not compute: each comes from a command of
its own (`bench.committee --results`) or is entered by hand from the output of the scripts it
names (bench/nb.py, ...). The report keeps each as it stands in the results.md it rewrites
(`bench.report.KEPT`)."""

from __future__ import annotations

from pathlib import Path


def kept_section(path: Path, heading: str, missing: str) -> list[str]:
    """The section of the markdown file ``path`` whose heading line starts with ``heading``, as it
    stands (its lines up to the next "## " heading, no trailing blank), or ``heading`` and the line
    ``missing`` (``{path}`` in it replaced by ``path``) when the file has no such section."""
    old = path.read_text().split("\n") if path.exists() else []
    start = next((i for i, s in enumerate(old) if s.startswith(heading)), None)
    if start is None:
        return [heading, "", missing.format(path=path)]
    end = next((i for i in range(start + 1, len(old)) if old[i].startswith("## ")), len(old))
    while end > start and not old[end - 1].strip():
        end -= 1
    return old[start:end]
