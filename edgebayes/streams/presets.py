"""The SRP paper's synthetic streams (Gomes, Read and Bifet 2019, Table III), and any by name.

The paper's MOA configurations (hmgomes/StreamingRandomPatches, datasets/synthetic_datastreams.txt),
1,000,000 samples each, drift every 250,000:

- ``LED_A`` / ``LED_G``: LEDGeneratorDrift with 1, 3, 5, 7 drifting attributes, chained by
  ConceptDriftStream at 250k with width 50 (abrupt) / 50,000 (gradual).
- ``AGR_A`` / ``AGR_G``: AgrawalGenerator functions 1, 2, 1, 4 (the third generator of the
  published command has no ``-f``, so it is MOA's default function 1), same chaining.
- ``RBF_M`` / ``RBF_F``: RandomRBFGeneratorDrift, 5 classes, 10 features, 50 centroids all
  moving at speed 0.0001 (moderate) / 0.001 (fast).

Every other setting is MOA's default (LED noise 10 %, AGRAWAL perturbation 5 %). Scaled to
``n`` samples, positions are n/4 apart, widths 50 n / 1e6 (at least 1) and 50,000 n / 1e6,
and the RBF speeds x 1e6 / n, so the stream has the paper's shape whatever its length. Each
component gets its own seed derived from ``seed`` (MOA's runs use seed 1 everywhere).
"""

from __future__ import annotations

import ast
import re

import numpy as np

from edgebayes.streams.agrawal import Agrawal
from edgebayes.streams.drift import ConceptDriftStream
from edgebayes.streams.generator import Generator, check_count
from edgebayes.streams.hyperplane import Hyperplane
from edgebayes.streams.led import LED
from edgebayes.streams.rbf import RandomRBF
from edgebayes.streams.sea import SEA
from edgebayes.streams.sine import Sine

PAPER_N = 1_000_000
PRESETS = ("LED_A", "LED_G", "AGR_A", "AGR_G", "RBF_M", "RBF_F")
GENERATORS = {
    "SEA": SEA, "AGRAWAL": Agrawal, "LED": LED, "RBF": RandomRBF, "HYPERPLANE": Hyperplane, "SINE": Sine,
}


def _chain(concepts: list[Generator], position: int, width: int, seeds) -> ConceptDriftStream:
    """concepts[0] -> concepts[1] -> ... with a drift every ``position`` samples (MOA nesting)."""
    stream = concepts[-1]
    for concept, seed in zip(reversed(concepts[:-1]), seeds):
        stream = ConceptDriftStream(concept, stream, position, width, seed=int(seed))
    return stream


def srp_stream(name: str, n_samples: int = PAPER_N, seed: int | None = 1) -> Generator:
    """The SRP paper's stream ``name`` (`PRESETS`), scaled to ``n_samples``.

    Returns a `Generator` of ``n_samples`` samples, drifts at n/4, n/2, 3n/4 (LED, AGR) or
    incremental throughout (RBF).

    Raises:
        ValueError: unknown name, n_samples < 1.
    """
    key = name.upper()
    if key not in PRESETS:
        raise ValueError(f"unknown SRP stream {name!r}; known: {', '.join(PRESETS)}")
    n = check_count("n_samples", n_samples, 1)
    seeds = np.random.SeedSequence(seed).generate_state(8)
    scale = n / PAPER_N
    if key.startswith("RBF"):
        speed = (1e-4 if key == "RBF_M" else 1e-3) / scale
        stream = RandomRBF(n_classes=5, n_features=10, n_centroids=50, change_speed=speed,
                           n_drift_centroids=50, seed=int(seeds[0]))
    else:
        width = max(1, round(50 * scale)) if key.endswith("_A") else max(1, round(50_000 * scale))
        position = max(1, n // 4)
        if key.startswith("LED"):
            concepts = [LED(n_drift_features=d, seed=int(s)) for d, s in zip((1, 3, 5, 7), seeds)]
        else:
            concepts = [Agrawal(f, seed=int(s)) for f, s in zip((1, 2, 1, 4), seeds)]
        stream = _chain(concepts, position, width, seeds[4:])
    stream.n_samples = n
    return stream


def synthetic(spec: str, *, n_samples: int | None = None, seed: int | None = None) -> Generator:
    """A synthetic stream from its name: ``synth:`` strings of `open_stream` without the prefix.

    ``spec`` is a preset (`PRESETS`, any case) or a generator name (`GENERATORS`) with
    optional keyword arguments, e.g. ``"SEA"``, ``"AGRAWAL(classification_function=3)"``,
    ``"RBF(n_classes=5, change_speed=0.001)"``. ``n_samples`` defaults to the paper's 1,000,000.

    Raises:
        ValueError: unknown name, bad argument syntax, an argument the generator refuses.
    """
    n = PAPER_N if n_samples is None else n_samples
    match = re.fullmatch(r"\s*([A-Za-z_][A-Za-z0-9_]*)\s*(?:\((.*)\))?\s*", spec)
    if match is None:
        raise ValueError(f"bad synthetic stream {spec!r}: expected NAME or NAME(key=value, ...)")
    name, args = match.group(1).upper(), match.group(2)
    if name in PRESETS and not args:
        return srp_stream(name, n, seed)
    if name not in GENERATORS:
        raise ValueError(
            f"unknown synthetic stream {spec!r}; known: {', '.join(PRESETS + tuple(GENERATORS))}")
    params = _keywords(args or "", spec)
    try:
        return GENERATORS[name](**params, n_samples=n, seed=seed)
    except TypeError as exc:
        raise ValueError(f"synthetic stream {spec!r}: {exc}") from None


def _keywords(args: str, spec: str) -> dict:
    """``"a=1, b='x'"`` -> ``{"a": 1, "b": "x"}`` (literals only)."""
    try:
        call = ast.parse(f"f({args})", mode="eval").body
        if call.args:
            raise ValueError("positional")
        return {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    except (SyntaxError, ValueError):
        raise ValueError(f"bad arguments in {spec!r}: use key=literal, ...") from None
