"""edgebayes: online learning on a sensor stream, on a small device, inside a memory budget.

The learners (`edgebayes.naive_bayes`, `edgebayes.tree`, `edgebayes.ensemble`) share one API,
described in `edgebayes.base`; the drift detectors live in `edgebayes.drift`, the streams in
`edgebayes.streams`, prequential evaluation in `edgebayes.evaluate`, and the MQTT runtime in
`edgebayes.runtime`. Submodules are imported on demand so that `import edgebayes` stays cheap
on a Raspberry Pi.

Two implementations of the per-sample paths exist: compiled (`edgebayes._core`, built by
``pip install`` when a C compiler is present) and the pure-Python reference, which gives the
same results bit for bit. `backend()` says which one the learner classes are; it is chosen
once, at import (`edgebayes._backend`).
"""

from edgebayes._backend import PURE_PYTHON_ENV, backend, backend_description

__all__ = ["PURE_PYTHON_ENV", "__version__", "backend", "backend_description"]
__version__ = "0.1.0"
