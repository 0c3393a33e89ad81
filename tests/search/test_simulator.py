"""The simulator: workers, clock, compute, validations, waiting, and the rules it enforces."""

from __future__ import annotations

from typing import Any

import pytest

from shipyard.search import (
    Action,
    Create,
    ExitReason,
    Searcher,
    SetTarget,
    Shutdown,
    Stop,
    TrialRequest,
)
from shipyard.search.options import SearcherOptions
from shipyard.search.simulator import SimulationError, simulate
from tests.search.spaces import build, searcher_config

# x takes 3, 1, 2 in grid order: final values 3.1, 1.1, 2.1 at t = 10
XS = {"x": {"type": "categorical", "vals": [3, 1, 2]}}


def curve(hparams: dict, t: int) -> float:
    return hparams["x"] + 1 / t


def grid(**fields: object) -> Searcher:
    return build(searcher_config("grid", **{"max_length": 10, **fields}), XS, 0)


def test_one_worker_runs_trials_one_after_another() -> None:
    run = simulate(grid(), curve, workers=1)
    assert run.clock == 30 and run.compute == 30
    assert [(t.request_id, t.units, t.state) for t in run.trials] == [
        ("r0001", 10, "COMPLETED"),
        ("r0002", 10, "COMPLETED"),
        ("r0003", 10, "COMPLETED"),
    ]
    assert run.trials[1].validations == [(10, 1.1)]
    assert run.shutdowns == [Shutdown(failure=False)]


def test_workers_run_in_parallel_and_compute_is_the_units_trained() -> None:
    run = simulate(grid(), curve, workers=3)
    assert run.clock == 10 and run.compute == 30 and run.peak_running == 3
    two = simulate(grid(), curve, workers=2)
    assert two.clock == 20 and two.compute == 30 and two.peak_running == 2


def test_validate_every_adds_validations_between_targets() -> None:
    run = simulate(grid(max_length=7), curve, workers=1, validate_every=3)
    assert [t for t, _ in run.trials[0].validations] == [3, 6, 7]


def test_compute_to_reach_counts_compute_when_the_best_first_got_there() -> None:
    run = simulate(grid(), curve, workers=1)
    assert run.best_curve == [(10, 3.1), (20, 1.1)]
    assert run.compute_to_reach(3.5) == 10
    assert run.compute_to_reach(2.0) == 20
    assert run.compute_to_reach(1.1) == 20
    assert run.compute_to_reach(1.0) is None
    larger = simulate(grid(smaller_is_better=False), curve, workers=1)
    assert larger.compute_to_reach(3.0) == 10 and larger.compute_to_reach(3.2) is None


def test_time_metric_is_reported_with_the_metric() -> None:
    seen: list[tuple[dict, int]] = []
    searcher = build(
        searcher_config("single", max_length=None, max_time=4, time_metric="batches"), XS, 0
    )
    original = searcher.on_validation

    def spy(request_id: str, metrics: dict[str, Any], steps: int) -> list[Action]:
        seen.append((metrics, steps))
        return original(request_id, metrics, steps)

    searcher.on_validation = spy  # type: ignore[method-assign]
    simulate(searcher, curve, workers=1)
    [(metrics, steps)] = seen
    assert metrics["batches"] == 4 and steps == 4 and set(metrics) == {"loss", "batches"}


class Scripted(Searcher):
    """A searcher that answers from a script, to check what the simulator refuses."""

    def __init__(self, first_target: int | None, answers: dict[str, list[Action]]) -> None:
        self.options = SearcherOptions(name="scripted", metric="loss", max_length=10)
        self.first_target = first_target
        self.answers = answers
        self.exits: list[str] = []

    def create_trials(self) -> list[TrialRequest]:
        return [TrialRequest("a", {"x": 1}, target=self.first_target)]

    def on_validation(
        self, request_id: str, metrics: dict[str, Any], steps_completed: int
    ) -> list[Action]:
        return self.answers.pop(f"{request_id}@{steps_completed}", [])

    def on_trial_exit(self, request_id: str, reason: ExitReason) -> list[Action]:
        self.exits.append(f"{request_id}:{reason}")
        return self.answers.pop(f"exit {request_id}", [])

    def progress(self) -> float:
        return 0.0

    def get_state(self) -> dict[str, Any]:
        return {}

    def set_state(self, state: dict[str, Any]) -> None:
        pass


def test_a_waiting_trial_frees_its_worker_and_resumes_after_set_target() -> None:
    searcher = Scripted(
        4,
        {
            "a@4": [Create(TrialRequest("b", {"x": 2}, target=10))],
            "b@10": [SetTarget("a", 10)],
            "exit a": [Shutdown()],
        },
    )
    run = simulate(searcher, curve, workers=1)
    # a trains 4 and waits; b takes the worker for 10; then a resumes from 4 to 10
    assert run.clock == 20 and run.compute == 20
    assert [t.validations[-1][0] for t in run.trials] == [10, 10]
    assert searcher.exits == ["b:COMPLETED", "a:COMPLETED"]


def test_stop_ends_the_trial_at_once() -> None:
    searcher = Scripted(None, {"a@10": [], "exit a": [Shutdown()]})
    searcher.create_trials = lambda: [TrialRequest("a", {"x": 1}, target=3)]  # type: ignore
    searcher.answers["a@3"] = [Stop("a", "enough")]
    run = simulate(searcher, curve, workers=1)
    assert run.trials[0].state == "STOPPED" and run.trials[0].units == 3


@pytest.mark.parametrize(
    ("answers", "message"),
    [
        ({}, "deadlock at time 4: nothing runs or is queued, trials a wait"),
        ({"a@4": [Stop("a"), Stop("a")]}, "second Stop for a"),
        ({"a@4": [Stop("a")], "exit a": [SetTarget("a", 8)]}, "for a trial that exited"),
        ({"a@4": [SetTarget("zz", 8)]}, "never created"),
        ({"a@4": [Shutdown(), Shutdown()]}, "action after Shutdown"),
        ({"a@4": [Stop("a")]}, "ended at time 4 without a Shutdown"),
    ],
)
def test_searcher_mistakes_are_clear_errors(answers: dict, message: str) -> None:
    with pytest.raises(SimulationError, match=message):
        simulate(Scripted(4, answers), curve, workers=2)


def test_restart_every_needs_a_rebuild() -> None:
    with pytest.raises(ValueError, match="restart_every needs rebuild"):
        simulate(grid(), curve, workers=1, restart_every=2)


def test_restarts_through_json_change_nothing() -> None:
    config = searcher_config("random", max_trials=5, max_concurrent_trials=2, max_length=10)
    space = {"x": {"type": "int", "minval": 0, "maxval": 9}}

    def fresh() -> Searcher:
        return build(config, space, 1)

    plain = simulate(fresh(), curve, workers=2)
    again = simulate(fresh(), curve, workers=2, restart_every=1, rebuild=fresh)
    assert again.actions == plain.actions and again.compute == plain.compute


def test_seed_orders_simultaneous_events_only() -> None:
    config = searcher_config(
        "async_halving", max_trials=12, num_rungs=2, max_length=16, max_concurrent_trials=4
    )
    space = {"x": {"type": "double", "minval": 0, "maxval": 1}}
    runs = [simulate(build(config, space, 0), curve, workers=4, seed=seed) for seed in range(4)]
    assert len({repr(run.actions) for run in runs}) > 1  # different interleavings
    again = simulate(build(config, space, 0), curve, workers=4, seed=2)
    assert again.actions == runs[2].actions  # and each is deterministic
