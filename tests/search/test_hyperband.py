"""hyperband: Li et al.'s brackets, synchronous rung decisions, limits, restarts, bad configs."""

from __future__ import annotations

import pytest

from shipyard.common.errors import ConfigError
from shipyard.search import ExitReason, SetTarget, Shutdown, Stop
from shipyard.search.hyperband import HyperbandSearcher
from shipyard.search.simulator import simulate
from tests.search.replay import check_restarts, drive
from tests.search.spaces import EVERY_TYPE, build, searcher_config


def config(**fields: object) -> dict:
    return searcher_config("hyperband", **{"max_length": 81, **fields})


def make(seed: int = 0, **fields: object) -> HyperbandSearcher:
    searcher = build(config(**fields), EVERY_TYPE, seed)
    assert isinstance(searcher, HyperbandSearcher)
    return searcher


def loss_curve(hparams: dict, t: int) -> float:
    return hparams["drop"] + 0.1 * hparams["layers"] + 1 / (1 + t)


def test_brackets_of_the_paper_for_r81_eta3() -> None:
    searcher = make()
    assert [(b.s, b.sizes, b.lengths) for b in searcher.brackets] == [
        (4, [81, 27, 9, 3, 1], [1, 3, 9, 27, 81]),
        (3, [34, 11, 3, 1], [3, 9, 27, 81]),
        (2, [15, 5, 1], [9, 27, 81]),
        (1, [8, 2], [27, 81]),
        (0, [5], [81]),
    ]
    assert searcher.total_trials == 143


def test_s_max_is_exact_and_capped_by_max_rungs() -> None:
    # floating point says log(243) / log(3) = 4.999...: the exact check keeps s_max = 5
    assert make(max_length=243, max_rungs=6).brackets[0].s == 5
    assert make(max_length=81, max_rungs=3).brackets[0].s == 2
    assert make(max_length=80).brackets[0].s == 3  # 3**4 = 81 > 80
    assert [b.lengths for b in make(max_length=100, divisor=4, max_rungs=2).brackets] == [
        [25, 100],
        [100],
    ]


def small() -> tuple[HyperbandSearcher, list[str]]:
    # R 9, eta 3, 2 rungs: bracket 0 has 3 trials at 3 then 1 at 9; bracket 1 has 2 at 9
    searcher = make(max_length=9, max_rungs=2)
    requests = searcher.create_trials()
    assert [(r.request_id, r.target) for r in requests] == [
        ("r0001", 3),
        ("r0002", 3),
        ("r0003", 3),
        ("r0004", 9),
        ("r0005", 9),
    ]
    return searcher, [r.request_id for r in requests]


def test_a_rung_is_decided_when_its_last_trial_arrives() -> None:
    searcher, ids = small()
    assert searcher.on_validation(ids[0], {"loss": 0.5}, 3) == []
    assert searcher.on_validation(ids[1], {"loss": 0.2}, 2) == []  # not there yet
    assert searcher.on_validation(ids[1], {"loss": 0.2}, 3) == []
    assert searcher.on_validation(ids[2], {"loss": 0.9}, 3) == [
        Stop(ids[0], "hyperband bracket 0 rung 0: ranked 2 of 3, 1 goes on"),
        Stop(ids[2], "hyperband bracket 0 rung 0: ranked 3 of 3, 1 goes on"),
        SetTarget(ids[1], 9),
    ]
    assert searcher.trial_summary(ids[1]) == {"bracket": 0, "rung": 1}
    assert searcher.on_validation(ids[1], {"loss": 0.1}, 9) == []  # the top: completes itself
    for rid, why in [(ids[0], "STOPPED"), (ids[2], "STOPPED"), (ids[1], "COMPLETED")]:
        assert searcher.on_trial_exit(rid, ExitReason(why)) == []
    assert searcher.on_trial_exit(ids[3], ExitReason.COMPLETED) == []
    assert searcher.on_trial_exit(ids[4], ExitReason.COMPLETED) == [Shutdown(failure=False)]
    assert searcher.progress() == 1.0


def test_an_exited_trial_is_worst_and_never_blocks_its_rung() -> None:
    searcher, ids = small()
    searcher.on_validation(ids[0], {"loss": 0.5}, 3)
    searcher.on_validation(ids[1], {"loss": float("nan")}, 3)
    assert searcher.trial_summary(ids[1])["note"] == (
        "reported nan for 'loss' at time 3: counted as the worst value"
    )
    actions = searcher.on_trial_exit(ids[2], ExitReason.ERRORED)
    assert actions == [
        Stop(ids[1], "hyperband bracket 0 rung 0: ranked 2 of 3, 1 goes on"),
        SetTarget(ids[0], 9),
    ]
    assert searcher.trial_summary(ids[2])["note"] == (
        "errored at rung 0 before length 3: counted as the worst value"
    )


