"""Trials: across experiments by state, detail, logs and metric series."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from shipyard.client.session import Session
from shipyard.common.api import ActionResult, LogPage, MetricSeries, TrialDetail, TrialListItem


def list_trials(
    session: Session,
    *,
    states: Sequence[str] = (),
    restarted: bool | None = None,
    limit: int | None = None,
) -> list[TrialListItem]:
    """Trials of every experiment in any of `states` (all when empty); restarted: True only
    those that restarted, False only those that never did. Live ones first, then the
    latest to end first."""
    params = {"state": list(states) or None, "restarted": restarted, "limit": limit}
    return [TrialListItem.model_validate(item) for item in session.get("/trials", params=params)]


def get_trial(session: Session, trial_id: int) -> TrialDetail:
    return TrialDetail.model_validate(session.get(f"/trials/{trial_id}"))


def kill_trial(session: Session, trial_id: int) -> ActionResult:
    """Kill one trial: it ends CANCELED, its experiment goes on. A running trial's state is
    still RUNNING in the answer, until its process has exited."""
    return ActionResult.model_validate(session.post(f"/trials/{trial_id}/kill"))


def get_trial_logs(
    session: Session,
    trial_id: int,
    *,
    after: int = 0,
    limit: int = 1000,
    wait_s: float = 0,
    rank: int | None = None,
    tail: int | None = None,
    since: datetime | None = None,
    grep: str | None = None,
) -> LogPage:
    """One page of the trial's log lines; `rank`: only that rank's; `since`: only those
    received since then; `grep`: only those containing this text; `tail`: the last lines
    (next_after is then the newest line's). The master filters: a page may hold no line and
    still move next_after on."""
    params = {
        "after": after,
        "limit": limit,
        "wait_s": wait_s,
        "rank": rank,
        "tail": tail,
        "since": since.isoformat() if since is not None else None,
        "grep": grep,
    }
    data = session.get(
        f"/trials/{trial_id}/logs", params=params, timeout_s=wait_s + session.timeout_s
    )
    return LogPage.model_validate(data)


def get_trial_metrics(
    session: Session,
    trial_id: int,
    *,
    group: str | None = None,
    name: str | None = None,
    max_points: int | None = None,
) -> list[MetricSeries]:
    """The trial's series; with max_points, each downsampled to at most that many points."""
    params = {"group": group, "name": name, "max_points": max_points}
    items = session.get(f"/trials/{trial_id}/metrics", params=params)
    return [MetricSeries.model_validate(item) for item in items]
