"""`shipyard role list | assign | remove | permissions`: roles given to a user or a group, in one
workspace or at cluster scope (every workspace, and the cluster's own objects: users,
groups, quotas, the audit log). docs/permissions.md says what each role allows."""

from __future__ import annotations

from typing import Annotated, cast

import typer
from rich.table import Table

from shipyard.cli.context import open_session
from shipyard.cli.output import JsonFlag, out, print_json, say
from shipyard.cli.render import add_row, fmt_time
from shipyard.client import teams
from shipyard.common.api_teams import RoleBindingInfo, RoleName
from shipyard.common.permissions import CLUSTER_ACTIONS, DESCRIPTIONS, PERMISSIONS, Action, Role

app = typer.Typer(no_args_is_help=True)


RoleArg = Annotated[Role, typer.Argument(help="The role.", case_sensitive=False)]
UserOption = Annotated[str | None, typer.Option("--user", help="Give it to this user.")]
GroupOption = Annotated[str | None, typer.Option("--group", help="Give it to this group.")]
WorkspaceOption = Annotated[
    str | None,
    typer.Option("--workspace", help="In this workspace (default: at cluster scope)."),
]


def grantee(binding: RoleBindingInfo) -> str:
    return f"user {binding.user}" if binding.user is not None else f"group {binding.group}"


def scope(workspace: str | None) -> str:
    return f"workspace {workspace}" if workspace is not None else "the cluster"


def bindings_table(found: list[RoleBindingInfo]) -> Table:
    table = Table()
    for column in ("ID", "Role", "Given to", "Scope", "Created"):
        table.add_column(
            column, justify="right" if column == "ID" else "left", no_wrap=column == "Created"
        )
    for binding in found:
        add_row(
            table,
            str(binding.id),
            binding.role,
            grantee(binding),
            scope(binding.workspace),
            fmt_time(binding.created_at),
        )
    return table


def _one_of(user: str | None, group: str | None) -> None:
    if (user is None) == (group is None):
        raise typer.BadParameter("give exactly one of --user and --group", param_hint="'--user'")


@app.command("list")
def list_command(
    ctx: typer.Context,
    workspace: Annotated[
        str | None, typer.Option("--workspace", help="Only this workspace's roles.")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Roles given in the workspaces you see (cluster-scope ones: a cluster admin sees all,
    others their own)."""
    found = teams.list_role_bindings(open_session(ctx), workspace=workspace)
    if json_output:
        print_json(found)
    elif not found:
        say(f"No roles given in {scope(workspace)}." if workspace else "No roles given.")
    else:
        out.print(bindings_table(found))


@app.command()
def assign(
    ctx: typer.Context,
    role: RoleArg,
    user: UserOption = None,
    group: GroupOption = None,
    workspace: WorkspaceOption = None,
    json_output: JsonFlag = False,
) -> None:
    """Give a role to a user or a group, in a workspace (its workspace admins) or at cluster
    scope (cluster admins). It holds from their next command."""
    _one_of(user, group)
    found = teams.assign_role(
        open_session(ctx), cast(RoleName, role.value), user=user, group=group, workspace=workspace
    )
    if json_output:
        print_json(found)
        return
    who = f"user {user}" if user is not None else f"group {group}"
    say(f"Gave {role.value} to {who} in {scope(workspace)}")


@app.command()
def remove(
    ctx: typer.Context,
    role: RoleArg,
    user: Annotated[str | None, typer.Option("--user", help="Take it from this user.")] = None,
    group: Annotated[str | None, typer.Option("--group", help="Take it from this group.")] = None,
    workspace: Annotated[
        str | None,
        typer.Option("--workspace", help="In this workspace (default: at cluster scope)."),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Take a role back from a user or a group; it stops holding at their next command."""
    _one_of(user, group)
    removed = teams.remove_role(
        open_session(ctx), cast(RoleName, role.value), user=user, group=group, workspace=workspace
    )
    if json_output:
        print_json(removed)
    else:
        say(f"Took {removed.role} from {grantee(removed)} in {scope(removed.workspace)}")


@app.command()
def permissions(json_output: JsonFlag = False) -> None:
    """What each role may do (docs/permissions.md). Cluster actions come only from a role
    given at cluster scope."""
    if json_output:
        print_json({role.value: sorted(a.value for a in PERMISSIONS[role]) for role in Role})
        return
    table = Table()
    for column in ("Action", *(role.value for role in Role), "What it allows"):
        table.add_column(column)
    for action in Action:
        name = f"{action.value} (cluster)" if action in CLUSTER_ACTIONS else action.value
        marks = ["yes" if action in PERMISSIONS[role] else "" for role in Role]
        add_row(table, name, *marks, DESCRIPTIONS[action])
    out.print(table)
