"""`experiment continue`: more training for an ended experiment, in place (as Determined's
`det experiment continue`), and `experiment fork`'s config: the original's with changes.

Continue keeps every record of the experiment: its trials keep their ids, metrics, runs and
checkpoints, and train on from their latest checkpoints (new steps are added after the old
ones). Scope: the single, random and grid searchers, whose trials train to one length; an
adaptive search (ASHA, Hyperband, PBT, Optuna) cannot be continued (fork it instead).
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api
from shipyard.common.api_experiments import ContinueExperimentRequest, ForkExperimentRequest
from shipyard.common.config import ExperimentConfig, load_config
from shipyard.common.config.checkpoint import S3Storage
from shipyard.common.config.overrides import overridden_text, parse_mapping
from shipyard.common.errors import Conflict, Forbidden, InvalidRequest, NotSupportedYet
from shipyard.common.states import ExperimentState, TrialState
from shipyard.search import make_searcher
from shipyard.search.population import PopulationSearcher
from shipyard.server import orm
from shipyard.server.auth.permissions import Grants
from shipyard.server.services import lifecycle, searching
from shipyard.server.services.checkpoints import DELETED
from shipyard.server.services.experiment_config import config_of, from_stored
from shipyard.server.services.experiment_records import require_trials_ended
from shipyard.server.services.experiments import require_edit
from shipyard.server.services.lifecycle import Event

CONTINUABLE = ("single", "random", "grid")


def continue_(
    exp: orm.Experiment, req: ContinueExperimentRequest, *, session: Session
) -> list[int]:
    """Reopen the experiment: its searcher's length and max_trials as asked, its trials
    that did not complete (and those a longer length lets train further) queued again from
    their latest checkpoints. Returns the ids of the trials that train again."""
    state = ExperimentState(exp.state)
    if not state.terminal:
        raise Conflict(
            f"experiment {exp.id} is {exp.state}: only an ended experiment can be continued "
            "(wait for it to end, or kill it)"
        )
    if exp.archived:
        raise Conflict(f"experiment {exp.id} is archived: unarchive it first")
    require_trials_ended(exp, "continued")
    old = config_of(exp)
    name = old.searcher.name
    if name not in CONTINUABLE:
        raise NotSupportedYet(
            f"experiment {exp.id} runs a {name} search: continue supports single, random and "
            "grid searches (their trials train to one length); fork it instead"
        )
    stored, written = _changes(exp, old, req)
    cfg = from_stored(stored) if stored != exp.config else old
    length = cfg.searcher.training_length()
    trials = list(
        session.scalars(
            select(orm.Trial).where(orm.Trial.experiment_id == exp.id).order_by(orm.Trial.id)
        )
    )
    again = [t for t in trials if _trains_again(t, length)]
    searcher = make_searcher(cfg.searcher, cfg.hyperparameter_space(), exp.seed)
    searcher.set_state((exp.searcher_state or {})["state"])
    assert isinstance(searcher, PopulationSearcher)  # single, random and grid are
    if not again and searcher.unstarted() == 0:
        raise Conflict(
            f"experiment {exp.id}: nothing to continue: its {len(trials)} trial(s) completed "
            "their training; give a longer max_length"
            + (" or more max_trials" if name == "random" else ""),
        )
    for trial in again:
        trial.latest_checkpoint = _live_checkpoint(trial, session)
        lifecycle.apply(session, trial, Event.CONTINUED)
    if stored != exp.config:
        exp.config = stored
        exp.config_yaml = written
        exp.searcher_state = {**(exp.searcher_state or {}), "config": cfg.searcher_dict()}
    exp.state = ExperimentState.ACTIVE
    exp.ended_at = None
    exp.searcher_done = False
    requests = searcher.reopen([t.request_id for t in again])
    for request in requests:
        searching.create_trial(session, exp, request)
    session.flush()
    searching.save(
        session, exp, searcher, {t.request_id for t in again} | {r.request_id for r in requests}
    )
    return [t.id for t in again]


def _changes(
    exp: orm.Experiment, old: ExperimentConfig, req: ContinueExperimentRequest
) -> tuple[dict, str]:
    """The stored (normalized) config and the written one (YAML) with the new length and
    max_trials; the experiment's own when neither is asked for."""
    stored = copy.deepcopy(exp.config)
    section = dict(stored["searcher"])
    written: dict[str, Any] = {}
    searcher = old.searcher
    if req.max_length is not None:
        current = searcher.training_length()
        if current is not None and req.max_length < current:
            raise InvalidRequest(
                f"max_length {req.max_length} is shorter than the search's {current}: a "
                "continued experiment trains longer, not shorter",
                [{"path": "max_length", "message": f"at least {current}"}],
            )
        if searcher.time_metric:
            section["max_time"] = written["searcher.max_time"] = req.max_length
        else:
            unit = searcher.max_length.unit if searcher.max_length else None
            section["max_length"] = req.max_length
            written["searcher.max_length"] = {unit: req.max_length} if unit else req.max_length
    if req.max_trials is not None:
        if searcher.name != "random":
            raise InvalidRequest(
                f"max_trials: a {searcher.name} search's trials cannot be added to (only a "
                "random search's)",
                [{"path": "max_trials", "message": "only for a random search"}],
            )
        current = getattr(searcher, "max_trials", 0)
        if req.max_trials < current:
            raise InvalidRequest(
                f"max_trials {req.max_trials} is fewer than the search's {current}",
                [{"path": "max_trials", "message": f"at least {current}"}],
            )
        section["max_trials"] = written["searcher.max_trials"] = req.max_trials
    stored["searcher"] = section
    return stored, overridden_text(exp.config_yaml, f"experiment {exp.id}'s config", written)


