"""A fixed population of trials, started at most max_concurrent_trials at a time.

single, random and grid differ only in how many trials they run and which point each gets;
this class holds what they share: request ids, concurrency, exits, Shutdown, state.
"""

from __future__ import annotations

import copy
import math
from abc import abstractmethod
from typing import Any

from shipyard.search.base import (
    Action,
    Create,
    ExitReason,
    Searcher,
    Shutdown,
    TrialRequest,
)
from shipyard.search.options import SearcherOptions


def request_id_for(index: int) -> str:
    """Deterministic ids, so a replayed search names its trials the same way."""
    return f"r{index + 1:04d}"


def known_trial(trials: dict[str, Any], request_id: str, kind: str, created: int) -> Any:
    """trials[request_id]; a ValueError naming the searcher for an id it never created."""
    trial = trials.get(request_id)
    if trial is None:
        raise ValueError(
            f"{kind} searcher: unknown trial request {request_id!r} (it created {created} requests)"
        )
    return trial


class PopulationSearcher(Searcher):
    kind: str = "population"  # recorded in the state, checked by set_state

    def __init__(self, options: SearcherOptions, total_trials: int) -> None:
        self.options = options
        self.total_trials = total_trials
        self._started = False
        self._shutdown_sent = False
        self._next_index = 0
        # request_id -> {"index": int, "exit": ExitReason value | None, "metric": float | None}
        self._trials: dict[str, dict[str, Any]] = {}

    @abstractmethod
    def hparams_for(self, index: int) -> dict[str, Any]:
        """The point of the index-th trial; a pure function of the constructor arguments."""

    # --- the Searcher interface -----------------------------------------------------------

    def create_trials(self) -> list[TrialRequest]:
        if self._started:
            raise ValueError(f"{self.kind} searcher: create_trials() was already called")
        self._started = True
        return self._fill_free_slots()

    def on_validation(
        self, request_id: str, metrics: dict[str, Any], steps_completed: int
    ) -> list[Action]:
        trial = self._trial(request_id)
        value = metrics.get(self.options.metric)
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value):
            trial["metric"] = float(value)
        return []

    def on_trial_exit(self, request_id: str, reason: ExitReason) -> list[Action]:
        trial = self._trial(request_id)
        if trial["exit"] is not None:
            raise ValueError(
                f"{self.kind} searcher: trial request {request_id!r} already exited "
                f"({trial['exit']})"
            )
        trial["exit"] = ExitReason(reason).value
        actions: list[Action] = [Create(request) for request in self._fill_free_slots()]
        if self._next_index >= self.total_trials and self._running() == 0:
            if not self._shutdown_sent:
                self._shutdown_sent = True
                all_errored = all(t["exit"] == ExitReason.ERRORED for t in self._trials.values())
                actions.append(Shutdown(failure=all_errored))
        return actions

    def progress(self) -> float:
        if self.total_trials == 0:
            return 1.0
        exited = sum(1 for t in self._trials.values() if t["exit"] is not None)
        return exited / self.total_trials

    def get_state(self) -> dict[str, Any]:
        return {
            "searcher": self.kind,
            "started": self._started,
            "shutdown_sent": self._shutdown_sent,
            "next_index": self._next_index,
            "trials": copy.deepcopy(self._trials),
        }

    def set_state(self, state: dict[str, Any]) -> None:
        if state.get("searcher") != self.kind:
            raise ValueError(
                f"{self.kind} searcher: cannot resume from the state of a "
                f"{state.get('searcher')!r} searcher"
            )
        self._started = bool(state["started"])
        self._shutdown_sent = bool(state["shutdown_sent"])
        self._next_index = int(state["next_index"])
        self._trials = copy.deepcopy(state["trials"])

    def reopen(self, request_ids: list[str]) -> list[TrialRequest]:
        """Continue a search that ended (`experiment continue`): these trials train again
        (from their checkpoints), and the new trials a larger total_trials allows are
        asked for as the concurrency limit lets them start, now or as trials exit."""
        for request_id in request_ids:
            self._trial(request_id)["exit"] = None
        self._shutdown_sent = False
        return self._fill_free_slots()

    def unstarted(self) -> int:
        """Trials of total_trials not asked for yet."""
        return max(self.total_trials - self._next_index, 0)

    # --- helpers ---------------------------------------------------------------------------

    def latest_metrics(self) -> dict[str, float | None]:
        """The latest searcher-metric value of each request (None before any)."""
        return {request_id: t["metric"] for request_id, t in self._trials.items()}

    def _concurrency_limit(self) -> int:
        return self.options.max_concurrent_trials or self.total_trials

    def _running(self) -> int:
        return sum(1 for t in self._trials.values() if t["exit"] is None)

    def _fill_free_slots(self) -> list[TrialRequest]:
        requests: list[TrialRequest] = []
        while self._next_index < self.total_trials and self._running() < self._concurrency_limit():
            index = self._next_index
            request_id = request_id_for(index)
            self._trials[request_id] = {"index": index, "exit": None, "metric": None}
            self._next_index += 1
            requests.append(TrialRequest(request_id, self.hparams_for(index)))
        return requests

    def _trial(self, request_id: str) -> dict[str, Any]:
        return known_trial(self._trials, request_id, self.kind, len(self._trials))
