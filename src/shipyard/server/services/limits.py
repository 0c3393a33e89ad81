"""Limits on a running trial: a heartbeat it must keep up (a hung trial is killed and
restarted) and a time limit on its running time over all its runs (it is stopped).

Both are Shipyard's own experiment fields (Determined has neither): `heartbeat_timeout`
and `trial_time_limit`, in seconds. A heartbeat is any report the trial sends (metrics,
checkpoint, progress) or the beat shipyard.core sends while the training loop calls it.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.server import orm
from shipyard.server.services.experiment_config import config_of

TIME_LIMIT = "exceeded its time limit"  # how a time-limit stop's reason starts


def hung(trial: orm.Trial, exp: orm.Experiment, now: datetime) -> str | None:
    """Why the trial counts as hung, or None."""
    timeout = config_of(exp).heartbeat_timeout
    if timeout is None or trial.last_heartbeat is None:
        return None
    silent = (now - trial.last_heartbeat).total_seconds()
    if silent <= timeout:
        return None
    return f"no heartbeat for {silent:.0f} s (heartbeat_timeout: {timeout} s)"


def over_time(trial: orm.Trial, exp: orm.Experiment, ran_s: float) -> str | None:
    """Why the trial must stop for its time limit, or None."""
    limit = config_of(exp).trial_time_limit
    if limit is None or ran_s <= limit or trial.stop_requested:
        return None
    return f"{TIME_LIMIT}: ran {ran_s:.0f} s, trial_time_limit is {limit} s"


def running_seconds(trial_ids: list[int], now: datetime, *, session: Session) -> dict[int, float]:
    """Time each trial has run, summed over all its runs (the current one up to now)."""
    total: dict[int, float] = dict.fromkeys(trial_ids, 0.0)
    if not trial_ids:
        return total
    runs = session.execute(
        select(orm.TrialRun.trial_id, orm.TrialRun.started_at, orm.TrialRun.ended_at).where(
            orm.TrialRun.trial_id.in_(trial_ids)
        )
    )
    for trial_id, started, ended in runs:
        total[trial_id] += ((ended or now) - started).total_seconds()
    return total
