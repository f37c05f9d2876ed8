"""The tree's arena: its flat arrays, their capacities, and the byte plan that bounds them.

Every function here takes the tree (`edgebayes.tree.hoeffding_tree`) and reads or re-lays
its arrays; none allocates a Python object per node or statistic. The arrays (`storage`):

- ``_node_ints``: int node records, ``N_NODE_INTS`` per node (`SPLIT_FEATURE` .. `SLOT`),
  ``_node_cap`` records, ``_n_nodes`` used;
- ``_node_floats``: float node records, ``N_NODE_FLOATS`` per node (`THRESHOLD` ..
  `NB_CORRECT`);
- ``_class_weights``: class weights, ``_class_cap`` per node (VFDT's n_k(l) per leaf, kept at
  split nodes too: a branch no sample has reached predicts with its split node's weights);
- ``_gaussians``: the Gaussian observers of the active leaves, ``_slot_cap`` *slots* of
  ``_class_cap x len(_numeric_features)`` records of `observers.N_FIELDS` floats
  (`observers.gaussian_at`);
- ``_nominal_counts``: per nominal feature k, the value counts of the slots, ``_slot_cap x
  _class_cap x _value_caps[k]`` floats (VFDT's n_ijk(l); `observers.count_at`);
- ``_free_slots``: a stack of the free slots, ``_n_free_slots`` of them.

Beside them: ``_class_index`` (label -> column, the order of ``classes_``),
``_numeric_features`` and ``_nominal_features`` (the global indices learned, in record
order), ``_vocabs`` (per nominal feature, value -> code) and ``_vocab_of`` (global index ->
its vocabulary), ``_n_learned`` (samples learned).

A leaf with a slot is *active* (it learns splits and naive Bayes); one without is inactive.
Capacities grow geometrically, and with ``max_size_bytes`` set only to what `slots_that_fit`
allows: `array_bytes` and `py_bytes` predict ``memory_bytes()`` before any allocation.

This module is the only writer of the tree's private fields (``__init__`` aside, which sets
their empty values): the other modules read them and change them through the functions here,
per sample (`add_weight`, `due_for_attempt`, `credit`), at a change of shape (`add_class`,
`add_value`, `add_root`, `split_node`, `start_leaf`, the slot pool, `rebuild`) and when a
state is loaded (`fix_schema`, `load`); the compiled core's ``_rebuild`` is `rebuild` in C.
One exception, by design: a slot's observer records are updated in place by
`observers.observe`, their only other writer.
"""

from __future__ import annotations

import sys
from array import array

import numpy as np

from edgebayes.sizes import append_bytes, insert_bytes
from edgebayes.tree import storage
from edgebayes.tree.observers import MAX, MIN, N_FIELDS

# int node record: split feature (global index; -1 for a leaf), first child, branches of a
# nominal split (0 for a numeric one, whose two children are first child and the next),
# depth (root 0), stats slot (-1: inactive leaf or split node)
SPLIT_FEATURE, FIRST_CHILD, N_BRANCHES, DEPTH, SLOT = range(5)
N_NODE_INTS = 5
# float node record: numeric split threshold, weight seen, weight seen since the last split
# attempt, weight the majority class / naive Bayes predicted right (nba's scores)
THRESHOLD, WEIGHT_SEEN, WEIGHT_SINCE_ATTEMPT, MC_CORRECT, NB_CORRECT = range(5)
N_NODE_FLOATS = 5


# ---------------------------------------------------------------- byte plan


#: Attributes a tree holds (`hoeffding_tree`'s ``__init__`` sets each one).
N_ATTRIBUTES = 32


def _object_bytes(n_attributes: int) -> int:
    """Bytes of a Python object holding ``n_attributes`` attributes in its ``__dict__``."""
    shell = type("Shell", (), {})()
    for i in range(n_attributes):
        setattr(shell, f"a{i}", None)
    return sys.getsizeof(shell) + sys.getsizeof(shell.__dict__)


#: The tree object in `py_bytes`, the same on both backends so that both plan the same
#: capacities: the reference's object and attribute dict, exactly; an upper bound for the
#: compiled tree, which holds the attributes as C fields.
OBJECT_BYTES = _object_bytes(N_ATTRIBUTES)


