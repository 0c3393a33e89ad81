"""`shipyard workspace list | create | describe | rename | archive | unarchive | set-quota`
and `shipyard project list | describe | create | rename | archive | unarchive`.

Every experiment lives in a project of a workspace (the config's `workspace:` and
`project:`, by default "Uncategorized" for both). A workspace's quotas cap the slots and
running trials of all its experiments together; roles (`shipyard role`) say who sees and
does what in it."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from shipyard.cli.context import open_session
from shipyard.cli.output import JsonFlag, out, print_json, say
from shipyard.cli.render import add_row, fields_table, fmt_time
from shipyard.client import teams
from shipyard.common.api_teams import ProjectInfo, WorkspaceInfo

app = typer.Typer(no_args_is_help=True)
project_app = typer.Typer(no_args_is_help=True)

WorkspaceName = Annotated[str, typer.Argument(help="The workspace's name.", metavar="WORKSPACE")]
ProjectName = Annotated[str, typer.Argument(help="The project's name.", metavar="PROJECT")]


def fmt_usage(used: int, limit: int | None) -> str:
    """`2 of 4`, or `2 (no limit)`."""
    return f"{used} (no limit)" if limit is None else f"{used} of {limit}"


def parse_limit(text: str, option: str) -> int | None:
    """A quota given on the command line: a whole number, or `none` for no limit."""
    if text.strip().lower() == "none":
        return None
    if not text.strip().isdigit():
        raise typer.BadParameter(
            f"{text!r} is neither a whole number nor 'none'", param_hint=f"'{option}'"
        )
    return int(text)


# -- workspaces ---------------------------------------------------------------------------


def workspaces_table(found: list[WorkspaceInfo]) -> Table:
    table = Table()
    columns = ("Workspace", "Projects", "Experiments", "Slots", "Running trials", "Created")
    for column in columns:
        table.add_column(
            column,
            justify="right" if column in ("Projects", "Experiments") else "left",
            no_wrap=column == "Created",
        )
    for ws in found:
        add_row(
            table,
            ws.name + (" (archived)" if ws.archived else ""),
            str(ws.num_projects),
            str(ws.num_experiments),
            fmt_usage(ws.slots_in_use, ws.max_slots),
            fmt_usage(ws.trials_running, ws.max_trials),
            fmt_time(ws.created_at),
        )
    return table


@app.command("list")
def list_command(
    ctx: typer.Context,
    archived: Annotated[
        bool, typer.Option("--archived", help="Include archived workspaces.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """The workspaces you hold a role in, with their quotas and what they use now
    (archived ones only with --archived)."""
    found = teams.list_workspaces(open_session(ctx), archived=None if archived else False)
    if json_output:
        print_json(found)
    elif not found:
        say("No workspaces you hold a role in.")
    else:
        out.print(workspaces_table(found))


@app.command()
def create(ctx: typer.Context, name: WorkspaceName, json_output: JsonFlag = False) -> None:
    """Make a workspace, with its default project "Uncategorized" (cluster admins)."""
    ws = teams.create_workspace(open_session(ctx), name)
    if json_output:
        print_json(ws)
    else:
        say(f"Created workspace {ws.name} (project Uncategorized in it)")


@app.command()
def describe(ctx: typer.Context, name: WorkspaceName, json_output: JsonFlag = False) -> None:
    """A workspace's quotas and what it uses now, and its projects."""
    session = open_session(ctx)
    ws = teams.get_workspace(session, name)
    if json_output:
        print_json(ws)
        return
    out.print(
        fields_table(
            [
                ("Workspace", ws.name),
                ("ID", ws.id),
                ("Archived", "yes" if ws.archived else "no"),
                ("Slots in use", fmt_usage(ws.slots_in_use, ws.max_slots)),
                ("Running trials", fmt_usage(ws.trials_running, ws.max_trials)),
                ("Slot quota", "none" if ws.max_slots is None else ws.max_slots),
                ("Trial quota", "none" if ws.max_trials is None else ws.max_trials),
                ("Projects", ws.num_projects),
                ("Experiments", ws.num_experiments),
                ("Created", fmt_time(ws.created_at)),
            ]
        )
    )
    projects = teams.list_projects(session, name)
    if projects:
        out.print(projects_table(projects))


@app.command()
def rename(
    ctx: typer.Context,
    name: WorkspaceName,
    new_name: Annotated[str, typer.Argument(help="Its new name.", metavar="NEW")],
    json_output: JsonFlag = False,
) -> None:
    """Rename a workspace (workspace admins); configs naming the old name no longer find it."""
    ws = teams.rename_workspace(open_session(ctx), name, new_name)
    if json_output:
        print_json(ws)
    else:
        say(f"Renamed workspace {name} to {ws.name}")


@app.command()
def archive(ctx: typer.Context, name: WorkspaceName, json_output: JsonFlag = False) -> None:
    """Archive a workspace: no new experiments or projects in it; nothing is deleted."""
    ws = teams.archive_workspace(open_session(ctx), name)
    if json_output:
        print_json(ws)
    else:
        say(f"Workspace {ws.name} is archived")


