"""The model registry: named models of a workspace, their versions (version N is one
checkpoint, never changed: only its description and tags), and aliases (a name such as
"production" for one version, moved at will). A registered checkpoint is kept: retention
spares it, and deleting it or its experiment is refused (model_refs.py).

Who may do what comes from the experiment actions: a version is made from an experiment's
checkpoint, so whoever may make experiments in a workspace (an editor) may create models
there, register versions and move aliases; changing or deleting a model is for its owner
(an editor) or a workspace admin, as for an experiment. A registry action of its own would
be a new column of the role table for the same people."""

from __future__ import annotations

from sqlalchemy import delete, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from shipyard.common import api_models
from shipyard.common.api_models import alias_problem, model_name_problem
from shipyard.common.errors import Conflict, Forbidden, InvalidRequest, NotFound
from shipyard.common.permissions import Action, roles_allowed
from shipyard.server import orm
from shipyard.server.auth.permissions import Grants
from shipyard.server.orm import utcnow
from shipyard.server.services import checkpoints, workspaces
from shipyard.server.services.workspaces import Visible, within

# -- finding a model ------------------------------------------------------------------------


def find(name: str, *, workspace: str | None, visible: Visible, session: Session) -> orm.Model:
    """The model `name` of `workspace`; without one, the model of that name among the
    workspaces the caller sees (a name in several of them must be given its workspace)."""
    problem = model_name_problem(name)
    if problem:
        raise InvalidRequest(problem, [{"path": "model", "message": problem}])
    query = select(orm.Model).where(orm.Model.name == name)
    if workspace is not None:
        ws = workspaces.get(workspace, visible=visible, session=session)
        found = session.scalar(query.where(orm.Model.workspace_id == ws.id))
        if found is None:
            raise NotFound(f"model {name!r} does not exist in workspace {ws.name!r}")
        return found
    candidates = list(session.scalars(query.where(within(orm.Model.workspace_id, visible))))
    if not candidates:
        raise NotFound(f"model {name!r} does not exist (`shipyard model list` shows yours)")
    if len(candidates) > 1:
        names = sorted(_workspace_names({m.workspace_id for m in candidates}, session).values())
        raise InvalidRequest(
            f"model {name!r} is in workspaces {', '.join(map(repr, names))}: say which one "
            "(workspace=, --workspace, or ?workspace= in a model URI)",
            [{"path": "workspace", "message": "required: the model's name is in several"}],
        )
    return candidates[0]


def _workspace_names(ids: set[int], session: Session) -> dict[int, str]:
    rows = session.execute(
        select(orm.Workspace.id, orm.Workspace.name).where(orm.Workspace.id.in_(list(ids)))
    )
    return {ws_id: ws_name for ws_id, ws_name in rows}


# -- who may ---------------------------------------------------------------------------------


def require_editor(grants: Grants, workspace_id: int, what: str) -> None:
    """An editor of the workspace (or more): the experiment creators (see the docstring)."""
    if not grants.allows(Action.CREATE_EXPERIMENT, workspace_id):
        raise Forbidden(
            f"you may not {what}: it takes one of these roles in the model's workspace: "
            f"{roles_allowed(Action.CREATE_EXPERIMENT)}"
        )


def require_owner(model: orm.Model, grants: Grants, username: str, what: str) -> None:
    """Its owner (an editor) or an admin of its workspace, as for an experiment."""
    if not grants.may_edit_experiment(model.workspace_id, model.owner, username):
        raise Forbidden(
            f"you may not {what}: model {model.name!r} is {model.owner or 'someone else'}'s, "
            "and only its owner (an editor) or an admin of its workspace may change it"
        )


# -- models ----------------------------------------------------------------------------------


def create(
    req: api_models.CreateModelRequest,
    *,
    grants: Grants,
    username: str,
    visible: Visible,
    session: Session,
) -> orm.Model:
    ws = workspaces.get(req.workspace or workspaces.DEFAULT, visible=visible, session=session)
    require_editor(grants, ws.id, f"create models in workspace {ws.name!r}")
    if ws.archived:
        raise Conflict(f"workspace {ws.name!r} is archived: it takes no new model")
    exists = select(orm.Model.id).where(orm.Model.workspace_id == ws.id, orm.Model.name == req.name)
    if session.scalar(exists) is not None:
        raise Conflict(f"model {req.name!r} already exists in workspace {ws.name!r}")
    model = orm.Model(
        workspace_id=ws.id,
        name=req.name,
        description=req.description,
        tags=_unique(req.tags),
        owner=username,
    )
    session.add(model)
    try:
        session.flush()
    except IntegrityError:  # made by another request just now
        raise Conflict(f"model {req.name!r} already exists in workspace {ws.name!r}") from None
    return model


