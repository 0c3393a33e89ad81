"""Trial output: stored as numbered lines per (trial, run, rank), read from a cursor."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.states import ExperimentState, TrialState
from shipyard.server import orm


def append(trial: orm.Trial, chunk: bytes, new_offset: int, *, session: Session) -> int:
    """Store the whole lines of chunk for the trial's current run and move its offset,
    in one transaction: a master that dies halfway re-reads the same bytes later."""
    text = chunk.decode("utf-8", errors="replace")
    lines = text.splitlines()
    rows = [
        orm.LogLine(
            experiment_id=trial.experiment_id,
            trial_id=trial.id,
            run_id=trial.run_id,
            rank=0,
            line_no=trial.log_lines + i,
            stream="output",
            text=line,
        )
        for i, line in enumerate(lines)
    ]
    session.add_all(rows)
    trial.log_lines += len(rows)
    trial.log_offset = new_offset
    return len(rows)


def page(
    *, trial_id: int | None, experiment_id: int | None, after: int, limit: int, session: Session
) -> api.LogPage:
    query = select(orm.LogLine).where(orm.LogLine.id > after).order_by(orm.LogLine.id).limit(limit)
    if trial_id is not None:
        query = query.where(orm.LogLine.trial_id == trial_id)
        ended = TrialState(session.get(orm.Trial, trial_id).state).terminal
    else:
        query = query.where(orm.LogLine.experiment_id == experiment_id)
        ended = ExperimentState(session.get(orm.Experiment, experiment_id).state).terminal
    rows = list(session.scalars(query))
    lines = [
        api.LogLine(
            id=r.id,
            trial_id=r.trial_id,
            run_id=r.run_id,
            rank=r.rank,
            line_no=r.line_no,
            stream=r.stream,
            text=r.text,
            time=r.time,
        )
        for r in rows
    ]
    next_after = rows[-1].id if rows else after
    return api.LogPage(lines=lines, next_after=next_after, done=ended and len(rows) < limit)


def tail(trial_id: int, count: int, *, session: Session) -> list[str]:
    rows = session.scalars(
        select(orm.LogLine.text)
        .where(orm.LogLine.trial_id == trial_id)
        .order_by(orm.LogLine.id.desc())
        .limit(count)
    )
    return list(reversed(list(rows)))
