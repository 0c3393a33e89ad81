"""Users: people with a password, and service accounts that only hold tokens."""

from __future__ import annotations

import secrets

from sqlalchemy import select
from sqlalchemy.orm import Session

from shipyard.common import api_users
from shipyard.common.errors import Conflict, Forbidden, InvalidRequest, NotFound, Unauthorized
from shipyard.server import orm
from shipyard.server.auth.passwords import hash_password, verify_password
from shipyard.server.auth.permissions import Role
from shipyard.server.services import rbac, workspaces


def get(username: str, *, session: Session) -> orm.User:
    user = find(username, session=session)
    if user is None:
        raise NotFound(f"user {username!r} not found")
    return user


def find(username: str, *, session: Session) -> orm.User | None:
    return session.scalar(select(orm.User).where(orm.User.username == username))


def create(
    req: api_users.CreateUserRequest, *, password_hash: str | None, session: Session
) -> orm.User:
    """password_hash: of req.password, computed before the write transaction (an Argon2
    hash takes tens of ms, which would hold up every other write)."""
    if find(req.username, session=session) is not None:
        raise Conflict(f"user {req.username!r} already exists")
    if req.service and req.password is not None:
        raise InvalidRequest("a service account has no password: give it a token instead")
    user = orm.User(
        username=req.username,
        password_hash=password_hash,
        is_service=req.service,
        active=True,
    )
    session.add(user)
    session.flush()
    _first_roles(user, admin=req.admin, session=session)
    return user


def ensure(username: str, *, admin: bool, session: Session) -> orm.User:
    """The user of this name, made (without a password) if there is none."""
    user = find(username, session=session)
    if user is None:
        user = orm.User(username=username, is_service=False, active=True)
        session.add(user)
        session.flush()
        _first_roles(user, admin=admin, session=session)
    elif admin and not is_admin(user, session=session):
        rbac.bind(rbac.Binding(Role.CLUSTER_ADMIN, user=user), session=session)
    return user


def _first_roles(user: orm.User, *, admin: bool, session: Session) -> None:
    """A cluster admin, or else an editor of the default workspace, the shared one every
    user starts in (as in Determined); a service account starts with no role."""
    if admin:
        rbac.bind(rbac.Binding(Role.CLUSTER_ADMIN, user=user), session=session)
    elif not user.is_service:
        default = session.get(orm.Workspace, workspaces.default_id(session=session))
        rbac.bind(rbac.Binding(Role.EDITOR, user=user, workspace=default), session=session)


def is_admin(user: orm.User, *, session: Session) -> bool:
    return Role.CLUSTER_ADMIN in rbac.grants_of(user.id, session=session).cluster_wide


def admins(*, session: Session) -> int:
    return rbac.cluster_admins(session=session)


def one_time_password() -> str:
    return secrets.token_urlsafe(15)


def list_all(*, session: Session) -> list[orm.User]:
    return list(session.scalars(select(orm.User).order_by(orm.User.username)))


def new_password_hash(user: orm.User, req: api_users.PasswordChange, *, by_admin: bool) -> str:
    """The new password's hash, once the change is allowed: users change their own with
    the old one, an admin sets anyone's. Slow (Argon2): call it outside a write."""
    if user.is_service:
        raise InvalidRequest(f"{user.username!r} is a service account: it has no password")
    if not by_admin and not verify_password(user.password_hash, req.old_password or ""):
        raise Unauthorized("the old password is wrong")
    return hash_password(req.new_password)


def set_password_hash(user: orm.User, new_hash: str, *, checked_against: str | None) -> None:
    """Store it, unless the password changed since the old one was checked."""
    if user.password_hash != checked_against:
        raise Conflict(f"{user.username!r}'s password changed meanwhile: try again")
    user.password_hash = new_hash


def set_active(user: orm.User, active: bool, *, by: str, session: Session) -> None:
    if not active and user.username == by:
        raise Forbidden("you cannot deactivate yourself; ask another admin")
    if not active and is_admin(user, session=session) and admins(session=session) <= 1:
        raise Conflict(f"{user.username!r} is the last active admin; make another admin first")
    user.active = active


def info(user: orm.User, *, session: Session) -> api_users.UserInfo:
    return infos([user], session=session)[0]


def infos(found: list[orm.User], *, session: Session) -> list[api_users.UserInfo]:
    """The users as the API shows them, in a fixed number of queries."""
    admins = rbac.cluster_admin_ids(session=session)
    return [_info(user, admin=user.id in admins) for user in found]


def _info(user: orm.User, *, admin: bool) -> api_users.UserInfo:
    return api_users.UserInfo(
        username=user.username,
        admin=admin,
        service=user.is_service,
        active=user.active,
        has_password=user.password_hash is not None,
        created_at=user.created_at,
    )