def change(model: orm.Model, req: api_models.ModelChange, *, grants: Grants, username: str) -> None:
    require_owner(model, grants, username, f"change model {model.name!r}")
    if req.description is not None:
        model.description = req.description
    if req.tags is not None:
        model.tags = _unique(req.tags)  # a new list: the JSON column is saved when assigned
    if req.archived is not None:
        model.archived = req.archived


def delete_model(
    model: orm.Model, *, force: bool, grants: Grants, username: str, session: Session
) -> api_models.ModelDeleted:
    """The model, its versions and its aliases; never its checkpoints (retention applies
    to them again from its next pass over their experiment). A model that an alias names
    a version of is deleted only with `force` (409 otherwise): a deployment may read it."""
    require_owner(model, grants, username, f"delete model {model.name!r}")
    aliases = sorted(
        session.scalars(select(orm.ModelAlias.alias).where(orm.ModelAlias.model_id == model.id))
    )
    if aliases and not force:
        raise Conflict(
            f"model {model.name!r} has aliases ({', '.join(aliases)}) that something may "
            "deploy from: delete it with force=true (`shipyard model delete` asks first)"
        )
    versions = session.scalar(select(func.count()).where(orm.ModelVersion.model_id == model.id))
    answer = api_models.ModelDeleted(
        name=model.name,
        workspace=_workspace_names({model.workspace_id}, session)[model.workspace_id],
        versions=versions or 0,
        aliases=aliases,
    )
    session.execute(delete(orm.ModelAlias).where(orm.ModelAlias.model_id == model.id))
    session.execute(delete(orm.ModelVersion).where(orm.ModelVersion.model_id == model.id))
    session.delete(model)
    return answer


def list_models(
    *, workspace: str | None, archived: bool | None, visible: Visible, session: Session
) -> list[api_models.ModelSummary]:
    """By workspace, then name."""
    query = select(orm.Model).where(within(orm.Model.workspace_id, visible))
    if workspace is not None:
        ws = workspaces.get(workspace, visible=visible, session=session)
        query = query.where(orm.Model.workspace_id == ws.id)
    if archived is not None:
        query = query.where(orm.Model.archived.is_(archived))
    models = list(session.scalars(query))
    names = _workspace_names({m.workspace_id for m in models}, session)
    models.sort(key=lambda m: (names[m.workspace_id], m.name))
    return summaries(models, names, session=session)


def summaries(
    models: list[orm.Model], names: dict[int, str], *, session: Session
) -> list[api_models.ModelSummary]:
    ids = [m.id for m in models]
    counts = {
        model_id: (count, latest)
        for model_id, count, latest in session.execute(
            select(orm.ModelVersion.model_id, func.count(), func.max(orm.ModelVersion.version))
            .where(orm.ModelVersion.model_id.in_(ids))
            .group_by(orm.ModelVersion.model_id)
        )
    }
    aliases: dict[int, list[api_models.ModelAliasInfo]] = {}
    for row in session.scalars(
        select(orm.ModelAlias)
        .where(orm.ModelAlias.model_id.in_(ids))
        .order_by(orm.ModelAlias.alias)
    ):
        aliases.setdefault(row.model_id, []).append(alias_info(row))
    return [
        api_models.ModelSummary(
            id=m.id,
            name=m.name,
            workspace=names[m.workspace_id],
            description=m.description,
            tags=list(m.tags or []),
            archived=m.archived,
            owner=m.owner,
            created_at=m.created_at,
            num_versions=counts.get(m.id, (0, None))[0],
            latest_version=counts.get(m.id, (0, None))[1],
            aliases=aliases.get(m.id, []),
        )
        for m in models
    ]


def detail(model: orm.Model, *, session: Session) -> api_models.ModelDetail:
    names = _workspace_names({model.workspace_id}, session)
    [summary] = summaries([model], names, session=session)
    rows = session.execute(
        select(orm.ModelVersion, orm.Checkpoint)
        .join(orm.Checkpoint, orm.Checkpoint.uuid == orm.ModelVersion.checkpoint_uuid)
        .where(orm.ModelVersion.model_id == model.id)
        .order_by(orm.ModelVersion.version)
    ).all()
    versions = [version_info(model, v, c, summary) for v, c in rows]
    return api_models.ModelDetail(**dict(summary), versions=versions)


