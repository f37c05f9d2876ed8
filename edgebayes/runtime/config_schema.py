"""The config schema: each table is a frozen dataclass whose fields, made with `key`, say each
TOML key's type (the annotation), default (the field's), check and one-line doc, once.

`Table` parses one decoded TOML table (or array of tables) into its dataclass and renders its
reference (docs/config.md). Every problem names the table, the key, the value and why:
``[broker] port = '1883': expected int``; an unknown key is named with the closest known one
(``difflib``).
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import MISSING, dataclass, field
from pathlib import Path
from typing import Any

#: a check: the value -> why it is refused, or None
Check = Callable[[Any], "str | None"]


def key(default: Any = MISSING, doc: str = "", check: Check | None = None, *,
        factory: Callable[[], Any] | None = None, shown: str | None = None,
        types: tuple[type, ...] | None = None, convert: Callable[[Any], Any] | None = None):
    """A dataclass field that is a config key.

    Args:
        default: the value when the key is absent; ``MISSING``: the key is required.
        doc: one line, units included, shown in docs/config.md.
        check: the (type-checked) value -> why it is refused, or None.
        factory: builds the default instead (then ``shown`` says what it is).
        shown: the default as the docs show it, when not the value itself.
        types: the TOML types accepted, when not read from the annotation.
        convert: the checked TOML value -> the field's value; may raise ``ValueError`` (why) or
            `SubkeyErrors`.
    """
    meta = {"doc": doc, "check": check, "shown": shown, "types": types, "convert": convert}
    if factory is not None:
        return field(default_factory=factory, metadata=meta)
    return field(default=default, metadata=meta)


class SubkeyErrors(ValueError):
    """Problems inside a table-valued key: ``(subkey, value, why)`` each."""

    def __init__(self, errors: list[tuple[str, Any, str]]):
        self.errors = errors
        super().__init__("; ".join(f"{k}: {why}" for k, _, why in errors))


class OneOf:
    """A check accepting only ``choices`` (shown in the docs as the key's type); ``refused``:
    value -> why, for values users try that are refused for a reason of their own."""

    def __init__(self, *choices, refused: dict[Any, str] | None = None):
        self.choices = choices
        self.refused = refused or {}

    def __call__(self, v) -> str | None:
        if v in self.choices:
            return None
        return self.refused.get(v) or f"must be one of {', '.join(map(repr, self.choices))}"


#: the annotation's type -> the TOML types accepted and the conversion to the field's value
_TOML_TYPES: dict[Any, tuple[tuple[type, ...], Callable | None]] = {
    str: ((str,), None), int: ((int,), None), float: ((int, float), None), bool: ((bool,), None),
    Path: ((str,), Path), tuple[str, ...]: ((list,), tuple),
}
_TYPE_NAMES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array",
               dict: "table"}


def type_ok(value: Any, accepted: tuple[type, ...]) -> bool:
    """Whether a TOML value is of an accepted type (``true`` is no number, ``inf`` and ``nan``
    no value at all)."""
    if isinstance(value, bool):
        return bool in accepted
    if isinstance(value, float) and not math.isfinite(value):
        return False
    return isinstance(value, accepted)


def toml_text(value: Any) -> str:
    """A default as TOML writes it: ``"json"``, ``true``, ``0.002``; None is ``unset``."""
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (str, Path)):
        return f'"{value}"'
    if value == () or value == {}:
        return "empty"
    return repr(value)


@dataclass(frozen=True)
class Key:
    """One config key, resolved from its dataclass field."""

    name: str
    types: tuple[type, ...]
    default: Any
    check: Check | None
    convert: Callable[[Any], Any] | None
    doc: str
    shown: str | None

    @property
    def required(self) -> bool:
        return self.default is MISSING

    def type_text(self) -> str:
        """What the docs show as the key's type: the choices, or the TOML types and the check's
        rule (its docstring)."""
        if isinstance(self.check, OneOf):
            return " | ".join(toml_text(c) for c in self.check.choices)
        shown = [t for t in self.types if not (t is int and float in self.types)]  # a float key takes 1 as 1.0
        text = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in shown)
        return f"{text}, {self.check.__doc__}" if self.check and self.check.__doc__ else text

    def default_text(self) -> str:
        if self.required:
            return "required"
        return self.shown if self.shown is not None else toml_text(self.default)


def _resolve(f: dataclasses.Field, hint: Any) -> Key:
    meta = f.metadata
    if meta.get("types") is not None:
        accepted, convert = meta["types"], meta["convert"]
    else:
        union = isinstance(hint, types.UnionType)
        base = next(a for a in typing.get_args(hint) if a is not type(None)) if union else hint
        accepted, convert = _TOML_TYPES[base]
        convert = meta["convert"] or convert
    default = f.default if f.default_factory is MISSING else f.default_factory()
    return Key(f.name, accepted, default, meta["check"], convert, meta["doc"], meta["shown"])


#: a cross-key check: (the parsed table, its raw TOML, the `Context`) -> problems, key named
TableCheck = Callable[[Any, dict, "Context"], Iterable[str]]


@dataclass
class Context:
    """What the checks of one table may read of the others."""

    features: tuple[str, ...] | None = None
    output_format: str = "json"


@dataclass(frozen=True)
class Table:
    """One TOML table (``array``: an array of tables) parsed into ``cls``.

    Args:
        name: the TOML name.
        cls: the dataclass; its fields made with `key` are the table's keys.
        doc: what the table is for, a paragraph of the docs (Markdown).
        checks: cross-key checks, run on each parsed table.
        array_check: a check of the whole array (names used twice), complete messages.
        missing: the problem when the table is absent; None: optional.
        title: (index, raw) -> how the problems of one array entry name it.
        rest: the field taking the keys that are not the table's own (the learner's parameters).
    """

    name: str
    cls: type
    doc: str
    checks: tuple[TableCheck, ...] = ()
    array: bool = False
    array_check: Callable[[list], Iterable[str]] | None = None
    missing: str | None = None
    title: Callable[[int, dict], str] | None = None
    rest: str | None = None

    @property
    def header(self) -> str:
        return f"[[{self.name}]]" if self.array else f"[{self.name}]"

    def all_keys(self) -> dict[str, Key]:
        hints = typing.get_type_hints(self.cls)
        return {f.name: _resolve(f, hints[f.name]) for f in dataclasses.fields(self.cls) if "doc" in f.metadata}

    def parse(self, raw: Any, context: Context, problems: list[str]) -> Any:
        """The parsed table (a tuple for an array), or None when it holds a problem; every
        problem is appended to ``problems``."""
        if not self.array:
            if not isinstance(raw, dict):
                problems.append(f"{self.header} must be a table, got {raw!r}")
                return None
            return self._entry(self.header, raw, context, problems)
        if not isinstance(raw, list) or not raw or not all(isinstance(t, dict) for t in raw):
            problems.append(f"{self.header} must be an array of tables, got {raw!r}")
            return None
        n = len(problems)
        entries = [self._entry(self.title(i, t) if self.title else f"{self.header} #{i + 1}", t, context, problems)
                   for i, t in enumerate(raw)]
        if self.array_check:
            problems.extend(self.array_check(entries))
        return tuple(entries) if len(problems) == n else None

    def _entry(self, where: str, raw: dict, context: Context, problems: list[str]) -> Any:
        n = len(problems)
        keys = self.all_keys()
        values, rest = {}, {}
        for name, value in raw.items():
            k = keys.get(name)
            if k is None:
                if self.rest:
                    rest[name] = value
                else:
                    problems.append(f"{where} unknown key {name!r}{closest(name, keys)}; known: {', '.join(keys)}")
                continue
            why, value = _value(k, value)
            if why:
                problems.extend(f"{where} {line}" for line in why)
                continue
            values[name] = value
        for k in keys.values():
            if k.required and k.name not in raw:
                problems.append(f"{where} {k.name}: missing ({k.doc})")
        if any(k.required and k.name not in values for k in keys.values()):
            return None
        obj = self.cls(**values, **({self.rest: rest} if self.rest else {}))
        problems.extend(f"{where} {line}" for check in self.checks for line in check(obj, raw, context))
        return obj if len(problems) == n else None


def _value(k: Key, value: Any) -> tuple[list[str], Any]:
    """``(problems, the field's value)`` of one key."""
    if not type_ok(value, k.types):
        return [f"{k.name} = {value!r}: expected {' or '.join(t.__name__ for t in k.types)}"], None
    why = k.check(value) if k.check else None
    if why:
        return [f"{k.name} = {value!r}: {why}"], None
    try:
        return [], k.convert(value) if k.convert else value
    except SubkeyErrors as exc:
        return [f"{k.name}.{sub} = {v!r}: {why}" for sub, v, why in exc.errors], None
    except ValueError as exc:
        return [f"{k.name} = {value!r}: {exc}"], None


def closest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the known name closest to ``name``, or nothing."""
    match = difflib.get_close_matches(name, list(known), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def unknown(kind: str, name: str, known: Iterable[str]) -> str:
    """The problem of an unknown table: its name, the closest known one, the known ones."""
    known = list(known)
    return f"unknown {kind} [{name}]{closest(name, known)}; known: {', '.join(known)}"


def markdown(tables: Iterable[Table], extra: Callable[[Table], str] | None = None) -> str:
    """The reference of ``tables``: per table its doc and one row per key (type, default, doc);
    ``extra`` adds text after a table's rows."""
    out = []
    for t in tables:
        out += [f"## {t.header}", "", t.doc, "", "| key | type | default | meaning |", "|---|---|---|---|"]
        out += [f"| `{k.name}` | {_cell(k.type_text())} | {_cell(k.default_text())} | {_cell(k.doc)} |"
                for k in t.all_keys().values()]
        more = extra(t) if extra else ""
        out += ["", more] if more else []
        out.append("")
    return "\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
