"""Concept-drift detection: noticing that the stream's mean has moved.

An online learner assumes tomorrow looks like yesterday. When the process behind the stream
changes (a sensor is recalibrated, a machine wears, the season turns), a model trained on the
old regime keeps predicting it. A *drift detector* watches one number per sample, usually the
learner's 0/1 error (1 = wrong), and says when its mean has changed, so the caller can react:
SRP replaces the member whose error rose, the runtime publishes a drift alert.

ADWIN (Bifet and Gavalda 2007) keeps a window of recent inputs as long as the data allow:
whenever some split of the window into an older part W0 and a newer part W1 shows means that
differ by more than a Hoeffding/Bernstein-type bound (which shrinks with both parts' lengths
and grows with ``ln(1/delta)``), the older data are dropped. The window mean is thus an
estimate of the current mean with no fixed horizon, and a drop is a detection. ADWIN2 stores
the window as an exponential histogram (buckets of 1, 2, 4, ... inputs, at most
``max_buckets`` of each size), so memory is O(log width) and the test only looks at bucket
boundaries, every ``clock`` inputs.

A cut says "the mean changed", not "it got worse". For an error stream only a rise matters:
a learner that improved must not be replaced. :class:`ErrorDetector` turns any detector into
that signal (MOA's ``ADWINChangeDetector``): it fires when the detector cut and the estimate
went up across that input.

Every detector follows the small protocol in :mod:`edgebayes.drift.base` (``update(x) ->
bool``, ``drift_detected``, ``estimation``, ``n_detections``, ``reset()``, ``clone()``,
``memory_bytes()``, ``state()``/``from_state()``), so another detector can be plugged in.

Example (a learner's error rate jumps from 10% to 60% at sample 2000):

    >>> import random
    >>> from edgebayes.drift import ADWIN, ErrorDetector
    >>> rng = random.Random(7)
    >>> errors = [rng.random() < 0.1 for _ in range(2000)]  # 1 (True) = wrong prediction
    >>> errors += [rng.random() < 0.6 for _ in range(2000)]
    >>> signal = ErrorDetector(ADWIN(delta=1e-5))
    >>> [i for i, e in enumerate(errors) if signal.update(e)]
    [2047, 2079, 2111]
    >>> round(signal.estimation, 2), signal.detector.width
    (0.59, 2080)

The first check after the change (every 32 inputs) cuts the old regime away bucket by bucket;
the kept window still holds some of it, so the next checks cut again until it is gone.
"""

from edgebayes.drift.adwin import ADWIN
from edgebayes.drift.base import DETECTOR_KINDS, DriftDetector, ErrorDetector, detector_from_state

__all__ = ["ADWIN", "DETECTOR_KINDS", "DriftDetector", "ErrorDetector", "detector_from_state"]
