"""Workspaces and their projects: made, renamed, archived; experiments moved between
projects. Every read takes the workspaces the caller sees (None: all), so an object in
another workspace is not found rather than forbidden, and lists leave it out in SQL."""

from __future__ import annotations

from collections.abc import Collection
from typing import TypeVar

from sqlalchemy import func, inspect, select, true, update
from sqlalchemy.orm import Session
from sqlalchemy.sql.elements import ColumnElement

from shipyard.common import api_teams
from shipyard.common.errors import Conflict, InvalidRequest, NotFound
from shipyard.server import orm
from shipyard.server.services.lifecycle import HOLDING

DEFAULT = "Uncategorized"  # the config's default workspace and project, as in Determined
Visible = Collection[int] | None  # workspace ids the caller sees; None: every one
T = TypeVar("T", bound=orm.Base)


def within(column, visible: Visible) -> ColumnElement[bool]:
    """The SQL condition that `column` (a workspace id) is one the caller sees."""
    return true() if visible is None else column.in_(list(visible))


def get_visible(model: type[T], key: object, visible: Visible, session: Session) -> T | None:
    """The row of `model` (a table with a workspace_id) whose primary key is `key`, if it
    is in a workspace the caller sees: None otherwise, as for a key that does not exist."""
    if visible is None:
        return session.get(model, key)
    [primary_key] = inspect(model).primary_key
    in_sight = within(model.workspace_id, visible)  # type: ignore[attr-defined]
    return session.scalars(select(model).where(primary_key == key, in_sight)).first()


def get(name: str, *, visible: Visible, session: Session) -> orm.Workspace:
    ws = session.scalar(
        select(orm.Workspace).where(orm.Workspace.name == name, within(orm.Workspace.id, visible))
    )
    if ws is None:
        raise NotFound(f"workspace {name!r} not found (`shipyard workspace list` shows yours)")
    return ws


def find_id(name: str, *, session: Session) -> int | None:
    return session.scalar(select(orm.Workspace.id).where(orm.Workspace.name == name))


def default_id(*, session: Session) -> int:
    """The default workspace, made with its default project on first use."""
    found = find_id(DEFAULT, session=session)
    return found if found is not None else create(DEFAULT, session=session).id


def default_project(*, session: Session) -> orm.Project:
    """The default workspace's default project, where configs that name none go."""
    ws = session.get_one(orm.Workspace, default_id(session=session))
    return get_project(ws, DEFAULT, session=session)


def create(name: str, *, session: Session) -> orm.Workspace:
    if find_id(name, session=session) is not None:
        raise Conflict(f"workspace {name!r} already exists")
    ws = orm.Workspace(name=name)
    session.add(ws)
    session.flush()
    session.add(orm.Project(workspace_id=ws.id, name=DEFAULT))
    session.flush()
    return ws


def list_all(*, visible: Visible, archived: bool | None, session: Session) -> list[orm.Workspace]:
    query = select(orm.Workspace).where(within(orm.Workspace.id, visible))
    if archived is not None:
        query = query.where(orm.Workspace.archived.is_(archived))
    return list(session.scalars(query.order_by(orm.Workspace.name)))


def rename(ws: orm.Workspace, new_name: str, *, session: Session) -> None:
    if ws.name == DEFAULT:
        raise Conflict(f"the default workspace {DEFAULT!r} keeps its name")
    if find_id(new_name, session=session) not in (None, ws.id):
        raise Conflict(f"workspace {new_name!r} already exists")
    ws.name = new_name


def set_archived(ws: orm.Workspace, archived: bool) -> None:
    if archived and ws.name == DEFAULT:
        raise Conflict(f"the default workspace {DEFAULT!r} cannot be archived")
    ws.archived = archived


def set_quotas(ws: orm.Workspace, req: api_teams.QuotaChange, *, session: Session) -> None:
    """A limit below what the workspace uses now is refused: the running trials would
    have to be stopped for it, which is a kill, not a quota."""
    given = req.model_dump(include=req.model_fields_set)
    used_slots, used_trials = usage(ws.id, session=session)
    problems = []
    if given.get("max_slots") is not None and given["max_slots"] < used_slots:
        problems.append(
            {"path": "max_slots", "message": f"{used_slots} slots are in use in {ws.name!r}"}
        )
    if given.get("max_trials") is not None and given["max_trials"] < used_trials:
        problems.append(
            {"path": "max_trials", "message": f"{used_trials} trials run in {ws.name!r}"}
        )
    if problems:
        raise InvalidRequest(
            "a quota below what the workspace uses now: lower it once trials have ended",
            problems,
        )
    for field, value in given.items():
        setattr(ws, field, value)


