"""pbt: the population, the bottom fraction replaced from the top trials' checkpoints with
explored hyperparameters, survivors sent one round further, lineage, restarts."""

from __future__ import annotations

import json
import math
import random

import pytest

from shipyard.common.errors import ConfigError
from shipyard.search import Create, ExitReason, SetTarget, Shutdown, Stop
from shipyard.search.pbt import PbtSearcher, preview_plan
from shipyard.search.pbt_explore import explore_point
from shipyard.search.simulator import simulate
from tests.search.replay import check_restarts, drive
from tests.search.spaces import EVERY_TYPE, build, searcher_config, typed

L = 10  # length_per_round


def pbt(**fields: object) -> dict:
    config = searcher_config(
        "pbt",
        population_size=8,
        num_rounds=3,
        length_per_round={"batches": L},  # a config gives a length with its unit
        replace_function={"truncate_fraction": 0.25},
        explore_function={"resample_probability": 0.0, "perturb_factor": 0.2},
    )
    del config["max_length"]  # pbt's length is num_rounds * length_per_round
    config.update(fields)
    return config


def make(seed: int = 0, **fields: object) -> PbtSearcher:
    searcher = build(pbt(**fields), EVERY_TYPE, seed)
    assert isinstance(searcher, PbtSearcher)
    return searcher


def in_space(point: dict) -> bool:
    return (
        10**-4 <= point["lr"] <= 10**-1
        and point["bs"] == 32
        and isinstance(point["layers"], int)
        and 1 <= point["layers"] <= 4
        and 0.1 <= point["drop"] <= 0.5
        and point["opt"] in ("sgd", "adam")
        and point["arch"]["width"] == 64
        and point["arch"]["depth"] in (2, 3)
    )


def finish_round(searcher: PbtSearcher, ids: list[str], losses: list[float], time: int) -> list:
    actions: list = []
    for request_id, loss in zip(ids, losses, strict=True):
        actions += searcher.on_validation(request_id, {"loss": loss}, time)
    return actions


def test_starts_population_size_trials_at_the_first_round_target() -> None:
    requests = make(population_size=6).create_trials()
    assert [r.request_id for r in requests] == [f"r000{i}" for i in range(1, 7)]
    assert {r.target for r in requests} == {L}
    assert {r.parent_request_id for r in requests} == {None}
    assert all(in_space(r.hparams) for r in requests)


def test_nothing_happens_until_the_whole_population_reached_its_target() -> None:
    searcher = make()
    ids = [r.request_id for r in searcher.create_trials()]
    assert searcher.on_validation(ids[0], {"loss": 0.1}, 5) == []  # before its target
    assert finish_round(searcher, ids[:-1], [0.1] * 7, L) == []
    assert searcher.progress() == pytest.approx((7 / 8) / 3)


def test_the_bottom_fraction_is_replaced_from_the_top_trials_checkpoints() -> None:
    searcher = make()
    requests = searcher.create_trials()
    ids = [r.request_id for r in requests]
    losses = [0.5, 0.1, 0.8, 0.3, 0.9, 0.2, 0.6, 0.7]  # best: r0002, r0006; worst: r0005, r0003
    actions = finish_round(searcher, ids, losses, L)

    stops = [a for a in actions if isinstance(a, Stop)]
    creates = [a.request for a in actions if isinstance(a, Create)]
    targets = [a for a in actions if isinstance(a, SetTarget)]
    assert [s.request_id for s in stops] == ["r0005", "r0003"]  # floor(0.25 * 8), worst first
    assert stops[0].reason == "pbt round 1: in the bottom 25%, replaced by r0009 from r0002"
    assert stops[1].reason == "pbt round 1: in the bottom 25%, replaced by r0010 from r0006"
    assert [(c.request_id, c.parent_request_id, c.target) for c in creates] == [
        ("r0009", "r0002", 2 * L),  # the parent's target plus a round: its checkpoint's time
        ("r0010", "r0006", 2 * L),
    ]
    survivors = sorted(set(ids) - {"r0005", "r0003"})
    assert targets == [SetTarget(i, 2 * L) for i in survivors]
    assert len(actions) == len(stops) + len(creates) + len(targets)


def test_children_explore_their_parents_hyperparameters() -> None:
    searcher = make(population_size=20, replace_function={"truncate_fraction": 0.5})
    requests = {r.request_id: r for r in searcher.create_trials()}
    actions = finish_round(searcher, list(requests), [i / 20 for i in range(20)], L)
    children = [a.request for a in actions if isinstance(a, Create)]
    assert len(children) == 10
    for child in children:
        parent = requests[str(child.parent_request_id)].hparams
        assert in_space(child.hparams)
        assert child.hparams["bs"] == parent["bs"] and child.hparams["opt"] == parent["opt"]
        # resample_probability 0: each number is the parent's times 1.2 or 0.8, clipped
        ratio = child.hparams["drop"] / parent["drop"]
        assert min(max(parent["drop"] * 1.2, 0.1), 0.5) == pytest.approx(
            child.hparams["drop"]
        ) or min(max(parent["drop"] * 0.8, 0.1), 0.5) == pytest.approx(child.hparams["drop"])
        assert ratio != 1 or parent["drop"] in (0.1, 0.5)
        assert child.hparams != parent


