"""Role bindings: a role for a user or a group, in a workspace or at cluster scope. A
change holds from the next request of everyone it touches (the token cache is cleared)."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Query, Request

from shipyard.common import api_teams
from shipyard.server.auth.permissions import Action
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.auth import audited
from shipyard.server.services import rbac, workspaces
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["roles"])


@router.get(
    "/roles", operation_id="list_role_bindings", response_model=list[api_teams.RoleBindingInfo]
)
def list_role_bindings(
    workspace: str | None = Query(None, description="only this workspace's bindings"),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> list[api_teams.RoleBindingInfo]:
    """Those of the workspaces you see; cluster-scope ones too if you are a cluster admin
    (and your own)."""
    with m.db.read() as s:
        if workspace is not None:
            wanted: list[int | None] | None = [
                workspaces.get(workspace, visible=p.sees, session=s).id
            ]
        elif p.grants.allows(Action.ASSIGN_CLUSTER_ROLES):
            wanted = None
        else:
            wanted = [None, *sorted(p.sees or ())]
        found = rbac.list_bindings(workspace_ids=wanted, session=s)
    if not p.grants.allows(Action.ASSIGN_CLUSTER_ROLES):  # cluster-scope bindings: only one's own
        found = [b for b in found if b.workspace is not None or b.user == p.username]
    return found


@router.post(
    "/roles",
    operation_id="assign_role",
    response_model=list[api_teams.RoleBindingInfo],
    status_code=201,
)
def assign_role(
    req: api_teams.RoleBindingRequest,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> list[api_teams.RoleBindingInfo]:
    """Give the role; answers the bindings of that scope."""
    with m.db.write() as s:
        binding = rbac.resolve(req, visible=p.sees, session=s)
        _may_assign(p, binding)
        if rbac.bind(binding, session=s):
            _audit("role.assign", p, request, binding, s)
        s.flush()
        scope = binding.workspace.id if binding.workspace else None
        answer = rbac.list_bindings(workspace_ids=[scope], session=s)
    m.token_cache.clear()
    return answer


@router.delete("/roles/{binding_id}", operation_id="remove_role", status_code=204)
def remove_role(
    binding_id: int,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> None:
    """Take the role back: it stops holding at the next request."""
    with m.db.write() as s:
        binding = rbac.by_id(binding_id, visible=p.sees, session=s)
        _may_assign(p, binding)
        rbac.unbind(binding, session=s)
        _audit("role.remove", p, request, binding, s)
    m.token_cache.clear()


def _may_assign(p: Principal, binding: rbac.Binding) -> None:
    ws = binding.workspace
    if ws is None:
        p.grants.require(Action.ASSIGN_CLUSTER_ROLES)
    else:
        p.grants.require(Action.ASSIGN_WORKSPACE_ROLES, ws.id, f"workspace {ws.name!r}")


def _audit(action: str, p: Principal, request: Request, binding: rbac.Binding, s) -> None:
    user, group, ws = binding.user, binding.group, binding.workspace
    audited(
        action,
        p,
        request,
        target=f"user:{user.username}" if user else f"group:{group.name if group else ''}",
        session=s,
        role=binding.role.value,
        workspace=ws.name if ws else None,
    )