def py_bytes(tree) -> int:
    """Bytes of the Python objects around the arrays (labels, vocabularies, lists)."""
    size = sys.getsizeof
    total = OBJECT_BYTES + size(tree.classes_) + size(tree._class_index)
    total += sum(size(c) for c in tree.classes_) + size(tree._numeric_features) + size(tree._nominal_features)
    total += size(tree._vocabs) + size(tree._vocab_of) + size(tree._value_caps) + size(tree._nominal_counts)
    for voc in tree._vocabs:
        total += size(voc) + sum(size(k) + size(v) for k, v in voc.items())
    for p in (tree.features, tree.nominal_attributes):
        if p is not None:
            total += size(p) + sum(size(i) for i in p)
    return total


def measure(tree) -> int:
    """Bytes the tree holds now: `py_bytes` and every array's allocation."""
    arrays = (tree._node_ints, tree._node_floats, tree._class_weights, tree._gaussians, tree._free_slots,
              *tree._nominal_counts)
    return py_bytes(tree) + sum(sys.getsizeof(a) for a in arrays)


def measured(tree) -> int:
    """`measure`, kept until the next `resized`."""
    if tree._bytes is None:
        tree._bytes = measure(tree)
    return tree._bytes


def resized(tree) -> None:
    """Forget the tree's measured bytes: every function here that changes an allocation, a
    vocabulary or the classes calls it (the arrays are written in place otherwise)."""
    tree._bytes = None


def array_bytes(tree, node_cap: int, slot_cap: int, ccap: int, vcaps: list) -> int:
    """Bytes the arrays hold at these capacities (node records, class weights, slots)."""
    b = storage.array_bytes("i", N_NODE_INTS * node_cap) + storage.array_bytes("d", N_NODE_FLOATS * node_cap)
    b += storage.array_bytes("d", node_cap * ccap) + storage.array_bytes("i", slot_cap)
    b += storage.array_bytes("d", slot_cap * ccap * len(tree._numeric_features) * N_FIELDS)
    return b + sum(storage.array_bytes("d", slot_cap * ccap * v) for v in vcaps)


def growth_bytes(tree, labels: list, values: dict) -> int:
    """Most bytes `py_bytes` gains when ``labels`` (new classes) and ``values`` (nominal
    feature k -> a new value) are added: the labels, the list and dict growth, the
    vocabulary entries."""
    size = sys.getsizeof
    extra = 0
    if labels:
        extra += sum(size(y) for y in labels) + append_bytes(tree.classes_, len(labels))
        extra += insert_bytes(tree._class_index, labels)
    for k, v in values.items():
        voc = tree._vocabs[k]
        extra += insert_bytes(voc, [v]) + size(v) + size(len(voc))
    return extra


def fits(tree, node_cap: int, slot_cap: int, ccap: int, vcaps: list) -> bool:
    """Whether the tree at these capacities stays within ``max_size_bytes`` (always, unbounded)."""
    if tree.max_size_bytes is None:
        return True
    return py_bytes(tree) + array_bytes(tree, node_cap, slot_cap, ccap, vcaps) <= tree.max_size_bytes


def slots_that_fit(tree, node_cap: int, ccap: int, vcaps: list, extra: int = 0) -> int:
    """Largest slot capacity within the budget (-1 if even zero slots do not fit), with
    ``extra`` bytes more of Python objects; ``sys.maxsize`` for an unbounded tree."""
    if tree.max_size_bytes is None:
        return sys.maxsize
    room = tree.max_size_bytes - py_bytes(tree) - extra - array_bytes(tree, node_cap, 0, ccap, vcaps)
    per_slot = array_bytes(tree, 0, 1, ccap, vcaps) - array_bytes(tree, 0, 0, ccap, vcaps)
    return room // per_slot if room >= 0 else -1