def usage(workspace_id: int, *, session: Session) -> tuple[int, int]:
    """(slots held, trials holding slots) in the workspace now."""
    held = session.scalars(
        select(orm.Trial.slots).where(
            orm.Trial.workspace_id == workspace_id,
            orm.Trial.state.in_(HOLDING),
        )
    ).all()
    return sum(len(s or []) for s in held), sum(1 for s in held if s)


def info(ws: orm.Workspace, *, session: Session) -> api_teams.WorkspaceInfo:
    slots, trials = usage(ws.id, session=session)
    projects = session.scalar(select(func.count()).where(orm.Project.workspace_id == ws.id))
    experiments = session.scalar(select(func.count()).where(orm.Experiment.workspace_id == ws.id))
    return api_teams.WorkspaceInfo(
        id=ws.id,
        name=ws.name,
        archived=ws.archived,
        created_at=ws.created_at,
        max_slots=ws.max_slots,
        max_trials=ws.max_trials,
        slots_in_use=slots,
        trials_running=trials,
        num_projects=projects or 0,
        num_experiments=experiments or 0,
    )


# Projects


def get_project(workspace: orm.Workspace, name: str, *, session: Session) -> orm.Project:
    project = session.scalar(
        select(orm.Project).where(
            orm.Project.workspace_id == workspace.id, orm.Project.name == name
        )
    )
    if project is None:
        raise NotFound(
            f"project {name!r} not found in workspace {workspace.name!r} "
            f"(`shipyard project create {workspace.name} {name}` makes it)"
        )
    return project


def create_project(
    workspace: orm.Workspace, name: str, description: str, *, session: Session
) -> orm.Project:
    if workspace.archived:
        raise Conflict(f"workspace {workspace.name!r} is archived")
    if _project_id(workspace.id, name, session) is not None:
        raise Conflict(f"project {name!r} already exists in workspace {workspace.name!r}")
    project = orm.Project(workspace_id=workspace.id, name=name, description=description)
    session.add(project)
    session.flush()
    return project


def _project_id(workspace_id: int, name: str, session: Session) -> int | None:
    return session.scalar(
        select(orm.Project.id).where(
            orm.Project.workspace_id == workspace_id, orm.Project.name == name
        )
    )


def list_projects(workspace: orm.Workspace, *, session: Session) -> list[api_teams.ProjectInfo]:
    counts = dict(
        session.execute(
            select(orm.Experiment.project_id, func.count())
            .where(orm.Experiment.workspace_id == workspace.id)
            .group_by(orm.Experiment.project_id)
        ).all()
    )
    projects = session.scalars(
        select(orm.Project)
        .where(orm.Project.workspace_id == workspace.id)
        .order_by(orm.Project.name)
    )
    return [project_info(p, workspace, counts.get(p.id, 0)) for p in projects]


def describe_project(
    project: orm.Project, workspace: orm.Workspace, *, session: Session
) -> api_teams.ProjectInfo:
    count = session.scalar(select(func.count()).where(orm.Experiment.project_id == project.id))
    return project_info(project, workspace, count or 0)


def project_info(
    project: orm.Project, workspace: orm.Workspace, num_experiments: int
) -> api_teams.ProjectInfo:
    return api_teams.ProjectInfo(
        id=project.id,
        workspace=workspace.name,
        name=project.name,
        description=project.description,
        archived=project.archived,
        created_at=project.created_at,
        num_experiments=num_experiments,
    )


def change_project(
    project: orm.Project,
    workspace: orm.Workspace,
    req: api_teams.ProjectChange,
    *,
    session: Session,
) -> None:
    if req.name is not None and req.name != project.name:
        if _project_id(workspace.id, req.name, session) is not None:
            raise Conflict(f"project {req.name!r} already exists in workspace {workspace.name!r}")
        project.name = req.name
    if req.description is not None:
        project.description = req.description
    if req.archived is not None:
        project.archived = req.archived


def move_experiment(exp: orm.Experiment, project: orm.Project, *, session: Session) -> None:
    """Into another project, of its workspace or another: its trials and checkpoints go
    with it (they carry the workspace, for lists filtered without a join)."""
    if project.archived:
        raise Conflict(f"project {project.name!r} is archived")
    exp.project_id = project.id
    if exp.workspace_id == project.workspace_id:
        return
    exp.workspace_id = project.workspace_id
    for table in (orm.Trial, orm.Checkpoint):
        session.execute(
            update(table)
            .where(table.experiment_id == exp.id)
            .values(workspace_id=project.workspace_id)
        )
