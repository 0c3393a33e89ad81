"""Users: people with a password, and service accounts that only hold tokens."""

from __future__ import annotations

import secrets

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from shipyard.common import api_users
from shipyard.common.errors import Conflict, Forbidden, InvalidRequest, NotFound, Unauthorized
from shipyard.server import orm
from shipyard.server.auth.passwords import hash_password, verify_password


def get(username: str, *, session: Session) -> orm.User:
    user = find(username, session=session)
    if user is None:
        raise NotFound(f"user {username!r} not found")
    return user


def find(username: str, *, session: Session) -> orm.User | None:
    return session.scalar(select(orm.User).where(orm.User.username == username))


def create(req: api_users.CreateUserRequest, *, session: Session) -> orm.User:
    if find(req.username, session=session) is not None:
        raise Conflict(f"user {req.username!r} already exists")
    if req.service and req.password is not None:
        raise InvalidRequest("a service account has no password: give it a token instead")
    user = orm.User(
        username=req.username,
        password_hash=None if req.password is None else hash_password(req.password),
        is_admin=req.admin,
        is_service=req.service,
        active=True,
    )
    session.add(user)
    session.flush()
    return user


def ensure(username: str, *, admin: bool, session: Session) -> orm.User:
    """The user of this name, made (without a password) if there is none."""
    user = find(username, session=session)
    if user is None:
        user = orm.User(username=username, is_admin=admin, is_service=False, active=True)
        session.add(user)
        session.flush()
    return user


def admins(*, session: Session) -> int:
    return (
        session.scalar(
            select(func.count()).where(orm.User.is_admin.is_(True), orm.User.active.is_(True))
        )
        or 0
    )


def one_time_password() -> str:
    return secrets.token_urlsafe(15)


def list_all(*, session: Session) -> list[orm.User]:
    return list(session.scalars(select(orm.User).order_by(orm.User.username)))


def change_password(
    user: orm.User, req: api_users.PasswordChange, *, by_admin: bool, session: Session
) -> None:
    """Users change their own password with the old one; an admin sets anyone's."""
    if user.is_service:
        raise InvalidRequest(f"{user.username!r} is a service account: it has no password")
    if not by_admin and not verify_password(user.password_hash, req.old_password or ""):
        raise Unauthorized("the old password is wrong")
    user.password_hash = hash_password(req.new_password)


def set_active(user: orm.User, active: bool, *, by: str, session: Session) -> None:
    if not active and user.username == by:
        raise Forbidden("you cannot deactivate yourself; ask another admin")
    if not active and user.is_admin and admins(session=session) <= 1:
        raise Conflict(f"{user.username!r} is the last active admin; make another admin first")
    user.active = active


def info(user: orm.User) -> api_users.UserInfo:
    return api_users.UserInfo(
        username=user.username,
        admin=user.is_admin,
        service=user.is_service,
        active=user.active,
        has_password=user.password_hash is not None,
        created_at=user.created_at,
    )
