"""The experiment driver: runs searchers on their pending events, ends finished experiments."""

from __future__ import annotations

from sqlalchemy import select

from shipyard.common.states import ExperimentState
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import searching


class ExperimentDriver:
    def __init__(self, db: Database) -> None:
        self.db = db

    def step(self) -> list[int]:
        """Process pending searcher events; returns trials whose stop flag was set."""
        with self.db.read() as s:
            pending = set(
                s.scalars(
                    select(orm.SearcherEvent.experiment_id).where(
                        orm.SearcherEvent.processed.is_(False)
                    )
                )
            )
        stopped: list[int] = []
        for exp_id in sorted(pending):
            with self.db.write() as s:
                stopped += searching.consume_events(s.get(orm.Experiment, exp_id), session=s)
        return stopped

    def finish_experiments(self) -> None:
        with self.db.read() as s:
            candidates = list(
                s.scalars(
                    select(orm.Experiment.id).where(
                        orm.Experiment.state == ExperimentState.ACTIVE,
                        orm.Experiment.searcher_done.is_(True),
                    )
                )
            )
        for exp_id in candidates:
            with self.db.write() as s:
                searching.finish_if_done(s.get(orm.Experiment, exp_id), session=s)