def needs(tree, add_class: bool, xl: list, codes: list) -> tuple[dict, int, list]:
    """(nominal feature k -> new value, class capacity, value capacities) that learning
    ``xl`` with a class needs at least; ``codes`` (`learning.value_codes`) marks the new
    values None."""
    new = {k: float(xl[tree._nominal_features[k]]) for k, code in enumerate(codes) if code is None}
    ccap = max(tree._class_cap, len(tree.classes_) + 1) if add_class else tree._class_cap
    vcaps = [max(vc, len(tree._vocabs[k]) + 1) if k in new else vc for k, vc in enumerate(tree._value_caps)]
    return new, ccap, vcaps


# ---------------------------------------------------------------- views


def node_ints(tree) -> np.ndarray:
    """The used int node records, shape (n_nodes, N_NODE_INTS), a view."""
    return storage.view(tree._node_ints, (tree._node_cap, N_NODE_INTS))[: tree._n_nodes]


def node_floats(tree) -> np.ndarray:
    """The used float node records, shape (n_nodes, N_NODE_FLOATS), a view."""
    return storage.view(tree._node_floats, (tree._node_cap, N_NODE_FLOATS))[: tree._n_nodes]


def gaussians(tree) -> np.ndarray:
    """The Gaussian records, shape (slot_cap, ccap, n_numeric, N_FIELDS), a view."""
    return storage.view(tree._gaussians, (tree._slot_cap, tree._class_cap, len(tree._numeric_features), N_FIELDS))


def value_counts(tree, k: int) -> np.ndarray:
    """Nominal feature k's counts, shape (slot_cap, ccap, vcaps[k]), a view."""
    return storage.view(tree._nominal_counts[k], (tree._slot_cap, tree._class_cap, tree._value_caps[k]))


def empty_stats(n_slots: int, ccap: int, n_num: int) -> np.ndarray:
    """Stats records of empty Gaussian estimators: zero weight, min +inf, max -inf."""
    st = np.zeros((n_slots, ccap, n_num, N_FIELDS))
    st[..., MIN] = np.inf
    st[..., MAX] = -np.inf
    return st


# ---------------------------------------------------------------- re-layout


def rebuild(tree, node_cap: int, slot_cap: int, ccap: int, vcaps: list, keep) -> None:
    """Re-lay every array at new capacities; ``keep`` lists the old slots that survive,
    new slot i holding old slot keep[i]; leaves of the other slots become inactive. Called as
    the tree's ``_rebuild`` (the compiled core's is this function in C loops)."""
    n, old_c, n_num = tree._n_nodes, tree._class_cap, len(tree._numeric_features)
    ints = np.zeros((node_cap, N_NODE_INTS), np.intc)
    ints[:n] = node_ints(tree)
    floats = np.zeros((node_cap, N_NODE_FLOATS))
    floats[:n] = node_floats(tree)
    cc = np.zeros((node_cap, ccap))
    cc[:n, :old_c] = storage.view(tree._class_weights, (tree._node_cap, old_c))[:n]
    keep = np.asarray(keep, dtype=np.intp)
    st = empty_stats(slot_cap, ccap, n_num)
    st[: keep.size, :old_c] = gaussians(tree)[keep]
    nc = [storage.from_numpy("d", _relaid_counts(tree, k, v, slot_cap, ccap, keep)) for k, v in enumerate(vcaps)]
    remap = np.full(max(tree._slot_cap, 1), -1, np.intc)
    remap[keep] = np.arange(keep.size, dtype=np.intc)
    slots = ints[:n, SLOT]
    was_active = slots >= 0
    ints[:n, SLOT] = np.where(was_active, remap[np.maximum(slots, 0)], -1)
    tree._node_ints = storage.from_numpy("i", ints)
    tree._node_floats = storage.from_numpy("d", floats)
    tree._class_weights = storage.from_numpy("d", cc)
    tree._gaussians = storage.from_numpy("d", st)
    tree._nominal_counts = nc
    free = np.zeros(slot_cap, np.intc)  # a stack: the lowest free slot on top
    free[: slot_cap - keep.size] = np.arange(slot_cap - 1, keep.size - 1, -1)
    tree._free_slots = storage.from_numpy("i", free)
    tree._n_free_slots = slot_cap - keep.size
    tree._node_cap, tree._slot_cap, tree._class_cap, tree._value_caps = node_cap, slot_cap, ccap, list(vcaps)
    resized(tree)


