"""Groups of users: cluster admins make them and choose their members; roles bound to a
group hold for each member."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from shipyard.common import api_teams
from shipyard.server.auth.permissions import Action
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.auth import audited
from shipyard.server.services import rbac, users
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["groups"])


@router.get("/groups", operation_id="list_groups", response_model=list[api_teams.GroupInfo])
def list_groups(
    _p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> list[api_teams.GroupInfo]:
    with m.db.read() as s:
        return rbac.list_groups(session=s)


@router.post(
    "/groups", operation_id="create_group", response_model=api_teams.GroupInfo, status_code=201
)
def create_group(
    req: api_teams.CreateGroupRequest,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_teams.GroupInfo:
    p.grants.require(Action.MANAGE_GROUPS)
    with m.db.write() as s:
        group = rbac.create_group(req.name, session=s)
        audited("group.create", p, request, target=f"group:{req.name}", session=s)
        return api_teams.GroupInfo(name=group.name, members=[], created_at=group.created_at)


@router.delete("/groups/{group}", operation_id="delete_group", status_code=204)
def delete_group(
    group: str,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> None:
    """Its members lose the roles bound to it, at their next request."""
    p.grants.require(Action.MANAGE_GROUPS)
    with m.db.write() as s:
        rbac.delete_group(rbac.get_group(group, session=s), session=s)
        audited("group.delete", p, request, target=f"group:{group}", session=s)
    m.token_cache.clear()


@router.put("/groups/{group}/members/{username}", operation_id="add_group_member", status_code=204)
def add_group_member(
    group: str,
    username: str,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> None:
    _change_membership(group, username, rbac.add_member, request, p, m)


@router.delete(
    "/groups/{group}/members/{username}", operation_id="remove_group_member", status_code=204
)
def remove_group_member(
    group: str,
    username: str,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> None:
    """The user loses the group's roles at their next request."""
    _change_membership(group, username, rbac.remove_member, request, p, m)


def _change_membership(
    group: str, username: str, change, request: Request, p: Principal, m: MasterState
) -> None:
    p.grants.require(Action.MANAGE_GROUPS)
    with m.db.write() as s:
        user = users.get(username, session=s)
        change(rbac.get_group(group, session=s), user, session=s)
        action = f"group.{change.__name__}"  # group.add_member, group.remove_member
        audited(action, p, request, target=f"group:{group}", session=s, user=username)
    m.token_cache.clear()
