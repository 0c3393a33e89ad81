"""async_halving: Determined's rungs, top 1/divisor going on, replacements, bad values."""

from __future__ import annotations

import math

import pytest

from shipyard.common.errors import ConfigError
from shipyard.search import Create, ExitReason, SetTarget, Shutdown, Stop
from shipyard.search.asha import AsyncHalvingSearcher
from shipyard.search.simulator import simulate
from tests.search.replay import check_restarts, drive
from tests.search.spaces import EVERY_TYPE, build, searcher_config


def asha(**fields: object) -> dict:
    return searcher_config(
        "async_halving", **{"max_trials": 16, "num_rungs": 2, "max_length": 16, **fields}
    )


def make(seed: int = 0, **fields: object) -> AsyncHalvingSearcher:
    searcher = build(asha(**fields), EVERY_TYPE, seed)
    assert isinstance(searcher, AsyncHalvingSearcher)
    return searcher


def loss_curve(hparams: dict, t: int) -> float:
    return hparams["drop"] + 0.1 * hparams["layers"] + 1 / (1 + t)


@pytest.mark.parametrize(
    ("length", "divisor", "num_rungs", "expected"),
    [
        (1000, 4, 4, [15, 62, 250, 1000]),
        (256, 4, 5, [1, 4, 16, 64, 256]),
        (100, 3, 3, [11, 33, 100]),
        (100, 2.5, 3, [16, 40, 100]),
        (7, 4, 1, [7]),
    ],
)
def test_rungs_follow_determined_formula(
    length: int, divisor: float, num_rungs: int, expected: list[int]
) -> None:
    searcher = make(max_time=length, time_metric="batches", divisor=divisor, num_rungs=num_rungs)
    formula = [max(int(length / divisor ** (num_rungs - i - 1)), 1) for i in range(num_rungs)]
    assert searcher.brackets[0].lengths == expected == formula


@pytest.mark.parametrize(
    ("fields", "initial"),
    [
        ({"max_concurrent_trials": 3}, 3),
        ({"max_concurrent_trials": 50}, 16),  # capped by max_trials
        ({"max_concurrent_trials": 0}, 4),  # divisor ** (num_rungs - 1)
        ({"max_concurrent_trials": 0, "num_rungs": 3, "max_length": 64}, 16),
        ({"max_concurrent_trials": 0, "num_rungs": 3, "max_trials": 5, "max_length": 64}, 5),
    ],
)
def test_initial_trials_start_at_the_first_rung(fields: dict, initial: int) -> None:
    searcher = make(**fields)
    requests = searcher.create_trials()
    assert len(requests) == initial
    assert {r.target for r in requests} == {searcher.brackets[0].lengths[0]} == {4}


def test_only_the_top_quarter_so_far_goes_on() -> None:
    searcher = make(max_concurrent_trials=8, max_trials=8)  # rungs 4, 16
    ids = [r.request_id for r in searcher.create_trials()]
    losses = [0.5, 0.4, 0.6, 0.3, 0.7, 0.8, 0.9, 0.2]
    answers = [searcher.on_validation(i, {"loss": v}, 4) for i, v in zip(ids, losses, strict=True)]
    # keep = max(int(len(rung) / 4), 1): the best so far goes on until 8 are in the rung
    assert answers[0] == [SetTarget(ids[0], 16)]  # alone in the rung
    assert answers[1] == [SetTarget(ids[1], 16)]  # best of 2
    assert answers[2] == [
        Stop(ids[2], "not in the top 1/4 of rung 0 (length 4): ranked 3 of 3, 1 goes on")
    ]
    assert answers[3] == [SetTarget(ids[3], 16)]
    assert [type(a[0]) for a in answers[4:7]] == [Stop, Stop, Stop]
    assert answers[7] == [SetTarget(ids[7], 16)]  # best of 8: top 2
    assert searcher.trial_summary(ids[7]) == {"bracket": 0, "rung": 1}
    assert searcher.trial_summary(ids[2]) == {"bracket": 0, "rung": 0}


def test_ties_rank_after_earlier_equal_values() -> None:
    searcher = make(max_concurrent_trials=2, max_trials=2)
    first, second = (r.request_id for r in searcher.create_trials())
    assert searcher.on_validation(first, {"loss": 0.5}, 4) == [SetTarget(first, 16)]
    [stop] = searcher.on_validation(second, {"loss": 0.5}, 4)
    assert isinstance(stop, Stop) and "ranked 2 of 2" in stop.reason


