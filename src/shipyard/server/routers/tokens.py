"""API tokens: made (the secret is shown once), listed, revoked."""

from __future__ import annotations

from datetime import timedelta

from fastapi import APIRouter, Depends, Query, Request

from shipyard.common import api_users
from shipyard.common.errors import NotFound
from shipyard.server.auth.permissions import Action
from shipyard.server.auth.principal import Principal, current_user
from shipyard.server.routers.auth import address
from shipyard.server.services import api_tokens, audit, users
from shipyard.server.state import MasterState, master

router = APIRouter(tags=["tokens"])


@router.post(
    "/tokens", operation_id="create_token", response_model=api_users.CreatedToken, status_code=201
)
def create_token(
    req: api_users.CreateTokenRequest,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_users.CreatedToken:
    """A token for you, or (cluster admins) for another user or a service account."""
    owner = req.username or p.username
    if owner != p.username and not p.grants.allows(Action.MANAGE_USERS):
        raise NotFound(f"user {owner!r} not found")
    lifetime = None if req.expires_in_days is None else timedelta(days=req.expires_in_days)
    with m.db.write() as s:
        user = users.get(owner, session=s)
        if not user.active:
            raise NotFound(f"user {owner!r} is deactivated")
        token, secret = api_tokens.create(
            user.id, "api", name=req.name, lifetime=lifetime, session=s
        )
        audit.record(
            "token.create",
            actor=p.username,
            target=f"user:{owner}",
            address=address(request),
            session=s,
            token_id=token.id,
            name=req.name,
        )
        return api_users.CreatedToken(**api_tokens.info(token, user).model_dump(), token=secret)


@router.get("/tokens", operation_id="list_tokens", response_model=list[api_users.TokenInfo])
def list_tokens(
    all_users: bool = Query(False, alias="all", description="everyone's (cluster admins)"),
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> list[api_users.TokenInfo]:
    """Live tokens and login sessions (never their secrets)."""
    with m.db.read() as s:
        whose = None if all_users and p.grants.allows(Action.MANAGE_USERS) else p.user_id
        return [api_tokens.info(t, u) for t, u in api_tokens.list_for(whose, session=s)]


@router.post(
    "/tokens/{token_id}/revoke", operation_id="revoke_token", response_model=api_users.TokenInfo
)
def revoke_token(
    token_id: int,
    request: Request,
    p: Principal = Depends(current_user),
    m: MasterState = Depends(master),
) -> api_users.TokenInfo:
    """Stops working on the next request. Yours, or anyone's if you are a cluster admin."""
    with m.db.write() as s:
        token, user = api_tokens.get(token_id, session=s)
        if user.username != p.username and not p.grants.allows(Action.MANAGE_USERS):
            raise NotFound(f"token {token_id} not found")
        api_tokens.revoke(token)
        audit.record(
            "token.revoke",
            actor=p.username,
            target=f"user:{user.username}",
            address=address(request),
            session=s,
            token_id=token_id,
        )
        revoked = api_tokens.info(token, user)
    m.token_cache.clear()
    return revoked
