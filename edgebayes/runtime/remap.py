"""A restored checkpoint fitted to the configured features, by name.

A checkpoint records the ``[schema] features`` it was written under, and each model the
names of the features its learner takes, in its order. When the config's features differ:

- a reordered feature changes nothing: the model is fed its own features, in its own order;
- an added feature extends a ``gaussian_nb`` model (the new feature starts with no statistics,
  like a value missing so far) and is ignored by every other restored model, which keeps its
  feature set until it starts fresh;
- a removed feature is dropped from a ``gaussian_nb`` model (its statistics of that feature
  only: the others are independent of it), so reverting an added feature works; any other
  restored model that takes it cannot be fed: `SchemaChange` (the device is refused, its
  checkpoint left as it is, so the old config still finds it).

Pending readings are kept in the configured order (a feature they lack is missing, NaN), and
their reading-time predictions are matched to the configured models by name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence


class SchemaChange(ValueError):
    """A checkpoint whose models take a feature the config no longer has (one line)."""


def model_inputs(kind: str, learner: dict, takes: Sequence, features: Sequence,
                 extend: bool = True) -> tuple[dict, list[int] | None, list]:
    """The learner state to restore, the indices, into a configured reading, of the values it
    takes in its order (None: the reading as it is), and the removed features it dropped.

    Args:
        kind: the model kind; learner: its saved learner state; takes: the feature names the
            learner was fed, in order; features: the configured ``[schema] features``;
            extend: whether a ``gaussian_nb`` takes the added features (else it ignores them).

    Raises:
        SchemaChange: ``takes`` has a feature ``features`` does not.
        ValueError: ``takes`` is not a list of distinct names.
    """
    if not isinstance(takes, list) or len(set(takes)) != len(takes):
        raise ValueError(f"a model's feature list {takes!r:.80} is not a list of distinct names")
    gone = [f for f in takes if f not in features]
    dropped = []
    if gone and kind == "gaussian_nb" and len(gone) < len(takes):
        learner = _drop_gaussian_nb(learner, [i for i, f in enumerate(takes) if f in features])
        takes, dropped, gone = [f for f in takes if f in features], gone, []
    if gone:
        raise SchemaChange(f"[schema] features no longer has {', '.join(map(repr, gone))}, which the "
                           f"restored {kind} model takes (add it back, or remove the checkpoint to start fresh)")
    inputs = [features.index(f) for f in takes]
    added = [i for i, f in enumerate(features) if f not in takes]
    if added and extend and kind == "gaussian_nb":
        learner = _extend_gaussian_nb(learner, len(added))
        inputs += added
    return learner, None if inputs == list(range(len(features))) else inputs, dropped


def _drop_gaussian_nb(state: dict, keep: list[int]) -> dict:
    """``state`` of a GaussianNB with only the features at the indices ``keep``."""
    if state.get("n_features_in") is None:
        return state
    state = dict(state, n_features_in=len(keep))
    for key in ("counts", "means", "variances"):
        state[key] = [[row[i] for i in keep] for row in state[key]]
    for key in ("feature_counts", "feature_means", "feature_variances"):
        state[key] = [state[key][i] for i in keep]
    return state


def _extend_gaussian_nb(state: dict, n: int) -> dict:
    """``state`` of a GaussianNB with ``n`` more features, each with no statistics yet."""
    if state.get("n_features_in") is None:  # nothing learned: the first reading sets the width
        return state
    zeros = [0.0] * n
    state = dict(state, n_features_in=state["n_features_in"] + n)
    for key in ("counts", "means", "variances"):
        state[key] = [list(row) + zeros for row in state[key]]
    for key in ("feature_counts", "feature_means", "feature_variances"):
        state[key] = list(state[key]) + zeros
    return state


def pending_items(items: list, saved: Sequence, features: Sequence, models: Sequence[int | None]) -> list:
    """Pending entries ``[seq, t, x, y_preds]`` (x in ``saved`` feature order, y_preds one per
    saved model) in the configured order: x over ``features`` (NaN where a reading lacks one),
    y_preds of configured model ``j`` from saved model ``models[j]`` (None: a new model)."""
    where = [saved.index(f) if f in saved else None for f in features]
    out = []
    for seq, t, x, y_preds in items:
        x = [math.nan if i is None else x[i] for i in where]
        y_preds = [y_preds[i] if i is not None and i < len(y_preds) else None for i in models]
        out.append([seq, t, x, y_preds])
    return out