def test_explore_keeps_every_type_in_range() -> None:
    rng = random.Random(3)
    point = {
        "lr": 10**-1,
        "bs": 32,
        "layers": 4,
        "drop": 0.1,
        "opt": "adam",
        "arch": {"width": 64, "depth": 3},
    }
    seen_opt = set()
    for _ in range(300):
        point = explore_point(EVERY_TYPE, point, rng, resample_probability=0.3, perturb_factor=0.9)
        assert in_space(point)
        seen_opt.add(point["opt"])
    assert seen_opt == {"sgd", "adam"}  # categoricals are resampled now and then


def test_explore_without_resampling_keeps_categoricals_and_perturbs_log_values() -> None:
    space = {
        "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
        "opt": {"type": "categorical", "vals": [[1, 2], {"a": 1}]},
    }
    point = {"lr": 1e-3, "opt": {"a": 1}}
    child = explore_point(
        space, point, random.Random(0), resample_probability=0, perturb_factor=0.5
    )
    assert child["opt"] == {"a": 1} and child["opt"] is not point["opt"]
    assert child["lr"] in (pytest.approx(1.5e-3), pytest.approx(0.5e-3))  # in value space


def test_resample_probability_one_draws_from_the_spec() -> None:
    rng = random.Random(1)
    point = {"lr": 1e-2, "bs": 32, "layers": 2, "drop": 0.3, "opt": "sgd", "arch": {"depth": 2}}
    drops = {
        explore_point(EVERY_TYPE, point, rng, resample_probability=1, perturb_factor=0)["drop"]
        for _ in range(20)
    }
    assert len(drops) == 20 and all(0.1 <= d <= 0.5 for d in drops)


def run(searcher: PbtSearcher, seed: int = 0):
    def curve(hparams: dict, t: int) -> float:
        return hparams["drop"] + 0.05 * hparams["layers"] + 1 / (1 + t)

    return simulate(searcher, curve, workers=4, seed=seed)


def test_a_whole_search_runs_num_rounds_and_shuts_down_once() -> None:
    searcher = make()
    sim = run(searcher)
    created = [a.request for a in sim.actions if isinstance(a, Create)]
    assert len(sim.trials) == 8 + 2 * 2  # population + (rounds - 1) * floor(0.25 * 8)
    assert len(created) == 4
    assert sim.shutdowns == [Shutdown(failure=False)]
    assert isinstance(sim.actions[-1], Shutdown)
    # survivors end at the full length and complete by themselves
    assert max(a.target for a in sim.actions if isinstance(a, SetTarget)) == 3 * L
    completed = [t for t in sim.trials if t.state == ExitReason.COMPLETED]
    assert len(completed) == 8 and all(t.validations[-1][0] == 3 * L for t in completed)
    assert searcher.progress() == 1.0


def test_lineage_and_trial_summaries() -> None:
    searcher = make()
    run(searcher)
    lineage = searcher.summary()["lineage"]
    assert [e["request_id"] for e in lineage] == [f"r{i:04d}" for i in range(1, 13)]
    assert all(e["parent"] is None and e["round"] == 1 for e in lineage[:8])
    assert [e["round"] for e in lineage[8:]] == [2, 2, 3, 3]
    ids = {e["request_id"] for e in lineage}
    for entry in lineage[8:]:
        assert entry["parent"] in ids
        parent = searcher.trial_summary(entry["parent"])
        child = searcher.trial_summary(entry["request_id"])
        assert child["parent"] == entry["parent"]
        assert child["generation"] == parent["generation"] + 1
    assert searcher.trial_summary(lineage[0]["request_id"])["generation"] == 0
    assert searcher.trial_summary("r9999") == {}
    json.dumps(searcher.summary(), allow_nan=False)


def test_a_nan_ranks_worst_with_a_note() -> None:
    searcher = make(population_size=4, replace_function={"truncate_fraction": 0.25})
    ids = [r.request_id for r in searcher.create_trials()]
    actions = finish_round(searcher, ids, [0.1, math.nan, 0.3, 0.2], L)
    assert [a.request_id for a in actions if isinstance(a, Stop)] == [ids[1]]
    assert searcher.trial_summary(ids[1])["note"] == (
        "reported nan for 'loss' at time 10: counted as the worst value"
    )