@app.command()
def unarchive(ctx: typer.Context, name: WorkspaceName, json_output: JsonFlag = False) -> None:
    """Take a workspace out of the archive: experiments and projects may be made again."""
    ws = teams.unarchive_workspace(open_session(ctx), name)
    if json_output:
        print_json(ws)
    else:
        say(f"Workspace {ws.name} is no longer archived")


@app.command("set-quota")
def set_quota(
    ctx: typer.Context,
    name: WorkspaceName,
    slots: Annotated[
        str | None,
        typer.Option(
            "--slots", metavar="N|none", help="Slots its trials may hold at once; none: no limit."
        ),
    ] = None,
    trials: Annotated[
        str | None,
        typer.Option(
            "--trials", metavar="N|none", help="Trials that may run at once; none: no limit."
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Cap the slots and running trials of all the workspace's experiments together
    (cluster admins); trials over the cap wait in the queue. A quota left out stays."""
    if slots is None and trials is None:
        raise typer.BadParameter("give --slots, --trials or both", param_hint="'--slots'")
    limits = {}
    if slots is not None:
        limits["max_slots"] = parse_limit(slots, "--slots")
    if trials is not None:
        limits["max_trials"] = parse_limit(trials, "--trials")
    ws = teams.set_workspace_quotas(open_session(ctx), name, **limits)
    if json_output:
        print_json(ws)
    else:
        say(
            f"Workspace {ws.name}: slots {fmt_usage(ws.slots_in_use, ws.max_slots)}, "
            f"running trials {fmt_usage(ws.trials_running, ws.max_trials)}"
        )


# -- projects -----------------------------------------------------------------------------


def projects_table(found: list[ProjectInfo]) -> Table:
    table = Table()
    for column in ("Project", "Experiments", "Description", "Created"):
        table.add_column(
            column,
            justify="right" if column == "Experiments" else "left",
            no_wrap=column == "Created",
        )
    for project in found:
        add_row(
            table,
            project.name + (" (archived)" if project.archived else ""),
            str(project.num_experiments),
            project.description or "-",
            fmt_time(project.created_at),
        )
    return table


@project_app.command("list")
def project_list(
    ctx: typer.Context, workspace: WorkspaceName, json_output: JsonFlag = False
) -> None:
    """A workspace's projects and how many experiments each holds."""
    found = teams.list_projects(open_session(ctx), workspace)
    if json_output:
        print_json(found)
    elif not found:
        say(f"No projects in workspace {workspace}.")
    else:
        out.print(projects_table(found))


@project_app.command("describe")
def project_describe(
    ctx: typer.Context, workspace: WorkspaceName, name: ProjectName, json_output: JsonFlag = False
) -> None:
    """One project's fields."""
    project = teams.get_project(open_session(ctx), workspace, name)
    if json_output:
        print_json(project)
        return
    out.print(
        fields_table(
            [
                ("Project", project.name),
                ("Workspace", project.workspace),
                ("ID", project.id),
                ("Description", project.description),
                ("Archived", "yes" if project.archived else "no"),
                ("Experiments", project.num_experiments),
                ("Created", fmt_time(project.created_at)),
            ]
        )
    )


@project_app.command("create")
def project_create(
    ctx: typer.Context,
    workspace: WorkspaceName,
    name: ProjectName,
    description: Annotated[str, typer.Option(help="What the project is for.")] = "",
    json_output: JsonFlag = False,
) -> None:
    """Make a project in a workspace (editors of the workspace)."""
    project = teams.create_project(open_session(ctx), workspace, name, description=description)
    if json_output:
        print_json(project)
    else:
        say(f"Created project {project.name} in workspace {project.workspace}")


@project_app.command("rename")
def project_rename(
    ctx: typer.Context,
    workspace: WorkspaceName,
    name: ProjectName,
    new_name: Annotated[str, typer.Argument(help="Its new name.", metavar="NEW")],
    json_output: JsonFlag = False,
) -> None:
    """Rename a project (workspace admins); its experiments go with it."""
    project = teams.change_project(open_session(ctx), workspace, name, name=new_name)
    if json_output:
        print_json(project)
    else:
        say(f"Renamed project {name} of workspace {project.workspace} to {project.name}")


@project_app.command("archive")
def project_archive(
    ctx: typer.Context, workspace: WorkspaceName, name: ProjectName, json_output: JsonFlag = False
) -> None:
    """Archive a project: no new experiments in it; nothing is deleted."""
    project = teams.change_project(open_session(ctx), workspace, name, archived=True)
    if json_output:
        print_json(project)
    else:
        say(f"Project {project.name} of workspace {project.workspace} is archived")


@project_app.command("unarchive")
def project_unarchive(
    ctx: typer.Context, workspace: WorkspaceName, name: ProjectName, json_output: JsonFlag = False
) -> None:
    """Take a project out of the archive."""
    project = teams.change_project(open_session(ctx), workspace, name, archived=False)
    if json_output:
        print_json(project)
    else:
        say(f"Project {project.name} of workspace {project.workspace} is no longer archived")
