"""CSV streams: a header row, one sample per line, plain or gzip-compressed (``.gz`` suffix).

The format of the real data sets the benchmarks replay: comma separated, a header row of column names,
the label in a column chosen by name (default: the last), every other column a numeric
feature unless dropped; an empty field is a missing value (NaN).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from edgebayes.streams.base import Stream
from edgebayes.streams.schema import Schema

NAN = math.nan


def open_text(path: Path) -> io.TextIOBase:
    """Open ``path`` for reading UTF-8 text, through gzip when its name ends in ``.gz``.

    ``utf-8-sig`` drops the byte order mark that Excel and Windows tools put first, which
    would otherwise stick to the first column's name; ``newline=""`` keeps ``\r\n`` for the
    csv module (and the ARFF reader strips it).
    """
    if path.suffix == ".gz":
        return gzip.open(path, "rt", encoding="utf-8-sig", newline="")
    return open(path, encoding="utf-8-sig", newline="")


def check_target_not_dropped(path: Path, what: str, target: str, drop: tuple[str, ...]) -> None:
    """Raise ValueError when ``drop`` names the label ``target`` (``what``: column/attribute)."""
    if target in drop:
        raise ValueError(f"{path}: {what} {target!r} is both the target and dropped; "
                         f"drop only columns that are not the label")


class CSVStream(Stream):
    """Stream the rows of a CSV file lazily (one row in memory at a time).

    UTF-8 with or without a byte order mark, ``\n`` or ``\r\n`` line endings.

    Args:
        path: a ``.csv`` or ``.csv.gz`` file with a header row.
        target: name of the label column; default the last column.
        drop: names of columns that are not features (e.g. ``date``); they are skipped.

    Yields ``(x, y)``: ``x`` float64 vector of the remaining columns in file order, ``y`` the
    label's text as in the file (a str). ``schema.classes`` is None (unknown before reading).

    Raises:
        FileNotFoundError: no such file (at construction).
        ValueError: at construction, an empty file, a target or dropped column absent from
            the header, the target among the dropped columns; while iterating, a row with the
            wrong number of fields, an empty label or a non-numeric feature value (the message
            names the file, line and column).
    """

    def __init__(self, path, *, target: str | None = None, drop: Iterable[str] = ()):
        self.path = Path(path)
        self.target = target
        self.drop = tuple(drop)
        with open_text(self.path) as f:
            header = next(csv.reader(f), None)
        if not header or header == [""]:
            raise ValueError(f"{self.path}: empty file (no header row)")
        header = [h.strip() for h in header]
        label = header[-1] if target is None else target
        check_target_not_dropped(self.path, "column", label, self.drop)
        for name in (label, *self.drop):
            if name not in header:
                raise ValueError(f"{self.path}: no column {name!r} in the header ({', '.join(header)})")
        self._columns = header
        self._label_index = header.index(label)
        self._feature_index = [
            i for i, h in enumerate(header) if i != self._label_index and h not in self.drop
        ]
        self.schema = Schema.numeric([header[i] for i in self._feature_index], target=label)

    def __iter__(self) -> Iterator[tuple[np.ndarray, str]]:
        n_columns = len(self._columns)
        label_index = self._label_index
        index = self._feature_index
        with open_text(self.path) as f:
            reader = csv.reader(f)
            next(reader)
            for row in reader:
                if len(row) != n_columns:
                    if not row:
                        continue  # blank line
                    self._fail(reader.line_num, f"{len(row)} fields, the header has {n_columns}")
                y = row[label_index]
                if not y:
                    self._fail(reader.line_num, f"empty label in column {self._columns[label_index]!r}")
                try:
                    x = np.array([row[i] for i in index], dtype=np.float64)
                except ValueError:
                    x = self._parse_slowly(row, reader.line_num)
                yield x, y

    def _parse_slowly(self, row: list[str], line: int) -> np.ndarray:
        """The fast path failed: map empty fields to NaN, or name the bad field."""
        x = np.empty(len(self._feature_index))
        for k, i in enumerate(self._feature_index):
            text = row[i].strip()
            if not text:
                x[k] = NAN
                continue
            try:
                x[k] = float(text)
            except ValueError:
                self._fail(line, f"non-numeric value {row[i]!r} in feature column {self._columns[i]!r}")
        return x

    def _fail(self, line: int, problem: str):
        raise ValueError(f"{self.path}, line {line}: {problem}")

    def __repr__(self):
        return f"CSVStream({str(self.path)!r}, target={self.schema.target!r}, drop={self.drop!r})"
