"""Synthetic streams by name (``synth:NAME``)."""

from __future__ import annotations


def synthetic(name: str, *, n_samples: int | None = None, seed: int | None = None):
    """The synthetic stream called ``name``.

    Raises:
        ValueError: unknown name.
    """
    raise ValueError(f"unknown synthetic stream {name!r}")