def test_validations_between_rungs_take_no_decision_and_overshoot_passes_several() -> None:
    searcher = make(num_rungs=3, max_length=64, max_concurrent_trials=1)  # rungs 4, 16, 64
    [request] = searcher.create_trials()
    rid = request.request_id
    assert request.target == 4
    assert searcher.on_validation(rid, {"loss": 0.9}, 2) == []
    assert searcher.on_validation(rid, {"loss": 0.3}, 20) == [SetTarget(rid, 64)]
    assert searcher.trial_summary(rid)["rung"] == 2
    assert searcher.summary()["brackets"][0]["rungs"][1]["reached"] == 1
    # the top rung: it completes by itself, then its place goes to a new trial
    assert searcher.on_validation(rid, {"loss": 0.1}, 64) == []
    [create] = searcher.on_trial_exit(rid, ExitReason.COMPLETED)
    assert isinstance(create, Create) and create.request.request_id == "r0002"


@pytest.mark.parametrize(
    ("metrics", "note"),
    [
        ({"loss": float("nan")}, "reported nan for 'loss' at time 4: counted as the worst value"),
        ({"loss": float("inf")}, "reported inf for 'loss' at time 4: counted as the worst value"),
        ({"accuracy": 0.9}, "reported no 'loss' at time 4: counted as the worst value"),
    ],
)
def test_unusable_metric_counts_as_worst_with_a_note(metrics: dict, note: str) -> None:
    searcher = make(max_concurrent_trials=2, max_trials=2)
    good, bad = (r.request_id for r in searcher.create_trials())
    searcher.on_validation(good, {"loss": 100.0}, 4)
    [stop] = searcher.on_validation(bad, metrics, 4)
    assert isinstance(stop, Stop) and "ranked 2 of 2" in stop.reason
    assert searcher.trial_summary(bad)["note"] == note


def test_a_bad_value_first_in_a_rung_still_goes_on_alone() -> None:
    searcher = make(max_concurrent_trials=1)
    [request] = searcher.create_trials()
    assert searcher.on_validation(request.request_id, {"loss": float("nan")}, 4) == [
        SetTarget(request.request_id, 16)
    ]


def test_missing_time_metric_stops_the_trial_with_the_reason() -> None:
    searcher = make(max_time=16, time_metric="batches", max_concurrent_trials=1)
    [request] = searcher.create_trials()
    [stop] = searcher.on_validation(request.request_id, {"loss": 0.1}, 4)
    assert stop == Stop(
        request.request_id,
        "its validation metrics have no 'batches', the searcher's time_metric: "
        "report it with every validation",
    )
    assert searcher.on_validation(request.request_id, {"loss": 0.1, "batches": 4}, 4) == []
    [create] = searcher.on_trial_exit(request.request_id, ExitReason.STOPPED)
    assert isinstance(create, Create)


def test_an_errored_trial_is_the_worst_value_of_its_rung() -> None:
    searcher = make(max_concurrent_trials=2, max_trials=3)
    first, second = (r.request_id for r in searcher.create_trials())
    [create] = searcher.on_trial_exit(first, ExitReason.ERRORED)
    assert isinstance(create, Create)
    assert searcher.trial_summary(first)["note"] == (
        "errored at rung 0 before length 4: counted as the worst value"
    )
    # 0.9 ranks before the errored trial: it goes on
    assert searcher.on_validation(second, {"loss": 0.9}, 4) == [SetTarget(second, 16)]


def test_every_trial_errored_is_a_failed_search() -> None:
    searcher = make(max_concurrent_trials=1, max_trials=2)
    [first] = searcher.create_trials()
    [create] = searcher.on_trial_exit(first.request_id, ExitReason.ERRORED)
    assert isinstance(create, Create)
    assert searcher.on_trial_exit(create.request.request_id, ExitReason.ERRORED) == [
        Shutdown(failure=True)
    ]
    assert searcher.progress() == 1.0


