"""Trial output: stored as numbered lines per (trial, run, rank), read from a cursor."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api, log_prefix
from shipyard.common.errors import InvalidRequest
from shipyard.common.states import ExperimentState, TrialState
from shipyard.server import orm


def append(trial: orm.Trial, chunk: bytes, new_offset: int, *, session: Session) -> int:
    """Store the whole lines of chunk for the trial's current run and move its offset,
    in one transaction: a master that dies halfway re-reads the same bytes later."""
    text = chunk.decode("utf-8", errors="replace")
    stored = _store(trial, trial.run_id, text.splitlines(), session=session)
    trial.log_offset = new_offset
    return stored


def ingest(
    trial: orm.Trial,
    run_id: int,
    source: int,
    first_line: int,
    lines: list[str],
    *,
    session: Session,
) -> int:
    """Store lines a run sent over HTTP (shipyard.launch._ship): ``first_line`` numbers the
    first of them in the (run, source) stream, so the lines already stored (a batch sent
    again after a lost answer) are skipped. A gap (lines that never came) is refused."""
    cursor = session.get(orm.LogCursor, (trial.id, run_id, source))
    if cursor is None:
        cursor = orm.LogCursor(trial_id=trial.id, run_id=run_id, source=source, lines=0)
        session.add(cursor)
    if first_line > cursor.lines:
        raise InvalidRequest(
            f"first_line {first_line} skips lines: the master has {cursor.lines} lines of "
            f"run {run_id}'s output from source {source}"
        )
    new = lines[cursor.lines - first_line :]
    cursor.lines += len(new)
    return _store(trial, run_id, new, session=session)


def _store(trial: orm.Trial, run_id: int, lines: list[str], *, session: Session) -> int:
    rows = []
    for i, line in enumerate(lines):
        rank, stream, line_text = parse_line(line)
        rows.append(
            orm.LogLine(
                experiment_id=trial.experiment_id,
                trial_id=trial.id,
                run_id=run_id,
                rank=rank,
                line_no=trial.log_lines + i,
                stream=stream,
                text=line_text,
            )
        )
    session.add_all(rows)
    trial.log_lines += len(rows)
    return len(rows)


def parse_line(line: str) -> tuple[int, str, str]:
    """(rank, stream, text) of an output line: a rank's line is stored under its rank with
    stream "rank", the launcher's with stream "launcher" (rank 0), each without its prefix;
    any other line is rank 0's "output"."""
    match = log_prefix.RANK_PATTERN.match(line)
    if match:
        return int(match.group(1)), api.LOG_STREAM_RANK, line[match.end() :]
    if line.startswith(log_prefix.LAUNCHER):
        return 0, api.LOG_STREAM_LAUNCHER, line[len(log_prefix.LAUNCHER) :]
    return 0, api.LOG_STREAM_OUTPUT, line


def page(
    *,
    trial_id: int | None,
    experiment_id: int | None,
    after: int,
    limit: int,
    session: Session,
    rank: int | None = None,
) -> api.LogPage:
    query = select(orm.LogLine).where(orm.LogLine.id > after).order_by(orm.LogLine.id).limit(limit)
    if rank is not None:  # one rank's own lines: not the launcher's
        query = query.where(orm.LogLine.rank == rank, orm.LogLine.stream != api.LOG_STREAM_LAUNCHER)
    if trial_id is not None:
        query = query.where(orm.LogLine.trial_id == trial_id)
        ended = TrialState(session.get_one(orm.Trial, trial_id).state).terminal
    else:
        query = query.where(orm.LogLine.experiment_id == experiment_id)
        ended = ExperimentState(session.get_one(orm.Experiment, experiment_id).state).terminal
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
    """The trial's last lines as text, a gang's with their rank (or launcher) prefix."""
    rows = session.execute(
        select(orm.LogLine.rank, orm.LogLine.stream, orm.LogLine.text)
        .where(orm.LogLine.trial_id == trial_id)
        .order_by(orm.LogLine.id.desc())
        .limit(count)
    )
    return [api.log_prefix(rank, stream) + text for rank, stream, text in reversed(list(rows))]


def received_any(trial: orm.Trial, *, session: Session) -> bool:
    """Whether the trial's current run sent the master any of its output over HTTP."""
    cursor = select(orm.LogCursor.lines).where(
        orm.LogCursor.trial_id == trial.id, orm.LogCursor.run_id == trial.run_id
    )
    return session.scalars(cursor.limit(1)).first() is not None
