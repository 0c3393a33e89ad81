"""The cache of ended trials' curves stays within its size, dropping the least recently
used curve first."""

from __future__ import annotations

from shipyard.server.services.curve_cache import CurveCache


def test_the_least_recently_used_curves_go_first_and_the_size_stays_bounded():
    cache = CurveCache(max_bytes=30)
    for trial_id in (1, 2, 3):
        cache.put((trial_id, 1, 400), b"x" * 10)
    assert cache.get((1, 1, 400)) == b"x" * 10  # now the most recently used
    cache.put((4, 1, 400), b"y" * 10)  # over 30 bytes: trial 2's curve goes
    assert cache.get((2, 1, 400)) is None
    assert [cache.get((t, 1, 400)) is not None for t in (1, 3, 4)] == [True, True, True]
    assert cache.get((1, 1, 100)) is None  # another max_points is another curve


def test_a_trial_without_the_metric_is_remembered_as_empty():
    cache = CurveCache()
    cache.put((7, 2, 400), b"")
    assert cache.get((7, 2, 400)) == b""
