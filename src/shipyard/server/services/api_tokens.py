"""API tokens, login sessions and login tickets: made, looked up, listed, revoked.

Only a token's SHA-256 is stored. The master keeps what it looked up in its token cache
(server/auth/token_cache.py); whoever ends a token here (revoke, revoke_all_of) clears that
cache when the transaction is committed, so the change counts from the next request."""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api_users
from shipyard.common.errors import NotFound
from shipyard.server import orm
from shipyard.server.auth import tokens
from shipyard.server.orm import utcnow

SESSION_LIFETIME = timedelta(days=7)
TICKET_LIFETIME = timedelta(minutes=2)


def create(
    user_id: int,
    kind: str,
    *,
    name: str = "",
    lifetime: timedelta | None,
    session: Session,
) -> tuple[orm.ApiToken, str]:
    """A new token row and its secret (the only time the secret exists in the master)."""
    secret = tokens.mint(kind)
    row = orm.ApiToken(
        user_id=user_id,
        kind=kind,
        name=name,
        prefix=secret[: tokens.PREFIX_CHARS],
        token_hash=tokens.digest(secret),
        expires_at=None if lifetime is None else utcnow() + lifetime,
    )
    session.add(row)
    session.flush()
    return row, secret


def lookup(secret: str, *, session: Session) -> tuple[orm.ApiToken, orm.User] | None:
    """The live token and its active user, or None (unknown, expired, revoked, inactive)."""
    found = session.execute(
        select(orm.ApiToken, orm.User)
        .join(orm.User, orm.User.id == orm.ApiToken.user_id)
        .where(orm.ApiToken.token_hash == tokens.digest(secret))
    ).first()
    if found is None:
        return None
    token, user = found
    if not usable(token) or not user.active:
        return None
    return token, user


def usable(token: orm.ApiToken, now: datetime | None = None) -> bool:
    now = now or utcnow()
    return token.revoked_at is None and (token.expires_at is None or token.expires_at > now)


def touch(token_id: int | None, *, session: Session) -> None:
    row = None if token_id is None else session.get(orm.ApiToken, token_id)
    if row is not None:
        row.last_used_at = utcnow()


def redeem_ticket(secret: str, *, session: Session) -> orm.User | None:
    """A login ticket's user, once: the ticket is revoked as it is used."""
    found = lookup(secret, session=session)
    if found is None or found[0].kind != "ticket":
        return None
    token, user = found
    token.revoked_at = utcnow()
    return user


def get(token_id: int, *, session: Session) -> tuple[orm.ApiToken, orm.User]:
    found = session.execute(
        select(orm.ApiToken, orm.User)
        .join(orm.User, orm.User.id == orm.ApiToken.user_id)
        .where(orm.ApiToken.id == token_id, orm.ApiToken.kind != "ticket")
    ).first()
    if found is None:
        raise NotFound(f"token {token_id} not found")
    return found[0], found[1]


def list_for(user_id: int | None, *, session: Session) -> list[tuple[orm.ApiToken, orm.User]]:
    """Live API tokens and sessions of one user (None: of everyone), newest first."""
    query = (
        select(orm.ApiToken, orm.User)
        .join(orm.User, orm.User.id == orm.ApiToken.user_id)
        .where(orm.ApiToken.kind != "ticket", orm.ApiToken.revoked_at.is_(None))
        .order_by(orm.ApiToken.id.desc())
    )
    if user_id is not None:
        query = query.where(orm.ApiToken.user_id == user_id)
    now = utcnow()
    return [(t, u) for t, u in session.execute(query).tuples() if usable(t, now)]


def revoke(token: orm.ApiToken) -> None:
    if token.revoked_at is None:
        token.revoked_at = utcnow()


def revoke_all_of(
    user_id: int, *, kinds: tuple[str, ...] | None = None, keep: int | None = None, session: Session
) -> None:
    """A user's live tokens (of these kinds), but the one to keep: every one when the user
    is deactivated, the login sessions when the password changes."""
    query = select(orm.ApiToken).where(
        orm.ApiToken.user_id == user_id, orm.ApiToken.revoked_at.is_(None)
    )
    if kinds is not None:
        query = query.where(orm.ApiToken.kind.in_(kinds))
    for token in session.scalars(query):
        if token.id != keep:
            token.revoked_at = utcnow()


def info(token: orm.ApiToken, user: orm.User) -> api_users.TokenInfo:
    return api_users.TokenInfo(
        id=token.id,
        username=user.username,
        name=token.name,
        prefix=token.prefix,
        kind=token.kind,
        created_at=token.created_at,
        expires_at=token.expires_at,
        revoked_at=token.revoked_at,
        last_used_at=token.last_used_at,
    )
