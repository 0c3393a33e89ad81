"""Experiments: create from a config + context, read, and the user's state changes."""

from __future__ import annotations

import json
import secrets
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.backends.base import NeedsImage, RunsImages
from shipyard.backends.registry import backend_class, types_with
from shipyard.common import api
from shipyard.common.config import ExperimentConfig, load_config, validate_context
from shipyard.common.config.resources import ResourcesConfig
from shipyard.common.errors import (
    ConfigError,
    Conflict,
    Forbidden,
    InvalidRequest,
    NotFound,
    NotSupportedYet,
)
from shipyard.common.states import ExperimentState, TrialState
from shipyard.server import orm
from shipyard.server.auth.permissions import Action, Grants
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.pools import Pool, on_the_masters_machine
from shipyard.server.services import (
    checkpoint_storage,
    lifecycle,
    searching,
    share_nothing,
    views,
    workspaces,
)
from shipyard.server.services import secrets as workspace_secrets
from shipyard.server.services.contexts import get_context
from shipyard.server.services.experiment_config import config_of
from shipyard.server.services.lifecycle import Event
from shipyard.server.services.workspaces import Visible, get_visible

MAX_CODE_RECORD_BYTES = 2 * 2**20  # git's record with its diff inline (~1 MiB at most)


def load_checked(
    req: api.CreateExperimentRequest, grants: Grants, db: Database
) -> ExperimentConfig:
    """The request's config, parsed, with its checkpoint storage reachable: done outside the
    write transaction that creates the experiment, since asking an S3 endpoint may take
    seconds. Keys from the workspace's secrets are opened (the submitter must be allowed to
    use them: the access key travels to the config's endpoint_url) in a short transaction
    of their own first."""
    cfg = load_config(req.config_yaml, req.config_file)
    values = None
    names = workspace_secrets.storage_secrets(cfg)
    if names:
        with db.write() as s:  # the keyring is read in a write transaction
            workspace_id = _project_for(cfg, grants, s).workspace_id
            workspace_secrets.check_at_submit(cfg, workspace_id, grants, session=s)
            values = workspace_secrets.open_at_submit(workspace_id, names.values(), session=s)
    checkpoint_storage.check_at_submit(cfg, values)
    return cfg


def create(
    req: api.CreateExperimentRequest,
    cfg: ExperimentConfig,
    *,
    default_checkpoint_base: str,
    pools: dict[str, Pool],
    default_pool: str,
    owner: str,
    grants: Grants,
    session: Session,
    forked_from: int | None = None,
    rerun_of: int | None = None,
    trial_seed: int | None = None,
) -> orm.Experiment:
    """Validate, record, and start the searcher: the first trials are queued in the same
    transaction, so they can launch the moment it commits. The owner is who submits it
    (the request's own `owner` field is ignored: old clients send their login name), who
    must be an editor of the config's workspace. rerun_of, trial_seed: `trial rerun`'s
    trial and its seed, which the new experiment's trials get."""
    project = _project_for(cfg, grants, session)
    workspace_secrets.check_at_submit(cfg, project.workspace_id, grants, session=session)
    files: set[str] = set()
    if req.context_id is not None:
        files = set(get_context(req.context_id, session=session).files)
    validate_context(cfg, files)
    _check_lengths(cfg)
    pool = _pool_for(cfg.resources, pools, default_pool)
    _check_image_runs_in(pools[pool], cfg)
    _check_zero_slots_run_in(pools[pool], cfg)
    _check_runs_without_the_masters_disk(pools[pool], cfg, default_checkpoint_base)
    # Determined's partial checkpoint_storage: stored merged, so the config says where.
    cfg = cfg.with_default_storage(default_checkpoint_base)
    seed = cfg.reproducibility.experiment_seed
    if seed is None:
        seed = secrets.randbelow(2**31)
    exp = orm.Experiment(
        workspace_id=project.workspace_id,
        project_id=project.id,
        name=cfg.name,
        description=cfg.description or "",
        labels=list(cfg.labels),
        config=cfg.to_json_dict(),
        config_yaml=req.config_yaml,
        context_id=req.context_id,
        state=ExperimentState.PAUSED if req.paused else ExperimentState.ACTIVE,
        seed=seed,
        checkpoint_base=cfg.checkpoint_base_path(default_checkpoint_base),
        priority=cfg.resources.priority,
        resource_pool=pool,
        owner=owner,
        forked_from=forked_from,
        code=_checked_code(req.code),
        rerun_of=rerun_of,
        trial_seed=trial_seed,
    )
    session.add(exp)
    session.flush()
    searching.start(exp, cfg, session=session)
    return exp


def _checked_code(code: dict[str, Any] | None) -> dict[str, Any] | None:
    """The code record as the client sent it, bounded: a diff too large to keep inline is
    sent as a blob of its own (shipyard.client.submit), so this is small."""
    if code is None:
        return None
    size = len(json.dumps(code))
    if size > MAX_CODE_RECORD_BYTES:
        raise InvalidRequest(
            f"the code record is {size} bytes, over the limit of {MAX_CODE_RECORD_BYTES}: "
            "send a large diff as a blob (diff_blob) instead of inline",
            [{"path": "code", "message": "too large"}],
        )
    return code


