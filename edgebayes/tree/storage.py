"""Flat, exactly sized arrays for the tree's struct-of-arrays storage, and their byte cost.

The stdlib ``array`` module holds the data: per-element reads and writes on the per-sample path
cost far less than numpy's scalar indexing (docs/results.md, "Figures behind choices in the
code"), and numpy views (``np.frombuffer``) serve the rare vectorised work (split evaluation,
re-layout). Arrays are created at their exact size (``array * n`` allocates no slack), so the
bytes held are ``ARRAY_HEADER + itemsize * len``, what `array_bytes` predicts before allocating.
"""

from __future__ import annotations

import sys
from array import array

import numpy as np

#: bytes of an empty array object, whatever its type code.
ARRAY_HEADER = sys.getsizeof(array("d"))
ITEMSIZE = {"i": array("i").itemsize, "d": array("d").itemsize}
DTYPE = {"i": np.intc, "d": np.float64}


def array_bytes(typecode: str, n: int) -> int:
    """Bytes held by an exactly sized array of ``n`` items of ``typecode`` ("i" or "d")."""
    return ARRAY_HEADER + ITEMSIZE[typecode] * n


def filled(typecode: str, n: int, value=0) -> array:
    """An exactly sized array of ``n`` items, all ``value``."""
    return array(typecode, [value]) * n


def from_numpy(typecode: str, values: np.ndarray) -> array:
    """An exactly sized array holding ``values`` (any shape, flattened in C order)."""
    out = filled(typecode, values.size)
    if values.size:
        np.frombuffer(out, dtype=DTYPE[typecode])[:] = values.ravel()
    return out


def view(a: array, shape=None) -> np.ndarray:
    """A writable numpy view of ``a`` (reshaped to ``shape`` if given); no copy."""
    out = np.frombuffer(a, dtype=DTYPE[a.typecode]) if len(a) else np.zeros(0, DTYPE[a.typecode])
    return out if shape is None else out.reshape(shape)
