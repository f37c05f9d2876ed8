"""ARFF streams (Weka's Attribute-Relation File Format, the format MOA users keep data in).

Header: ``@relation``, one ``@attribute NAME TYPE`` per column (TYPE ``numeric``, ``real``,
``integer`` or a nominal ``{a, b, c}``; names and values may be quoted with ' or "), then
``@data``. Lines starting with ``%`` are comments. Data lines are dense (``v1, v2, ...``) or
sparse (``{index value, ...}``, absent entries are 0). ``?`` is a missing value.

Encoding in ``x`` (float64): a numeric attribute is its value; a nominal attribute is the
index of its value among the declared categories (0.0, 1.0, ...; the schema lists them), so
``{1,2,3,4,5,6,7}`` turns "2" into 1.0; a missing value is NaN. The label is the target
attribute's text as written (unquoted), so a nominal class keeps its names.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from edgebayes.streams.base import Stream
from edgebayes.streams.csv_reader import check_target_not_dropped, open_text
from edgebayes.streams.schema import Feature, Schema

NUMERIC_TYPES = ("numeric", "real", "integer")
_TOKEN = re.compile(r"""\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|[^,'"\s][^,]*?)\s*(?:,|$)""")


def unquote(text: str) -> str:
    """``'a b'`` -> ``a b`` (ARFF quoting with backslash escapes); other text stripped."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return re.sub(r"\\(.)", r"\1", text[1:-1])
    return text


def split_values(text: str) -> list[str] | None:
    """Comma-separated values, quotes respected and removed; None if ``text`` does not parse."""
    if "'" not in text and '"' not in text:
        return [v.strip() for v in text.split(",")]
    values, pos, text = [], 0, text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            return None
        values.append(unquote(match.group(1)))
        pos = match.end()
    return values


def _first_token(text: str) -> tuple[str, str]:
    """Split ``text`` into its first (possibly quoted) word and the rest."""
    text = text.strip()
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        while end > 0 and text[end - 1] == "\\":
            end = text.find(text[0], end + 1)
        if end < 0:
            return text, ""
        return unquote(text[: end + 1]), text[end + 1:].strip()
    parts = text.split(None, 1)
    return parts[0], (parts[1] if len(parts) > 1 else "")


class ARFFStream(Stream):
    """Stream the instances of an ARFF file lazily (``.arff`` or gzip ``.arff.gz``).

    UTF-8 with or without a byte order mark, ``\n`` or ``\r\n`` line endings.

    Args:
        path: the file.
        target: name of the label attribute; default the last one (MOA's and Weka's default).
        drop: attributes that are not features (skipped; string and date attributes must be
            dropped or be the target).

    Schema: features in file order with kind ``"numeric"`` or ``"nominal"`` (and categories);
    ``classes`` the target's categories when it is nominal, else None.

    Raises:
        FileNotFoundError: no such file (at construction).
        ValueError: at construction, an empty file, no ``@data``, a bad ``@attribute`` line, an
            unsupported type for a feature, an unknown target or dropped attribute, the target
            among the dropped attributes; while iterating, a line with the wrong number of
            values, a non-numeric value for a numeric attribute, a value (label included)
            outside a nominal attribute's categories, a missing label (the message names the
            file and line).
    """

    def __init__(self, path, *, target: str | None = None, drop: Iterable[str] = ()):
        self.path = Path(path)
        self.target = target
        self.drop = tuple(drop)
        names, types, self._data_line = self._read_header()
        label = names[-1] if target is None else target
        check_target_not_dropped(self.path, "attribute", label, self.drop)
        for name in (label, *self.drop):
            if name not in names:
                raise ValueError(f"{self.path}: no attribute {name!r} ({', '.join(names)})")
        self._names = names
        # value of an attribute absent from a sparse line: 0, or a nominal's first category
        self._sparse_defaults = [t[0] if isinstance(t, tuple) else "0" for t in types]
        self._label_index = names.index(label)
        self._feature_index = [i for i, n in enumerate(names) if i != self._label_index and n not in self.drop]
        features = []
        for i in self._feature_index:
            kind = types[i]
            if isinstance(kind, tuple):
                features.append(Feature(names[i], "nominal", kind))
            elif kind in NUMERIC_TYPES:
                features.append(Feature(names[i]))
            else:
                raise ValueError(f"{self.path}: attribute {names[i]!r} has unsupported type {kind!r}; drop it")
        label_type = types[self._label_index]
        classes = label_type if isinstance(label_type, tuple) else None
        self._classes = frozenset(classes or ())
        self.schema = Schema(tuple(features), label, classes)
        # per feature: category -> index for nominal ones, None for numeric
        self._codes = [
            {c: float(k) for k, c in enumerate(f.categories)} if f.kind == "nominal" else None
            for f in features
        ]

    def _read_header(self) -> tuple[list[str], list, int]:
        names, types = [], []
        with open_text(self.path) as f:
            for number, line in enumerate(f, 1):
                text = line.strip()
                if not text or text.startswith("%"):
                    continue
                keyword = text.split(None, 1)[0].lower()
                if keyword == "@data":
                    if not names:
                        raise ValueError(f"{self.path}, line {number}: @data before any @attribute")
                    return names, types, number
                if keyword == "@attribute":
                    name, kind = _first_token(text[len("@attribute"):])
                    if not name or not kind:
                        raise ValueError(f"{self.path}, line {number}: bad @attribute line: {text!r}")
                    if kind.startswith("{"):
                        if not kind.endswith("}"):
                            raise ValueError(f"{self.path}, line {number}: unclosed nominal values: {text!r}")
                        values = split_values(kind[1:-1])
                        if not values or values is None:
                            raise ValueError(f"{self.path}, line {number}: bad nominal values: {text!r}")
                        types.append(tuple(values))
                    else:
                        types.append(kind.split(None, 1)[0].lower())
                    names.append(name)
                elif keyword != "@relation":
                    raise ValueError(f"{self.path}, line {number}: unexpected header line {text!r}")
        if not names:
            raise ValueError(f"{self.path}: empty file (no ARFF header)")
        raise ValueError(f"{self.path}: no @data section")

    def __iter__(self) -> Iterator[tuple[np.ndarray, str]]:
        n_attributes = len(self._names)
        index, codes = self._feature_index, self._codes
        label_index = self._label_index
        classes = self._classes
        with open_text(self.path) as f:
            for number, line in enumerate(f, 1):
                if number <= self._data_line:
                    continue
                text = line.strip()
                if not text or text.startswith("%"):
                    continue
                if text.startswith("{"):
                    values = self._sparse(text, number)
                else:
                    values = split_values(text)
                    if values is None:
                        self._fail(number, "unbalanced quotes")
                if len(values) != n_attributes:
                    self._fail(number, f"{len(values)} values, the header declares {n_attributes} attributes")
                y = values[label_index]
                if y in ("?", ""):
                    self._fail(number, f"missing label {self._names[label_index]!r}")
                if classes and y not in classes:
                    self._fail(number, f"label {y!r} of nominal attribute "
                                       f"{self._names[label_index]!r} is not one of its categories")
                fields = [values[i] for i in index]
                try:
                    for k, code in enumerate(codes):
                        if code is not None:
                            fields[k] = code[fields[k]]
                    x = np.array(fields, dtype=np.float64)
                except (KeyError, ValueError):
                    x = self._parse_slowly(fields, number)
                yield x, y

    def _sparse(self, text: str, number: int) -> list[str]:
        if not text.endswith("}"):
            self._fail(number, "unclosed sparse instance")
        values = list(self._sparse_defaults)
        body = text[1:-1].strip()
        for entry in split_values(body) if body else []:
            head, _, value = entry.partition(" ")
            try:
                values[int(head)] = unquote(value)
            except (ValueError, IndexError):
                self._fail(number, f"bad sparse entry {entry!r}")
        return values

    def _parse_slowly(self, fields: list, number: int) -> np.ndarray:
        """The fast path failed: map ``?`` to NaN, or name the bad value."""
        x = np.empty(len(fields))
        for k, (value, code) in enumerate(zip(fields, self._codes)):
            name = self.schema.features[k].name
            if isinstance(value, float):
                x[k] = value
            elif value == "?":
                x[k] = math.nan
            elif code is not None:
                self._fail(number, f"value {value!r} of nominal attribute {name!r} is not one of its categories")
            else:
                try:
                    x[k] = float(value)
                except ValueError:
                    self._fail(number, f"non-numeric value {value!r} for numeric attribute {name!r}")
        return x

    def _fail(self, number: int, problem: str):
        raise ValueError(f"{self.path}, line {number}: {problem}")

    def __repr__(self):
        return f"ARFFStream({str(self.path)!r}, target={self.schema.target!r}, drop={self.drop!r})"
