"""The searcher interface: a searcher gets ids and numbers and returns decisions.

It never sees the database, a backend or the orchestrator; its whole state is a JSON-able
dict (get_state/set_state), so a restarted master resumes a search from its database.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


@dataclass(frozen=True)
class TrialRequest:
    """Ask the orchestrator for one trial: hparams is the plain nested dict of values.

    target: how far the trial should train first, in the searcher's time unit (the
    time_metric, or steps_completed when the config uses max_length); None: no target.
    parent_request_id: start from that trial's latest checkpoint (PBT's exploit step).
    """

    request_id: str
    hparams: dict[str, Any] = field(default_factory=dict)
    target: int | None = None
    parent_request_id: str | None = None


@dataclass(frozen=True)
class Create:
    request: TrialRequest


@dataclass(frozen=True)
class Stop:
    """Stop a trial early; it must reach the trial (Core API should_stop).

    reason is shown to the user as why the trial stopped."""

    request_id: str
    reason: str = "stopped by the searcher"


@dataclass(frozen=True)
class SetTarget:
    """Let a trial train further: up to `target` in the searcher's time unit.

    A trial that reached its target waits (holding no slot) until it gets a new target or
    a Stop; the searcher must answer every trial that reached its target with one of them.
    """

    request_id: str
    target: int


@dataclass(frozen=True)
class Shutdown:
    """The search is over; failure=True when no trial ended well."""

    failure: bool = False


Action = Create | Stop | SetTarget | Shutdown


class ExitReason(StrEnum):
    COMPLETED = "COMPLETED"
    STOPPED = "STOPPED"
    ERRORED = "ERRORED"
    CANCELED = "CANCELED"


class Searcher(ABC):
    """One search algorithm. Pure and synchronous: every call returns its decisions."""

    @abstractmethod
    def create_trials(self) -> list[TrialRequest]:
        """The trials to start with; called once per search."""

    @abstractmethod
    def on_validation(
        self, request_id: str, metrics: dict[str, Any], steps_completed: int
    ) -> list[Action]:
        """A trial reported validation metrics (they may lack the searcher metric).

        The trial's time is metrics[time_metric] when the config names a time_metric,
        else steps_completed. A value that is NaN, inf or not a number is the worst value.
        """

    @abstractmethod
    def on_trial_exit(self, request_id: str, reason: ExitReason) -> list[Action]:
        """A trial ended for good (it will not be restarted)."""

    @abstractmethod
    def progress(self) -> float:
        """How far the search is, from 0 to 1."""

    def trial_summary(self, request_id: str) -> dict[str, Any]:
        """What the searcher knows of one trial, for `experiment describe` (JSON-able):
        e.g. {"rung": 2, "bracket": 0} for ASHA, {"round": 3} for PBT."""
        return {}

    def summary(self) -> dict[str, Any]:
        """What the searcher knows of the whole search, for `experiment describe`
        (JSON-able): e.g. {"pareto_front": [request ids]} for a multi-objective search."""
        return {}

    @abstractmethod
    def get_state(self) -> dict[str, Any]:
        """Everything needed to resume, as a JSON-able dict."""

    @abstractmethod
    def set_state(self, state: dict[str, Any]) -> None:
        """Resume from get_state() of a searcher built with the same arguments."""
