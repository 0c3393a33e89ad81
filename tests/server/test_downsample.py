"""Downsampling a curve for a chart: what a person reads off the chart (its start, its end,
every spike and dip) survives, in step order, within the number of points asked for."""

from __future__ import annotations

import math
import random

import pytest

from shipyard.server.services.downsample import downsample


def noisy_curve(n: int, seed: int = 0) -> list[tuple[int, float | None]]:
    rng = random.Random(seed)
    return [(step, 1.0 / step + rng.uniform(-0.05, 0.05)) for step in range(1, n + 1)]


@pytest.mark.parametrize("max_points", [2, 3, 4, 10, 101, 400])
def test_at_most_max_points_in_step_order_with_first_and_last(max_points):
    points = noisy_curve(5000)
    kept = downsample(points, max_points)
    assert len(kept) <= max_points
    steps = [s for s, _ in kept]
    assert steps == sorted(set(steps))  # in step order, no point twice
    assert kept[0] == points[0] and kept[-1] == points[-1]
    assert set(kept) <= set(points)  # only real points, never made-up ones


def test_spikes_and_dips_survive():
    points = noisy_curve(10_000)
    points[3333] = (3334, 50.0)  # a spike
    points[7777] = (7778, -50.0)  # a dip
    kept = downsample(points, 100)
    assert (3334, 50.0) in kept and (7778, -50.0) in kept
    values = [v for _, v in kept]
    assert max(values) == 50.0 and min(values) == -50.0


def test_the_extremes_of_every_part_of_the_curve_survive():
    points = noisy_curve(1000, seed=3)
    kept = set(downsample(points, 22))  # 10 buckets between the first and the last point
    inner = points[1:-1]
    assert min(inner, key=lambda p: p[1]) in kept
    assert max(inner, key=lambda p: p[1]) in kept
    assert len(kept) == 22


def test_a_short_series_is_returned_unchanged():
    points = noisy_curve(50)
    assert downsample(points, 50) == points
    assert downsample(points, 400) == points
    assert downsample([], 10) == []


def test_steps_far_apart_are_bucketed_by_step_not_by_position():
    # 100 points in steps 1..100, then one every 1000 steps up to 100,000: the dense start
    # is one bucket of 10, so the sparse tail keeps most of the points.
    points = [(s, float(s % 7)) for s in range(1, 101)]
    points += [(s, float(s % 11)) for s in range(1000, 100_001, 1000)]
    kept = downsample(points, 22)
    assert len([s for s, _ in kept if s <= 100]) <= 3  # the first point + one bucket
    assert len(kept) <= 22


def test_missing_values_stay_out_of_min_max_but_an_all_missing_stretch_leaves_a_gap():
    points: list[tuple[int, float | None]] = [(s, float(s)) for s in range(1, 1001)]
    for s in range(450, 650):  # non-finite values are stored as None
        points[s - 1] = (s, None)
    points[100] = (101, None)  # alone among numbers: not a min or a max
    kept = downsample(points, 22)  # buckets of ~100 steps: one of them is all gap
    assert any(v is None and 450 <= s < 650 for s, v in kept)
    assert (101, None) not in kept
    numbers = [v for _, v in kept if v is not None]
    assert min(numbers) == 1.0 and max(numbers) == 1000.0
    assert all(not (isinstance(v, float) and math.isnan(v)) for _, v in kept)


def test_fewer_than_two_points_cannot_be_asked_for():
    with pytest.raises(ValueError, match="max_points"):
        downsample(noisy_curve(10), 1)
