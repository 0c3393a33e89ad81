"""Workspaces (with their quotas), projects, moving experiments between them, groups of
users and role bindings.

A workspace or project you hold no role in is NotFound, as one that does not exist; an
action your roles do not allow is Forbidden, its message naming the roles that would."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from shipyard.client.session import Session
from shipyard.client.users import _body
from shipyard.common.api import ActionResult
from shipyard.common.api_teams import (
    CreateGroupRequest,
    CreateProjectRequest,
    CreateWorkspaceRequest,
    GroupInfo,
    MoveExperimentRequest,
    ProjectChange,
    ProjectInfo,
    QuotaChange,
    RoleBindingInfo,
    RoleBindingRequest,
    RoleName,
    WorkspaceChange,
    WorkspaceInfo,
)
from shipyard.common.errors import NotFound


class _Keep:
    """The default of a quota left as it is (None would remove the limit)."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP: Any = _Keep()


def _seg(name: str) -> str:
    """A name as one segment of a URL path."""
    return quote(name, safe="")


# -- workspaces ---------------------------------------------------------------------------


def _workspace_path(workspace: str) -> str:
    return f"/workspaces/{_seg(workspace)}"


def list_workspaces(session: Session, *, archived: bool | None = None) -> list[WorkspaceInfo]:
    """The workspaces you hold a role in (every one with a cluster-scope role), by name;
    archived: True for only archived ones, False for only live ones, None for both."""
    params = {"archived": None if archived is None else str(archived).lower()}
    return [WorkspaceInfo.model_validate(w) for w in session.get("/workspaces", params=params)]


def get_workspace(session: Session, workspace: str) -> WorkspaceInfo:
    """With its quotas and what it uses now (slots held, trials running)."""
    return WorkspaceInfo.model_validate(session.get(_workspace_path(workspace)))


def create_workspace(session: Session, name: str) -> WorkspaceInfo:
    """A workspace with its default project, "Uncategorized" (cluster admins)."""
    body = _body(CreateWorkspaceRequest, name=name)
    return WorkspaceInfo.model_validate(session.post("/workspaces", json=body))


def rename_workspace(session: Session, workspace: str, new_name: str) -> WorkspaceInfo:
    body = _body(WorkspaceChange, name=new_name)
    return WorkspaceInfo.model_validate(session.patch(_workspace_path(workspace), json=body))


def archive_workspace(session: Session, workspace: str) -> WorkspaceInfo:
    """No new experiments or projects in it until it is unarchived; nothing is deleted."""
    body = _body(WorkspaceChange, archived=True)
    return WorkspaceInfo.model_validate(session.patch(_workspace_path(workspace), json=body))


def unarchive_workspace(session: Session, workspace: str) -> WorkspaceInfo:
    body = _body(WorkspaceChange, archived=False)
    return WorkspaceInfo.model_validate(session.patch(_workspace_path(workspace), json=body))


def set_workspace_quotas(
    session: Session, workspace: str, *, max_slots: int | None = KEEP, max_trials: int | None = KEEP
) -> WorkspaceInfo:
    """Slots and running trials the workspace may hold at once (cluster admins). A limit
    left out (KEEP) stays as it is; None removes it. A limit below what the workspace
    uses now is refused (InvalidRequest)."""
    fields = {
        name: value
        for name, value in (("max_slots", max_slots), ("max_trials", max_trials))
        if value is not KEEP
    }
    body = _body(QuotaChange, **fields)
    return WorkspaceInfo.model_validate(
        session.patch(f"{_workspace_path(workspace)}/quotas", json=body)
    )


# -- projects -----------------------------------------------------------------------------


def _project_path(workspace: str, project: str) -> str:
    return f"{_workspace_path(workspace)}/projects/{_seg(project)}"


def list_projects(session: Session, workspace: str) -> list[ProjectInfo]:
    items = session.get(f"{_workspace_path(workspace)}/projects")
    return [ProjectInfo.model_validate(p) for p in items]


def get_project(session: Session, workspace: str, project: str) -> ProjectInfo:
    return ProjectInfo.model_validate(session.get(_project_path(workspace, project)))


def create_project(
    session: Session, workspace: str, name: str, *, description: str = ""
) -> ProjectInfo:
    body = _body(CreateProjectRequest, name=name, description=description)
    return ProjectInfo.model_validate(
        session.post(f"{_workspace_path(workspace)}/projects", json=body)
    )


