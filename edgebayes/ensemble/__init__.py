"""Ensembles of online learners: many diverse members voting.

One Hoeffding tree is a *stable* learner (Gomes, Read and Bifet 2019, section III-D): it
splits only when the Hoeffding bound says the split is what a batch tree would choose, so
trees trained on slightly different data end up alike and make the same mistakes. An ensemble pays off only if its
members disagree where they can be wrong, so diversity must be injected on purpose:

- **Online bagging** (Oza and Russell): each member sees each sample with a weight
  ``k ~ Poisson(lam)``, an online stand-in for a bootstrap resample. ``lam=1`` imitates the
  batch bootstrap; SRP uses ``lam=6``, which trains more on every sample and keeps about
  e^-6 = 0.25 % of them out of each member.
- **Random subspaces** (Ho): each member sees only a random subset of the features, fixed for
  the member's life ("global" randomisation, unlike a random forest that redraws features at
  every split).
- **Random patches** = both at once: Streaming Random Patches (SRP; Gomes, Read and Bifet,
  ICDM 2019), `SRPClassifier`.

Drift is handled per member: a warning detector and a drift detector watch each member's
0/1 error (1 = wrong). A warning starts a *background learner* on a fresh subspace, trained
alongside the member but not voting; a drift swaps it in (or a fresh learner when there is
none). The vote weights each member's normalised class probabilities by its accuracy since
its last reset, so members stuck with useless features count little.

Modules: `srp` (the ensemble), `subspaces` (how many features each member gets, and which),
`diagnostics` (average pairwise kappa between members and average tree depth over time, the
paper's figures 3-6, through `diagnostics.DiversityMonitor` in the evaluation loop).
"""

from edgebayes.ensemble.committee import NaiveBayesCommittee
from edgebayes.ensemble.srp import SRPClassifier

__all__ = ["NaiveBayesCommittee", "SRPClassifier"]