def _project_for(cfg: ExperimentConfig, grants: Grants, session: Session) -> orm.Project:
    """The config's workspace and project, which must exist (an unknown one and one the
    submitter cannot see read the same), be live, and take the submitter's experiments."""
    try:
        ws = workspaces.get(cfg.workspace, visible=grants.workspaces(), session=session)
    except NotFound as exc:
        raise _not_there("workspace", exc) from exc
    grants.require(Action.CREATE_EXPERIMENT, ws.id, f"workspace {ws.name!r}")
    try:
        project = workspaces.get_project(ws, cfg.project, session=session)
    except NotFound as exc:
        raise _not_there("project", exc) from exc
    for field, thing in (("workspace", ws), ("project", project)):
        if thing.archived:
            raise ConfigError(
                f"the experiment's {field} is archived",
                [{"path": field, "message": f"{field} {thing.name!r} is archived"}],
            )
    return project


def _not_there(field: str, exc: NotFound) -> ConfigError:
    return ConfigError(
        f"the experiment's {field} does not exist", [{"path": field, "message": exc.message}]
    )


def _pool_for(resources: ResourcesConfig, pools: dict[str, Pool], default_pool: str) -> str:
    """The pool the experiment's trials run in; it must exist and be big enough."""
    name = resources.resource_pool or default_pool
    if name not in pools:
        raise ConfigError(
            "the experiment asks for a resource pool this master does not have",
            [
                {
                    "path": "resources.resource_pool",
                    "message": f"unknown resource pool {name!r}; this master has "
                    + ", ".join(repr(p) for p in pools),
                }
            ],
        )
    wanted, have = resources.slots_per_trial, len(pools[name].slots)
    if wanted > have:
        where = "this master has" if len(pools) == 1 else f"resource pool {name!r} has"
        raise ConfigError(
            "the experiment asks for more slots than the master has",
            [
                {
                    "path": "resources.slots_per_trial",
                    "message": f"{wanted} slots per trial, but {where} {have}",
                }
            ],
        )
    return name


def _check_image_runs_in(pool: Pool, cfg: ExperimentConfig) -> None:
    """Whether the pool's backend runs images, or only images (its mixins): said at submit,
    so no backend refuses at each launch."""
    image = cfg.environment.image
    backend = backend_class(pool.type)
    if issubclass(backend, NeedsImage) and not image:
        raise ConfigError(
            f"a {pool.type} pool runs every trial in a container",
            [
                {
                    "path": "environment.image",
                    "message": f"resource pool {pool.name!r} is a {pool.type} pool: set "
                    "environment.image to an image with python3 (>= 3.11)",
                }
            ],
        )
    if image and not issubclass(backend, RunsImages):
        raise NotSupportedYet(
            f"containers are not supported yet in a {pool.type} pool",
            [
                {
                    "path": "environment.image",
                    "message": f"resource pool {pool.name!r} is a {pool.type} pool, which "
                    "runs trials without containers: not supported yet; remove "
                    f"environment.image or use a {' or '.join(types_with(RunsImages))} pool",
                }
            ],
        )


def _check_zero_slots_run_in(pool: Pool, cfg: ExperimentConfig) -> None:
    """slots_per_trial 0 runs on the master's machine: an engine of its own (Ray, Slurm,
    Kubernetes) places work by the slots it asks for, and would have no node for it."""
    if cfg.resources.slots_per_trial or on_the_masters_machine(pool):
        return
    raise NotSupportedYet(
        f"trials without slots are not supported yet in a {pool.type} pool",
        [
            {
                "path": "resources.slots_per_trial",
                "message": f"resource pool {pool.name!r} is a {pool.type} pool: slots_per_trial "
                "0 (a CPU-only trial holding no slot) runs only in pools on the master's "
                "machine; not supported yet here: ask for 1 slot",
            }
        ],
    )


def _check_runs_without_the_masters_disk(pool: Pool, cfg: ExperimentConfig, default: str) -> None:
    """On a pool whose nodes share nothing with the master, nothing the trial needs may
    live only on the master's disk."""
    if pool.shares_files:
        return
    problems = share_nothing.refusals(cfg, cfg.checkpoint_base_path(default))
    if problems:
        first = f"{problems[0]['path']}: {problems[0]['message']}"
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ConfigError(
            f"resource pool {pool.name!r} shares no files with the master; {first}{more}",
            problems,
        )


_MAX_LENGTHS = {"name": 256, "workspace": 128, "project": 128}  # the columns' sizes


def _check_lengths(cfg: ExperimentConfig) -> None:
    problems = [
        {"path": field, "message": f"at most {limit} characters, got {len(getattr(cfg, field))}"}
        for field, limit in _MAX_LENGTHS.items()
        if len(getattr(cfg, field)) > limit
    ]
    if problems:
        raise ConfigError("the experiment config is not valid", problems)


