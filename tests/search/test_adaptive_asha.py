"""adaptive_asha: Determined's bracket split, global ids and points, restarts, bad configs."""

from __future__ import annotations

import pytest

from shipyard.common.errors import ConfigError
from shipyard.search import Create, ExitReason, Shutdown
from shipyard.search.adaptive_asha import AdaptiveAshaSearcher
from shipyard.search.sampling import rng_for_trial, sample_point
from shipyard.search.simulator import simulate
from tests.search.replay import check_restarts, drive
from tests.search.spaces import EVERY_TYPE, build, searcher_config


def config(**fields: object) -> dict:
    return searcher_config("adaptive_asha", **{"max_trials": 100, "max_length": 1000, **fields})


def make(seed: int = 0, **fields: object) -> AdaptiveAshaSearcher:
    searcher = build(config(**fields), EVERY_TYPE, seed)
    assert isinstance(searcher, AdaptiveAshaSearcher)
    return searcher


def plan(searcher: AdaptiveAshaSearcher) -> list[tuple[int, int, int]]:
    return [(len(b.lengths), b.max_trials, b.max_concurrent_trials) for b in searcher.brackets]


def loss_curve(hparams: dict, t: int) -> float:
    return hparams["drop"] + 0.1 * hparams["layers"] + 1 / (1 + t)


def test_standard_mode_split_matches_determined() -> None:
    # m = min(max_rungs 5, floor(log4 1000) + 1 = 5, floor(log4 100) + 1 = 4) = 4;
    # standard: rungs 2..4, most first; weights 4**3/4 = 16, 4**2/3, 4/2 -> 68, 22, 8 trials,
    # the remainder 2 to bracket 0; no concurrency limit: max(8, divisor 4) each.
    searcher = make(max_concurrent_trials=0)
    assert plan(searcher) == [(4, 70, 8), (3, 22, 8), (2, 8, 8)]
    assert [b.lengths for b in searcher.brackets] == [
        [15, 62, 250, 1000],
        [62, 250, 1000],
        [250, 1000],
    ]


@pytest.mark.parametrize(
    ("concurrent", "split"), [(10, [4, 3, 3]), (3, [1, 1, 1]), (1, [1, 1, 1]), (16, [6, 5, 5])]
)
def test_concurrency_split_evenly_remainder_first(concurrent: int, split: list[int]) -> None:
    assert [b.max_concurrent_trials for b in make(max_concurrent_trials=concurrent).brackets] == (
        split
    )


@pytest.mark.parametrize(
    ("mode", "rungs"),
    [("aggressive", [4]), ("conservative", [4, 3, 2, 1]), ("standard", [4, 3, 2])],
)
def test_modes(mode: str, rungs: list[int]) -> None:
    searcher = make(mode=mode)
    assert [len(b.lengths) for b in searcher.brackets] == rungs
    assert sum(b.max_trials for b in searcher.brackets) == 100


def test_explicit_bracket_rungs_and_exact_logs() -> None:
    assert [len(b.lengths) for b in make(bracket_rungs=[2, 5]).brackets] == [5, 2]
    # log(243) / log(3) is 4.999... in floating point: the exact log keeps the 5th rung
    searcher = make(max_length=243, divisor=3.0, max_trials=300, mode="aggressive")
    assert plan(searcher)[0][0] == 5
    assert searcher.brackets[0].lengths == [3, 9, 27, 81, 243]


def test_stop_once_is_accepted_either_way() -> None:
    assert plan(make(stop_once=True)) == plan(make(stop_once=False)) == plan(make())


def test_trials_get_global_ids_and_the_points_of_their_global_index() -> None:
    searcher = make(seed=8, max_trials=40, max_length=64, max_concurrent_trials=6)
    requests = searcher.create_trials()
    assert [r.request_id for r in requests] == [f"r{i:04d}" for i in range(1, 7)]
    for index, request in enumerate(requests):
        assert request.hparams == sample_point(EVERY_TYPE, rng_for_trial(8, index))
    brackets = [searcher.trial_summary(r.request_id)["bracket"] for r in requests]
    # m = min(5, floor(log4 64) + 1, floor(log4 40) + 1) = 3: brackets of 3 and 2 rungs
    assert brackets == [0, 0, 0, 1, 1, 1]
    assert [r.target for r in requests] == [4, 4, 4, 16, 16, 16]
    [create] = searcher.on_trial_exit(requests[3].request_id, ExitReason.CANCELED)
    assert isinstance(create, Create)
    assert create.request.request_id == "r0007"
    assert create.request.hparams == sample_point(EVERY_TYPE, rng_for_trial(8, 6))
    assert searcher.trial_summary("r0007") == {"bracket": 1, "rung": 0}


def test_whole_search_creates_each_brackets_share_and_stops_once() -> None:
    searcher = make(seed=2, max_trials=60, max_length=64, max_concurrent_trials=5)
    shares = [b.max_trials for b in searcher.brackets]
    run = simulate(searcher, loss_curve, workers=3)
    assert len(run.trials) == 60
    assert run.peak_unfinished <= 5
    assert run.shutdowns == [Shutdown(failure=False)]
    by_bracket = [0] * len(shares)
    for trial in run.trials:
        by_bracket[searcher.trial_summary(trial.request_id)["bracket"]] += 1
    assert by_bracket == shares
    assert searcher.progress() == 1.0
    assert [b["created"] for b in searcher.summary()["brackets"]] == shares


@pytest.mark.parametrize("drive_seed", [5, 6, 7])
def test_restart_from_json_at_every_prefix_continues_identically(drive_seed: int) -> None:
    def fresh() -> AdaptiveAshaSearcher:
        return make(
            seed=1,
            max_trials=30,
            max_time=64,
            time_metric="batches",
            max_concurrent_trials=4,
            mode="conservative",
        )

    log = drive(fresh(), length=64, seed=drive_seed, time_metric="batches")
    assert isinstance(log.actions()[-1], Shutdown)
    assert len(log.created) == 30
    check_restarts(fresh, log)


def test_restart_through_the_simulator_matches_the_uninterrupted_run() -> None:
    def fresh() -> AdaptiveAshaSearcher:
        return make(seed=6, max_trials=40, max_length=64)

    plain = simulate(fresh(), loss_curve, workers=4, seed=3)
    again = simulate(fresh(), loss_curve, workers=4, seed=3, restart_every=3, rebuild=fresh)
    assert again.actions == plain.actions


@pytest.mark.parametrize(
    ("fields", "path", "text"),
    [
        ({"divisor": 1.5}, "searcher.divisor", "must be at least 2, got 1.5"),
        ({"mode": "wild"}, "searcher.mode", "expected 'aggressive', 'standard' or"),
        ({"max_rungs": 0}, "searcher.max_rungs", "must be at least 1, got 0"),
        ({"bracket_rungs": [6], "max_length": 100}, "searcher.max_length", "too short for 6"),
        ({"bracket_rungs": ["2"]}, "searcher.bracket_rungs[0]", "expected an integer"),
        ({"bracket_rungs": [1, 2, 3], "max_trials": 2}, "searcher.max_trials", "too few"),
        ({"max_trials": 0}, "searcher.max_trials", "must be at least 1, got 0"),
        ({"max_length": None}, "searcher.max_length", "needs a training length"),
    ],
)
def test_bad_config_names_the_field(fields: dict, path: str, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        build(config(**fields), EVERY_TYPE, 0)
    assert info.value.details[0]["path"] == path
    assert info.value.message.startswith(path + ": ") and text in info.value.message
