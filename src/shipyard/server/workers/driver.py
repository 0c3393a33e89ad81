"""The experiment driver: runs searchers on their pending events, ends finished experiments."""

from __future__ import annotations

from sqlalchemy import select

from shipyard.common.states import ExperimentState
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.services import searching


class ExperimentDriver:
    def __init__(self, db: Database, stop_grace_s: float) -> None:
        self.db = db
        self.stop_grace_s = stop_grace_s
        self.searchers = searching.SearcherCache()

    def step(self) -> list[int]:
        """Process pending searcher events; returns the running trials told to stop or
        given a new target, whose long-polls must wake."""
        with self.db.read() as s:
            pending = set(
                s.scalars(
                    select(orm.SearcherEvent.experiment_id).where(
                        orm.SearcherEvent.processed.is_(False)
                    )
                )
            )
        signaled: list[int] = []
        for exp_id in sorted(pending):
            with self.db.write() as s:
                exp = s.get_one(orm.Experiment, exp_id)
                told, searcher = searching.consume_events(
                    exp, session=s, cache=self.searchers, stop_grace_s=self.stop_grace_s
                )
                seq = searching.saved_seq(exp)
            # Kept only after the commit: a failed pass leaves no cached searcher behind.
            self.searchers.keep(exp_id, seq, searcher)
            signaled += told
        return signaled

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
                searching.finish_if_done(s.get_one(orm.Experiment, exp_id), session=s)
        self._forget_ended()

    def _forget_ended(self) -> None:
        """Drop the cached searchers of experiments that ended (finished, killed, errored)."""
        cached = self.searchers.experiment_ids()
        if not cached:
            return
        with self.db.read() as s:
            ended = s.scalars(
                select(orm.Experiment.id).where(
                    orm.Experiment.id.in_(cached),
                    orm.Experiment.state.in_([st.value for st in ExperimentState if st.terminal]),
                )
            )
            for exp_id in list(ended):
                self.searchers.forget(exp_id)