def alias_info(row: orm.ModelAlias) -> api_models.ModelAliasInfo:
    return api_models.ModelAliasInfo(
        alias=row.alias, version=row.version, updated_at=row.updated_at
    )


def version_info(
    model: orm.Model,
    version: orm.ModelVersion,
    ckpt: orm.Checkpoint,
    summary: api_models.ModelSummary,
) -> api_models.ModelVersionInfo:
    return api_models.ModelVersionInfo(
        model=model.name,
        workspace=summary.workspace,
        version=version.version,
        checkpoint_uuid=version.checkpoint_uuid,
        description=version.description,
        tags=list(version.tags or []),
        created_by=version.created_by,
        created_at=version.created_at,
        aliases=[a.alias for a in summary.aliases if a.version == version.version],
        experiment_id=ckpt.experiment_id,
        trial_id=ckpt.trial_id,
        steps_completed=ckpt.steps_completed,
        checkpoint_state=ckpt.state,
    )


def version_summary(
    model: orm.Model, version: orm.ModelVersion, *, session: Session
) -> api_models.ModelVersionInfo:
    names = _workspace_names({model.workspace_id}, session)
    [summary] = summaries([model], names, session=session)
    ckpt = session.get_one(orm.Checkpoint, version.checkpoint_uuid)
    return version_info(model, version, ckpt, summary)


# -- versions --------------------------------------------------------------------------------


def register(
    model: orm.Model,
    req: api_models.RegisterVersionRequest,
    *,
    grants: Grants,
    username: str,
    visible: Visible,
    session: Session,
) -> orm.ModelVersion:
    """Version N+1: the checkpoint, which must be COMPLETED, one the caller sees, of the
    model's workspace, and not already a version of this model."""
    require_editor(grants, model.workspace_id, f"register versions of model {model.name!r}")
    if model.archived:
        raise Conflict(f"model {model.name!r} is archived: unarchive it to register versions")
    uuid = req.checkpoint_uuid
    try:
        ckpt = checkpoints.get(uuid, session=session, visible=visible)
    except NotFound as exc:
        raise NotFound(exc.message, [{"path": "checkpoint_uuid", "message": exc.message}]) from None
    if ckpt.state != checkpoints.COMPLETED:
        raise Conflict(
            f"checkpoint {uuid} is {ckpt.state}: only a COMPLETED checkpoint can be registered",
            [{"path": "checkpoint_uuid", "message": f"the checkpoint is {ckpt.state}"}],
        )
    if ckpt.workspace_id != model.workspace_id:
        names = _workspace_names({ckpt.workspace_id, model.workspace_id}, session)
        message = (
            f"checkpoint {uuid} is in workspace {names[ckpt.workspace_id]!r} and model "
            f"{model.name!r} in {names[model.workspace_id]!r}: a model's versions are "
            "checkpoints of its own workspace"
        )
        raise InvalidRequest(message, [{"path": "checkpoint_uuid", "message": message}])
    # The model's row locked (PostgreSQL; SQLite has one writer): versions are numbered in
    # turn, after the highest ever given (a deleted version's number is not given again).
    given = session.scalar(
        select(orm.Model.last_version).where(orm.Model.id == model.id).with_for_update()
    )
    already = session.scalar(
        select(orm.ModelVersion.version).where(
            orm.ModelVersion.model_id == model.id, orm.ModelVersion.checkpoint_uuid == uuid
        )
    )
    if already is not None:
        raise Conflict(f"checkpoint {uuid} is already version {already} of model {model.name!r}")
    number = (given or 0) + 1
    model.last_version = number
    version = orm.ModelVersion(
        model_id=model.id,
        version=number,
        checkpoint_uuid=uuid,
        description=req.description,
        tags=_unique(req.tags),
        created_by=username,
    )
    session.add(version)
    session.flush()
    return version


def get_version(model: orm.Model, version: int, *, session: Session) -> orm.ModelVersion:
    found = session.get(orm.ModelVersion, (model.id, version))
    if found is None:
        raise NotFound(f"model {model.name!r} has no version {version}")
    return found


