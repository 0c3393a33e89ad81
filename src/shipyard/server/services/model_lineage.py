"""Where a model version came from: its checkpoint, trial and experiment, the code its
experiment was submitted with, what the checkpoint's run ran (run_records), and the trial's
validation metrics at the checkpoint's step."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api_models, api_runs
from shipyard.common.metric_groups import VALIDATION
from shipyard.server import orm
from shipyard.server.services import checkpoints, models, run_records
from shipyard.server.services.experiment_config import config_of


def version_detail(
    model: orm.Model, version: orm.ModelVersion, *, session: Session
) -> api_models.ModelVersionDetail:
    info = models.version_summary(model, version, session=session)
    return api_models.ModelVersionDetail(**dict(info), lineage=lineage(version, session=session))


def lineage(version: orm.ModelVersion, *, session: Session) -> api_models.VersionLineage:
    ckpt = session.get_one(orm.Checkpoint, version.checkpoint_uuid)
    exp = session.get_one(orm.Experiment, ckpt.experiment_id)
    # The checkpoint's own run: the model's workspace is the checkpoint's, so no filter.
    ran = run_records.trial_environment(ckpt.trial_id, ckpt.run_id, visible=None, session=session)
    return api_models.VersionLineage(
        checkpoint=checkpoints.info(ckpt, session=session),
        experiment_id=exp.id,
        experiment_name=exp.name,
        trial_id=ckpt.trial_id,
        run_id=ckpt.run_id,
        hyperparameters=ran.hyperparameters,
        code=ran.code,
        context_id=ran.context_id,
        image=ran.image,
        environment=environment_summary(ran),
        searcher_metric=config_of(exp).searcher.metric,
        validation_metrics=validation_at(ckpt.trial_id, ckpt.steps_completed, session=session),
    )


def validation_at(trial_id: int, step: int, *, session: Session) -> dict[str, float | None]:
    """Every validation metric the trial reported at exactly `step` (None: NaN)."""
    rows = session.execute(
        select(orm.MetricKey.name, orm.MetricPoint.value)
        .join(orm.MetricKey, orm.MetricKey.id == orm.MetricPoint.key_id)
        .where(
            orm.MetricPoint.trial_id == trial_id,
            orm.MetricPoint.steps_completed == step,
            orm.MetricKey.group == VALIDATION,
        )
        .order_by(orm.MetricKey.name)
    )
    return {name: value for name, value in rows}


def environment_summary(ran: api_runs.TrialEnvironment) -> api_models.EnvironmentSummary | None:
    """Rank 0's capture (or the first rank's) in a few facts; None when the run sent none."""
    if ran.run_id is None or not ran.ranks:
        return None
    rank = next((r for r in ran.ranks if r.rank == 0), ran.ranks[0])
    record = rank.record
    sections: dict[str, Any] = record.get("sections") or {}
    python = _section(sections, "python")
    system = _section(sections, "os")
    torch = _section(_section(sections, "framework"), "torch")
    devices = _section(sections, "gpu").get("devices") or []
    hashes = record.get("hashes") or {}
    return api_models.EnvironmentSummary(
        run_id=ran.run_id,
        rank=rank.rank,
        python=_text(python.get("version")),
        os=_text(system.get("distribution") or system.get("system")),
        torch=_text(torch.get("version")),
        cuda=_text(torch.get("cuda")),
        packages=len(_section(sections, "packages")),
        gpus=[str(d.get("name")) for d in devices if isinstance(d, dict)],
        hashes={str(k): str(v) for k, v in hashes.items()} if isinstance(hashes, dict) else {},
        captured_at=_text((record.get("volatile") or {}).get("captured_at")),
    )


def _section(parent: dict[str, Any], name: str) -> dict[str, Any]:
    found = parent.get(name) if isinstance(parent, dict) else None
    return found if isinstance(found, dict) else {}


def _text(value: object) -> str | None:
    return None if value is None else str(value)
