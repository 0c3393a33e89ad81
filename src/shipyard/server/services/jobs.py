"""The scheduler's view of trials: what holds slots, what each queued trial asks for, and
the queue in the order the scheduler takes it (`shipyard job list`)."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.states import ExperimentState, TrialState
from shipyard.server import orm
from shipyard.server.pools import Pool
from shipyard.server.services import scheduler, searching
from shipyard.server.services.experiment_config import config_of
from shipyard.server.services.lifecycle import HOLDING

# A queued trial may launch unless it waits for a target its searcher has not given yet.
LAUNCHABLE = (orm.Trial.state == TrialState.QUEUED) & or_(
    orm.Trial.waiting_for_searcher.is_(False),
    orm.Trial.target_length > orm.Trial.searcher_time,
)


def priority_in(pool: Pool, exp: orm.Experiment) -> int:
    """The fair_share scheduler ignores priorities: every experiment counts as equal."""
    return exp.priority if pool.scheduler == "priority" else 0


def request_for(trial: orm.Trial, exp: orm.Experiment, pool: Pool) -> scheduler.Request:
    resources = config_of(exp).resources
    return scheduler.Request(
        trial_id=trial.id,
        experiment_id=exp.id,
        priority=priority_in(pool, exp),
        slots_needed=resources.slots_per_trial,
        max_slots=resources.max_slots,
        weight=resources.weight,
        workspace_id=exp.workspace_id,
    )


def quotas(holding: list[tuple[orm.Trial, orm.Experiment]], session: Session) -> scheduler.Quotas:
    """The workspaces' quotas and what their trials hold now."""
    ws = orm.Workspace
    found = scheduler.Quotas()
    for ws_id, name, max_slots, max_trials in session.execute(
        select(ws.id, ws.name, ws.max_slots, ws.max_trials).where(
            or_(ws.max_slots.is_not(None), ws.max_trials.is_not(None))
        )
    ):
        found.limits[ws_id] = (max_slots, max_trials)
        found.names[ws_id] = name
    for trial, _exp in holding:  # a trial of slots_per_trial 0 counts as a running trial
        found.slots[trial.workspace_id] += len(trial.slots or [])
        found.trials[trial.workspace_id] += 1
    return found


def busy_slots(*, session: Session) -> set[str]:
    """The slot ids held by trials that are starting or running."""
    return set(slot_holders(session=session))


def slot_holders(*, session: Session) -> dict[str, tuple[int, int, int]]:
    """slot id -> (trial id, experiment id, workspace id) of the trial holding it."""
    t = orm.Trial
    rows = session.execute(
        select(t.id, t.experiment_id, t.workspace_id, t.slots).where(t.state.in_(HOLDING))
    ).all()
    return {slot: (tid, eid, ws) for tid, eid, ws, slots in rows for slot in slots or []}


def holding_with_experiments(session: Session) -> list[tuple[orm.Trial, orm.Experiment]]:
    rows = session.execute(
        select(orm.Trial, orm.Experiment)
        .join(orm.Experiment, orm.Experiment.id == orm.Trial.experiment_id)
        .where(orm.Trial.state.in_(HOLDING))
    ).all()
    return [(t, e) for t, e in rows]


def running(trial: orm.Trial, exp: orm.Experiment) -> scheduler.Running:
    """A trial holding slots, as the preemption planner sees it."""
    return scheduler.Running(
        trial_id=trial.id,
        priority=exp.priority,
        slots=len(trial.slots or []),
        leaving=bool(trial.preempt_requested or trial.stop_requested),
    )


def running_in(
    pool: Pool, holding: list[tuple[orm.Trial, orm.Experiment]]
) -> list[scheduler.Running]:
    """The trials holding slots of this pool."""
    return [running(t, e) for t, e in holding if set(t.slots or []) & pool.slot_ids]


def slots_in_use(trials: list[orm.Trial]) -> dict[int, int]:
    """Slots held per experiment."""
    used: dict[int, int] = {}
    for t in trials:
        used[t.experiment_id] = used.get(t.experiment_id, 0) + len(t.slots or [])
    return used


def job_list(
    pools: dict[str, Pool],
    *,
    session: Session,
    visible: Collection[int] | None = None,
    problems: Mapping[str, str | None] | None = None,
) -> list[api.JobInfo]:
    """Running trials, then queued ones in scheduling order with why each waits, pool by
    pool. ``problems``: why a pool's engine cannot run trials now (its trials all wait).
    The order is the one queue of every workspace; only those of `visible` (workspace
    ids; None: all) are listed, numbered among themselves."""
    running_rows = holding_with_experiments(session)
    limits = quotas(running_rows, session)
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
        (t, e, _running_reason(t)) for t, e in sorted(running_rows, key=lambda r: r[0].id)
    ]
    used = slots_in_use([t for t, _ in running_rows])
    for pool in pools.values():
        in_pool = running_in(pool, running_rows)
        requests = [
            request_for(t, e, pool)
            for t, e in rows
            if t.id in launchable and e.resource_pool == pool.name
        ]
        order = scheduler.queue_order(
            requests,
            len(pool.slots) - sum(r.slots for r in in_pool),
            used,
            reserve=pool.preemption,
            freeing=sum(r.slots for r in in_pool if r.leaving),
            quotas=limits,
        )
        problem = (problems or {}).get(pool.name)
        if problem:
            down = f"its pool {pool.name!r} cannot run trials now: {problem}"
            order = [(req, down) for req, _reason in order]
        jobs += [(*by_id[req.trial_id], reason) for req, reason in order]
    for trial, exp in sorted(rows, key=lambda row: row[0].id):
        if trial.state in HOLDING:
            continue
        if exp.resource_pool not in pools:
            why = f"its resource pool {exp.resource_pool!r} is not on this master"
            jobs.append((trial, exp, why))
        elif trial.id not in launchable:
            jobs.append((trial, exp, _why_not_launchable(trial, exp)))
    return [
        api.JobInfo(
            position=i,
            trial_id=t.id,
            experiment_id=e.id,
            experiment_name=e.name,
            resource_pool=e.resource_pool,
            state=t.state,
            priority=e.priority,
            weight=config_of(e).resources.weight,
            slots_needed=config_of(e).resources.slots_per_trial,
            slots=list(t.slots or []),
            reason=reason,
        )
        for i, (t, e, reason) in enumerate(
            (job for job in jobs if visible is None or job[1].workspace_id in visible), start=1
        )
    ]


def _running_reason(trial: orm.Trial) -> str:
    where = "running on " + (", ".join(trial.slots or []) or "the CPU, holding no slot")
    if trial.stop_requested:
        return f"{where}; stopped by the searcher, finishing"
    if trial.preempt_requested:
        return f"{where}; preempted, checkpointing to give up its slots"
    return where


def _why_not_launchable(trial: orm.Trial, exp: orm.Experiment) -> str:
    if ExperimentState(exp.state) == ExperimentState.PAUSED or trial.state == TrialState.PAUSED:
        return "its experiment is paused"
    return searching.waiting_reason(trial) or "not schedulable"
