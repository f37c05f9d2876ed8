"""Which implementation the learners get, decided once, when edgebayes is imported.

Two implementations of the per-sample paths exist: compiled (`edgebayes._core`, built by
``pip install`` when a C compiler is present) and the pure-Python reference, which gives the
same results bit for bit. As in msgpack-python (``MSGPACK_PUREPYTHON``), each public class
name (``GaussianNB``, ``HoeffdingTreeClassifier``, ``SRPClassifier``, ``ADWIN``) is bound once,
by `choose` at the end of its module, to the compiled class or to the reference; the reference
stays importable as ``Reference<Name>`` from the same module.
"""

import functools
import importlib
import importlib.util
import os

#: the compiled modules, all built or none used
MODULES = ("edgebayes._core.adwin", "edgebayes._core.inputs", "edgebayes._core.naive_bayes",
           "edgebayes._core.srp", "edgebayes._core.tree")

#: set to anything but "" or "0" to use the pure-Python reference even when the core is built
PURE_PYTHON_ENV = "EDGEBAYES_PURE_PYTHON"

#: `PURE_PYTHON_ENV` as it was when edgebayes was imported ("" when unset); read only here
_FORCED = os.environ.get(PURE_PYTHON_ENV, "")


@functools.cache
def compiled_missing() -> str:
    """Why the compiled core cannot be used ("" when it can): the first module not built.

    Looks the extension files up without running them, so that it may be called while the
    learners' modules are being imported.
    """
    for name in MODULES:
        if importlib.util.find_spec(name) is None:
            return f"{name} is not built; a C compiler at install time builds it"
    return ""


def backend() -> str:
    """``"compiled"`` or ``"python"``: the implementation the public learner classes are.

    ``"compiled"`` when the compiled core is built and ``EDGEBAYES_PURE_PYTHON`` was unset,
    empty or ``"0"`` when edgebayes was imported; setting the variable later changes nothing.
    """
    return "python" if _FORCED not in ("", "0") or compiled_missing() else "compiled"


def backend_description() -> str:
    """`backend()` for a log line: ``"compiled"``, or ``"python (why)"``."""
    if _FORCED not in ("", "0"):
        return f"python ({PURE_PYTHON_ENV}={_FORCED})"
    missing = compiled_missing()
    return f"python ({missing})" if missing else "compiled"


def choose(reference: type, module: str) -> type:
    """The class a public name is bound to: ``reference`` when `backend()` is ``"python"``,
    else the class of the same name in the compiled module ``module`` (imported now).

    Raises:
        ImportError: the compiled module is built but does not load.
    """
    if backend() == "python":
        return reference
    return getattr(importlib.import_module(module), reference.__name__)
