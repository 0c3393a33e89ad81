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
    """Ask the orchestrator for one trial: hparams is the plain nested dict of values."""

    request_id: str
    hparams: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Create:
    request: TrialRequest


@dataclass(frozen=True)
class Stop:
    """Stop a running trial early; it must reach the trial (Core API should_stop)."""

    request_id: str


@dataclass(frozen=True)
class Shutdown:
    """The search is over; failure=True when no trial ended well."""

    failure: bool = False


Action = Create | Stop | Shutdown


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
    def on_validation(self, request_id: str, metrics: dict[str, Any]) -> list[Action]:
        """A trial reported validation metrics (they may lack the searcher metric)."""

    @abstractmethod
    def on_trial_exit(self, request_id: str, reason: ExitReason) -> list[Action]:
        """A trial ended for good (it will not be restarted)."""

    @abstractmethod
    def progress(self) -> float:
        """How far the search is, from 0 to 1."""

    @abstractmethod
    def get_state(self) -> dict[str, Any]:
        """Everything needed to resume, as a JSON-able dict."""

    @abstractmethod
    def set_state(self, state: dict[str, Any]) -> None:
        """Resume from get_state() of a searcher built with the same arguments."""
