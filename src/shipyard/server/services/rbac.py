"""Groups, role bindings, and the roles a user holds (directly and through groups)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import cast

from sqlalchemy import delete, func, or_, select
from sqlalchemy.orm import Session

from shipyard.common import api_teams
from shipyard.common.errors import Conflict, InvalidRequest, NotFound
from shipyard.server import orm
from shipyard.server.auth.permissions import Grants, Role
from shipyard.server.services import workspaces
from shipyard.server.services.workspaces import Visible


def grants_of(user_id: int, *, session: Session) -> Grants:
    groups = select(orm.GroupMember.group_id).where(orm.GroupMember.user_id == user_id)
    rows = session.execute(
        select(orm.RoleBinding.workspace_id, orm.RoleBinding.role).where(
            or_(orm.RoleBinding.user_id == user_id, orm.RoleBinding.group_id.in_(groups))
        )
    )
    roles: dict[int | None, set[Role]] = defaultdict(set)
    for workspace_id, role in rows:
        roles[workspace_id].add(Role(role))
    return Grants({ws: frozenset(r) for ws, r in roles.items()})


def _cluster_admin_ids():
    """The ids of users who are cluster admins, directly or through a group (a subquery)."""
    bound = select(orm.RoleBinding).where(
        orm.RoleBinding.role == Role.CLUSTER_ADMIN, orm.RoleBinding.workspace_id.is_(None)
    )
    direct = bound.with_only_columns(orm.RoleBinding.user_id)
    via_group = select(orm.GroupMember.user_id).where(
        orm.GroupMember.group_id.in_(bound.with_only_columns(orm.RoleBinding.group_id))
    )
    return direct.union(via_group)


def cluster_admin_ids(*, session: Session) -> set[int]:
    """Users who are cluster admins (active or not): one query for a list of users."""
    return set(session.scalars(_cluster_admin_ids()))


def cluster_admins(*, session: Session) -> int:
    """Active users who are cluster admins, directly or through a group."""
    return (
        session.scalar(
            select(func.count()).where(
                orm.User.active.is_(True), orm.User.id.in_(_cluster_admin_ids())
            )
        )
        or 0
    )


# Groups


def get_group(name: str, *, session: Session) -> orm.Group:
    group = session.scalar(select(orm.Group).where(orm.Group.name == name))
    if group is None:
        raise NotFound(f"group {name!r} not found")
    return group


def create_group(name: str, *, session: Session) -> orm.Group:
    if session.scalar(select(orm.Group.id).where(orm.Group.name == name)) is not None:
        raise Conflict(f"group {name!r} already exists")
    group = orm.Group(name=name)
    session.add(group)
    session.flush()
    return group


def delete_group(group: orm.Group, *, session: Session) -> None:
    session.execute(delete(orm.RoleBinding).where(orm.RoleBinding.group_id == group.id))
    session.execute(delete(orm.GroupMember).where(orm.GroupMember.group_id == group.id))
    session.delete(group)
    keep_an_admin(session)


def add_member(group: orm.Group, user: orm.User, *, session: Session) -> None:
    if session.get(orm.GroupMember, (group.id, user.id)) is None:
        session.add(orm.GroupMember(group_id=group.id, user_id=user.id))


def remove_member(group: orm.Group, user: orm.User, *, session: Session) -> None:
    member = session.get(orm.GroupMember, (group.id, user.id))
    if member is None:
        raise NotFound(f"{user.username!r} is not in group {group.name!r}")
    session.delete(member)
    keep_an_admin(session)


def list_groups(*, session: Session) -> list[api_teams.GroupInfo]:
    members: dict[int, list[str]] = defaultdict(list)
    for group_id, username in session.execute(
        select(orm.GroupMember.group_id, orm.User.username)
        .join(orm.User, orm.User.id == orm.GroupMember.user_id)
        .order_by(orm.User.username)
    ):
        members[group_id].append(username)
    return [
        api_teams.GroupInfo(name=g.name, members=members[g.id], created_at=g.created_at)
        for g in session.scalars(select(orm.Group).order_by(orm.Group.name))
    ]


# Role bindings


@dataclass(frozen=True)
class Binding:
    """A role for a user or a group, in a workspace or (None) at cluster scope; `id`: its
    row, once stored."""

    role: Role
    user: orm.User | None = None
    group: orm.Group | None = None
    workspace: orm.Workspace | None = None
    id: int | None = None


def resolve(req: api_teams.RoleBindingRequest, *, visible: Visible, session: Session) -> Binding:
    """The objects a request names (404 for a workspace the caller does not see)."""
    if (req.user is None) == (req.group is None):
        raise InvalidRequest(
            "a role is given to a user or to a group",
            [{"path": "user", "message": "give exactly one of user and group"}],
        )
    return Binding(
        role=Role(req.role),
        user=_user(req.user, session) if req.user is not None else None,
        group=get_group(req.group, session=session) if req.group is not None else None,
        workspace=workspaces.get(req.workspace, visible=visible, session=session)
        if req.workspace is not None
        else None,
    )


def _user(username: str, session: Session) -> orm.User:
    user = session.scalar(select(orm.User).where(orm.User.username == username))
    if user is None:
        raise NotFound(f"user {username!r} not found")
    return user


def by_id(binding_id: int, *, visible: Visible, session: Session) -> Binding:
    """A binding by its id; one of a workspace the caller does not see is not found."""
    row = session.get(orm.RoleBinding, binding_id)
    if row is None or (
        row.workspace_id is not None and visible is not None and row.workspace_id not in visible
    ):
        raise NotFound(f"role binding {binding_id} not found")
    return Binding(
        role=Role(row.role),
        user=session.get(orm.User, row.user_id) if row.user_id else None,
        group=session.get(orm.Group, row.group_id) if row.group_id else None,
        workspace=session.get(orm.Workspace, row.workspace_id) if row.workspace_id else None,
        id=row.id,
    )


def bind(binding: Binding, *, session: Session) -> bool:
    """Give the role; False if it was already given."""
    if binding.role == Role.CLUSTER_ADMIN and binding.workspace is not None:
        raise InvalidRequest(
            "cluster_admin is bound at cluster scope only",
            [{"path": "workspace", "message": "leave it out for cluster_admin"}],
        )
    user, group, ws = binding.user, binding.group, binding.workspace
    rb = orm.RoleBinding
    given = session.scalar(
        select(rb.id).where(
            rb.role == binding.role.value,
            rb.user_id.is_(None) if user is None else rb.user_id == user.id,
            rb.group_id.is_(None) if group is None else rb.group_id == group.id,
            rb.workspace_id.is_(None) if ws is None else rb.workspace_id == ws.id,
        )
    )
    if given is not None:
        return False
    session.add(
        rb(
            role=binding.role.value,
            user_id=user.id if user else None,
            group_id=group.id if group else None,
            workspace_id=ws.id if ws else None,
        )
    )
    return True


def unbind(binding: Binding, *, session: Session) -> None:
    """Take back a stored binding (from by_id)."""
    session.delete(session.get_one(orm.RoleBinding, binding.id))
    keep_an_admin(session)


def keep_an_admin(session: Session) -> None:
    """Refuse a change (its transaction rolls back) that leaves no active cluster admin."""
    session.flush()
    if cluster_admins(session=session) == 0:
        raise Conflict("that would leave the cluster without an active cluster admin")


def list_bindings(
    *, workspace_ids: list[int | None] | None, session: Session
) -> list[api_teams.RoleBindingInfo]:
    """Bindings in these workspaces (None in the list: cluster scope); all when None."""
    rb = orm.RoleBinding
    query = (
        select(rb, orm.User.username, orm.Group.name, orm.Workspace.name)
        .outerjoin(orm.User, orm.User.id == rb.user_id)
        .outerjoin(orm.Group, orm.Group.id == rb.group_id)
        .outerjoin(orm.Workspace, orm.Workspace.id == rb.workspace_id)
        .order_by(rb.id)
    )
    if workspace_ids is not None:
        wanted = [w for w in workspace_ids if w is not None]
        clauses = [rb.workspace_id.in_(wanted)]
        if None in workspace_ids:
            clauses.append(rb.workspace_id.is_(None))
        query = query.where(or_(*clauses))
    return [
        api_teams.RoleBindingInfo(
            id=b.id,
            role=cast(api_teams.RoleName, b.role),  # written from a Role
            user=user,
            group=group,
            workspace=ws,
            created_at=b.created_at,
        )
        for b, user, group, ws in session.execute(query)
    ]
