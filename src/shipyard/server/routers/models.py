"""The model registry (issue 20): models, their immutable versions, movable aliases, and a
version's lineage. A model is named by its name and, when the name is in several of the
workspaces the caller sees, `?workspace=`."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Path, Query, Request

from shipyard.common import api_models
from shipyard.common.api_models import MAX_VERSION
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.auth import audited
from shipyard.server.services import model_lineage, models
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["models"])

WORKSPACE = Query(
    None,
    min_length=1,
    max_length=128,
    description="the model's workspace (needed only when its name is in several you see)",
)
VERSION = Path(ge=1, le=MAX_VERSION, description="the version's number (1, 2, ...)")


@router.post(
    "/models",
    operation_id="create_model",
    response_model=api_models.ModelDetail,
    status_code=201,
)
def create_model(
    req: api_models.CreateModelRequest,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelDetail:
    """A model in a workspace (default "Uncategorized"), with no version yet; editors."""
    with m.db.write() as s:
        model = models.create(req, grants=p.grants, username=p.username, visible=p.sees, session=s)
        audited("model.create", p, request, target=f"model:{model.id}", session=s, name=model.name)
        return models.detail(model, session=s)


@router.get("/models", operation_id="list_models", response_model=list[api_models.ModelSummary])
def list_models(
    workspace: str | None = Query(None, min_length=1, max_length=128, description="only its"),
    archived: bool | None = Query(None, description="only archived ones, or only live ones"),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> list[api_models.ModelSummary]:
    """The models of the workspaces you see, by workspace and name."""
    with m.db.read() as s:
        return models.list_models(workspace=workspace, archived=archived, visible=p.sees, session=s)


@router.get("/models/{model}", operation_id="get_model", response_model=api_models.ModelDetail)
def get_model(
    model: str,
    workspace: str | None = WORKSPACE,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelDetail:
    """The model with its versions (each with its checkpoint's trial and step) and aliases."""
    with m.db.read() as s:
        found = models.find(model, workspace=workspace, visible=p.sees, session=s)
        return models.detail(found, session=s)


@router.patch("/models/{model}", operation_id="change_model", response_model=api_models.ModelDetail)
def change_model(
    model: str,
    req: api_models.ModelChange,
    request: Request,
    workspace: str | None = WORKSPACE,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelDetail:
    """Its description, tags (replaced) or archived flag; its owner or a workspace admin."""
    with m.db.write() as s:
        found = models.find(model, workspace=workspace, visible=p.sees, session=s)
        models.change(found, req, grants=p.grants, username=p.username)
        audited(
            "model.change",
            p,
            request,
            target=f"model:{found.id}",
            session=s,
            **req.model_dump(exclude_none=True),
        )
        return models.detail(found, session=s)


@router.delete(
    "/models/{model}", operation_id="delete_model", response_model=api_models.ModelDeleted
)
def delete_model(
    model: str,
    request: Request,
    workspace: str | None = WORKSPACE,
    force: bool = Query(False, description="delete it even though aliases name its versions"),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelDeleted:
    """The model, its versions and aliases (its checkpoints stay, no longer kept from
    retention). 409 when an alias names one of its versions, unless force=true. Audited."""
    with m.db.write() as s:
        found = models.find(model, workspace=workspace, visible=p.sees, session=s)
        model_id = found.id
        deleted = models.delete_model(
            found, force=force, grants=p.grants, username=p.username, session=s
        )
        audited(
            "model.delete",
            p,
            request,
            target=f"model:{model_id}",
            session=s,
            **deleted.model_dump(),
        )
        return deleted


@router.post(
    "/models/{model}/versions",
    operation_id="register_model_version",
    response_model=api_models.ModelVersionInfo,
    status_code=201,
)
def register_model_version(
    model: str,
    req: api_models.RegisterVersionRequest,
    request: Request,
    workspace: str | None = WORKSPACE,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelVersionInfo:
    """Version N+1: a COMPLETED checkpoint of the model's workspace, never changed after
    (and never deleted by retention while the version exists); editors."""
    with m.db.write() as s:
        found = models.find(model, workspace=workspace, visible=p.sees, session=s)
        version = models.register(
            found, req, grants=p.grants, username=p.username, visible=p.sees, session=s
        )
        audited(
            "model.register",
            p,
            request,
            target=f"model:{found.id}",
            session=s,
            version=version.version,
            checkpoint=version.checkpoint_uuid,
        )
        return models.version_summary(found, version, session=s)


@router.get(
    "/models/{model}/versions/{version}",
    operation_id="get_model_version",
    response_model=api_models.ModelVersionDetail,
)
def get_model_version(
    model: str,
    version: int = VERSION,
    workspace: str | None = WORKSPACE,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelVersionDetail:
    """The version with its lineage: checkpoint, trial, experiment, code, environment, and
    the trial's validation metrics at the checkpoint's step."""
    with m.db.read() as s:
        found = models.find(model, workspace=workspace, visible=p.sees, session=s)
        row = models.get_version(found, version, session=s)
        return model_lineage.version_detail(found, row, session=s)


@router.patch(
    "/models/{model}/versions/{version}",
    operation_id="change_model_version",
    response_model=api_models.ModelVersionInfo,
)
def change_model_version(
    model: str,
    req: api_models.VersionChange,
    version: int = VERSION,
    workspace: str | None = WORKSPACE,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelVersionInfo:
    """A version's description and tags. Its checkpoint never changes (a body naming one is
    refused): register the new checkpoint as a new version."""
    with m.db.write() as s:
        found = models.find(model, workspace=workspace, visible=p.sees, session=s)
        row = models.get_version(found, version, session=s)
        models.change_version(found, row, req, grants=p.grants)
        return models.version_summary(found, row, session=s)


@router.delete(
    "/models/{model}/versions/{version}",
    operation_id="delete_model_version",
    response_model=api_models.ModelVersionDeleted,
)
def delete_model_version(
    model: str,
    request: Request,
    version: int = VERSION,
    workspace: str | None = WORKSPACE,
    force: bool = Query(False, description="delete it even though aliases name it"),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelVersionDeleted:
    """The version and the aliases that name it (its checkpoint stays, no longer kept from
    retention by it); its number is never given again. 409 when an alias names it, unless
    force=true. For the model's owner or a workspace admin. Audited."""
    with m.db.write() as s:
        found = models.find(model, workspace=workspace, visible=p.sees, session=s)
        row = models.get_version(found, version, session=s)
        deleted = models.delete_version(
            found, row, force=force, grants=p.grants, username=p.username, session=s
        )
        audited(
            "model.delete_version",
            p,
            request,
            target=f"model:{found.id}",
            session=s,
            **deleted.model_dump(),
        )
        return deleted


@router.get(
    "/models/{model}/resolve",
    operation_id="resolve_model_version",
    response_model=api_models.ModelVersionDetail,
)
def resolve_model_version(
    model: str,
    ref: str | None = Query(
        None, max_length=64, description="a version number or an alias (default: the latest)"
    ),
    workspace: str | None = WORKSPACE,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelVersionDetail:
    """The version a model URI names (shipyard://models/NAME@ALIAS or NAME/VERSION), with
    its lineage: what the SDK downloads."""
    with m.db.read() as s:
        found = models.find(model, workspace=workspace, visible=p.sees, session=s)
        row = models.resolve(found, ref, session=s)
        return model_lineage.version_detail(found, row, session=s)


@router.put(
    "/models/{model}/aliases/{alias}",
    operation_id="set_model_alias",
    response_model=api_models.ModelAliasInfo,
)
def set_model_alias(
    model: str,
    alias: str,
    req: api_models.SetAliasRequest,
    request: Request,
    workspace: str | None = WORKSPACE,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelAliasInfo:
    """Point the alias at a version: made, or moved from the version it named; editors.
    Audited."""
    with m.db.write() as s:
        found = models.find(model, workspace=workspace, visible=p.sees, session=s)
        row, before = models.set_alias(found, alias, req.version, grants=p.grants, session=s)
        audited(
            "model.alias",
            p,
            request,
            target=f"model:{found.id}",
            session=s,
            alias=alias,
            version=req.version,
            previous=before,
        )
        return models.alias_info(row)


@router.delete(
    "/models/{model}/aliases/{alias}",
    operation_id="delete_model_alias",
    response_model=api_models.ModelAliasInfo,
)
def delete_model_alias(
    model: str,
    alias: str,
    request: Request,
    workspace: str | None = WORKSPACE,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_models.ModelAliasInfo:
    """Remove the alias (the answer: what it named); editors. Audited."""
    with m.db.write() as s:
        found = models.find(model, workspace=workspace, visible=p.sees, session=s)
        removed = models.remove_alias(found, alias, grants=p.grants, session=s)
        audited(
            "model.unalias",
            p,
            request,
            target=f"model:{found.id}",
            session=s,
            alias=alias,
            version=removed.version,
        )
        return removed