def _relaid_counts(tree, k: int, vcap: int, slot_cap: int, ccap: int, keep: np.ndarray) -> np.ndarray:
    new = np.zeros((slot_cap, ccap, vcap))
    old_v = tree._value_caps[k]
    if old_v:
        new[: keep.size, : tree._class_cap, :old_v] = value_counts(tree, k)[keep]
    return new


def promise(tree, nodes: np.ndarray) -> np.ndarray:
    """Weight seen minus the majority class weight (MOA's ``calculatePromise``)."""
    if not nodes.size:
        return np.zeros(0)
    cc = storage.view(tree._class_weights, (tree._node_cap, tree._class_cap))[nodes]
    return node_floats(tree)[nodes, WEIGHT_SEEN] - cc.max(axis=1)


def active_slots(tree, exclude: int = -1) -> list:
    """Slots of the active leaves but ``exclude``, highest promise (weight x error) first
    (ties in node order). Called as the tree's ``_active_slots`` (the compiled core's: in C)."""
    ints = node_ints(tree)
    leaves = np.flatnonzero((ints[:, SPLIT_FEATURE] < 0) & (ints[:, SLOT] >= 0))
    leaves = leaves[leaves != exclude]
    order = np.argsort(-promise(tree, leaves), kind="stable")
    return ints[leaves[order], SLOT].tolist()


def relayout(tree, node_cap: int, ccap: int, vcaps: list, exclude: int = -1) -> bool:
    """Move to new node/class/value capacities within the budget, growing the slot pool to
    what fits (up to twice the active leaves) or shedding the least promising active
    leaves. False (nothing changed) when even zero slots would not fit."""
    fit = slots_that_fit(tree, node_cap, ccap, vcaps)
    if fit < 0:
        return False
    active = tree._active_slots(exclude)
    slot_cap = min(fit, max(tree._slot_cap, 2 * len(active), 1))
    tree._rebuild(node_cap, slot_cap, ccap, vcaps, active[:slot_cap])
    return True


def grow_nodes(tree, need: int, exclude: int) -> bool:
    """Room for ``need`` node records: twice the capacity where it fits, else exactly
    ``need``, else by shedding active leaves but ``exclude``; False if not even that fits."""
    if need <= tree._node_cap:
        return True
    for cap in (max(2 * tree._node_cap, need), need):
        if fits(tree, cap, tree._slot_cap, tree._class_cap, tree._value_caps):
            tree._rebuild(cap, tree._slot_cap, tree._class_cap, tree._value_caps, tree._active_slots())
            return True
    return relayout(tree, need, tree._class_cap, tree._value_caps, exclude=exclude)


def doubled(tree, vcaps: list) -> list:
    """The value capacities `settle` grows ``vcaps`` to, one feature at a time, when each
    fits: twice the current capacity (1 from none) where ``vcaps`` needs more, else as now."""
    return [2 * old or 1 if need > old else old for need, old in zip(vcaps, tree._value_caps)]


def doubled_caps_fit(tree, vcaps: list, values: dict) -> bool:
    """Whether `settle`, called for each of ``values`` (nominal feature k -> its new value)
    in turn, would double every capacity it grows: the doubled capacities fit with the
    values' most bytes (then every step's own check passes, and one `relayout` to them
    ends where the steps end). False when no capacity grows (each step only checks)."""
    grown = doubled(tree, vcaps)
    if grown == tree._value_caps:
        return False
    return slots_that_fit(tree, tree._node_cap or 1, tree._class_cap, grown, growth_bytes(tree, [], values)) >= 0


