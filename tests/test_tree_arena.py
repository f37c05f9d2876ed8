"""The tree's private fields have one writer: `edgebayes.tree.arena` (and ``__init__``, which
sets their empty values; and `observers.observe`, which updates a slot's observer records).

Read from the source: every assignment, augmented assignment or mutating call whose target
is a tree's private field (``tree._x``, ``self._x``, an item of one, or a local bound to one)
in the other modules of edgebayes/tree is listed; the list must be empty.
"""

from __future__ import annotations

import ast
from pathlib import Path

import edgebayes.tree

TREE_DIR = Path(edgebayes.tree.__file__).parent
#: (module, function) -> the fields it may write (None: every field)
WRITERS = {
    ("hoeffding_tree.py", "__init__"): None,
    ("observers.py", "observe"): {"_gaussians", "_nominal_counts"},
}
MUTATORS = {"append", "extend", "insert", "pop", "clear", "update", "setdefault", "remove"}
TREE_NAMES = {"tree", "self"}


def _field(node, aliases: dict) -> str | None:
    """The private tree field ``node`` denotes, through items and locals bound to one."""
    while isinstance(node, ast.Subscript):
        node = node.value
    if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in TREE_NAMES
            and node.attr.startswith("_") and not node.attr.startswith("__")):
        return node.attr
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    return None


def _aliases(func: ast.AST) -> dict:
    """Locals bound to a tree field (or an item of one) anywhere in ``func``: such a local
    counts as the field in the whole function (a rebinding later does not clear it)."""
    out = {}
    for node in ast.walk(func):
        if isinstance(node, ast.Assign):
            pairs = []
            for target in node.targets:
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs += zip(target.elts, node.value.elts)
                else:
                    pairs.append((target, node.value))
            for target, value in pairs:
                field = _field(value, out) if isinstance(target, ast.Name) else None
                if field is not None:
                    out[target.id] = field
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name):
            field = _field(node.iter, out)
            if field is not None:
                out[node.target.id] = field
    return out


def _stores(func: ast.AST, aliases: dict):
    """The fields ``func`` writes: (line, field)."""
    for node in ast.walk(func):
        targets = []
        if isinstance(node, ast.Assign):
            for t in node.targets:
                targets += t.elts if isinstance(t, ast.Tuple) else [t]
        elif isinstance(node, ast.AugAssign):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
            targets = [ast.Subscript(value=node.func.value, slice=ast.Constant(0))]
        for t in targets:
            # a local rebound is no write; an attribute of the tree or an item of a field is
            if isinstance(t, (ast.Attribute, ast.Subscript)):
                field = _field(t, aliases)
                if field is not None:
                    yield node.lineno, field


def writes_outside_the_arena(source: str, module: str) -> list:
    """(module, function, line, field) of every write of a tree field not in `WRITERS`."""
    found = []
    for func in ast.walk(ast.parse(source)):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        allowed = WRITERS.get((module, func.name), set())
        for line, field in _stores(func, _aliases(func)):
            if allowed is not None and field not in allowed:
                found.append((module, func.name, line, field))
    return sorted(set(found))


def test_no_module_but_the_arena_writes_the_trees_fields():
    found = []
    for path in sorted(TREE_DIR.glob("*.py")):
        if path.name != "arena.py":
            found += writes_outside_the_arena(path.read_text(), path.name)
    assert found == []


def test_the_scan_sees_direct_aliased_item_and_mutating_writes():
    source = '''
def f(tree, xl):
    tree._n_nodes = 1
    tree._node_ints[0] = -1
    nf, cc = tree._node_floats, tree._class_weights
    nf[3] += 1.0
    voc = tree._vocabs[0]
    voc[2.0] = 1
    tree.classes_.append(1)
    tree._class_index.update({})
    local = [0]
    local[0] = tree._n_nodes
'''
    assert writes_outside_the_arena(source, "learning.py") == [
        ("learning.py", "f", 3, "_n_nodes"),
        ("learning.py", "f", 4, "_node_ints"),
        ("learning.py", "f", 6, "_node_floats"),
        ("learning.py", "f", 8, "_vocabs"),
        ("learning.py", "f", 10, "_class_index"),
    ]