@pytest.mark.parametrize("concurrent", [1, 3, 0])
def test_exactly_max_trials_concurrency_bounded_one_shutdown(concurrent: int) -> None:
    config = asha(
        max_trials=30,
        num_rungs=3,
        max_time=64,
        time_metric="batches",
        max_concurrent_trials=concurrent,
    )
    run = simulate(build(config, EVERY_TYPE, 7), loss_curve, workers=4)
    assert len(run.trials) == 30
    assert [t.request_id for t in run.trials] == [f"r{i:04d}" for i in range(1, 31)]
    assert run.peak_unfinished <= (concurrent or 16)
    assert run.shutdowns == [Shutdown(failure=False)]
    completed = [t for t in run.trials if t.state == "COMPLETED"]
    assert completed and all(t.units == 64 for t in completed)
    assert all(t.units in (4, 16) for t in run.trials if t.state == "STOPPED")


@pytest.mark.parametrize("drive_seed", [11, 12, 13])
def test_restart_from_json_at_every_prefix_continues_identically(drive_seed: int) -> None:
    def fresh() -> AsyncHalvingSearcher:
        return make(
            seed=3,
            max_trials=25,
            num_rungs=3,
            max_time=64,
            time_metric="batches",
            max_concurrent_trials=4,
        )

    log = drive(fresh(), length=64, seed=drive_seed, time_metric="batches")
    assert isinstance(log.actions()[-1], Shutdown)
    assert len(log.created) == 25 and log.max_training <= 4
    check_restarts(fresh, log)


def test_restart_through_the_simulator_matches_the_uninterrupted_run() -> None:
    config = asha(max_trials=20, num_rungs=3, max_length=64, max_concurrent_trials=3)

    def fresh() -> AsyncHalvingSearcher:
        return build(config, EVERY_TYPE, 5)  # type: ignore[return-value]

    plain = simulate(fresh(), loss_curve, workers=2, validate_every=5)
    for every in (1, 2, 7):
        again = simulate(
            fresh(), loss_curve, workers=2, validate_every=5, restart_every=every, rebuild=fresh
        )
        assert again.actions == plain.actions


def test_same_seed_same_points_in_creation_order() -> None:
    one = [r.hparams for r in make(seed=4, max_concurrent_trials=5).create_trials()]
    two = [r.hparams for r in make(seed=4, max_concurrent_trials=5).create_trials()]
    random_points = build(searcher_config("random", max_trials=5), EVERY_TYPE, 4).create_trials()
    assert one == two == [r.hparams for r in random_points]


@pytest.mark.parametrize(
    ("fields", "path", "message"),
    [
        (
            {"divisor": 1.5},
            "searcher.divisor",
            "searcher.divisor: divisor must be at least 2, got 1.5",
        ),
        ({"divisor": "4"}, "searcher.divisor", "searcher.divisor: expected a number, got '4'"),
        (
            {"max_time": 10, "time_metric": "batches", "num_rungs": 4, "divisor": 4},
            "searcher.max_time",
            "searcher.max_time: max_time 10 is too short for 4 rungs with divisor 4: the first "
            "rung would need 0.16 batches; use max_time >= 64 or fewer rungs",
        ),
        (
            {"max_length": 3, "num_rungs": 2},
            "searcher.max_length",
            "searcher.max_length: max_length 3 is too short for 2 rungs with divisor 4: the "
            "first rung would need 0.75; use max_length >= 4 or fewer rungs",
        ),
        ({"max_trials": 0}, "searcher.max_trials", None),
        ({"max_trials": None}, "searcher.max_trials", None),
        ({"num_rungs": None}, "searcher.num_rungs", None),
        ({"num_rungs": 0}, "searcher.num_rungs", None),
        ({"max_length": None}, "searcher.max_length", None),
    ],
)
def test_bad_config_names_the_field(fields: dict, path: str, message: str | None) -> None:
    with pytest.raises(ConfigError) as info:
        build(asha(**fields), EVERY_TYPE, 0)
    assert info.value.details[0]["path"] == path
    assert info.value.message.startswith(path + ": ")
    if message is not None:
        assert info.value.message == message


def test_first_rung_rounds_down_to_a_reachable_length() -> None:
    # 1000 / 4**3 = 15.6: reachable, and Determined's int() makes it 15
    searcher = make(max_time=1000, time_metric="batches", num_rungs=4)
    assert searcher.create_trials()[0].target == 15
    assert math.isclose(searcher.progress(), 0.0)
