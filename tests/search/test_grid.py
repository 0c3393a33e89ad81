"""The grid searcher: the exact product, in a deterministic order, under the concurrency cap."""

from __future__ import annotations

import itertools

import pytest

from shipyard.common.config import config_from_dict
from shipyard.common.errors import ConfigError
from tests.search.simulate import run_search
from tests.search.spaces import EVERY_TYPE, build, searcher_config

SMALL_SPACE = {
    "lr": {"type": "log", "minval": -3, "maxval": -2, "base": 10, "count": 2},
    "opt": {"type": "categorical", "vals": ["sgd", "adam"]},
    "seed": {"type": "const", "val": 1},
    "arch": {
        "type": "object",
        "vals": {"depth": {"type": "int", "minval": 1, "maxval": 3, "count": 2}},
    },
}


def test_grid_enumerates_exactly_the_product_in_order() -> None:
    searcher = build(searcher_config("grid"), SMALL_SPACE, seed=0)
    points = [request.hparams for request in run_search(searcher).created]
    expected = [
        {"lr": lr, "opt": opt, "seed": 1, "arch": {"depth": depth}}
        for lr, opt, depth in itertools.product([1e-3, 1e-2], ["sgd", "adam"], [1, 3])
    ]
    assert len(points) == 8
    for point, want in zip(points, expected, strict=True):
        assert point["lr"] == pytest.approx(want["lr"])
        assert {k: v for k, v in point.items() if k != "lr"} == {
            k: v for k, v in want.items() if k != "lr"
        }


def test_grid_order_does_not_depend_on_the_seed() -> None:
    first = run_search(build(searcher_config("grid"), EVERY_TYPE, seed=1)).created
    second = run_search(build(searcher_config("grid"), EVERY_TYPE, seed=2)).created
    assert [r.hparams for r in first] == [r.hparams for r in second]
    assert len(first) == 3 * 1 * 4 * 2 * 2 * 2  # lr, bs, layers, drop, opt, arch.depth


def test_grid_points_are_all_distinct() -> None:
    run = run_search(build(searcher_config("grid"), EVERY_TYPE, seed=0))
    assert len({repr(r.hparams) for r in run.created}) == len(run.created)


def test_grid_obeys_max_concurrent_trials() -> None:
    config = searcher_config("grid", max_concurrent_trials=3)
    searcher = build(config, SMALL_SPACE, seed=0)
    assert len(searcher.create_trials()) == 3
    run = run_search(build(config, SMALL_SPACE, seed=0))
    assert run.max_running == 3 and len(run.created) == 8
    assert len(run.shutdowns) == 1


def test_grid_ignores_max_trials_like_determined() -> None:
    config = searcher_config("grid", max_trials=2)
    assert len(run_search(build(config, SMALL_SPACE, seed=0)).created) == 8


def test_empty_grid_is_a_config_error_naming_the_hyperparameter() -> None:
    # The config model checks the space; the grid searcher receives it checked.
    layers = {"type": "int", "minval": 1, "maxval": 4, "count": 0}
    with pytest.raises(ConfigError, match=r"hyperparameters\.layers"):
        config_from_dict(
            {
                "entrypoint": "python3 train.py",
                "hyperparameters": {"layers": layers},
                "searcher": {"name": "grid", "metric": "loss"},
            }
        )


def test_an_empty_space_is_one_trial_without_hyperparameters() -> None:
    run = run_search(build(searcher_config("grid"), {}, seed=0))
    assert [r.hparams for r in run.created] == [{}]
