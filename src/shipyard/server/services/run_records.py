"""What each run ran: the environment its ranks captured at start (stored here, per trial,
run and rank), put together with its experiment's code record, config and hyperparameters,
and the image its backend recorded; and two trials' records diffed
(shipyard.common.environment.diff_runs), for `trial diff` and the web UI's compare view."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api_runs
from shipyard.common.environment import diff_runs
from shipyard.common.errors import Conflict, InvalidRequest
from shipyard.server import orm
from shipyard.server.services import trials
from shipyard.server.services.checkpoint_storage import without_credentials
from shipyard.server.services.workspaces import Visible

MAX_RECORD_BYTES = 4 * 2**20  # a capture is ~30 KiB with a few hundred packages
MAX_RANK = 65_535


def store(
    trial_id: int,
    run_id: int,
    rank: object,
    record: object,
    *,
    mask: Callable[[bytes], bytes],
    session: Session,
) -> None:
    """Keep one rank's capture (a rank that sends again replaces its own). ``mask``: the
    run's secret masker; a value the trial side missed is masked here before anything is
    stored, and a record it cannot mask cleanly is refused."""
    if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank <= MAX_RANK:
        raise InvalidRequest(f"rank must be an integer from 0 to {MAX_RANK}, got {rank!r:.40}")
    if not isinstance(record, dict) or not isinstance(record.get("sections"), dict):
        raise InvalidRequest("record must be an environment capture: an object with sections")
    raw = json.dumps(record, sort_keys=True, ensure_ascii=False).encode()
    if len(raw) > MAX_RECORD_BYTES:
        raise InvalidRequest(
            f"the environment record is {len(raw)} bytes, over the limit of {MAX_RECORD_BYTES}"
        )
    kept: dict[str, Any] = record
    masked = mask(raw)
    if masked != raw:
        try:
            kept = json.loads(masked)
        except ValueError:
            raise InvalidRequest("the environment record holds a secret value") from None
    trial = trials.get(trial_id, session=session)
    if not 1 <= run_id <= trial.run_id:
        raise Conflict(f"trial {trial.id} has no run {run_id}")
    row = session.get(orm.RunEnvironment, (trial.id, run_id, rank))
    if row is None:
        session.add(orm.RunEnvironment(trial_id=trial.id, run_id=run_id, rank=rank, record=kept))
    else:
        row.record = kept


def trial_environment(
    trial_id: int, run_id: int | None, *, visible: Visible, session: Session
) -> api_runs.TrialEnvironment:
    """A run of a trial (the latest with a capture when ``run_id`` is None, else the
    latest run) and everything that says what it ran."""
    trial = trials.get(trial_id, session=session, visible=visible)
    exp = session.get_one(orm.Experiment, trial.experiment_id)
    if run_id is None:
        run_id = session.scalar(
            select(orm.RunEnvironment.run_id)
            .where(orm.RunEnvironment.trial_id == trial.id)
            .order_by(orm.RunEnvironment.run_id.desc())
            .limit(1)
        )
    if run_id is None:
        run_id = session.scalar(
            select(orm.TrialRun.run_id)
            .where(orm.TrialRun.trial_id == trial.id)
            .order_by(orm.TrialRun.run_id.desc())
            .limit(1)
        )
    run = session.get(orm.TrialRun, (trial.id, run_id)) if run_id is not None else None
    ranks = session.scalars(
        select(orm.RunEnvironment)
        .where(orm.RunEnvironment.trial_id == trial.id, orm.RunEnvironment.run_id == run_id)
        .order_by(orm.RunEnvironment.rank)
    )
    return api_runs.TrialEnvironment(
        trial_id=trial.id,
        experiment_id=exp.id,
        run_id=run_id,
        code=exp.code,
        context_id=exp.context_id,
        hyperparameters=trial.hparams,
        seed=trial.seed,
        image=run.environment if run is not None else None,
        ranks=[
            api_runs.RankEnvironment(rank=r.rank, record=r.record, received_at=r.received_at)
            for r in ranks
        ],
    )


def diff(a: int, b: int, rank: int, *, visible: Visible, session: Session) -> api_runs.TrialDiff:
    """Every difference between what trials ``a`` and ``b`` ran (their latest captured
    runs, rank ``rank`` of each)."""
    records, missing = [], []
    for trial_id in (a, b):
        described = trial_environment(trial_id, None, visible=visible, session=session)
        exp = session.get_one(orm.Experiment, described.experiment_id)
        record = _run_record(described, exp, rank)
        if record["environment"] is None:
            missing.append(f"the environment of trial {trial_id}'s rank {rank} (none captured)")
        records.append(record)
    differences = [api_runs.Difference(**d.to_json()) for d in diff_runs(records[0], records[1])]
    return api_runs.TrialDiff(
        a=a,
        b=b,
        rank=rank,
        identical=not differences and not missing,
        differences=differences,
        missing=missing,
    )


def _run_record(
    described: api_runs.TrialEnvironment, exp: orm.Experiment, rank: int
) -> dict[str, Any]:
    """The run record diff_runs compares. The trial's own seed joins the config's
    reproducibility section: two runs with different seeds did not run the same thing."""
    image = described.image or {}
    config = without_credentials(exp.config)
    reproducibility = {**(config.get("reproducibility") or {}), "trial_seed": described.seed}
    environment = next((r.record for r in described.ranks if r.rank == rank), None)
    return {
        "code": {**(described.code or {}), "context_id": described.context_id},
        "hyperparameters": described.hyperparameters,
        "config": {**config, "reproducibility": reproducibility},
        "environment": environment,
        "image": {
            "image": image.get("image"),
            "digest": image.get("image_digest") or image.get("image_id"),
        },
    }