def _trains_again(trial: orm.Trial, length: int | None) -> bool:
    state = TrialState(trial.state)
    if state != TrialState.COMPLETED:
        return state.terminal
    if length is None:
        return False
    reached = trial.searcher_time if trial.searcher_time is not None else trial.steps_completed
    return reached < length


def _live_checkpoint(trial: orm.Trial, session: Session) -> str | None:
    """Where the trial resumes: its latest checkpoint, or the newest one retention kept
    (None: it starts again from scratch)."""
    if trial.latest_checkpoint is not None:
        ckpt = session.get(orm.Checkpoint, trial.latest_checkpoint)
        if ckpt is not None and ckpt.state != DELETED:
            return ckpt.uuid
    return session.scalar(
        select(orm.Checkpoint.uuid)
        .where(orm.Checkpoint.trial_id == trial.id, orm.Checkpoint.state != DELETED)
        .order_by(orm.Checkpoint.steps_completed.desc(), orm.Checkpoint.created_at.desc())
        .limit(1)
    )


def fork_request(exp: orm.Experiment, req: ForkExperimentRequest) -> api.CreateExperimentRequest:
    """The new experiment's create request: the original's config as written, with
    req.config_yaml merged over it and req.overrides set; the original's code snapshot."""
    merged = parse_mapping(req.config_yaml, req.config_file) if req.config_yaml else None
    text = overridden_text(exp.config_yaml, f"experiment {exp.id}'s config", req.overrides, merged)
    return api.CreateExperimentRequest(
        config_yaml=text,
        context_id=exp.context_id,
        config_file=req.config_file if req.config_yaml else f"experiment {exp.id}'s config",
        owner=None,
        paused=req.paused,
        code=exp.code,  # the same snapshot: what git said of it still holds
    )


def require_own_keys(
    exp: orm.Experiment, req: api.CreateExperimentRequest, grants: Grants, username: str
) -> None:
    """A fork that would keep the original's literal S3 secret_key (its trials get it in
    their environment; an API answer never shows it) is only for those who may change the
    original: its owner or an admin of its workspace. Anyone else who sees it gives keys
    of their own (literal, or `{secret: NAME}` from their workspace's secrets, which the
    submit checks as for any experiment). 403 otherwise, before the keys are used."""
    storage = (exp.config or {}).get("checkpoint_storage")
    literal = storage.get("secret_key") if isinstance(storage, dict) else None
    if not isinstance(literal, str):
        return  # no keys, or keys from secrets
    forked = load_config(req.config_yaml, req.config_file).checkpoint_storage
    if not isinstance(forked, S3Storage) or forked.secret_key != literal:
        return  # the fork gives its own storage or keys
    try:
        require_edit(exp, grants, username)
    except Forbidden:
        raise Forbidden(
            f"experiment {exp.id}'s checkpoint storage has a literal secret_key, which only "
            "its owner or an admin of its workspace may fork with: give keys of your own "
            "(--config checkpoint_storage.access_key=... --config "
            "checkpoint_storage.secret_key=..., or {secret: NAME} from your workspace's "
            "secrets), or another checkpoint_storage"
        ) from None


def refresh_config_file(home: Path, exp_id: int, config: dict[str, Any]) -> None:
    """The copy of the config the master keeps for its trials (workers/launcher.py writes
    it at the experiment's first launch), replaced whole: a trial starting now reads the
    old or the new one, never a part."""
    path = home / "experiments" / str(exp_id) / "config.json"
    if not path.exists():
        return
    tmp = path.with_suffix(".continue.tmp")
    tmp.write_text(json.dumps(config))
    os.replace(tmp, path)
