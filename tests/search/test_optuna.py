"""optuna: every sampler's points fit the space, TPE learns, NSGA-II's Pareto front, each
pruner stops a bad trial, restarts from JSON ask the same points, and clear errors."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from shipyard.common.errors import ConfigError, NotSupportedYet
from shipyard.search import Create, ExitReason, SetTarget, Shutdown, Stop
from shipyard.search.optuna import OptunaSearcher, preview_plan
from shipyard.search.simulator import simulate
from tests.fixtures.require import module
from tests.search.replay import check_restarts, drive
from tests.search.spaces import build, searcher_config, typed

module("optuna", "the optuna extra; make setup installs it")

SPACE: dict[str, Any] = {
    "x": {"type": "double", "minval": 0.0, "maxval": 1.0},
    "y": {"type": "double", "minval": -2.0, "maxval": 2.0},
    "lr": {"type": "log", "minval": -4, "maxval": -1, "base": 10},
    "layers": {"type": "int", "minval": 1, "maxval": 4},
    "shape": {"type": "categorical", "vals": [[64, 32], {"kind": "wide"}, "deep"]},
    "bs": {"type": "const", "val": 32},
    "arch": {
        "type": "object",
        "vals": {
            "depth": {"type": "int", "minval": 2, "maxval": 3},
            "width": {"type": "const", "val": 64},
            "head": {
                "type": "object",
                "vals": {"p": {"type": "double", "minval": 0, "maxval": 0.5}},
            },
        },
    },
}
LENGTH = 40


def optuna(**fields: Any) -> dict[str, Any]:
    return searcher_config("optuna", **{"max_trials": 12, "max_length": LENGTH, **fields})


def make(seed: int = 0, space: dict | None = None, **fields: Any) -> OptunaSearcher:
    searcher = build(optuna(**fields), space or SPACE, seed)
    assert isinstance(searcher, OptunaSearcher)
    return searcher


def quadratic(hparams: dict, t: int) -> float:
    return (hparams["x"] - 0.3) ** 2 + (hparams["y"] - 0.5) ** 2 / 16 + 1 / (1 + t)


def in_space(point: dict) -> bool:
    return (
        isinstance(point["x"], float)
        and 0 <= point["x"] <= 1
        and -2 <= point["y"] <= 2
        and 10**-4 <= point["lr"] <= 10**-1
        and isinstance(point["layers"], int)
        and 1 <= point["layers"] <= 4
        and point["shape"] in ([64, 32], {"kind": "wide"}, "deep")
        and point["bs"] == 32
        and isinstance(point["arch"]["depth"], int)
        and point["arch"]["depth"] in (2, 3)
        and point["arch"]["width"] == 64
        and 0 <= point["arch"]["head"]["p"] <= 0.5
        and set(point) == set(SPACE)
    )


def sequential(
    searcher: OptunaSearcher, metrics: Callable[[str, dict, int], dict], every: int = 10
) -> dict[str, str]:
    """One trial at a time, validating every `every` units and at each target: request id
    -> "completed" or the Stop reason."""
    outcomes: dict[str, str] = {}
    queue = list(searcher.create_trials())
    while queue:
        request = queue.pop(0)
        target, time, outcome = request.target or LENGTH, 0, "completed"
        while time < LENGTH:
            time = min(time + every, target)
            actions = searcher.on_validation(
                request.request_id, metrics(request.request_id, request.hparams, time), time
            )
            stops = [a for a in actions if isinstance(a, Stop)]
            if stops:
                outcome = stops[0].reason
                break
            target = next((a.target for a in actions if isinstance(a, SetTarget)), target)
        outcomes[request.request_id] = outcome
        reason = ExitReason.COMPLETED if outcome == "completed" else ExitReason.STOPPED
        queue += [
            a.request
            for a in searcher.on_trial_exit(request.request_id, reason)
            if isinstance(a, Create)
        ]
    return outcomes


# --- points -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sampler", ["tpe", "cmaes", "random", "nsga2"])  # gp: further down
def test_each_sampler_creates_valid_points_in_the_space(sampler: str) -> None:
    trials = 16
    searcher = make(sampler=sampler, max_trials=trials)
    sim = simulate(searcher, quadratic, workers=2)
    assert len(sim.trials) == trials
    assert sim.shutdowns == [Shutdown(failure=False)]
    for trial in sim.trials:
        assert in_space(trial.hparams), trial.hparams
    assert len({repr(t.hparams) for t in sim.trials}) == trials
    assert searcher.summary()["best"]["request_id"] in {t.request_id for t in sim.trials}


def test_same_seed_same_points_different_seed_different_points() -> None:
    def points(seed: int) -> list[dict]:
        return [t.hparams for t in simulate(make(seed), quadratic, workers=3).trials]

    assert points(1) == points(1)
    assert points(1) != points(2)


def test_tpe_finds_a_near_optimal_point_better_than_random_median() -> None:
    space = {k: SPACE[k] for k in ("x", "y")}

    def best(sampler: str, seed: int) -> float:
        searcher = make(seed, space, sampler=sampler, max_trials=40)
        simulate(searcher, lambda h, t: quadratic(h, t) - 1 / (1 + t), workers=4)
        return searcher.summary()["best"]["value"]

    randoms = sorted(best("random", seed) for seed in range(5))
    tpe = best("tpe", 0)
    assert tpe < randoms[2]
    assert tpe < 0.005  # optimum 0 at x=0.3, y=0.5


def test_nsga2_pareto_front_holds_exactly_the_non_dominated_trials() -> None:
    searcher = make(
        sampler="nsga2",
        max_trials=30,
        metric=None,
        objectives=[{"metric": "a"}, {"metric": "b", "smaller_is_better": False}],
    )

    reported: dict[str, dict] = {}

    def metrics(request_id: str, h: dict, t: int) -> dict:
        reported[request_id] = {"a": h["x"] ** 2 + abs(h["y"]) / 10, "b": -((h["x"] - 1) ** 2)}
        return reported[request_id]

    sequential(searcher, metrics, every=LENGTH)
    front = searcher.summary()["pareto_front"]
    assert len(reported) == 30 and front
    losses = {r: (m["a"], -m["b"]) for r, m in reported.items()}  # b is maximized

    def dominates(p: tuple, q: tuple) -> bool:
        return all(a <= b for a, b in zip(p, q, strict=True)) and p != q

    non_dominated = {
        r for r, p in losses.items() if not any(dominates(q, p) for q in losses.values())
    }
    assert {m["request_id"] for m in front} == non_dominated
    for member in front:
        m = reported[member["request_id"]]
        assert member["values"] == [m["a"], m["b"]]


# --- pruners --------------------------------------------------------------------------------


PRUNERS = [
    {"name": "asha", "divisor": 2, "num_rungs": 3},
    {"name": "median", "n_startup_trials": 3},
    {"name": "percentile", "percentile": 50, "n_startup_trials": 3},
    {"name": "successive_halving", "min_resource": 5, "reduction_factor": 2},
    {"name": "hyperband", "min_resource": 5, "reduction_factor": 2},
]


@pytest.mark.parametrize("pruner", PRUNERS, ids=lambda p: p["name"])
def test_each_pruner_stops_a_clearly_bad_trial(pruner: dict) -> None:
    searcher = make(sampler="random", max_trials=9, max_concurrent_trials=1, pruner=pruner)
    bad = {"r0007", "r0008", "r0009"}

    def metrics(request_id: str, h: dict, t: int) -> dict:
        index = int(request_id[1:])
        return {"loss": 100.0 if request_id in bad else 1 - index / 100 + 1 / t}

    outcomes = sequential(searcher, metrics, every=5)
    stopped = {r for r, outcome in outcomes.items() if outcome != "completed"}
    assert bad <= stopped
    assert outcomes["r0001"] == "completed"
    for request_id in bad:
        expected = "not in the top 1/2" if pruner["name"] == "asha" else "pruned by Optuna's"
        assert outcomes[request_id].startswith(expected)
        summary = searcher.trial_summary(request_id)
        assert summary["optuna_number"] == int(request_id[1:]) - 1
    states = {t.number: t.state.name for t in searcher.study.trials}
    assert {states[int(r[1:]) - 1] for r in bad} == {"PRUNED"}
    assert searcher.summary()["best"]["request_id"] not in bad
    if pruner["name"] == "asha":
        assert [r["length"] for r in searcher.summary()["rungs"]] == [10, 20, 40]


@pytest.mark.parametrize(
    ("pruner", "targets"),
    [
        (None, [None]),
        ({"name": "median"}, [None]),
        ({"name": "asha", "divisor": 2, "num_rungs": 3}, [10, 20, 40]),
        ({"name": "successive_halving", "min_resource": 3, "reduction_factor": 3}, [3, 9, 27, 40]),
        ({"name": "hyperband", "min_resource": 5, "reduction_factor": 2}, [5, 10, 20, 40]),
    ],
)
def test_rung_based_pruners_give_each_trial_its_targets(pruner: dict | None, targets: list) -> None:
    searcher = make(max_trials=1, pruner=pruner)
    [request] = searcher.create_trials()
    seen = [request.target]
    time = 0
    while seen[-1] is not None and seen[-1] < LENGTH:
        time = seen[-1]
        actions = searcher.on_validation(request.request_id, {"loss": 1.0}, time)
        assert len(actions) == 1 and isinstance(actions[0], SetTarget)
        seen.append(actions[0].target)
        if pruner and pruner["name"] != "median":
            assert searcher.trial_summary(request.request_id)["rung"] == len(seen) - 1
    assert seen == targets


def test_missing_time_metric_with_a_pruner_stops_the_trial() -> None:
    searcher = make(
        max_length=None, time_metric="batches", max_time=LENGTH, pruner={"name": "median"}
    )
    request = searcher.create_trials()[0]
    [stop] = searcher.on_validation(request.request_id, {"loss": 0.5}, 10)
    assert stop == Stop(
        request.request_id,
        "its validation metrics have no 'batches', the searcher's time_metric: "
        "report it with every validation",
    )
    assert searcher.on_validation(request.request_id, {"loss": 0.5, "batches": 10}, 10) == []
    searcher.on_trial_exit(request.request_id, ExitReason.STOPPED)
    assert searcher.study.trials[0].state.name == "FAIL"


def test_a_nan_last_value_is_told_as_failed_with_a_note() -> None:
    searcher = make(max_trials=2)
    first, second = (r.request_id for r in searcher.create_trials())
    searcher.on_validation(first, {"loss": 0.2}, 20)
    searcher.on_validation(first, {"loss": math.nan}, LENGTH)
    searcher.on_trial_exit(first, ExitReason.COMPLETED)
    searcher.on_validation(second, {"loss": 0.4}, LENGTH)
    assert searcher.on_trial_exit(second, ExitReason.COMPLETED) == [Shutdown(failure=False)]
    assert [t.state.name for t in searcher.study.trials] == ["FAIL", "COMPLETE"]
    assert searcher.trial_summary(first) == {
        "optuna_number": 0,
        "note": "reported nan for 'loss' at time 40: counted as the worst value",
    }
    assert searcher.summary() == {"best": {"request_id": second, "value": 0.4}}


def test_concurrency_defaults_to_four_and_errors_count() -> None:
    config = optuna(max_trials=5)
    del config["max_concurrent_trials"]
    searcher = build(config, SPACE, 0)
    requests = searcher.create_trials()
    assert len(requests) == 4
    assert len(make(max_concurrent_trials=0, max_trials=5).create_trials()) == 5  # no limit
    outputs = [searcher.on_trial_exit(r.request_id, ExitReason.ERRORED) for r in requests]
    assert [type(a) for out in outputs for a in out] == [Create]
    last = next(a.request for out in outputs for a in out if isinstance(a, Create))
    assert searcher.on_trial_exit(last.request_id, ExitReason.ERRORED) == [Shutdown(failure=True)]
    assert searcher.progress() == 1.0
    assert searcher.summary() == {"best": None}


# --- restarts ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields",
    [
        {"sampler": "tpe"},
        {"sampler": "cmaes"},
        {"sampler": "random", "pruner": {"name": "hyperband", "min_resource": 5}},
        {"sampler": "nsga2"},
        {"sampler": "tpe", "pruner": {"name": "asha", "divisor": 2, "num_rungs": 3}},
        {"sampler": "tpe", "pruner": {"name": "successive_halving", "min_resource": 5}},
        {"sampler": "tpe", "pruner": {"name": "median", "n_startup_trials": 2}},
    ],
    ids=lambda f: "+".join(str(v if isinstance(v, str) else v["name"]) for v in f.values()),
)
def test_restart_from_json_after_every_call_asks_the_same_points(fields: dict) -> None:
    def build() -> OptunaSearcher:
        return make(7, max_trials=16, max_concurrent_trials=3, **fields)

    uninterrupted = simulate(build(), quadratic, workers=2, validate_every=10)
    restarted = simulate(
        build(), quadratic, workers=2, validate_every=10, restart_every=1, rebuild=build
    )
    assert restarted.actions == uninterrupted.actions
    assert [t.hparams for t in restarted.trials] == [t.hparams for t in uninterrupted.trials]


@pytest.mark.parametrize(
    "fields",
    [
        {"sampler": "tpe", "pruner": {"name": "asha", "divisor": 2, "num_rungs": 3}},
        {"sampler": "random", "pruner": {"name": "percentile", "percentile": 40}},
    ],
    ids=["tpe+asha", "random+percentile"],
)
def test_restart_with_erratic_events_nans_and_errors(fields: dict) -> None:
    def build() -> OptunaSearcher:
        return make(3, max_trials=14, max_concurrent_trials=4, **fields)

    log = drive(build(), length=LENGTH, seed=5, nan_rate=0.1, error_rate=0.08)
    assert isinstance(log.actions()[-1], Shutdown)
    check_restarts(build, log, every=3)


def test_multi_objective_restart_keeps_the_pareto_front_and_next_points() -> None:
    def build() -> OptunaSearcher:
        return make(
            2,
            sampler="nsga2",
            max_trials=14,
            objectives=[{"metric": "loss"}, {"metric": "size"}],
        )

    def metrics(request_id: str, h: dict, t: int) -> dict:
        return {"loss": h["x"], "size": (1 - h["x"]) ** 2 + h["layers"]}

    def play(searcher: OptunaSearcher, queue: list, count: int) -> None:
        """Train the oldest `count` queued trials to the end, in order (as sequential())."""
        for _ in range(count):
            request = queue.pop(0)
            searcher.on_validation(request.request_id, metrics("", request.hparams, 0), LENGTH)
            exit_actions = searcher.on_trial_exit(request.request_id, ExitReason.COMPLETED)
            queue += [a.request for a in exit_actions if isinstance(a, Create)]

    original = build()
    sequential(original, metrics, every=LENGTH)  # the uninterrupted search
    first = build()
    queue = first.create_trials()
    play(first, queue, 7)  # past NSGA-II's first generations (2 trials each here)
    resumed = build()
    resumed.set_state(json.loads(json.dumps(first.get_state(), allow_nan=False)))
    assert resumed.summary() == first.summary()
    play(resumed, queue, 14 - 7)
    assert not queue
    assert resumed.summary() == original.summary()
    assert resumed.get_state() == original.get_state()


def test_gp_points_fit_the_space_and_a_restart_asks_the_same_one() -> None:
    """One test for gp: each of its asks takes a second or more."""

    def build() -> OptunaSearcher:
        return make(1, sampler="gp", max_trials=11, max_concurrent_trials=1)

    original = build()
    request = original.create_trials()[0]
    for _ in range(10):  # the 11th ask is the first from the Gaussian process
        assert in_space(request.hparams)
        original.on_validation(request.request_id, {"loss": quadratic(request.hparams, 1)}, LENGTH)
        saved = json.loads(json.dumps(original.get_state(), allow_nan=False))
        [create] = original.on_trial_exit(request.request_id, ExitReason.COMPLETED)
        assert isinstance(create, Create)
        request = create.request
    assert in_space(request.hparams)
    resumed = build()
    resumed.set_state(saved)
    assert resumed.on_trial_exit("r0010", ExitReason.COMPLETED) == [Create(request)]


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize("sampler", ["cmaes", "gp"])
def test_multi_objective_with_a_single_objective_sampler_is_refused(sampler: str) -> None:
    objectives = [{"metric": "loss"}, {"metric": "latency"}]
    with pytest.raises(ConfigError) as info:
        make(sampler=sampler, objectives=objectives)
    assert info.value.details[0]["path"] == "searcher.sampler"
    assert f"sampler {sampler} optimizes one objective" in info.value.message


def test_pruning_several_objectives_is_refused() -> None:
    objectives = [{"metric": "loss"}, {"metric": "latency"}]
    with pytest.raises(ConfigError) as info:
        make(objectives=objectives, pruner={"name": "median"})
    assert info.value.details[0]["path"] == "searcher.pruner"
    assert "cannot prune a multi-objective study" in info.value.message


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"sampler": "bayes"}, "searcher.sampler"),
        ({"pruner": {"name": "early"}}, "searcher.pruner.name"),
        ({"pruner": {"name": "median", "divisor": 3}}, "searcher.pruner.divisor"),
        ({"pruner": {"name": "asha", "divisor": 1.5}}, "searcher.pruner.divisor"),
        ({"pruner": {"name": "percentile"}}, "searcher.pruner.percentile"),
        (
            {"pruner": {"name": "hyperband", "reduction_factor": 1}},
            "searcher.pruner.reduction_factor",
        ),
        ({"pruner": {"name": "median"}, "max_length": None}, "searcher.pruner"),
        ({"pruner": {"name": "asha", "num_rungs": 9}}, "searcher.max_length"),
        ({"max_trials": None}, "searcher.max_trials"),
        ({"objectives": []}, "searcher.objectives"),
        (
            {"objectives": [{"metric": "loss"}, {"metric": "loss"}]},
            "searcher.objectives[1].metric",
        ),
        ({"metric": "acc", "objectives": [{"metric": "loss"}]}, "searcher.metric"),
    ],
)
def test_bad_config_names_the_field(fields: dict, path: str) -> None:
    with pytest.raises(ConfigError) as info:
        make(**fields)
    assert info.value.details[0]["path"] == path
    assert info.value.message.startswith(f"{path}: ")


def test_missing_optuna_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "optuna", None)
    with pytest.raises(NotSupportedYet) as info:
        make()
    assert info.value.message == (
        "searcher.name: the optuna searcher needs Optuna: pip install 'shipyard[optuna]'"
    )


def test_gp_without_torch_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(NotSupportedYet, match=r"pip install 'shipyard\[optuna,torch\]'") as info:
        make(sampler="gp")
    assert info.value.details[0]["path"] == "searcher.sampler"


def test_the_registry_imports_without_optuna() -> None:
    code = (
        "import sys; sys.modules['optuna'] = None\n"
        "from shipyard.common.config import searcher_from_json\n"
        "from shipyard.search import SEARCHERS, make_searcher\n"
        "from shipyard.search.optuna import preview_plan\n"
        "config = searcher_from_json({'name': 'optuna', 'metric': 'loss', 'max_trials': 3})\n"
        "print(preview_plan(config, {})['total_trials'])\n"
        "try:\n"
        "    make_searcher(config, {}, 0)\n"
        "except Exception as error:\n"
        "    print(type(error).__name__, error.message)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.splitlines() == [
        "3",
        "NotSupportedYet searcher.name: the optuna searcher needs Optuna: "
        "pip install 'shipyard[optuna]'",
    ]


# --- preview ----------------------------------------------------------------------------------


def test_preview_with_asha_counts_the_expected_trials_per_rung() -> None:
    plan = preview_plan(
        typed(optuna(max_trials=16, pruner={"name": "asha", "divisor": 4, "num_rungs": 3})), SPACE
    )
    rungs = [(r["trials"], r["length"]) for r in plan["brackets"][0]["rungs"]]
    assert rungs == [(16, 2), (4, 10), (1, 40)]  # max(int(40 / 4**k), 1) ...
    assert plan["compute"] == 16 * 2 + 4 * 8 + 1 * 30
    assert plan["random_search_compute"] == 16 * 40
    assert plan["ratio"] == plan["compute"] / (16 * 40)
    assert plan["unit"] == "steps" and plan["note"] is None


def test_preview_without_asha_is_every_trial_to_the_full_length() -> None:
    plan = preview_plan(typed(optuna(pruner={"name": "median"})), SPACE)
    assert plan["compute"] == plan["random_search_compute"] == 12 * LENGTH
    assert plan["ratio"] == 1.0
    assert "decides at run time" in plan["note"]
    no_length = preview_plan(typed(optuna(max_length=None)), SPACE)
    assert (no_length["unit"], no_length["compute"], no_length["brackets"]) == ("trials", 12, [])