def test_a_trial_canceled_while_it_waits_gives_its_place_up() -> None:
    searcher, ids = small()
    searcher.on_validation(ids[0], {"loss": 0.1}, 3)
    searcher.on_trial_exit(ids[0], ExitReason.CANCELED)  # the best, but gone
    searcher.on_validation(ids[1], {"loss": 0.5}, 3)
    assert searcher.on_validation(ids[2], {"loss": 0.7}, 3) == [
        Stop(ids[2], "hyperband bracket 0 rung 0: ranked 2 of 3, 1 goes on"),
        SetTarget(ids[1], 9),
    ]


def test_missing_time_metric_stops_the_trial_and_counts_as_worst() -> None:
    searcher = make(max_length=None, max_time=9, time_metric="batches", max_rungs=2)
    ids = [r.request_id for r in searcher.create_trials()]
    [stop] = searcher.on_validation(ids[0], {"loss": 0.1}, 3)
    assert stop == Stop(
        ids[0],
        "its validation metrics have no 'batches', the searcher's time_metric: "
        "report it with every validation",
    )
    searcher.on_validation(ids[1], {"loss": 0.4, "batches": 3}, 3)
    actions = searcher.on_validation(ids[2], {"loss": 0.6, "batches": 3}, 3)
    assert actions == [
        Stop(ids[2], "hyperband bracket 0 rung 0: ranked 2 of 3, 1 goes on"),
        SetTarget(ids[1], 9),
    ]


def test_overshooting_a_rung_counts_for_the_next_one_too() -> None:
    searcher = make(max_length=27, max_rungs=3)  # bracket 0: 9 at 3, 3 at 9, 1 at 27
    ids = [r.request_id for r in searcher.create_trials()][:9]
    for i, rid in enumerate(ids):
        actions = searcher.on_validation(rid, {"loss": i / 10}, 12 if i < 3 else 3)
    promoted = [a.request_id for a in actions if isinstance(a, SetTarget)]
    # the top 3 already passed length 9: rung 1 is decided at once, the best goes to 27
    assert promoted == [ids[0]]
    assert actions[-1] == SetTarget(ids[0], 27)
    assert sum(isinstance(a, Stop) for a in actions) == 8


@pytest.mark.parametrize("concurrent", [0, 4])
def test_whole_search_runs_every_planned_trial_once(concurrent: int) -> None:
    searcher = make(seed=3, max_concurrent_trials=concurrent)
    run = simulate(searcher, loss_curve, workers=1000)  # every created trial starts at once
    assert len(run.trials) == 143
    assert run.shutdowns == [Shutdown(failure=False)]
    assert run.peak_running == (concurrent or 143)  # trials training at once
    assert run.compute == 1581  # sum over brackets of n_k * (length_k - length_k-1)


def test_max_trials_must_cover_the_brackets() -> None:
    with pytest.raises(ConfigError) as info:
        make(max_trials=100)
    assert info.value.details[0]["path"] == "searcher.max_trials"
    assert "needs 143 trials, got 100" in info.value.message
    assert make(max_trials=143).total_trials == 143


@pytest.mark.parametrize("drive_seed", [9, 10, 11])
def test_restart_from_json_at_every_prefix_continues_identically(drive_seed: int) -> None:
    def fresh() -> HyperbandSearcher:
        return make(seed=4, max_length=27, max_rungs=3, max_concurrent_trials=5)

    log = drive(fresh(), length=27, seed=drive_seed)
    assert isinstance(log.actions()[-1], Shutdown)
    assert len(log.created) == fresh().total_trials
    assert log.max_training <= 5
    check_restarts(fresh, log)


def test_restart_through_the_simulator_matches_the_uninterrupted_run() -> None:
    def fresh() -> HyperbandSearcher:
        return make(seed=2, max_length=27, max_concurrent_trials=3)

    plain = simulate(fresh(), loss_curve, workers=2, validate_every=4)
    again = simulate(
        fresh(), loss_curve, workers=2, validate_every=4, restart_every=2, rebuild=fresh
    )
    assert again.actions == plain.actions


@pytest.mark.parametrize(
    ("fields", "path", "text"),
    [
        ({"divisor": 1.5}, "searcher.divisor", "must be at least 2, got 1.5"),
        ({"max_length": 2}, "searcher.max_length", "max_length 2 is too short for 2 rungs"),
        ({"max_rungs": 0}, "searcher.max_rungs", "must be at least 1, got 0"),
        ({"max_length": None}, "searcher.max_length", "needs a training length"),
    ],
)
def test_bad_config_names_the_field(fields: dict, path: str, text: str) -> None:
    with pytest.raises(ConfigError) as info:
        build(config(**fields), EVERY_TYPE, 0)
    assert info.value.details[0]["path"] == path
    assert info.value.message.startswith(path + ": ") and text in info.value.message
