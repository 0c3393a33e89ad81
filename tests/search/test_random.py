"""The random and single searchers: seeded, bounded by max_trials and max_concurrent_trials."""

from __future__ import annotations

import pytest

from shipyard.common.errors import ConfigError
from shipyard.search import ExitReason
from tests.search.simulate import run_search
from tests.search.spaces import EVERY_TYPE, build, searcher_config


def _points(seed: int, **fields: object) -> list[dict]:
    config = searcher_config("random", **{"max_trials": 10, **fields})
    return [r.hparams for r in run_search(build(config, EVERY_TYPE, seed)).created]


def test_same_seed_same_points_different_seed_different_points() -> None:
    assert _points(seed=42) == _points(seed=42)
    assert _points(seed=42) != _points(seed=43)


def test_points_do_not_depend_on_concurrency_or_exit_order() -> None:
    limited = searcher_config("random", max_trials=10, max_concurrent_trials=2)
    run = run_search(build(limited, EVERY_TYPE, 42), newest_first=True)
    assert [r.hparams for r in run.created] == _points(seed=42)


@pytest.mark.parametrize(
    ("max_trials", "max_concurrent", "initial", "peak"),
    [(10, 3, 3, 3), (10, 0, 10, 10), (2, 5, 2, 2), (7, 1, 1, 1)],
)
def test_random_respects_max_trials_and_max_concurrent_trials(
    max_trials: int, max_concurrent: int, initial: int, peak: int
) -> None:
    config = searcher_config("random", max_trials=max_trials, max_concurrent_trials=max_concurrent)
    assert len(build(config, EVERY_TYPE, 0).create_trials()) == initial
    run = run_search(build(config, EVERY_TYPE, 0))
    assert len(run.created) == max_trials
    assert run.max_running == peak
    assert len({r.request_id for r in run.created}) == max_trials


def test_errored_trials_count_towards_max_trials() -> None:
    config = searcher_config("random", max_trials=4, max_concurrent_trials=2)
    run = run_search(build(config, EVERY_TYPE, 0), reason=lambda _: ExitReason.ERRORED)
    assert len(run.created) == 4
    assert run.shutdowns[0].failure is True  # every trial errored


def test_random_needs_max_trials() -> None:
    with pytest.raises(ConfigError, match=r"searcher\.max_trials") as info:
        build(searcher_config("random"), EVERY_TYPE, 0)
    assert info.value.details[0]["path"] == "searcher.max_trials"


def test_single_runs_one_seeded_random_point() -> None:
    run = run_search(build(searcher_config("single"), EVERY_TYPE, seed=5))
    [request] = run.created
    again = run_search(build(searcher_config("single"), EVERY_TYPE, seed=5)).created
    assert again[0].hparams == request.hparams
    assert 1 <= request.hparams["layers"] <= 4
    assert len(run.shutdowns) == 1 and run.shutdowns[0].failure is False


def test_single_draws_different_points_for_different_seeds() -> None:
    points = {
        repr(build(searcher_config("single"), EVERY_TYPE, seed).create_trials()[0].hparams)
        for seed in range(5)
    }
    assert len(points) == 5
