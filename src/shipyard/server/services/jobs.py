"""The scheduler's view of trials: what holds slots, what each queued trial asks for, and
the queue in the order the scheduler takes it (`shipyard job list`)."""

from __future__ import annotations

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.states import ExperimentState, TrialState
from shipyard.server import orm
from shipyard.server.services import searching
from shipyard.server.workers import scheduler

HOLDING = (TrialState.STARTING, TrialState.RUNNING)

# A queued trial may launch unless it waits for a target its searcher has not given yet.
LAUNCHABLE = (orm.Trial.state == TrialState.QUEUED) & or_(
    orm.Trial.waiting_for_searcher.is_(False),
    orm.Trial.target_length > orm.Trial.searcher_time,
)


def request_for(trial: orm.Trial, exp: orm.Experiment) -> scheduler.Request:
    resources = exp.config["resources"]
    return scheduler.Request(
        trial_id=trial.id,
        experiment_id=exp.id,
        priority=exp.priority,
        slots_needed=resources["slots_per_trial"],
        max_slots=resources.get("max_slots"),
        weight=float(resources.get("weight", 1.0)),
    )


def holding(session: Session) -> list[orm.Trial]:
    return list(session.scalars(select(orm.Trial).where(orm.Trial.state.in_(HOLDING))))


def slots_in_use(trials: list[orm.Trial]) -> dict[int, int]:
    """Slots held per experiment."""
    used: dict[int, int] = {}
    for t in trials:
        used[t.experiment_id] = used.get(t.experiment_id, 0) + len(t.slots or [])
    return used


def job_list(total_slots: int, *, session: Session) -> list[api.JobInfo]:
    """Running trials, then queued ones in scheduling order with why each waits."""
    running = holding(session)
    free = total_slots - sum(len(t.slots or []) for t in running)
    rows = session.execute(
        select(orm.Trial, orm.Experiment)
        .join(orm.Experiment, orm.Experiment.id == orm.Trial.experiment_id)
        .where(orm.Trial.state.in_([*HOLDING, TrialState.QUEUED, TrialState.PAUSED]))
    ).all()
    by_id = {t.id: (t, e) for t, e in rows}
    launchable = set(
        session.scalars(
            select(orm.Trial.id)
            .join(orm.Experiment, orm.Experiment.id == orm.Trial.experiment_id)
            .where(LAUNCHABLE, orm.Experiment.state == ExperimentState.ACTIVE)
        )
    )
    jobs: list[tuple[orm.Trial, orm.Experiment, str]] = [
        (t, by_id[t.id][1], "running on " + ", ".join(t.slots or []))
        for t in sorted(running, key=lambda t: t.id)
    ]
    requests = [request_for(t, e) for t, e in rows if t.id in launchable]
    for req, reason in scheduler.queue_order(requests, max(free, 0), slots_in_use(running)):
        trial, exp = by_id[req.trial_id]
        jobs.append((trial, exp, reason))
    for trial, exp in sorted(rows, key=lambda row: row[0].id):
        if trial.id in launchable or trial.state in HOLDING:
            continue
        jobs.append((trial, exp, _why_not_launchable(trial, exp)))
    return [
        api.JobInfo(
            position=i,
            trial_id=t.id,
            experiment_id=e.id,
            experiment_name=e.name,
            state=t.state,
            priority=e.priority,
            weight=float(e.config["resources"].get("weight", 1.0)),
            slots_needed=e.config["resources"]["slots_per_trial"],
            slots=list(t.slots or []),
            reason=reason,
        )
        for i, (t, e, reason) in enumerate(jobs, start=1)
    ]


def _why_not_launchable(trial: orm.Trial, exp: orm.Experiment) -> str:
    if ExperimentState(exp.state) == ExperimentState.PAUSED or trial.state == TrialState.PAUSED:
        return "its experiment is paused"
    return searching.waiting_reason(trial) or "not schedulable"
