"""Sampling one point and the grid's count rules, on the normalized space."""

from __future__ import annotations

import random
import re

import pytest

from shipyard.common.config import config_from_dict
from shipyard.common.errors import ConfigError
from shipyard.search.sampling import (
    float_grid,
    grid_axes,
    int_grid,
    sample_point,
)
from tests.search.spaces import EVERY_TYPE


def test_sampled_values_stay_in_bounds_and_keep_their_types() -> None:
    rng = random.Random(7)
    points = [sample_point(EVERY_TYPE, rng) for _ in range(400)]
    for point in points:
        assert isinstance(point["layers"], int) and 1 <= point["layers"] <= 4
        assert isinstance(point["drop"], float) and 0.1 <= point["drop"] <= 0.5
        assert isinstance(point["lr"], float) and 10**-4 <= point["lr"] <= 10**-1
        assert point["opt"] in ("sgd", "adam")
        assert point["bs"] == 32
        assert point["arch"]["width"] == 64 and point["arch"]["depth"] in (2, 3)
    # int is inclusive of both bounds, and every categorical value comes up
    assert {p["layers"] for p in points} == {1, 2, 3, 4}
    assert {p["opt"] for p in points} == {"sgd", "adam"}


def test_log_sampling_spreads_over_orders_of_magnitude() -> None:
    space = {"lr": {"type": "log", "minval": -6, "maxval": 0, "base": 10, "count": None}}
    rng = random.Random(3)
    exponents = [sample_point(space, rng)["lr"] for _ in range(600)]
    # uniform in the exponent: about a sixth of the draws below 1e-5, not almost none
    below = sum(1 for value in exponents if value < 1e-5)
    assert 60 <= below <= 140


def test_sampled_values_are_copies_not_the_space_itself() -> None:
    space = {"layers": {"type": "const", "val": [1, 2]}}
    point = sample_point(space, random.Random(0))
    point["layers"].append(3)
    assert space["layers"]["val"] == [1, 2]


@pytest.mark.parametrize(
    ("low", "high", "count", "expected"),
    [
        (1, 4, None, [1, 2, 3, 4]),  # no count: every integer
        (1, 4, 4, [1, 2, 3, 4]),
        (1, 4, 100, [1, 2, 3, 4]),  # count beyond the range: every integer
        (0, 10, 3, [0, 5, 10]),
        (0, 3, 3, [0, 2, 3]),  # 1.5 rounds half away from zero
        (1, 4, 1, [3]),  # one value: the midpoint 2.5, rounded
        (-3, 3, 3, [-3, 0, 3]),
        (5, 5, 3, [5]),
    ],
)
def test_int_grid_count_rules(low: int, high: int, count: int | None, expected: list[int]) -> None:
    assert list(int_grid(low, high, count)) == expected


def test_float_grid_includes_both_ends_and_one_point_is_the_midpoint() -> None:
    assert float_grid(0.1, 0.5, 3) == pytest.approx([0.1, 0.3, 0.5])
    assert float_grid(0.1, 0.5, 2) == [0.1, 0.5]  # the ends exactly
    assert float_grid(0.0, 1.0, 1) == [0.5]


def test_log_grid_is_base_to_evenly_spaced_exponents() -> None:
    space = {"lr": {"type": "log", "minval": -4, "maxval": -2, "base": 10, "count": 3}}
    [(_, values)] = grid_axes(space)
    assert list(values) == pytest.approx([1e-4, 1e-3, 1e-2])
    assert all(isinstance(value, float) for value in values)


# The space's rules live in the config models (they check the space as written); the
# searchers receive it checked.


def _load(hyperparameters: dict, searcher: str = "grid") -> None:
    section = {"name": searcher, "metric": "loss"}
    if searcher != "grid":
        section["max_trials"] = 2
    config_from_dict(
        {"entrypoint": "python3 train.py", "hyperparameters": hyperparameters, "searcher": section}
    )


def test_empty_grid_axis_is_refused_naming_the_hyperparameter() -> None:
    drop = {"type": "double", "minval": 0, "maxval": 1, "count": 0}
    with pytest.raises(ConfigError) as info:
        _load({"arch": {"drop": drop}})
    assert "hyperparameters.arch.drop" in str(info.value)
    assert info.value.details[0]["path"] == "hyperparameters.arch.drop.count"


def test_grid_needs_a_count_for_double_and_log() -> None:
    lr = {"type": "log", "minval": -4, "maxval": -1, "base": 10}
    with pytest.raises(ConfigError, match=r"hyperparameters\.lr\.count: grid search needs a count"):
        _load({"lr": lr})


@pytest.mark.parametrize(
    ("spec", "path", "message"),
    [
        (
            {"type": "int", "minval": 5, "maxval": 1},
            "x.maxval",
            "maxval (1) is smaller than minval",
        ),
        ({"type": "int", "minval": 0.5, "maxval": 1}, "x.minval", "expected an integer"),
        ({"type": "categorical", "vals": []}, "x.vals", "has no values"),
        ({"type": "uniform", "minval": 0, "maxval": 1}, "x.type", "unknown hyperparameter type"),
        ({"type": "log", "minval": 0, "maxval": 1, "base": -2}, "x.base", "base must be positive"),
        ({"type": "double", "minval": 0, "maxval": 1, "count": -1}, "x.count", "must be at least"),
        ({"type": "const"}, "x.val", "required field is missing"),
    ],
)
def test_malformed_spec_is_refused_with_its_path(spec: dict, path: str, message: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)) as info:
        _load({"arch": {"x": spec}}, searcher="random")
    assert info.value.details[0]["path"] == f"hyperparameters.arch.{path}"
