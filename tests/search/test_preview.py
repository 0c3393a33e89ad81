"""preview: rungs, trials per rung, compute and the random-search comparison, per searcher."""

from __future__ import annotations

import json
from typing import Any

import pytest

from shipyard.common.errors import ConfigError
from shipyard.search import optuna, pbt
from shipyard.search.preview import preview
from tests.search.spaces import EVERY_TYPE, searcher_config, typed


def test_async_halving_plan_and_compute() -> None:
    config = searcher_config(
        "async_halving",
        max_trials=64,
        num_rungs=4,
        divisor=4,
        max_length=None,
        max_time=1000,
        time_metric="batches",
    )
    plan = preview(typed(config), EVERY_TYPE, 0)
    assert plan["unit"] == "batches"
    [bracket] = plan["brackets"]
    assert bracket["rungs"] == [
        {"rung": 0, "trials": 64, "length": 15},
        {"rung": 1, "trials": 16, "length": 62},
        {"rung": 2, "trials": 4, "length": 250},
        {"rung": 3, "trials": 1, "length": 1000},
    ]
    # 64 * 15 + 16 * (62 - 15) + 4 * (250 - 62) + 1 * (1000 - 250)
    assert bracket["compute"] == plan["compute"] == 3214
    assert plan["total_trials"] == 64
    assert plan["random_search_compute"] == 64_000
    assert plan["ratio"] == pytest.approx(3214 / 64_000)
    json.dumps(plan)


def test_adaptive_asha_brackets_and_at_least_one_at_the_top() -> None:
    plan = preview(typed(searcher_config("adaptive_asha", max_trials=100, max_length=1000)), {}, 0)
    assert [b["trials"] for b in plan["brackets"]] == [70, 22, 8]
    assert [[r["trials"] for r in b["rungs"]] for b in plan["brackets"]] == [
        [70, 17, 4, 1],
        [22, 5, 1],
        [8, 2],
    ]
    assert [[r["length"] for r in b["rungs"]] for b in plan["brackets"]] == [
        [15, 62, 250, 1000],
        [62, 250, 1000],
        [250, 1000],
    ]
    assert plan["brackets"][2]["compute"] == 8 * 250 + 2 * 750
    assert plan["compute"] == sum(b["compute"] for b in plan["brackets"])
    assert plan["unit"] == "steps" and plan["random_search_compute"] == 100_000


def test_hyperband_plan_is_the_papers() -> None:
    plan = preview(typed(searcher_config("hyperband", max_length=81)), EVERY_TYPE, 0)
    assert [b["trials"] for b in plan["brackets"]] == [81, 34, 15, 8, 5]
    assert [b["compute"] for b in plan["brackets"]] == [297, 276, 279, 324, 405]
    assert plan["compute"] == 1581 and plan["total_trials"] == 143
    assert plan["random_search_compute"] == 143 * 81


@pytest.mark.parametrize(
    ("name", "fields", "trials"),
    [("single", {}, 1), ("random", {"max_trials": 7}, 7), ("grid", {}, 3 * 4 * 2 * 2 * 2)],
)
def test_single_random_grid_train_every_trial_to_the_full_length(
    name: str, fields: dict, trials: int
) -> None:
    plan = preview(typed(searcher_config(name, **fields)), EVERY_TYPE, 0)
    assert plan["brackets"] == [
        {
            "bracket": 0,
            "trials": trials,
            "rungs": [{"rung": 0, "trials": trials, "length": 100}],
            "compute": trials * 100,
        }
    ]
    assert plan["ratio"] == 1.0 and plan["unit"] == "steps"


def test_without_a_length_compute_is_in_trials() -> None:
    plan = preview(typed(searcher_config("random", max_trials=5, max_length=None)), EVERY_TYPE, 0)
    assert plan["unit"] == "trials" and plan["compute"] == 5
    assert "no max_length or max_time" in plan["note"]


@pytest.mark.parametrize(
    ("package", "fields"),
    [
        (
            pbt,
            {
                "name": "pbt",
                "max_length": None,
                "population_size": 4,
                "num_rounds": 3,
                "length_per_round": {"batches": 10},
                "replace_function": {"truncate_fraction": 0.25},
                "explore_function": {"resample_probability": 0.2, "perturb_factor": 0.2},
            },
        ),
        (optuna, {"name": "optuna", "max_trials": 12}),
    ],
)
def test_pbt_and_optuna_plans_come_from_their_packages(package: Any, fields: dict) -> None:
    config = typed(searcher_config(**fields))
    plan = preview(config, EVERY_TYPE, 0)
    assert plan == package.preview_plan(config, EVERY_TYPE)
    assert plan["searcher"] == fields["name"] and plan["total_trials"] > 0


def test_bad_config_is_the_same_config_error_as_at_start() -> None:
    with pytest.raises(
        ConfigError, match=r"searcher\.divisor: divisor must be at least 2, got 1\.5"
    ):
        preview(typed(searcher_config("hyperband", divisor=1.5)), EVERY_TYPE, 0)
