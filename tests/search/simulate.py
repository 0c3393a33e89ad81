"""A minimal orchestrator loop for searcher tests: starts what the searcher asks for, exits
trials in a chosen order, and records what a user would check (concurrency, Shutdowns)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from shipyard.search import Create, ExitReason, Searcher, Shutdown, Stop, TrialRequest


@dataclass
class Run:
    created: list[TrialRequest] = field(default_factory=list)
    shutdowns: list[Shutdown] = field(default_factory=list)
    max_running: int = 0
    actions_after_shutdown: int = 0


def run_search(
    searcher: Searcher,
    reason: Callable[[TrialRequest], ExitReason] = lambda _: ExitReason.COMPLETED,
    newest_first: bool = False,
) -> Run:
    """Drive a fresh searcher until nothing is running; the oldest trial exits first
    unless newest_first."""
    run = Run()
    running: list[TrialRequest] = []

    def start(request: TrialRequest) -> None:
        run.created.append(request)
        running.append(request)
        run.max_running = max(run.max_running, len(running))

    for request in searcher.create_trials():
        start(request)
    while running:
        request = running.pop(-1 if newest_first else 0)
        searcher.on_validation(request.request_id, {"loss": 0.5}, 1)
        for action in searcher.on_trial_exit(request.request_id, reason(request)):
            if run.shutdowns:
                run.actions_after_shutdown += 1
            if isinstance(action, Create):
                start(action.request)
            elif isinstance(action, Shutdown):
                run.shutdowns.append(action)
            elif isinstance(action, Stop):
                raise AssertionError(f"these searchers never stop a trial, got {action}")
    return run
