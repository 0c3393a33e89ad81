"""What the experiment list shows of each experiment's trials: how many are in each state,
and the best value of the searcher's metric with the first trial that has it.

Read for a page of experiments in two queries. An ended experiment whose trials have all
ended no longer changes these (an ended trial's reports are refused), so its totals are
kept in memory: at 100 experiments of 1,000 trials, reading the trials' summaries again
for every list was most of the list's time (bench/ui_scale.py)."""

from __future__ import annotations

import threading
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from shipyard.common.states import ExperimentState, TrialState
from shipyard.server import orm
from shipyard.server.services.experiment_config import config_of

KEPT_AT_MOST = 50_000  # experiments; past this the memory is emptied and filled again


class Totals(NamedTuple):
    trial_states: dict[str, int]
    best: float | None
    best_trial: int | None


# Keyed by the database and by what a new row under a reused id would not share.
_Key = tuple[str, int, datetime | None, datetime | None]
_kept: dict[_Key, Totals] = {}
_kept_lock = threading.Lock()


def totals(exps: list[orm.Experiment], session: Session) -> dict[int, Totals]:
    database = str(session.get_bind().engine.url)
    keys = {e.id: (database, e.id, e.created_at, e.ended_at) for e in exps}
    out = {e.id: _kept[keys[e.id]] for e in exps if keys[e.id] in _kept}
    unknown = [e for e in exps if e.id not in out]
    if not unknown:
        return out
    states = _trial_states([e.id for e in unknown], session)
    bests = _best_validations(unknown, session)
    for exp in unknown:
        best, best_trial = bests.get(exp.id, (None, None))
        out[exp.id] = Totals(states[exp.id], best, best_trial)
        if _final(exp, states[exp.id]):
            with _kept_lock:
                if len(_kept) >= KEPT_AT_MOST:
                    _kept.clear()
                _kept[keys[exp.id]] = out[exp.id]
    return out


def _final(exp: orm.Experiment, trial_states: dict[str, int]) -> bool:
    return ExperimentState(exp.state).terminal and all(
        TrialState(state).terminal for state in trial_states
    )


def _trial_states(ids: list[int], session: Session) -> dict[int, dict[str, int]]:
    t = orm.Trial
    states: dict[int, dict[str, int]] = {i: {} for i in ids}
    for exp_id, state, count in session.execute(
        select(t.experiment_id, t.state, func.count())
        .where(t.experiment_id.in_(ids))
        .group_by(t.experiment_id, t.state)
    ):
        states[exp_id][state] = count
    return states


def _best_validations(
    exps: list[orm.Experiment], session: Session
) -> dict[int, tuple[float | None, int | None]]:
    """Experiment id -> (best value of its searcher metric, the first trial that has it),
    from the per-trial summaries."""
    metric_of = {e.id: config_of(e).searcher.metric for e in exps}
    ms, t, mk = orm.MetricSummary, orm.Trial, orm.MetricKey
    rows = session.execute(
        select(t.experiment_id, t.id, mk.name, ms.min, ms.max)
        .join(ms, ms.trial_id == t.id)
        .join(mk, mk.id == ms.key_id)
        .where(
            t.experiment_id.in_(list(metric_of)),
            mk.group == "validation",
            mk.name.in_({m for m in metric_of.values() if m}),
        )
        .order_by(t.id)
    )
    smaller = {e.id: config_of(e).searcher.smaller_is_better for e in exps}
    out: dict[int, tuple[float | None, int | None]] = {}
    for exp_id, trial_id, name, low, high in rows:
        if name != metric_of[exp_id]:
            continue  # another experiment's searcher metric
        value = low if smaller[exp_id] else high
        if value is None:
            continue
        known = out.get(exp_id, (None, None))[0]
        if known is None or (value < known if smaller[exp_id] else value > known):
            out[exp_id] = (value, trial_id)
    return out
