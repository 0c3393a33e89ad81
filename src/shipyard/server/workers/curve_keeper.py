"""Stores each ended trial's learning curve as the experiment page will ask for it, in the
background, so that the page's first view reads stored curves instead of every point.

The experiment page asks for its searcher metric (validation) at chart_points(trial count)
points a trial (services/metric_series.py). A thread looks, every few seconds, for the
experiments in which a trial ended since it last looked (all of them when the master
starts), and asks for those curves as the page would: metric_series computes those of ended
trials not stored yet and they are stored, as after a page's request. A trial count that
doubles changes the size: the next trial to end has every curve of that size computed.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta
from typing import cast

from sqlalchemy import func, select

from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import metric_series, stored_curves
from shipyard.server.services.experiment_config import stored_config

log = logging.getLogger(__name__)

INTERVAL_S = 3.0
# A trial's ended_at is set in the transaction that ends it: one committed a little after a
# later one's is still looked at next time.
_OVERLAP = timedelta(seconds=60)


class CurveKeeper:
    def __init__(self, db: Database, interval_s: float = INTERVAL_S) -> None:
        self.db = db
        self.interval_s = interval_s
        self._since: datetime | None = None  # None: every experiment, as at start
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="curve-keeper")

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.keep_up()
            except Exception:  # noqa: BLE001 - the pages compute what is missing anyway
                log.warning("could not store the latest trials' curves", exc_info=True)
            self._stop.wait(self.interval_s)

    def keep_up(self) -> int:
        """One look: store the curves of the trials ended since the last; how many stored."""
        t = orm.Trial
        query = select(t.experiment_id, func.max(t.ended_at)).where(t.ended_at.is_not(None))
        if self._since is not None:
            query = query.where(t.ended_at > self._since - _OVERLAP)
        with self.db.read() as s:
            ended = s.execute(query.group_by(t.experiment_id)).all()
        stored = 0
        for experiment_id, _ in ended:
            if self._stop.is_set():
                return stored
            stored += self._store(experiment_id)
        if ended:  # each experiment's latest end (never None: ended ones only)
            newest = max(cast(datetime, when) for _, when in ended)
            self._since = newest if self._since is None else max(self._since, newest)
        return stored

    def _store(self, experiment_id: int) -> int:
        with self.db.read() as s:
            config = s.scalars(
                select(orm.Experiment.config).where(orm.Experiment.id == experiment_id)
            ).one()
            metric = stored_config(experiment_id, config).searcher.metric
            found = metric_series.curves(
                experiment_id,
                name=metric,
                group="validation",
                max_points=None,
                session=s,
                ended_only=True,
            )
        return stored_curves.store(self.db, found.to_store, experiment_id)
