"""How a bounded SRP splits ``max_size_bytes``: the reserve, the shares, their fallbacks."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from edgebayes.drift import ADWIN
from edgebayes.drift.base import ErrorDetector
from edgebayes.ensemble.srp_budget import (
    BOOKKEEPING_BYTES,
    MEMBER_BOOKKEEPING_BYTES,
    MEMBER_FRACTION,
    bookkeeping_bytes,
    learner_fits,
    learner_shares,
    signal_bound,
)
from edgebayes.ensemble.srp_member import ARRAY_OVERHEAD_BYTES, MEMBER_SLOT_BYTES
from edgebayes.naive_bayes import GaussianNB
from edgebayes.tree import HoeffdingTreeClassifier

pytestmark = pytest.mark.usefixtures("backend")  # every test on both backends

SIXTY_FOUR_BITS = sys.maxsize > 2**32


def _tree():
    return HoeffdingTreeClassifier(grace_period=50, delta=0.01, leaf_prediction="nba")


def _signal():
    return ErrorDetector(ADWIN(delta=1e-5))


def test_the_bookkeeping_reserve_grows_once_subspaces_need_more_than_the_floor():
    assert (BOOKKEEPING_BYTES, MEMBER_BOOKKEEPING_BYTES) == (8192, 512)
    assert bookkeeping_bytes(10) == 8192 + 10 * 512 == 13312
    small = MEMBER_SLOT_BYTES + 2 * (8 * 6 + ARRAY_OVERHEAD_BYTES)
    assert small < 512 and bookkeeping_bytes(10, 6) == 13312  # the floor holds 6-feature subspaces
    assert bookkeeping_bytes(10, 30) == 8192 + 10 * (MEMBER_SLOT_BYTES + 2 * (8 * 30 + ARRAY_OVERHEAD_BYTES))
    if SIXTY_FOUR_BITS:
        assert sys.getsizeof(np.arange(30, dtype=np.int64)) - 8 * 30 == ARRAY_OVERHEAD_BYTES
        assert bookkeeping_bytes(10, 30) == 8192 + 10 * (MEMBER_SLOT_BYTES + 704)


def test_a_signal_is_bounded_by_its_window_over_2_to_the_32_inputs():
    signal = _signal()
    assert signal_bound(signal) == signal.max_memory_bytes(2**32) > signal.memory_bytes()

    class Constant:
        def memory_bytes(self):
            return 77

    assert signal_bound(Constant()) == 77


def test_one_megabyte_for_ten_members_with_warnings():
    share, bkg = learner_shares(1_000_000, 10, _tree(), _signal(), _signal())
    pool = 1_000_000 - 13312 - 20 * signal_bound(_signal())
    assert share == int(pool * MEMBER_FRACTION) // 10
    assert bkg == (pool - share * 10) // 10
    assert share + bkg <= pool // 10 < share + bkg + 2
    if SIXTY_FOUR_BITS:  # the class docstring's figures
        assert (round(share / 1000, 1), round(bkg / 1000, 1)) == (82.7, 9.2)


def test_without_warnings_every_member_gets_an_even_part():
    share, bkg = learner_shares(1_000_000, 10, _tree(), _signal(), None)
    assert share == bkg == (1_000_000 - 13312 - 10 * signal_bound(_signal())) // 10


def test_drawn_subspaces_reserve_their_arrays_out_of_the_shares():
    drawn = learner_shares(1_000_000, 10, _tree(), _signal(), None, k=30)
    pool = 1_000_000 - bookkeeping_bytes(10, 30) - 10 * signal_bound(_signal())
    assert drawn == (pool // 10, pool // 10)


def test_a_background_share_below_the_learners_minimum_falls_back_to_an_even_split():
    share, bkg = learner_shares(200_000, 10, _tree(), _signal(), _signal())
    pool = 200_000 - 13312 - 20 * signal_bound(_signal())
    assert int(pool * MEMBER_FRACTION) // 10 > share  # MEMBER_FRACTION's split was refused
    assert share == int(pool * 0.5) // 10 and bkg == (pool - share * 10) // 10


def test_a_budget_without_room_for_the_learners_is_refused_with_the_reserve():
    reserve = 13312 + 20 * signal_bound(_signal())
    with pytest.raises(ValueError, match=f"too small: detectors and bookkeeping reserve {reserve} bytes"):
        learner_shares(120_000, 10, _tree(), _signal(), _signal())


def test_learner_fits_asks_a_fresh_learner_with_the_given_parameters():
    nb = GaussianNB()
    assert learner_fits(nb, [1.0, 2.0], "a", max_size_bytes=100_000)
    floor = GaussianNB().memory_bytes()  # the empty model: no room for a class
    assert not learner_fits(nb, [1.0, 2.0], "a", max_size_bytes=floor)
    assert nb.max_size_bytes is None  # the prototype is left as it was