def get(exp_id: int, *, session: Session, visible: Visible = None) -> orm.Experiment:
    """visible: the workspaces the caller sees (None: all); one in another is not found."""
    exp = get_visible(orm.Experiment, exp_id, visible, session)
    if exp is None:
        raise NotFound(f"experiment {exp_id} does not exist")
    return exp


def require_edit(exp: orm.Experiment, grants: Grants, username: str) -> None:
    """Editors act on their own experiments, workspace admins on every one."""
    if grants.may_edit_experiment(exp.workspace_id, exp.owner, username):
        return
    if exp.owner == username:
        raise Forbidden(
            f"you may no longer change experiment {exp.id}: its workspace's owner changes "
            "take an editor role there"
        )
    raise Forbidden(
        f"experiment {exp.id} is {exp.owner or 'someone else'}'s: only its owner (an "
        "editor) or an admin of its workspace may change it"
    )


def overview(exp_id: int, *, visible: Visible, session: Session) -> api.ExperimentOverview:
    """The experiment's list entry and its config; its trials are neither read nor sent."""
    exp = get(exp_id, session=session, visible=visible)
    [summary] = views.experiment_summaries([exp], session=session)
    return api.ExperimentOverview(**dict(summary), config=exp.config)


def _require_state(exp: orm.Experiment, allowed: tuple[ExperimentState, ...], action: str) -> None:
    if exp.state not in allowed:
        raise Conflict(f"experiment {exp.id} is {exp.state}; it cannot be {action}")


def pause(exp_id: int, *, session: Session) -> orm.Experiment:
    exp = get(exp_id, session=session)
    if exp.state == ExperimentState.PAUSED:
        return exp
    _require_state(exp, (ExperimentState.ACTIVE,), "paused")
    exp.state = ExperimentState.PAUSED
    # Queued trials wait; running ones are asked to checkpoint and exit (the orchestrator).
    for trial in _trials(exp.id, lifecycle.states_allowing(Event.PAUSED), session):
        lifecycle.apply(session, trial, Event.PAUSED)
    return exp


def activate(exp_id: int, *, session: Session) -> orm.Experiment:
    exp = get(exp_id, session=session)
    if exp.state == ExperimentState.ACTIVE:
        return exp
    _require_state(exp, (ExperimentState.PAUSED,), "activated")
    exp.state = ExperimentState.ACTIVE
    for trial in _trials(exp.id, lifecycle.states_allowing(Event.ACTIVATED), session):
        lifecycle.apply(session, trial, Event.ACTIVATED)
    return exp


def kill(exp_id: int, *, session: Session) -> orm.Experiment:
    exp = get(exp_id, session=session)
    if exp.state == ExperimentState.CANCELED:
        return exp
    _require_state(exp, (ExperimentState.ACTIVE, ExperimentState.PAUSED), "killed")
    exp.state = ExperimentState.CANCELED
    exp.ended_at = utcnow()
    # Trials not holding slots end now; running ones are terminated by the orchestrator.
    for trial in _trials(exp.id, lifecycle.states_allowing(Event.KILLED), session):
        lifecycle.apply(session, trial, Event.KILLED)
    return exp


def archive(exp_id: int, *, session: Session) -> orm.Experiment:
    """Hide an ended experiment from lists (nothing is deleted)."""
    exp = get(exp_id, session=session)
    if not ExperimentState(exp.state).terminal:
        raise Conflict(
            f"experiment {exp.id} is {exp.state}; only an ended experiment can be archived: "
            "kill it first"
        )
    exp.archived = True
    return exp


def unarchive(exp_id: int, *, session: Session) -> orm.Experiment:
    exp = get(exp_id, session=session)
    exp.archived = False
    return exp


def set_resources(
    exp_id: int, changes: api.ExperimentResources, *, session: Session
) -> orm.Experiment:
    """Change priority, weight or max_slots of a live experiment; the scheduler uses them
    from its next pass (running trials keep their slots)."""
    exp = get(exp_id, session=session)
    _require_state(exp, (ExperimentState.ACTIVE, ExperimentState.PAUSED), "changed")
    given = changes.model_dump(include=changes.model_fields_set)
    if "priority" in given and given["priority"] is None:
        raise InvalidRequest(
            "priority cannot be removed", [{"path": "priority", "message": "expected 1..99"}]
        )
    if "weight" in given and given["weight"] is None:
        raise InvalidRequest(
            "weight cannot be removed", [{"path": "weight", "message": "expected a number > 0"}]
        )
    # A new dict: the JSON column is saved only when it is assigned (config_of, keyed by the
    # stored content, validates the new one when it is next read).
    resources = config_of(exp).resources.model_dump(mode="json") | given
    exp.config = {**exp.config, "resources": resources}
    if "priority" in given:
        exp.priority = given["priority"]
    return exp


def _trials(exp_id: int, states: tuple[TrialState, ...], session: Session) -> list[orm.Trial]:
    return list(
        session.scalars(
            select(orm.Trial).where(orm.Trial.experiment_id == exp_id, orm.Trial.state.in_(states))
        )
    )
