"""Trial output: stored as numbered lines per (trial, run, rank), read from a cursor."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import func, select
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


MAX_GREP = 1000  # characters of a grep pattern
SCAN_BATCH = 2000  # rows a grep reads at a time
MAX_SCANNED = 50_000  # rows one grep request reads at most: the next one reads on


@dataclass(frozen=True)
class Filters:
    """Which lines a reader wants: one rank's own lines (not the launcher's), those received
    since a time, those containing a text (a plain, case-sensitive substring: a pattern from
    a user never runs as a regex on the master)."""

    rank: int | None = None
    since: datetime | None = None
    grep: str | None = None

    @property
    def active(self) -> bool:
        return self.rank is not None or self.since is not None or self.grep is not None

    def where(self, query):
        if self.rank is not None:
            query = query.where(
                orm.LogLine.rank == self.rank, orm.LogLine.stream != api.LOG_STREAM_LAUNCHER
            )
        if self.since is not None:
            query = query.where(orm.LogLine.time >= _utc(self.since))
        return query


def _utc(moment: datetime) -> datetime:
    """An aware UTC time (a naive one is taken as UTC; one out of range as the earliest)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        return datetime.min.replace(tzinfo=UTC)


def page(
    *,
    trial_id: int | None,
    experiment_id: int | None,
    after: int,
    limit: int,
    session: Session,
    filters: Filters | None = None,
    tail: int | None = None,
) -> api.LogPage:
    """Up to `limit` lines after the cursor that the filters keep. With `tail`: the last
    `tail` of them, and next_after the newest line's (filtered or not), to follow from.
    A grep reads at most MAX_SCANNED rows: its page may hold no line and still move
    next_after on; `done` says the owner has ended and every line has been read."""
    filters = filters or Filters()
    owner = (
        orm.LogLine.trial_id == trial_id
        if trial_id is not None
        else orm.LogLine.experiment_id == experiment_id
    )
    if trial_id is not None:
        ended = TrialState(session.get_one(orm.Trial, trial_id).state).terminal
    else:
        ended = ExperimentState(session.get_one(orm.Experiment, experiment_id).state).terminal
    query = select(orm.LogLine).where(owner, orm.LogLine.id > after)
    if tail is None and not filters.active:
        rows, last_read, exhausted = _scan(query, limit, None, session, newest_first=False)
        return api.LogPage(
            lines=_lines(rows), next_after=last_read or after, done=ended and exhausted
        )
    # Filtered: read up to the newest line there is now, and once every row to it has been
    # read, start the next page after it, so a follower does not read again, every quarter
    # of a second, the lines the filters left out.
    newest = session.scalar(select(func.max(orm.LogLine.id)).where(owner)) or 0
    query = filters.where(query.where(orm.LogLine.id <= newest))
    if tail is not None:
        rows = _scan(query, tail, filters.grep, session, newest_first=True)[0]
        rows.reverse()
        return api.LogPage(lines=_lines(rows), next_after=max(after, newest), done=ended)
    rows, last_read, exhausted = _scan(query, limit, filters.grep, session, newest_first=False)
    next_after = max(after, newest) if exhausted else (last_read or after)
    return api.LogPage(lines=_lines(rows), next_after=next_after, done=ended and exhausted)


def _scan(
    query, count: int, grep: str | None, session: Session, *, newest_first: bool
) -> tuple[list[orm.LogLine], int | None, bool]:
    """(up to `count` rows the query and grep keep, the id of the last row read, whether
    every row was read), reading in id order (or newest first)."""
    order = orm.LogLine.id.desc() if newest_first else orm.LogLine.id
    if grep is None:
        rows = list(session.scalars(query.order_by(order).limit(count)))
        return rows, (rows[-1].id if rows else None), len(rows) < count
    kept: list[orm.LogLine] = []
    last_read: int | None = None
    scanned = 0
    while scanned < MAX_SCANNED:
        batch = query
        if last_read is not None:
            batch = batch.where(
                orm.LogLine.id < last_read if newest_first else orm.LogLine.id > last_read
            )
        rows = list(session.scalars(batch.order_by(order).limit(SCAN_BATCH)))
        scanned += len(rows)
        for row in rows:
            last_read = row.id
            if grep in row.text:
                kept.append(row)
                if len(kept) == count:
                    return kept, last_read, False
        if len(rows) < SCAN_BATCH:
            return kept, last_read, True
    return kept, last_read, False


def _lines(rows: list[orm.LogLine]) -> list[api.LogLine]:
    return [
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