def settle(tree, ccap: int, vcaps: list, final_ccap: int, final_vcaps: list, later: dict) -> None:
    """Re-lay to at least ``ccap`` / ``vcaps`` (one of them grown), doubling the grown
    capacity when the ``later`` values still fit at ``final_*`` beside it; with unchanged
    capacities, only shed leaves if the Python objects outgrew the budget."""
    node_cap = tree._node_cap or 1
    if ccap == tree._class_cap and vcaps == tree._value_caps:
        if not fits(tree, node_cap, tree._slot_cap, ccap, vcaps):
            relayout(tree, node_cap, ccap, vcaps)
        return
    if ccap > tree._class_cap:
        doubled = (max(2 * tree._class_cap, 1), vcaps)
        after = (doubled[0], final_vcaps)
    else:
        k = next(k for k, (a, b) in enumerate(zip(vcaps, tree._value_caps)) if a > b)
        grown = list(vcaps)
        grown[k] = 2 * tree._value_caps[k] or 1
        doubled = (ccap, grown)
        after = (final_ccap, [max(a, b) for a, b in zip(grown, final_vcaps)])
    fits_later = slots_that_fit(tree, node_cap, *after, growth_bytes(tree, [], later)) >= 0
    if not (fits_later and relayout(tree, node_cap, *doubled)):
        relayout(tree, node_cap, ccap, vcaps)  # cannot fail: the caller checked the exact capacities


# ---------------------------------------------------------------- schema, classes, values, state


def fix_schema(tree, numeric: list, nominal: list) -> None:
    """Learn the features ``numeric`` and ``nominal`` (global indices, in record order), with
    empty vocabularies and no value column yet."""
    tree._numeric_features = numeric
    tree._nominal_features = nominal
    tree._vocabs = [{} for _ in nominal]
    tree._vocab_of = dict(zip(nominal, tree._vocabs))
    tree._value_caps = [0] * len(nominal)
    tree._nominal_counts = [array("d") for _ in nominal]
    resized(tree)


def add_class(tree, y) -> int:
    """Append label ``y`` to ``classes_`` and return its index; its column must have room
    (`settle`)."""
    tree.classes_.append(y)
    c = tree._class_index[y] = len(tree.classes_) - 1
    resized(tree)
    return c


def add_value(tree, k: int, v: float) -> int:
    """Give nominal feature ``k``'s new value ``v`` the next code, and return it."""
    voc = tree._vocabs[k]
    code = voc[v] = len(voc)
    resized(tree)
    return code


def load(tree, state: dict) -> None:
    """Fill a fresh tree, its schema fixed (`fix_schema`), from ``state`` (the tree's
    ``state()``): classes, vocabularies, capacities and arrays, at the capacities the state
    names; the caller checks the records (`checks.check_records`)."""
    for c in state["classes"]:
        add_class(tree, c)
    for k, values in zip(range(len(tree._vocabs)), state["vocab"]):
        for v in values:
            add_value(tree, k, v)
    node_cap, slot_cap, ccap, vcaps = state["caps"]
    tree._node_cap, tree._slot_cap, tree._class_cap, tree._value_caps = node_cap, slot_cap, ccap, list(vcaps)
    tree._n_nodes = n = state["n_nodes"]
    tree._n_learned = state["n_learned"]
    tree._node_ints = storage.filled("i", node_cap * N_NODE_INTS)
    tree._node_ints[: n * N_NODE_INTS] = array("i", state["ints"])
    tree._node_floats = storage.filled("d", node_cap * N_NODE_FLOATS)
    tree._node_floats[: n * N_NODE_FLOATS] = array("d", state["floats"])
    tree._class_weights = storage.filled("d", node_cap * ccap)
    tree._class_weights[: n * ccap] = array("d", state["class_weights"])
    tree._gaussians = storage.from_numpy("d", np.array(state["stats"], dtype=np.float64))
    tree._nominal_counts = [storage.from_numpy("d", np.array(a, dtype=np.float64)) for a in state["nominal_counts"]]
    tree._free_slots = storage.filled("i", slot_cap)
    tree._n_free_slots = len(state["free"])
    tree._free_slots[: tree._n_free_slots] = array("i", state["free"])
    resized(tree)


# ---------------------------------------------------------------- node records


def add_root(tree) -> None:
    """The first node: an inactive leaf (`start_leaf` activates it); the records must have room."""
    tree._n_nodes = 1
    tree._node_ints[SPLIT_FEATURE] = -1
    tree._node_ints[SLOT] = -1


