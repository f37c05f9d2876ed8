"""The compiled core: Cython modules built at install time (``setup.py``), each the per-sample
path of one learner or detector whose pure-Python reference lives next to its public class.

`edgebayes.backend()` says whether they are used. No numpy C API: a C compiler is all a build
needs, including on 32-bit ARM.
"""

#: compiled modules, all built or none used
MODULES = ("edgebayes._core.adwin", "edgebayes._core.inputs", "edgebayes._core.naive_bayes", "edgebayes._core.srp",
           "edgebayes._core.tree")