def test_exited_members_rank_worst_and_are_replaced_without_a_stop() -> None:
    searcher = make(population_size=4, replace_function={"truncate_fraction": 0.5})
    ids = [r.request_id for r in searcher.create_trials()]
    assert searcher.on_trial_exit(ids[0], ExitReason.ERRORED) == []
    actions = finish_round(searcher, ids[1:], [0.3, 0.1, 0.2], L)
    assert [a.request_id for a in actions if isinstance(a, Stop)] == [ids[1]]  # 0.3
    creates = [a.request for a in actions if isinstance(a, Create)]
    assert [c.parent_request_id for c in creates] == [ids[2], ids[3]]  # best replaces worst
    assert "errored in round 1" in searcher.trial_summary(ids[0])["note"]


def test_missing_time_metric_stops_the_trial_with_the_reason() -> None:
    searcher = make(time_metric="batches", population_size=2)
    first, second = (r.request_id for r in searcher.create_trials())
    [stop] = searcher.on_validation(first, {"loss": 0.1}, 10)
    assert stop == Stop(
        first,
        "its validation metrics have no 'batches', the searcher's time_metric: "
        "report it with every validation",
    )
    # the stopped trial left the round: the other one ends it
    assert searcher.on_validation(second, {"loss": 0.2, "batches": 10}, 3) == [
        SetTarget(second, 2 * L)
    ]


def test_every_trial_errored_is_a_failed_search() -> None:
    searcher = make(population_size=3)
    ids = [r.request_id for r in searcher.create_trials()]
    outputs = [searcher.on_trial_exit(i, ExitReason.ERRORED) for i in ids]
    assert outputs == [[], [], [Shutdown(failure=True)]]
    with pytest.raises(ValueError, match="already exited"):
        searcher.on_trial_exit(ids[0], ExitReason.ERRORED)
    with pytest.raises(ValueError, match="unknown trial request 'r9999'"):
        searcher.on_validation("r9999", {"loss": 1.0}, 1)


def test_same_seed_same_search() -> None:
    def created(seed: int) -> list:
        return [(t.request_id, t.hparams) for t in run(make(seed)).trials]

    assert created(4) == created(4)
    assert created(4) != created(5)


def test_restart_from_json_at_every_prefix_continues_identically() -> None:
    log = drive(make(seed=3), length=3 * L, seed=11)
    assert any(isinstance(a, Create) for a in log.actions())
    assert isinstance(log.actions()[-1], Shutdown)
    check_restarts(lambda: make(seed=3), log)


def test_restart_with_a_time_metric_and_overshooting_validations() -> None:
    make_one = lambda: make(seed=5, time_metric="batches", population_size=6)  # noqa: E731
    log = drive(make_one(), length=3 * L, seed=2, time_metric="batches", error_rate=0.05)
    check_restarts(make_one, log)


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"population_size": 0}, "searcher.population_size"),
        ({"num_rounds": None}, "searcher.num_rounds"),
        ({"length_per_round": 0}, "searcher.length_per_round"),
        ({"length_per_round": {"batches": 1, "epochs": 2}}, "searcher.length_per_round"),
        (
            {"replace_function": {"truncate_fraction": 0.6}},
            "searcher.replace_function.truncate_fraction",
        ),
        ({"replace_function": None}, "searcher.replace_function"),
        (
            {"explore_function": {"resample_probability": 1.5, "perturb_factor": 0.1}},
            "searcher.explore_function.resample_probability",
        ),
        (
            {"explore_function": {"resample_probability": 0.1, "perturb_factor": -1}},
            "searcher.explore_function.perturb_factor",
        ),
        (
            {"time_metric": "batches", "length_per_round": {"epochs": 2}},
            "searcher.length_per_round",
        ),
    ],
)
def test_bad_config_names_the_field(fields: dict, path: str) -> None:
    with pytest.raises(ConfigError) as info:
        make(**fields)
    assert info.value.details[0]["path"] == path
    assert info.value.message.startswith(f"{path}: ")


def test_length_per_round_in_determined_form() -> None:
    searcher = make(length_per_round={"batches": 7}, time_metric="batches")
    assert {r.target for r in searcher.create_trials()} == {7}
    assert searcher.options.length == 21


def test_preview_plan_against_random_search() -> None:
    plan = preview_plan(typed(pbt()), EVERY_TYPE)
    assert plan == {
        "searcher": "pbt",
        "unit": "steps",
        "brackets": [
            {
                "bracket": 0,
                "trials": 12,
                "rungs": [{"rung": k, "trials": 8, "length": (k + 1) * L} for k in range(3)],
                "compute": 240,
            }
        ],
        "total_trials": 12,
        "compute": 240,  # 3 rounds of 8 trials, each L
        "random_search_compute": 12 * 3 * L,
        "ratio": 240 / 360,
    }
    assert preview_plan(typed(pbt(time_metric="batches")), EVERY_TYPE)["unit"] == "batches"
