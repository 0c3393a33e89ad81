"""Stores each ended trial's learning curve as the experiment page will ask for it, in the
background, so that the page's first view reads stored curves instead of every point.

The experiment page asks for its searcher metric (validation) at chart_points(trial count)
points a trial (services/metric_series.py). A thread looks, every few seconds, for the
experiments in which a trial ended since it last looked (all of them when the master
starts), and stores the curves the page would ask for: metric_series computes those of ended
trials not stored yet, as a page's request does. When all are stored, a look at an
experiment reads no row a trial (the database compares the stored versions). A trial count
that doubles changes the size: the next trial to end has every curve of that size computed.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timedelta

from sqlalchemy import func, select

from shipyard.common.errors import NotFound
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import metric_series, stored_curves
from shipyard.server.services.experiment_config import config_by_id

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
        # experiment id -> (ended trials, latest end) when its curves were last stored
        self._looked_at: dict[int, tuple[int, datetime | None]] = {}
        self._metric_of: dict[int, str] = {}  # experiment id -> its searcher metric
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
        """One look: store the curves of the trials ended since the last; how many stored.

        An experiment is looked at when its ended trials changed: their count, or the latest
        end (a trial that ran again). The window is the master's clock, from the last look's
        start less _OVERLAP, so after a quiet minute a look reads no experiment at all (it
        once ran from the latest end, and so looked at the last ended trials' experiments
        every few seconds for as long as no other trial ended)."""
        started = orm.utcnow()
        t = orm.Trial
        query = select(t.experiment_id, func.count(), func.max(t.ended_at))
        query = query.where(t.ended_at.is_not(None))
        if self._since is not None:
            recent = select(t.experiment_id).where(t.ended_at > self._since - _OVERLAP)
            query = query.where(t.experiment_id.in_(recent))
        with self.db.read() as s:
            ended = s.execute(query.group_by(t.experiment_id)).all()
        stored = 0
        for experiment_id, count, latest in ended:
            if self._stop.is_set():
                return stored
            if self._looked_at.get(experiment_id) != (count, latest):
                stored += self._store(experiment_id)
                self._looked_at[experiment_id] = (count, latest)
        self._since = started
        return stored

    def _store(self, experiment_id: int) -> int:
        with self.db.read() as s:
            if experiment_id not in self._metric_of:  # a config never changes
                try:
                    config = config_by_id(experiment_id, session=s)
                except NotFound:  # deleted since its trials were counted
                    return 0
                self._metric_of[experiment_id] = config.searcher.metric
            to_store = metric_series.curves_to_store(
                experiment_id, name=self._metric_of[experiment_id], group="validation", session=s
            )
        return stored_curves.store(self.db, to_store, experiment_id)
