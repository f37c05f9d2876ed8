"""edgebayes: online learning on a sensor stream, on a small device, inside a memory budget.

The learners (`edgebayes.naive_bayes`, `edgebayes.tree`, `edgebayes.ensemble`) share one API,
described in `edgebayes.base`; the drift detectors live in `edgebayes.drift`, the streams in
`edgebayes.streams`, prequential evaluation in `edgebayes.evaluate`, and the MQTT runtime in
`edgebayes.runtime`. Submodules are imported on demand so that `import edgebayes` stays cheap
on a Raspberry Pi.

Two implementations of the per-sample paths exist: compiled (`edgebayes._core`, built by
``pip install`` when a C compiler is present) and the pure-Python reference, which gives the
same results bit for bit. `backend()` says which one new objects get.
"""

import functools
import importlib
import os

__version__ = "0.1.0"

#: set to anything but "" or "0" to use the pure-Python reference even when the core is built
PURE_PYTHON_ENV = "EDGEBAYES_PURE_PYTHON"


@functools.cache
def _compiled_missing() -> str:
    """Why the compiled core cannot be used ("" when it can): the first import error."""
    from edgebayes._core import MODULES

    for name in MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            return f"{name} does not import: {exc}; a C compiler at install time builds it"
    return ""


def backend() -> str:
    """``"compiled"`` or ``"python"``: the implementation objects built now get.

    ``"compiled"`` when the compiled core imports and the environment variable
    ``EDGEBAYES_PURE_PYTHON`` is unset, empty or ``"0"``. The variable is read at each call, so
    setting it switches the objects built afterwards; an object keeps its implementation.
    """
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return "python"
    return "python" if _compiled_missing() else "compiled"


def backend_description() -> str:
    """`backend()` for a log line: ``"compiled"``, or ``"python (why)"``."""
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        return f"python ({PURE_PYTHON_ENV}={os.environ[PURE_PYTHON_ENV]})"
    missing = _compiled_missing()
    return f"python ({missing})" if missing else "compiled"
