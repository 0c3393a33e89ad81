"""An experiment's trials as the API shows them (api.TrialSummary), serialized to JSON.

An ended trial's summary changes only when its row does (a deleted checkpoint moves its
latest_checkpoint; a continued experiment starts it again) or when its searcher metric's
values do, so its JSON is kept, keyed by the row and those values. At 1,000 trials, checking
and serializing every summary again, and decoding its JSON columns, was most of the time of
GET /experiments/{id} (bench/ui_scale.py): the JSON columns are read as text, part of the
key, and decoded only for a trial not kept. A live trial's row changes at every report, so
its summary is built each time and not kept.
"""

from __future__ import annotations

import json
import math
import threading
from types import SimpleNamespace
from typing import Any, NamedTuple

from sqlalchemy import Text, cast, select
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.services import limits, searching
from shipyard.server.services.experiment_config import config_of

KEPT_AT_MOST = 20_000  # trials (~1 KB each); past this the memory is emptied and filled again

_JSON_COLUMNS = ("hparams", "slots", "searcher_info")
# What a TrialSummary shows, or end_reason reads: rows of these, not ORM objects (loading
# 1,000 of those, every column and their identity map, cost more than the rest together).
_COLUMN_NAMES = (
    "id",
    "experiment_id",
    "request_id",
    "state",
    "restarts",
    "run_id",
    "steps_completed",
    "latest_checkpoint",
    "started_at",
    "ended_at",
    "target_length",
    "parent_trial_id",
    "exit_reason",
    "waiting_for_searcher",
    "searcher_time",
    *_JSON_COLUMNS,
)
_ID, _STATE = _COLUMN_NAMES.index("id"), _COLUMN_NAMES.index("state")
_BEST = len(_COLUMN_NAMES)  # then the searcher metric's best and latest values
_ROW_NAMES = (*_COLUMN_NAMES, "best_validation", "latest_validation")
_TERMINAL = {state.value for state in TrialState if state.terminal}


class TrialJSON(NamedTuple):
    id: int
    state: str
    best_validation: float | None
    json: bytes  # the api.TrialSummary


# Keyed by the database, then by the row (with its searcher metric's best and latest values)
# and the metric's name.
_kept: dict[str, dict[tuple[Any, ...], bytes]] = {}
_kept_count = 0
_kept_lock = threading.Lock()


def experiment_trials(exp: orm.Experiment, *, session: Session) -> list[TrialJSON]:
    """The experiment's trials by id, in one query: their columns, and their searcher
    metric's best and latest values (not every metric's: a TrialSummary shows only it)."""
    searcher = config_of(exp).searcher
    c = orm.Trial.__table__.c
    columns = [cast(c[n], Text) if n in _JSON_COLUMNS else c[n] for n in _COLUMN_NAMES]
    best, last = _searcher_values(searcher.metric, searcher.smaller_is_better)
    rows = (
        session.connection()
        .execute(select(*columns, best, last).where(c.experiment_id == exp.id).order_by(c.id))
        .all()
    )
    kept = _kept.setdefault(str(session.get_bind().engine.url), {})
    out = []
    for row in rows:
        key = (tuple(row), searcher.metric)
        data = kept.get(key)
        if data is None:
            data = _serialized(dict(zip(_ROW_NAMES, key[0], strict=True)), searcher.metric)
            if row[_STATE] in _TERMINAL and not _nan_in(row[_BEST:]):
                _keep(kept, key, data)
        out.append(TrialJSON(row[_ID], row[_STATE], row[_BEST], data))
    return out


def _searcher_values(metric: str | None, smaller_is_better: bool) -> tuple[Any, Any]:
    """A trial's best and latest value of the searcher metric, as columns of its row: looked
    up by the summaries' primary key for each trial. (Joined, PostgreSQL scanned every
    trial's summary instead: 30 to 80 ms at 100,000 trials.)"""
    ms, mk, t = orm.MetricSummary.__table__.c, orm.MetricKey.__table__.c, orm.Trial.__table__.c
    key = select(mk.id).where(mk.name == metric, mk.group == "validation").scalar_subquery()
    own = (ms.trial_id == t.id, ms.key_id == key)
    best = select(ms.min if smaller_is_better else ms.max).where(*own).scalar_subquery()
    last = select(ms.last).where(*own).scalar_subquery()
    return best.label("best_validation"), last.label("latest_validation")


def _nan_in(values: Any) -> bool:
    """A NaN never equals another, so a key holding one would never be found again."""
    return any(isinstance(v, float) and math.isnan(v) for v in values)


def _serialized(columns: dict[str, Any], metric: str | None) -> bytes:
    for name in _JSON_COLUMNS:
        columns[name] = json.loads(columns[name]) if columns[name] is not None else None
    fields = trial_fields(
        SimpleNamespace(**columns), metric, columns["best_validation"], columns["latest_validation"]
    )
    return api.TrialSummary(**fields).model_dump_json().encode()


def _keep(kept: dict[tuple[Any, ...], bytes], key: tuple[Any, ...], data: bytes) -> None:
    global _kept_count
    with _kept_lock:
        if _kept_count >= KEPT_AT_MOST:
            for trials in _kept.values():
                trials.clear()
            _kept_count = 0
        kept[key] = data
        _kept_count += 1


def trial_fields(t: Any, metric: str | None, best: float | None, last: float | None) -> dict:
    """A TrialSummary's fields from `t`, an orm.Trial or a row of its columns, and its
    searcher metric's best and latest values."""
    return dict(
        id=t.id,
        experiment_id=t.experiment_id,
        request_id=t.request_id,
        state=t.state,
        hparams=t.hparams,
        restarts=t.restarts,
        run_id=t.run_id,
        steps_completed=t.steps_completed,
        searcher_metric=metric,
        best_validation=best,
        latest_validation=last,
        latest_checkpoint=t.latest_checkpoint,
        slots=list(t.slots or []),
        started_at=t.started_at,
        ended_at=t.ended_at,
        rung=_rung(t.searcher_info),
        searcher_info=t.searcher_info or {},
        target_length=t.target_length,
        parent_trial_id=t.parent_trial_id,
        end_reason=end_reason(t),
    )


def _rung(info: dict | None) -> int | None:
    value = (info or {}).get("rung", (info or {}).get("round"))
    return value if isinstance(value, int) else None


def end_reason(trial: Any) -> str | None:
    """Why a trial ended, in the words `experiment describe` shows (`trial`: an orm.Trial
    or a row of its columns)."""
    state = TrialState(trial.state)
    if state == TrialState.COMPLETED:
        return "completed"
    if state == TrialState.STOPPED and (trial.exit_reason or "").startswith(limits.TIME_LIMIT):
        return f"stopped: {trial.exit_reason}"
    if state == TrialState.STOPPED:
        return f"searcher stop: {trial.exit_reason or 'stopped by the searcher'}"
    if state == TrialState.ERRORED:
        return f"errored: {trial.exit_reason}" if trial.exit_reason else "errored"
    if state == TrialState.CANCELED:
        return "canceled"
    return searching.waiting_reason(trial)
