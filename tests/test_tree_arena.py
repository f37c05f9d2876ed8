"""The tree's private fields have one writer: `edgebayes.tree.arena` (and ``__init__``, which
sets their empty values; and `observers.observe`, which updates a slot's observer records).

Read from the source: every assignment, augmented assignment or mutating call whose target
is a tree's private field (``tree._x``, ``self._x``, an item of one, or a local bound to one)
in the other modules of edgebayes/tree is listed; the list must be empty.

The compiled core's re-layout passes (``_rebuild``, ``_active_slots``) write and rank what
`arena.rebuild` and `arena.active_slots` do, compared array for array on one tree.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import numpy as np
import pytest

import edgebayes.tree
from edgebayes.tree import arena, storage
from tests.conftest import implementation

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


# ---------------------------------------------------------------- the compiled re-layout


def _arrays(tree) -> list:
    """Every arena field of ``tree``, arrays as (type code, bytes, sys.getsizeof)."""
    def a(x):
        return (x.typecode, x.tobytes(), sys.getsizeof(x))
    return [a(tree._node_ints), a(tree._node_floats), a(tree._class_weights), a(tree._gaussians),
            [a(c) for c in tree._nominal_counts], a(tree._free_slots), tree._n_free_slots, tree._node_cap,
            tree._slot_cap, tree._class_cap, list(tree._value_caps), tree._bytes, tree.memory_bytes()]


def _grown_tree():
    """A compiled tree of numeric and nominal features under a budget: active and inactive leaves."""
    compiled = implementation("HoeffdingTreeClassifier", "compiled")
    rng = np.random.default_rng(3)
    tree = compiled(grace_period=20, nominal_attributes=[3, 4], max_size_bytes=16_000)
    for _ in range(3000):
        x = [*rng.normal(0, 1, 3), float(rng.integers(0, 4)), float(rng.integers(0, 3))]
        tree.learn_one(x, int(x[0] > 0) + 2 * int(x[3] > 1) + (x[1] > 1.5))
    ints = arena.node_ints(tree)
    leaves = ints[:, arena.SPLIT_FEATURE] < 0
    assert (ints[leaves, arena.SLOT] >= 0).sum() >= 3 and (ints[leaves, arena.SLOT] < 0).any()
    return tree


def test_the_compiled_relayout_writes_the_arrays_the_reference_writes():
    tree = _grown_tree()
    state = tree.state()
    active = arena.active_slots(tree)
    n, s, c, v = tree._n_nodes, tree._slot_cap, tree._class_cap, tree._value_caps
    cases = [  # (node_cap, slot_cap, ccap, vcaps, keep)
        (2 * n + 3, s + 3, c + 2, [x + 1 for x in v], active[::-1]),
        (n, len(active) // 2, c, v, active[1::2]),
        (n, 0, c, v, []),
        (n, s, c, [x + 2 for x in v], active),
    ]
    for case in cases:
        ours, ref = type(tree).from_state(state), type(tree).from_state(state)
        ours._rebuild(*case)
        arena.rebuild(ref, *case)
        assert _arrays(ours) == _arrays(ref), case
        assert ours.state() == ref.state()


def test_the_compiled_active_slots_rank_as_the_reference_ranks_ties_included():
    tree = _grown_tree()
    leaves = np.flatnonzero(arena.node_ints(tree)[:, arena.SPLIT_FEATURE] < 0).tolist()
    for exclude in (-1, leaves[0], leaves[-1]):
        assert tree._active_slots(exclude) == arena.active_slots(tree, exclude)
    floats = arena.node_floats(tree)  # every promise 0: the ranking is the node order
    weights = storage.view(tree._class_weights, (tree._node_cap, tree._class_cap))[: tree._n_nodes]
    floats[:, arena.WEIGHT_SEEN] = weights.max(axis=1)
    ranked = tree._active_slots()
    assert ranked == arena.active_slots(tree)
    ints = arena.node_ints(tree)
    in_node_order = [int(ints[i, arena.SLOT]) for i in leaves if ints[i, arena.SLOT] >= 0]
    assert ranked == in_node_order and ranked != sorted(ranked)


def test_the_compiled_relayout_refuses_arrays_that_do_not_match_their_capacities():
    tree = _grown_tree()
    n, s, c, v = tree._n_nodes, tree._slot_cap, tree._class_cap, tree._value_caps
    tree._gaussians = tree._gaussians[:-1]  # as the reference's reshape, not a read past the end
    for relay in (lambda: tree._rebuild(n, s, c, v, tree._active_slots()), tree._active_slots,
                  lambda: arena.rebuild(tree, n, s, c, v, [])):
        with pytest.raises(ValueError):
            relay()
