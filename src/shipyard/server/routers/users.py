"""Users: cluster admins make and deactivate them; everyone changes their own password."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request

from shipyard.common import api_users
from shipyard.common.errors import NotFound
from shipyard.server.auth.passwords import hash_password
from shipyard.server.auth.permissions import Action
from shipyard.server.auth.principal import Principal, current_user, needs
from shipyard.server.routers.auth import address
from shipyard.server.services import api_tokens, audit, users
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["users"])


@router.get("/users", operation_id="list_users", response_model=list[api_users.UserInfo])
def list_users(
    _p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> list[api_users.UserInfo]:
    with m.db.read() as s:
        return users.infos(users.list_all(session=s), session=s)


@router.post(
    "/users", operation_id="create_user", response_model=api_users.UserInfo, status_code=201
)
def create_user(
    req: api_users.CreateUserRequest,
    request: Request,
    p: Principal = Depends(needs(Action.MANAGE_USERS)),
    m: MasterState = Depends(master),
) -> api_users.UserInfo:
    password_hash = None if req.password is None else hash_password(req.password)
    with m.db.write() as s:
        user = users.create(req, password_hash=password_hash, session=s)
        audit.record(
            "user.create",
            actor=p.username,
            target=f"user:{user.username}",
            address=address(request),
            session=s,
            admin=req.admin,
            service=req.service,
        )
        return users.info(user, session=s)


@router.get("/users/{username}", operation_id="get_user", response_model=api_users.UserInfo)
def get_user(
    username: str, _p: Principal = Depends(current_user), m: MasterState = Depends(master)
) -> api_users.UserInfo:
    with m.db.read() as s:
        return users.info(users.get(username, session=s), session=s)


@router.post("/users/{username}/password", operation_id="change_password", status_code=204)
def change_password(
    username: str,
    req: api_users.PasswordChange,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> None:
    """Your own (with the old password), or anyone's if you are a cluster admin."""
    own = username == p.username
    if not own and not p.grants.allows(Action.MANAGE_USERS):
        raise NotFound(f"user {username!r} not found")
    with m.db.read() as s:
        user = users.get(username, session=s)
    new_hash = users.new_password_hash(user, req, by_admin=not own)
    with m.db.write() as s:
        user_now = users.get(username, session=s)
        users.set_password_hash(user_now, new_hash, checked_against=user.password_hash)
        # Logged-in browsers and CLIs log in again (but the one making the change); API
        # tokens, made for automation, stay.
        api_tokens.revoke_all_of(user.id, kinds=("session",), keep=p.token_id, session=s)
        audit.record(
            "user.password",
            actor=p.username,
            target=f"user:{username}",
            address=address(request),
            session=s,
        )
    m.token_cache.clear()


@router.post(
    "/users/{username}/deactivate",
    operation_id="deactivate_user",
    response_model=api_users.UserInfo,
)
def deactivate_user(
    username: str,
    request: Request,
    p: Principal = Depends(needs(Action.MANAGE_USERS)),
    m: MasterState = Depends(master),
) -> api_users.UserInfo:
    """The user's tokens and sessions stop working at once; nothing of theirs is deleted."""
    return _set_active(username, False, request, p, m)


@router.post(
    "/users/{username}/activate", operation_id="activate_user", response_model=api_users.UserInfo
)
def activate_user(
    username: str,
    request: Request,
    p: Principal = Depends(needs(Action.MANAGE_USERS)),
    m: MasterState = Depends(master),
) -> api_users.UserInfo:
    """The user may log in again (tokens revoked by the deactivation stay revoked)."""
    return _set_active(username, True, request, p, m)


def _set_active(
    username: str, active: bool, request: Request, p: Principal, m: MasterState
) -> api_users.UserInfo:
    with m.db.write() as s:
        user = users.get(username, session=s)
        users.set_active(user, active, by=p.username, session=s)
        if not active:
            api_tokens.revoke_all_of(user.id, session=s)
        audit.record(
            "user.activate" if active else "user.deactivate",
            actor=p.username,
            target=f"user:{username}",
            address=address(request),
            session=s,
        )
        answer = users.info(user, session=s)
    m.token_cache.clear()
    return answer
