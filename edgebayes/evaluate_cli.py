"""``edgebayes evaluate``: prequential evaluation of a model on a data file or synthetic stream.

    edgebayes evaluate --model nb --data ../shared/data/elec2/elec2.csv.gz --drop date [--json]

Prints the backend (`edgebayes.backend()`), the seed, accuracy, Cohen's kappa, window
accuracy, speed and model size (or one JSON object with ``--json``). The same command gives
the same figures: ``--seed`` defaults to `DEFAULT_SEED` (the benchmarks' and MOA's seed 1), and
the stream's nominal features (its schema: AGRAWAL's elevel, car, zipcode, an ARFF file's
``{...}`` attributes) are declared to the tree and to SRP's trees, as bench/report.py does. A
progress bar goes to stderr when it is a terminal. Unreadable input (missing or empty file,
missing column, a row the model refuses): one-line error, exit code 2.
"""

from __future__ import annotations

import argparse
import csv
import inspect
import json
import sys

from edgebayes import backend, backend_description
from edgebayes.base import learner_class, make_learner

#: ``--model`` name -> learner kind of the registry (`edgebayes.base.KINDS`).
MODELS: dict[str, str] = {"nb": "gaussian_nb", "ht": "hoeffding_tree", "srp": "srp"}
#: ``--seed`` when none is given: a synthetic stream and a randomised model are the same run
#: after run (1, as bench/report.py and the SRP paper's MOA runs).
DEFAULT_SEED = 1


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--model", choices=sorted(MODELS), default="nb",
                        help="nb: Gaussian naive Bayes, ht: Hoeffding tree, srp: Streaming Random Patches (default nb)")
    parser.add_argument("--learning-rate", type=float, metavar="ALPHA",
                        help="nb: constant learning rate in (0, 1) (Wu & Xiong 2023); default: exact "
                             "running estimates")
    parser.add_argument("--data", required=True, metavar="PATH",
                        help="a .csv, .csv.gz or .arff file with a header, or synth:NAME")
    parser.add_argument("--target", metavar="NAME", help="label column (default: the last one)")
    parser.add_argument("--drop", nargs="+", action="extend", default=[], metavar="COL",
                        help="columns that are not features (e.g. date)")
    parser.add_argument("--samples", type=int, metavar="N", help="evaluate on the first N samples only")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED, metavar="S",
                        help=f"seed of a synthetic stream and of a randomised model (default {DEFAULT_SEED})")
    parser.add_argument("--window", type=int, default=1000, metavar="N",
                        help="sliding window of the window accuracy (default 1000)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def declare_nominal(kind: str, params: dict, schema) -> dict:
    """``params`` of learner ``kind`` with the nominal features of ``schema`` (the stream's:
    `edgebayes.streams.Schema.nominal`, the one definition the benchmarks read too) declared:
    as ``nominal_attributes`` to a learner that takes it (the Hoeffding tree), and to SRP's
    default tree (the paper's, `edgebayes.ensemble.srp`) when no ``model`` is given. Other
    learners (naive Bayes) get ``params`` unchanged."""
    nominal = list(schema.nominal)
    if not nominal:
        return params
    accepted = inspect.signature(learner_class(kind)).parameters
    if "nominal_attributes" in accepted:
        return {"nominal_attributes": nominal, **params}
    if kind == "srp" and params.get("model") is None:
        from edgebayes.ensemble.srp import _prototype

        tree = _prototype(None)  # SRP's default member, the paper's tree
        return {**params, "model": type(tree)(**{**tree._params(), "nominal_attributes": nominal})}
    return params


def _model(args, schema):
    kind = MODELS[args.model]
    accepted = inspect.signature(learner_class(kind)).parameters
    params = {}
    if args.learning_rate is not None:
        params["learning_rate"] = args.learning_rate  # make_learner refuses it for other models
    if args.seed is not None and "seed" in accepted:
        params["seed"] = args.seed
    return make_learner(kind, **declare_nominal(kind, params, schema))


def main(args: argparse.Namespace) -> int:
    from edgebayes.evaluate import prequential
    from edgebayes.streams import drop_hint, open_stream

    used, used_why = backend(), backend_description()  # before any model is built
    try:
        stream = open_stream(args.data, target=args.target, drop=args.drop, n_samples=args.samples, seed=args.seed)
        model = _model(args, stream.schema)
        result = prequential(model, stream, window=args.window, progress=sys.stderr.isatty())
        if result.n_samples == 0:
            raise ValueError(f"{args.data}: no samples")
    except (OSError, ValueError, csv.Error) as exc:
        print(f"edgebayes evaluate: error: {exc}{drop_hint(str(exc))}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"model": args.model, "learner": repr(model), "data": args.data, "seed": args.seed,
                          "backend": used, **result.as_dict()}))
        return 0
    r = result
    print(f"backend          {used_why}")
    print(f"model            {args.model}: {model!r}")
    print(f"data             {args.data}")
    print(f"seed             {args.seed}")
    print(f"samples          {r.n_samples:,}")
    print(f"accuracy         {100 * r.accuracy:.2f} %")
    print(f"kappa            {r.kappa:.4f}")
    print(f"window accuracy  {100 * r.window_accuracy:.2f} % (last {min(r.window, r.n_samples):,})")
    print(f"speed            {r.samples_per_s:,.0f} samples/s (predict + learn), {r.elapsed_s:.1f} s in all")
    print(f"model size       {r.model_bytes:,} bytes")
    return 0
