"""Workspaces and their projects, quotas included. A workspace you hold no role in
answers 404, as one that does not exist."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request

from shipyard.common import api_teams
from shipyard.server.auth.permissions import Action
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.auth import audited
from shipyard.server.services import workspaces
from shipyard.server.state import MasterState, master
from shipyard.server.workers.orchestrator import Reason

router = APIRouter(tags=["workspaces"])


@router.get(
    "/workspaces", operation_id="list_workspaces", response_model=list[api_teams.WorkspaceInfo]
)
def list_workspaces(
    archived: bool | None = Query(None, description="only archived ones, or only live ones"),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> list[api_teams.WorkspaceInfo]:
    """The workspaces you hold a role in (every one for a cluster-scope role)."""
    with m.db.read() as s:
        found = workspaces.list_all(visible=p.sees, archived=archived, session=s)
        return [workspaces.info(ws, session=s) for ws in found]


@router.post(
    "/workspaces",
    operation_id="create_workspace",
    response_model=api_teams.WorkspaceInfo,
    status_code=201,
)
def create_workspace(
    req: api_teams.CreateWorkspaceRequest,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_teams.WorkspaceInfo:
    """A workspace, with its default project ("Uncategorized")."""
    p.grants.require(Action.CREATE_WORKSPACE)
    with m.db.write() as s:
        ws = workspaces.create(req.name, session=s)
        audited("workspace.create", p, request, target=f"workspace:{ws.name}", session=s)
        return workspaces.info(ws, session=s)


@router.get(
    "/workspaces/{workspace}", operation_id="get_workspace", response_model=api_teams.WorkspaceInfo
)
def get_workspace(
    workspace: str, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api_teams.WorkspaceInfo:
    with m.db.read() as s:
        return workspaces.info(workspaces.get(workspace, visible=p.sees, session=s), session=s)


@router.patch(
    "/workspaces/{workspace}",
    operation_id="change_workspace",
    response_model=api_teams.WorkspaceInfo,
)
def change_workspace(
    workspace: str,
    req: api_teams.WorkspaceChange,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_teams.WorkspaceInfo:
    """Rename, archive (no new experiments or projects) or unarchive it."""
    with m.db.write() as s:
        ws = workspaces.get(workspace, visible=p.sees, session=s)
        p.grants.require(Action.EDIT_WORKSPACE, ws.id, f"workspace {ws.name!r}")
        if req.name is not None:
            workspaces.rename(ws, req.name, session=s)
        if req.archived is not None:
            workspaces.set_archived(ws, req.archived)
        audited(
            "workspace.change",
            p,
            request,
            target=f"workspace:{ws.name}",
            session=s,
            **req.model_dump(exclude_none=True),
        )
        return workspaces.info(ws, session=s)


@router.patch(
    "/workspaces/{workspace}/quotas",
    operation_id="set_workspace_quotas",
    response_model=api_teams.WorkspaceInfo,
)
def set_workspace_quotas(
    workspace: str,
    req: api_teams.QuotaChange,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_teams.WorkspaceInfo:
    """Slots and running trials the workspace may hold at once, across pools; its trials
    over them wait (`shipyard job list` says so). A limit below what it holds now is a 400."""
    with m.db.write() as s:
        ws = workspaces.get(workspace, visible=p.sees, session=s)
        p.grants.require(Action.SET_QUOTAS, ws.id)
        workspaces.set_quotas(ws, req, session=s)
        audited(
            "workspace.quotas",
            p,
            request,
            target=f"workspace:{ws.name}",
            session=s,
            **req.model_dump(exclude_unset=True),
        )
        answer = workspaces.info(ws, session=s)
    m.orchestrator.wake(Reason.EXPERIMENT)  # a raised quota may let trials start
    return answer


@router.get(
    "/workspaces/{workspace}/projects",
    operation_id="list_projects",
    response_model=list[api_teams.ProjectInfo],
)
def list_projects(
    workspace: str, p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> list[api_teams.ProjectInfo]:
    with m.db.read() as s:
        ws = workspaces.get(workspace, visible=p.sees, session=s)
        return workspaces.list_projects(ws, session=s)


@router.post(
    "/workspaces/{workspace}/projects",
    operation_id="create_project",
    response_model=api_teams.ProjectInfo,
    status_code=201,
)
def create_project(
    workspace: str,
    req: api_teams.CreateProjectRequest,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_teams.ProjectInfo:
    with m.db.write() as s:
        ws = workspaces.get(workspace, visible=p.sees, session=s)
        p.grants.require(Action.CREATE_PROJECT, ws.id, f"workspace {ws.name!r}")
        project = workspaces.create_project(ws, req.name, req.description, session=s)
        audited(
            "project.create",
            p,
            request,
            target=f"workspace:{ws.name}",
            session=s,
            project=project.name,
        )
        return workspaces.project_info(project, ws, 0)


@router.get(
    "/workspaces/{workspace}/projects/{project}",
    operation_id="get_project",
    response_model=api_teams.ProjectInfo,
)
def get_project(
    workspace: str,
    project: str,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_teams.ProjectInfo:
    with m.db.read() as s:
        ws = workspaces.get(workspace, visible=p.sees, session=s)
        found = workspaces.get_project(ws, project, session=s)
        return workspaces.describe_project(found, ws, session=s)


@router.patch(
    "/workspaces/{workspace}/projects/{project}",
    operation_id="change_project",
    response_model=api_teams.ProjectInfo,
)
def change_project(
    workspace: str,
    project: str,
    req: api_teams.ProjectChange,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_teams.ProjectInfo:
    """Rename, describe, archive (no new experiments) or unarchive it."""
    with m.db.write() as s:
        ws = workspaces.get(workspace, visible=p.sees, session=s)
        found = workspaces.get_project(ws, project, session=s)
        p.grants.require(Action.EDIT_PROJECT, ws.id, f"workspace {ws.name!r}")
        workspaces.change_project(found, ws, req, session=s)
        audited(
            "project.change",
            p,
            request,
            target=f"workspace:{ws.name}",
            session=s,
            project=project,
            **req.model_dump(exclude_none=True),
        )
        return workspaces.describe_project(found, ws, session=s)
