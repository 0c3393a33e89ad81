"""The log filters `trial logs --tail / --since / --grep` use (server/services/logs.py), on a
real database: a grep that reads past several batches, one cut at its scan limit that moves
the cursor on without a line (and the client that reads on from it), the tail with a filter,
and `since`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from shipyard.client.logs import iter_log_lines
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import logs, workspaces

LINES = 50


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = Database(f"sqlite:///{tmp_path_factory.mktemp('logs') / 'shipyard.db'}")
    database.migrate()
    yield database
    database.close()


@pytest.fixture(scope="module")
def trial_id(db) -> int:
    """An ended trial whose lines 0..49 say `line N`, every tenth `line N needle`; the first
    half received an hour ago."""
    with db.write() as s:
        project = workspaces.default_project(session=s)
        exp = orm.Experiment(
            workspace_id=project.workspace_id,
            project_id=project.id,
            name="logs",
            config={},
            config_yaml="",
            state="COMPLETED",
            seed=1,
            checkpoint_base="/nowhere",
        )
        s.add(exp)
        s.flush()
        trial = orm.Trial(
            experiment_id=exp.id,
            workspace_id=exp.workspace_id,
            request_id="r1",
            hparams={},
            seed=1,
            state="COMPLETED",
        )
        s.add(trial)
        s.flush()
        hour_ago = datetime.now(UTC) - timedelta(hours=1)
        for i in range(LINES):
            s.add(
                orm.LogLine(
                    experiment_id=exp.id,
                    trial_id=trial.id,
                    run_id=1,
                    rank=0,
                    line_no=i,
                    stream="output",
                    text=f"line {i}" + (" needle" if i % 10 == 0 else ""),
                    time=hour_ago if i < LINES // 2 else datetime.now(UTC),
                )
            )
        return trial.id


def read(db, trial_id: int, **kwargs):
    def page(after: int, wait_s: float):
        with db.read() as s:
            return logs.page(
                trial_id=trial_id, experiment_id=None, after=after, session=s, **kwargs
            )

    return [line.text for line in iter_log_lines(page)]


NEEDLES = [f"line {i} needle" for i in range(0, LINES, 10)]


def test_grep_reads_past_several_batches(db, trial_id, monkeypatch):
    monkeypatch.setattr(logs, "SCAN_BATCH", 7)
    assert read(db, trial_id, limit=1000, filters=logs.Filters(grep="needle")) == NEEDLES
    assert read(db, trial_id, limit=2, filters=logs.Filters(grep="needle")) == NEEDLES


def test_a_grep_cut_at_its_scan_limit_moves_the_cursor_and_the_client_reads_on(
    db, trial_id, monkeypatch
):
    monkeypatch.setattr(logs, "SCAN_BATCH", 3)
    monkeypatch.setattr(logs, "MAX_SCANNED", 6)
    with db.read() as s:
        first = logs.page(
            trial_id=trial_id,
            experiment_id=None,
            after=0,
            limit=100,
            session=s,
            filters=logs.Filters(grep="line 7"),
        )
    assert first.lines == [] and first.next_after > 0 and not first.done
    assert read(db, trial_id, limit=100, filters=logs.Filters(grep="line 7")) == ["line 7"]


def test_tail_keeps_the_last_lines_the_filters_keep(db, trial_id, monkeypatch):
    monkeypatch.setattr(logs, "SCAN_BATCH", 4)
    with db.read() as s:
        page = logs.page(
            trial_id=trial_id,
            experiment_id=None,
            after=0,
            limit=1000,
            session=s,
            filters=logs.Filters(grep="needle"),
            tail=2,
        )
        newest = max(r.id for r in s.query(orm.LogLine).filter_by(trial_id=trial_id))
    assert [line.text for line in page.lines] == NEEDLES[-2:]
    assert page.next_after == newest and page.done


def test_since_keeps_the_lines_received_since_then(db, trial_id):
    half_hour_ago = datetime.now(UTC) - timedelta(minutes=30)
    kept = read(db, trial_id, limit=1000, filters=logs.Filters(since=half_hour_ago))
    assert kept == [f"line {i}" + (" needle" if i % 10 == 0 else "") for i in range(25, LINES)]
    naive = half_hour_ago.replace(tzinfo=None)  # taken as UTC
    assert read(db, trial_id, limit=1000, filters=logs.Filters(since=naive)) == kept
    for far in (
        datetime(1, 1, 1, tzinfo=UTC),
        datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),
    ):
        assert len(read(db, trial_id, limit=1000, filters=logs.Filters(since=far))) == LINES


def test_a_page_the_filters_leave_empty_moves_the_cursor_past_what_it_read(db, trial_id):
    """A follower with --since polls every quarter of a second: once it has read every line
    there is, it starts after them, not again from where it was."""
    future = datetime.now(UTC) + timedelta(hours=1)
    with db.read() as s:
        page = logs.page(
            trial_id=trial_id,
            experiment_id=None,
            after=0,
            limit=100,
            session=s,
            filters=logs.Filters(since=future),
        )
        newest = max(r.id for r in s.query(orm.LogLine).filter_by(trial_id=trial_id))
    assert page.lines == [] and page.next_after == newest
