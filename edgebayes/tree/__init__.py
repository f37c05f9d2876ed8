"""Hoeffding trees: decision trees grown online, one sample at a time, in a fixed budget.

A Hoeffding tree (VFDT; Domingos and Hulten 2000) starts as a single leaf. Each leaf keeps
the weight it has seen per class and, per feature, an *attribute observer*: for a numeric
feature a Gaussian estimator per class (weight, mean, variance, min, max), for a nominal one
a weight per class and value. Every ``grace_period`` of weight, a leaf ranks its candidate
splits by information gain; the Hoeffding bound says how far apart the best two must be
before one can trust, with probability 1 - ``delta``, that the best is truly best. Once the
bound shrinks below ``tau`` the two are called a tie and the best is taken. A split turns
the leaf into a node whose children start from the class weights the split estimates. A
*near-pure* leaf (majority class over 99 % of its weight) never splits on a tie: it clears
its observers instead and learns them again (River's behaviour; on a drifting stream it keeps
stale leaves from splitting on the old concept).

Leaves predict the majority class (``mc``), naive Bayes over their observers (``nb``), or
whichever of the two has been more accurate on the leaf's own training samples (``nba``).

**Active and inactive leaves.** The observers are what costs memory. An *active* leaf holds
them, so it can split and predict by naive Bayes. An *inactive* leaf keeps only its class
weights: it still learns its class distribution and predicts the majority class, but it
cannot split. With ``max_size_bytes`` set, the tree never holds more bytes than that: when
the budget is full it makes no split it cannot afford, and it keeps the observers only for
the most *promising* leaves (weight seen times majority-class error: where a split could fix
the most mistakes), deactivating the others and reactivating them when they rank higher or
room frees (VFDT's memory management, as MOA's ``enforceTrackerLimit``). A new class or
nominal value that does not fit even with every leaf inactive is refused
(`edgebayes.base.ClassLimitError`), never learned by growing past the budget.

**Storage.** Nodes and leaf statistics live in flat struct-of-arrays buffers (`arena`),
grown geometrically up to what the budget allows: no Python object per node or statistic,
so ``memory_bytes()`` is computed from the array sizes and planned before any allocation.

Modules, each importing only those after it: `hoeffding_tree` (the classifier: API, state,
memory), `checks` (parameters and states), `learning` (the VFDT loop: route, update, split,
leaf activation), `leaves` (mc / nb / nba predictions), `arena` (the flat
arrays, capacity planning, growth), `observers` (observer updates and split evaluation),
`criterion` (information gain, Hoeffding bound), `storage` (exactly sized arrays). The
modules below the classifier are functions over its arrays, taking the tree as argument.

**Two backends.** These modules are the readable reference: scalar loops in the order of the
compiled per-sample path (`edgebayes._core.tree`: routing, observers, leaf votes, split
evaluation in C), which `HoeffdingTreeClassifier` is when `edgebayes.backend()`, chosen at
import, is "compiled" (the reference stays `hoeffding_tree.ReferenceHoeffdingTreeClassifier`)
and which gives the same floats bit for bit. What changes the tree's shape (new classes and
values, splits, leaf ranking) is this Python code on both backends. """

from edgebayes.tree.hoeffding_tree import HoeffdingTreeClassifier

__all__ = ["HoeffdingTreeClassifier"]