def change_project(
    session: Session,
    workspace: str,
    project: str,
    *,
    name: str | None = None,
    description: str | None = None,
    archived: bool | None = None,
) -> ProjectInfo:
    """Rename, describe, archive (no new experiments) or unarchive; None: unchanged."""
    fields = {"name": name, "description": description, "archived": archived}
    body = _body(ProjectChange, **{k: v for k, v in fields.items() if v is not None})
    return ProjectInfo.model_validate(session.patch(_project_path(workspace, project), json=body))


def move_experiment(
    session: Session, experiment_id: int, workspace: str, project: str
) -> ActionResult:
    """Into another project, of its workspace or another one you may submit to; its
    trials and checkpoints go with it."""
    body = _body(MoveExperimentRequest, workspace=workspace, project=project)
    return ActionResult.model_validate(
        session.post(f"/experiments/{int(experiment_id)}/move", json=body)
    )


# -- groups -------------------------------------------------------------------------------


def _group_path(group: str) -> str:
    return f"/groups/{_seg(group)}"


def list_groups(session: Session) -> list[GroupInfo]:
    return [GroupInfo.model_validate(g) for g in session.get("/groups")]


def get_group(session: Session, group: str) -> GroupInfo:
    """From the list (the master has no route for one group)."""
    for found in list_groups(session):
        if found.name == group:
            return found
    raise NotFound(f"group {group!r} not found")


def create_group(session: Session, name: str) -> GroupInfo:
    """Cluster admins."""
    body = _body(CreateGroupRequest, name=name)
    return GroupInfo.model_validate(session.post("/groups", json=body))


def delete_group(session: Session, group: str) -> None:
    """Its members lose the roles bound to it (cluster admins)."""
    session.delete(_group_path(group))


def add_group_member(session: Session, group: str, username: str) -> None:
    """Cluster admins; adding a member twice is not an error."""
    session.put(f"{_group_path(group)}/members/{_seg(username)}")


def remove_group_member(session: Session, group: str, username: str) -> None:
    """Cluster admins; NotFound if the user is not in the group."""
    session.delete(f"{_group_path(group)}/members/{_seg(username)}")


# -- role bindings ------------------------------------------------------------------------


def list_role_bindings(session: Session, *, workspace: str | None = None) -> list[RoleBindingInfo]:
    """The bindings of the workspaces you see, or of one; cluster-scope ones too for a
    cluster admin (others see only their own)."""
    items = session.get("/roles", params={"workspace": workspace})
    return [RoleBindingInfo.model_validate(b) for b in items]


def assign_role(
    session: Session,
    role: RoleName,
    *,
    user: str | None = None,
    group: str | None = None,
    workspace: str | None = None,
) -> list[RoleBindingInfo]:
    """Give a role to a user or a group (exactly one), in a workspace or, without one, at
    cluster scope; answers the bindings of that scope. Giving it twice is not an error."""
    fields = {"role": role, "user": user, "group": group, "workspace": workspace}
    body = _body(RoleBindingRequest, **{k: v for k, v in fields.items() if v is not None})
    return [RoleBindingInfo.model_validate(b) for b in session.post("/roles", json=body)]


def remove_role_binding(session: Session, binding_id: int) -> None:
    session.delete(f"/roles/{int(binding_id)}")


def find_role_binding(
    session: Session,
    role: RoleName,
    *,
    user: str | None = None,
    group: str | None = None,
    workspace: str | None = None,
) -> RoleBindingInfo:
    """The binding of that role to that user or group in that scope (NotFound if none)."""
    for binding in list_role_bindings(session, workspace=workspace):
        if (binding.role, binding.user, binding.group, binding.workspace) == (
            role,
            user,
            group,
            workspace,
        ):
            return binding
    who = f"user {user!r}" if user is not None else f"group {group!r}"
    where = f"workspace {workspace!r}" if workspace is not None else "the cluster"
    raise NotFound(f"no role binding {role} for {who} in {where}")


def remove_role(
    session: Session,
    role: RoleName,
    *,
    user: str | None = None,
    group: str | None = None,
    workspace: str | None = None,
) -> RoleBindingInfo:
    """Take a role back (found by the list); answers the binding removed."""
    binding = find_role_binding(session, role, user=user, group=group, workspace=workspace)
    remove_role_binding(session, binding.id)
    return binding
