"""Grid search needs a finite, non-empty space."""

from __future__ import annotations

from shipyard.common.config import load_config
from shipyard.common.errors import NotSupportedYet
from tests.common.conftest import config_error, detail_at

GRID = "entrypoint: python3 train.py\nsearcher: {name: grid, metric: loss}\nhyperparameters:\n"


def test_grid_size_counts_every_combination():
    cfg = load_config(
        GRID
        + "  lr: {type: log, minval: -4, maxval: -2, count: 3}\n"
        + "  layers: {type: int, minval: 1, maxval: 4}\n"  # no count: every integer
        + "  units: {type: int, minval: 1, maxval: 2, count: 5}\n"  # count beyond the range
        + "  opt: {type: categorical, vals: [sgd, adam]}\n"
        + "  bs: 32\n"
        + "  arch: {drop: {type: double, minval: 0.1, maxval: 0.3, count: 2}}\n"
    )
    assert cfg.grid_size() == 3 * 4 * 2 * 2 * 1 * 2
    assert cfg.searcher_dict()["max_trials"] == cfg.grid_size()


def test_grid_needs_count_for_doubles_and_logs():
    error = config_error(
        load_config,
        GRID
        + "  lr: {type: log, minval: -4, maxval: -2}\n"
        + "  nested: {drop: {type: double, minval: 0.1, maxval: 0.3}}\n",
    )
    detail = detail_at(error, "hyperparameters.lr.count")
    assert "grid search needs a count" in detail["message"]
    assert detail["line"] == 4
    assert detail_at(error, "hyperparameters.nested.drop.count")["line"] == 5


def test_empty_grid_names_the_hyperparameter():
    error = config_error(load_config, GRID + "  opt: {type: categorical, vals: []}\n")
    assert not isinstance(error, NotSupportedYet)
    detail = detail_at(error, "hyperparameters.opt.vals")
    assert detail["message"].startswith("hyperparameter space for grid is empty")
    assert "hyperparameters.opt" in detail["message"]

    error = config_error(
        load_config, GRID + "  lr: {type: double, minval: 0, maxval: 1, count: 0}\n"
    )
    assert "hyperparameter space for grid is empty" in str(error)


def test_grid_without_hyperparameters_runs_one_trial():
    cfg = load_config(GRID.replace("hyperparameters:\n", ""))
    assert cfg.grid_size() == 1
