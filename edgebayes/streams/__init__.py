"""Streams of samples ``(x, y)`` for online learning: file readers, generators, concept drift.

Every stream is a `Stream`: iterating it yields ``(x, y)`` with ``x`` a 1-D float64 numpy
vector in the order of ``stream.schema.features`` and ``y`` the label; iterating again starts
again from the first sample. `open_stream` builds one from a path or a ``synth:NAME`` string,
which is what the command line and the configs use.

- Files (`CSVStream`, `ARFFStream`) are read lazily, one line at a time (constant memory);
  labels are the file's text (str). A nominal ARFF attribute is encoded as the float index of
  its value among the declared categories; ``schema.features[j].categories`` lists them.
- Generators (`SEA`, `Agrawal`, `LED`, `RandomRBF`, `Hyperplane`, `Sine`) follow their
  published definitions as MOA implements them (MOA's defaults, River's parameter names),
  are seeded numpy Generators, draw in chunks of `generator.CHUNK` samples and yield int
  labels. ``batches()`` gives the same samples chunk by chunk, for ``learn_many``.
- `ConceptDriftStream` joins two concepts with MOA's sigmoid; `srp_stream` builds the SRP
  paper's LED_A, LED_G, AGR_A, AGR_G, RBF_M and RBF_F at any length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from edgebayes.streams.agrawal import Agrawal
from edgebayes.streams.arff import ARFFStream
from edgebayes.streams.base import Head, Stream
from edgebayes.streams.csv_reader import CSVStream
from edgebayes.streams.drift import ConceptDriftStream
from edgebayes.streams.generator import Generator
from edgebayes.streams.hyperplane import Hyperplane
from edgebayes.streams.led import LED
from edgebayes.streams.presets import PRESETS, srp_stream, synthetic
from edgebayes.streams.rbf import RandomRBF
from edgebayes.streams.schema import Feature, Schema
from edgebayes.streams.sea import SEA
from edgebayes.streams.sine import Sine

__all__ = [
    "LED",
    "PRESETS",
    "SEA",
    "ARFFStream",
    "Agrawal",
    "CSVStream",
    "ConceptDriftStream",
    "Feature",
    "Generator",
    "Head",
    "Hyperplane",
    "RandomRBF",
    "Schema",
    "Sine",
    "Stream",
    "drop_hint",
    "open_stream",
    "srp_stream",
    "synthetic",
]


#: a reader's error for text in a feature column (a date, an id): the column is named last
_NON_NUMERIC = re.compile(r"non-numeric value .* in feature column (['\"])(?P<name>.*)\1\Z")


def drop_hint(message: str) -> str:
    """" (drop it with --drop NAME)" when ``message`` (a reader's ``ValueError``) names a
    non-numeric feature column, else ""; the command lines append it to their error line."""
    m = _NON_NUMERIC.search(message)
    return f" (drop it with --drop {m['name']})" if m else ""


def open_stream(
    source,
    *,
    target: str | None = None,
    drop: Iterable[str] = (),
    n_samples: int | None = None,
    seed: int | None = None,
) -> Stream:
    """Open a stream from a file path or a synthetic stream name.

    Args:
        source: a path ending in ``.csv``, ``.csv.gz`` (`CSVStream`) or ``.arff`` /
            ``.arff.gz`` (`ARFFStream`); or ``"synth:NAME"`` with NAME a preset of the SRP
            paper (``LED_A``, ``LED_G``, ``AGR_A``, ``AGR_G``, ``RBF_M``, ``RBF_F``) or a
            generator (``SEA``, ``AGRAWAL``, ``LED``, ``RBF``, ``HYPERPLANE``, ``SINE``).
        target: label column of a file (default: the last column / attribute).
        drop: file columns that are not features.
        n_samples: a synthetic stream's length (default 1,000,000, the SRP paper's);
            for a file, at most this many rows are read (default: all).
        seed: a synthetic stream's seed (numpy Generator; None = fresh entropy, fixed at
            construction so that iterating twice gives the same samples).

    Raises:
        FileNotFoundError: the file does not exist.
        ValueError: an unknown suffix or synthetic name, an empty file, a missing column,
            the target among the dropped columns, target or drop given with a synthetic
            stream.
    """
    text = str(source)
    if text.startswith("synth:"):
        if target is not None or tuple(drop):
            raise ValueError("target and drop apply to files, not to synthetic streams")
        return synthetic(text[len("synth:"):], n_samples=n_samples, seed=seed)
    path = Path(source)
    name = path.name.lower()
    if name.endswith((".csv", ".csv.gz")):
        stream = CSVStream(path, target=target, drop=drop)
    elif name.endswith((".arff", ".arff.gz")):
        stream = ARFFStream(path, target=target, drop=drop)
    else:
        if not path.exists():
            raise FileNotFoundError(f"no such file: {path}")
        raise ValueError(f"{path}: unknown stream format (expected .csv, .csv.gz, .arff or synth:NAME)")
    if n_samples is not None:
        stream = Head(stream, n_samples)
    return stream