def split_node(tree, node: int, g: int, thr: float, dists: list) -> int:
    """Turn leaf ``node`` (its slot already released) into a split on global feature ``g``
    (at threshold ``thr`` when numeric) with a new inactive leaf per row of ``dists``, each
    starting with those class weights; returns the first child. The records must have room
    for the children (`grow_nodes`)."""
    ni, nf, cc, ccap = tree._node_ints, tree._node_floats, tree._class_weights, tree._class_cap
    first = tree._n_nodes
    n_br = len(dists)
    depth = ni[node * N_NODE_INTS + DEPTH] + 1
    for i in range(n_br):
        child = first + i
        cb = child * N_NODE_INTS
        ni[cb + SPLIT_FEATURE] = -1
        ni[cb + DEPTH] = depth
        ni[cb + SLOT] = -1
        weight = 0.0
        for c, v in enumerate(dists[i]):
            cc[child * ccap + c] = v
            weight += v
        nf[child * N_NODE_FLOATS + WEIGHT_SEEN] = weight
    tree._n_nodes = first + n_br
    nominal = g in tree._vocab_of
    b = node * N_NODE_INTS
    ni[b + SPLIT_FEATURE] = g
    ni[b + FIRST_CHILD] = first
    ni[b + N_BRANCHES] = n_br if nominal else 0
    ni[b + SLOT] = -1
    nf[node * N_NODE_FLOATS + THRESHOLD] = 0.0 if nominal else thr
    return first


def start_leaf(tree, node: int, s: int) -> None:
    """Leaf ``node`` learns in slot ``s`` from now on, its split count and nba scores at zero."""
    tree._node_ints[node * N_NODE_INTS + SLOT] = s
    fb = node * N_NODE_FLOATS
    nf = tree._node_floats
    nf[fb + WEIGHT_SINCE_ATTEMPT] = 0.0
    nf[fb + MC_CORRECT] = nf[fb + NB_CORRECT] = 0.0


def add_weight(tree, path: list, c: int, w: float) -> None:
    """One sample of class ``c`` and weight ``w`` learned along ``path`` (root first): ``w``
    added to every node's weight seen and to the leaf's class weight, the sample counted."""
    nf = tree._node_floats
    for n in path:
        nf[n * N_NODE_FLOATS + WEIGHT_SEEN] += w
    tree._class_weights[path[-1] * tree._class_cap + c] += w
    tree._n_learned += 1


def due_for_attempt(tree, node: int, w: float) -> bool:
    """Add ``w`` to leaf ``node``'s weight since its last split attempt; True, with that weight
    back at 0, once it reaches ``grace_period``."""
    # counted on its own: exact for integer weights, where MOA's and River's difference of
    # two fractional totals can miss by an ulp
    k = node * N_NODE_FLOATS + WEIGHT_SINCE_ATTEMPT
    since = tree._node_floats[k] + w
    due = since >= tree.grace_period
    tree._node_floats[k] = 0.0 if due else since
    return due


def credit(tree, node: int, field: int, w: float) -> None:
    """Add ``w`` to leaf ``node``'s nba score ``field`` (`MC_CORRECT` or `NB_CORRECT`)."""
    tree._node_floats[node * N_NODE_FLOATS + field] += w


# ---------------------------------------------------------------- slot pool


def take_slot(tree) -> int:
    """A free stats slot, growing the pool geometrically within the budget; -1 if none."""
    if not tree._n_free_slots:
        fit = slots_that_fit(tree, tree._node_cap, tree._class_cap, tree._value_caps)
        slot_cap = min(fit, 2 * tree._slot_cap or 1)
        if slot_cap <= tree._slot_cap:
            return -1
        tree._rebuild(tree._node_cap, slot_cap, tree._class_cap, tree._value_caps, tree._active_slots())
    tree._n_free_slots -= 1
    return tree._free_slots[tree._n_free_slots]


def clear_slot(tree, s: int) -> None:
    """Reset slot ``s`` to empty observers."""
    gaussians(tree)[s] = empty_stats(1, tree._class_cap, len(tree._numeric_features))[0]
    for k in range(len(tree._nominal_counts)):
        value_counts(tree, k)[s] = 0.0


def release_slot(tree, s: int) -> None:
    """Clear slot ``s`` and return it to the pool."""
    clear_slot(tree, s)
    tree._free_slots[tree._n_free_slots] = s
    tree._n_free_slots += 1
