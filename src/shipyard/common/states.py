"""Lifecycle states of experiments and trials. Which event moves a trial between them:
server/services/lifecycle.py (docs/architecture.md, "Trial lifecycle")."""

from __future__ import annotations

from enum import StrEnum


class ExperimentState(StrEnum):
    ACTIVE = "ACTIVE"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    CANCELED = "CANCELED"
    ERRORED = "ERRORED"

    @property
    def terminal(self) -> bool:
        return self in (
            ExperimentState.COMPLETED,
            ExperimentState.CANCELED,
            ExperimentState.ERRORED,
        )


class TrialState(StrEnum):
    QUEUED = "QUEUED"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    STOPPED = "STOPPED"
    ERRORED = "ERRORED"
    CANCELED = "CANCELED"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL_TRIAL_STATES


TERMINAL_TRIAL_STATES = frozenset(
    {TrialState.COMPLETED, TrialState.STOPPED, TrialState.ERRORED, TrialState.CANCELED}
)
