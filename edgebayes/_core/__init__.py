"""The compiled core: Cython modules built at install time (``setup.py``), each the per-sample
path of one learner or detector whose pure-Python reference lives next to its public class.

`edgebayes.backend()` says whether they are used. No numpy C API: a C compiler is all a build
needs, including on 32-bit ARM.

The compiled classes subclass (or share a base with) their references, and each reference
module binds its public name to its compiled twin at its end (`edgebayes._backend.choose`).
So that a compiled module never runs before its reference class exists, whichever is imported
first, this package loads the reference modules before any compiled module; `edgebayes._core.srp`,
whose reference package imports the naive Bayes learners, is reached through
`edgebayes.ensemble.srp` only.
"""

import edgebayes.drift.adwin
import edgebayes.naive_bayes
import edgebayes.tree.hoeffding_tree  # noqa: F401
