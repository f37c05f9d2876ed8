"""Saved states of `edgebayes.ensemble.srp.SRPClassifier`: what ``state()`` writes, the
parameters ``from_state`` rebuilds the ensemble with, and the check that a rebuilt ensemble is
one ``learn_one`` could have grown.

A state is a plain, msgpack-serialisable dict with ``"kind": "srp"``: the constructor's
parameters (a learner or detector as its own state, a config dict tagged ``{"config": ...}``),
the counters, both generators and the members' states (`edgebayes.ensemble.srp_member.Member`).
"""

from __future__ import annotations

from edgebayes.base import check_finite, check_label, learner_from_state, rng_state
from edgebayes.drift.base import detector_from_state

__all__ = ["check_state", "read_params", "srp_state"]


def _opt(obj):
    return None if obj is None else obj.state()


def srp_state(srp) -> dict:
    """The state of the ensemble ``srp`` (see the module doc)."""
    model = srp.model  # a config dict is kept as given, tagged apart from a learner's state
    return {
        "kind": "srp",
        "params": {
            **srp._params(),
            "model": {"config": dict(model)} if isinstance(model, dict) else _opt(model),
            "drift_detector": _opt(srp.drift_detector),
            "warning_detector": _opt(srp.warning_detector),
        },
        "classes": list(srp.classes_),
        "n_features": srp.n_features_,
        "subspace_size_": srp.subspace_size_,
        "training_method_": srp.training_method_,
        "n_samples_seen": srp.n_samples_seen_,
        "n_warnings": srp.n_warnings,
        "n_drifts": srp.n_drifts,
        "rng": rng_state(srp._rng),
        "poisson_rng": rng_state(srp._poisson),
        "members": [m.state() for m in srp._members],
    }


def read_params(params: dict) -> dict:
    """The constructor's arguments from a state's ``"params"``: the model and detectors rebuilt
    from their states (a config dict as given).

    Raises:
        ValueError: a model config that is not a dict, or a learner or detector state its
            ``from_state`` refuses; a missing key or wrong type surfaces as one of
            `edgebayes.base.STATE_ERRORS`.
    """
    p = dict(params)
    model = p["model"]
    if isinstance(model, dict) and "kind" not in model:  # a config dict, as given
        if not isinstance(model["config"], dict):
            raise ValueError(f"invalid srp state: model config {model['config']!r} is not a dict")
        p["model"] = dict(model["config"])
    elif model is not None:
        p["model"] = learner_from_state(model)
    for name in ("drift_detector", "warning_detector"):
        if p[name] is not None:
            p[name] = detector_from_state(p[name])
    return p


def check_state(srp, state: dict, training_methods: tuple) -> None:
    """ValueError unless the rebuilt ensemble ``srp`` is one `learn_one` could have grown
    (``training_methods``: the methods in force it may hold)."""
    def bad(what):
        return ValueError(f"invalid srp state: {what}")

    for c in srp.classes_:
        check_label(c)
    if len(srp._index) != len(srp.classes_):
        raise bad("two classes are equal labels")
    for name in ("n_samples_seen", "n_warnings", "n_drifts"):
        if type(state[name]) is not int or state[name] < 0:
            raise bad(f"{name} must be an int >= 0")
    if srp.training_method_ not in training_methods:
        raise bad(f"training_method_ {srp.training_method_!r}")
    d, k = srp.n_features_, srp.subspace_size_
    if not srp._members:
        if d is not None or k is not None or srp.classes_:
            raise bad("no members but features or classes")
        return
    if len(srp._members) != srp.n_models:
        raise bad(f"{len(srp._members)} members for n_models={srp.n_models}")
    if type(d) is not int or d < 1 or type(k) is not int or not 1 <= k <= d:
        raise bad(f"n_features {d!r} and subspace_size_ {k!r}")
    known = set(srp._index)
    for m in srp._members:
        if type(m.promoted) is not bool or (m.promoted and m.bkg is not None):
            raise bad("a member's promoted flag must be a bool, and False with a background learner")
        check_finite("n_tested", m.n_tested, 0.0)
        check_finite("n_correct", m.n_correct, 0.0, m.n_tested)
        for learner, f in ((m.learner, m.features), (m.bkg, m.bkg_features)):
            if learner is None:
                continue
            if type(learner) is not type(srp._proto) or not set(learner.classes_) <= known:
                raise bad("a member's learner does not match the model or the classes")
            if f is not None and (f.ndim != 1 or not len(f) or f.min() < 0 or f.max() >= d):
                raise bad("a member's subspace is out of range")
            seen = getattr(learner, "n_features_in_", None)
            if seen is not None and seen != (d if f is None or srp._has_features else len(f)):
                raise bad("a member's learner does not match its subspace")