def resolve(model: orm.Model, ref: str | None, *, session: Session) -> orm.ModelVersion:
    """The version `ref` names: a number, an alias, or (None) the latest version."""
    if ref is None or ref == "":
        latest = session.scalar(
            select(func.max(orm.ModelVersion.version)).where(orm.ModelVersion.model_id == model.id)
        )
        if latest is None:
            raise NotFound(f"model {model.name!r} has no version yet")
        return get_version(model, latest, session=session)
    if ref.isascii() and ref.isdigit():
        number = int(ref)
        if not 1 <= number <= api_models.MAX_VERSION:
            raise NotFound(f"model {model.name!r} has no version {ref}")
        return get_version(model, number, session=session)
    row = session.get(orm.ModelAlias, (model.id, _valid_alias(ref)))
    if row is None:
        raise NotFound(f"model {model.name!r} has no alias {ref!r}")
    return get_version(model, row.version, session=session)


def change_version(
    model: orm.Model, version: orm.ModelVersion, req: api_models.VersionChange, *, grants: Grants
) -> None:
    """Its description and tags; its checkpoint never changes."""
    require_editor(grants, model.workspace_id, f"change versions of model {model.name!r}")
    if req.description is not None:
        version.description = req.description
    if req.tags is not None:
        version.tags = _unique(req.tags)


def delete_version(
    model: orm.Model,
    version: orm.ModelVersion,
    *,
    force: bool,
    grants: Grants,
    username: str,
    session: Session,
) -> api_models.ModelVersionDeleted:
    """One version, with the aliases that name it; never its checkpoint (retention applies
    to it again, unless another version points at it). Its number is not given again, so a
    URI that named it names nothing rather than another checkpoint. For the model's owner
    or a workspace admin, as deleting the model; with an alias naming it, only with `force`
    (409 otherwise): a deployment may read it."""
    require_owner(model, grants, username, f"delete versions of model {model.name!r}")
    aliases = sorted(
        session.scalars(
            select(orm.ModelAlias.alias).where(
                orm.ModelAlias.model_id == model.id, orm.ModelAlias.version == version.version
            )
        )
    )
    if aliases and not force:
        raise Conflict(
            f"version {version.version} of model {model.name!r} is named by aliases "
            f"({', '.join(aliases)}) that something may deploy from: delete it with "
            "force=true (`shipyard model delete-version` asks first)"
        )
    answer = api_models.ModelVersionDeleted(
        name=model.name,
        workspace=_workspace_names({model.workspace_id}, session)[model.workspace_id],
        version=version.version,
        checkpoint_uuid=version.checkpoint_uuid,
        aliases=aliases,
    )
    session.execute(
        delete(orm.ModelAlias).where(
            orm.ModelAlias.model_id == model.id, orm.ModelAlias.version == version.version
        )
    )
    session.delete(version)
    return answer


# -- aliases ---------------------------------------------------------------------------------


def set_alias(
    model: orm.Model, alias: str, version: int, *, grants: Grants, session: Session
) -> tuple[orm.ModelAlias, int | None]:
    """The alias names `version` now (made, or moved from the version it named, returned)."""
    require_editor(grants, model.workspace_id, f"move aliases of model {model.name!r}")
    _valid_alias(alias)
    get_version(model, version, session=session)
    row = session.get(orm.ModelAlias, (model.id, alias))
    before = row.version if row is not None else None
    if row is None:
        row = orm.ModelAlias(model_id=model.id, alias=alias, version=version)
        session.add(row)
    else:
        row.version = version
        row.updated_at = utcnow()
    session.flush()
    return row, before


def remove_alias(
    model: orm.Model, alias: str, *, grants: Grants, session: Session
) -> api_models.ModelAliasInfo:
    require_editor(grants, model.workspace_id, f"move aliases of model {model.name!r}")
    row = session.get(orm.ModelAlias, (model.id, _valid_alias(alias)))
    if row is None:
        raise NotFound(f"model {model.name!r} has no alias {alias!r}")
    removed = alias_info(row)
    session.delete(row)
    return removed


def _valid_alias(alias: str) -> str:
    problem = alias_problem(alias)
    if problem:
        raise InvalidRequest(problem, [{"path": "alias", "message": problem}])
    return alias


def _unique(tags: list[str]) -> list[str]:
    return list(dict.fromkeys(tags))  # in the order given, each once
