"""What a running trial tells the master besides its metrics (shipyard.core's calls): that it
is alive, its progress, why its run fails, a checkpoint it wrote, that it waits for its
searcher; and the signals it long-polls for.

Reports are taken from the trial's current run only: a process of an older run that is
still alive must not overwrite what the current run reports."""

from __future__ import annotations

from typing import NamedTuple

from sqlalchemy.orm import Session

from shipyard.common.errors import Conflict, InvalidRequest
from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.services import checkpoints, experiments, searching, trials
from shipyard.server.services.metrics import ReportingTrial

RUN_ERROR_MAX_CHARS = 1000  # the trial cuts its message too; a row is no log


class Parked(NamedTuple):
    wait: bool  # the trial may exit; it is launched again when a new target comes
    target: int | None
    stop: bool


class Signals(NamedTuple):
    preempt: bool
    stop: bool
    target: int | None


def current_run(trial: orm.Trial | ReportingTrial, run_id: object) -> int:
    """`run_id` as sent, checked to be the trial's current run (Conflict if not)."""
    if not isinstance(run_id, int) or isinstance(run_id, bool):
        raise InvalidRequest(f"run_id must be an integer, got {run_id!r}")
    if TrialState(trial.state).terminal:
        raise Conflict(f"trial {trial.id} has ended ({trial.state})")
    if run_id != trial.run_id:
        raise Conflict(f"trial {trial.id} is on run {trial.run_id}, not run {run_id}")
    return run_id


def _of_current_run(trial_id: int, run_id: object, session: Session) -> orm.Trial:
    trial = trials.get(trial_id, session=session)
    current_run(trial, run_id)
    return trial


def delete_checkpoint(db: Database, trial_id: int, run_id: object, uuid: str) -> None:
    """The trial's current run deletes a checkpoint of its experiment (Determined's
    checkpoint.delete): as checkpoints.delete, audited in the experiment owner's name."""

    def find(session: Session) -> orm.Checkpoint:
        trial = _of_current_run(trial_id, run_id, session)
        return checkpoints.of_experiment(uuid, trial.experiment_id, session=session)

    with db.read() as s:
        owner = trials.experiment_of(trial_id, session=s).owner
    checkpoints.delete(db, uuid, find, actor=owner or "-", by_trial=trial_id, run=run_id)


def heartbeat(trial_id: int, run_id: object, *, session: Session) -> None:
    """The trial's training loop is alive (see heartbeat_timeout)."""
    _of_current_run(trial_id, run_id, session).last_heartbeat = utcnow()


def progress(trial_id: int, fraction: float, *, session: Session) -> None:
    """How far the trial got, from whichever run reports it; it counts as a heartbeat."""
    trial = trials.get(trial_id, session=session)
    trial.progress = fraction
    trial.last_heartbeat = utcnow()


def run_error(
    trial_id: int, run_id: object, message: str, *, append: bool, session: Session
) -> None:
    """Why the current run fails; `append` keeps what the run already said after it."""
    trial = _of_current_run(trial_id, run_id, session)
    if append and trial.run_error:
        message = f"{message}: {trial.run_error}"
    if len(message) > RUN_ERROR_MAX_CHARS:
        message = message[: RUN_ERROR_MAX_CHARS - 1] + "…"
    trial.run_error = message


def checkpoint(trial_id: int, run_id: object, body: dict, *, session: Session) -> str:
    """Record a checkpoint whose files are written; returns its uuid."""
    trial = _of_current_run(trial_id, run_id, session)
    exp = experiments.get(trial.experiment_id, session=session)
    ckpt = checkpoints.register(trial, body, base_path=exp.checkpoint_base, session=session)
    trial.last_heartbeat = utcnow()
    return ckpt.uuid


def park(trial_id: int, run_id: object, *, session: Session) -> Parked:
    """The trial reached its target and asks to wait for the searcher's next one."""
    trial = _of_current_run(trial_id, run_id, session)
    wait = searching.park(trial)
    return Parked(wait=wait, target=trial.target_length, stop=trial.stop_requested)


def signals(trial_id: int, *, session: Session) -> Signals:
    trial = trials.get(trial_id, session=session)
    return Signals(
        preempt=bool(trial.preempt_requested),
        stop=bool(trial.stop_requested),
        target=trial.target_length,
    )
