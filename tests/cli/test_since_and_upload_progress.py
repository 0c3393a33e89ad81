"""`trial logs --since` values, and the upload's progress reports (client/contexts.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
import typer

from shipyard.cli.trial_cmds import parse_since
from shipyard.client import contexts

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "back"),
    [("90s", 90), ("10m", 600), ("2h", 7200), ("1d", 86400), ("1.5h", 5400), (" 10M ", 600)],
)
def test_a_duration_goes_back_from_now(text, back):
    assert parse_since(text, now=NOW) == NOW - timedelta(seconds=back)


def test_a_time_with_an_offset_is_that_time_and_one_without_is_local():
    assert parse_since("2026-11-29T10:00:00+02:00") == datetime(
        2026, 11, 29, 10, tzinfo=timezone(timedelta(hours=2))
    )
    assert parse_since("2026-11-29T10:00Z") == datetime(2026, 11, 29, 10, tzinfo=UTC)
    local = parse_since("2026-11-29 10:00")
    assert local.tzinfo is not None and local == datetime(2026, 11, 29, 10).astimezone()


@pytest.mark.parametrize("text", ["yesterday", "10", "m10", "-5m", "2026-13-01", ""])
def test_anything_else_is_a_clear_error(text):
    with pytest.raises(typer.BadParameter, match="neither a duration"):
        parse_since(text)


def test_the_upload_reports_its_progress_up_to_the_whole_archive(monkeypatch):
    monkeypatch.setattr(contexts, "UPLOAD_CHUNK", 4)
    seen: list[tuple[int, int]] = []
    chunks = list(contexts._chunks(b"0123456789", lambda done, total: seen.append((done, total))))
    assert b"".join(chunks) == b"0123456789"
    assert seen == [(0, 10), (4, 10), (8, 10), (10, 10)]
