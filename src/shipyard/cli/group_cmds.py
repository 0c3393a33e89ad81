"""`shipyard group list | create | delete | add | remove`: groups of users, made and filled
by cluster admins. A role given to a group (`shipyard role assign ROLE --group G`) holds for
each of its members."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from shipyard.cli.context import open_session
from shipyard.cli.output import JsonFlag, out, print_json, say
from shipyard.cli.render import add_row, fmt_time
from shipyard.client import teams
from shipyard.common.api_teams import GroupInfo

app = typer.Typer(no_args_is_help=True)

GroupName = Annotated[str, typer.Argument(help="The group's name.", metavar="GROUP")]
Usernames = Annotated[list[str], typer.Argument(help="User names.", metavar="USER...")]


def groups_table(found: list[GroupInfo]) -> Table:
    table = Table()
    for column in ("Group", "Members", "Created"):
        table.add_column(column, no_wrap=column == "Created")
    for group in found:
        add_row(table, group.name, ", ".join(group.members) or "-", fmt_time(group.created_at))
    return table


@app.command("list")
def list_command(ctx: typer.Context, json_output: JsonFlag = False) -> None:
    """Every group and its members."""
    found = teams.list_groups(open_session(ctx))
    if json_output:
        print_json(found)
    elif not found:
        say("No groups yet; a cluster admin makes one with `shipyard group create NAME`.")
    else:
        out.print(groups_table(found))


@app.command()
def create(ctx: typer.Context, name: GroupName, json_output: JsonFlag = False) -> None:
    """Make an empty group (cluster admins)."""
    group = teams.create_group(open_session(ctx), name)
    if json_output:
        print_json(group)
    else:
        say(f"Created group {group.name}")


@app.command()
def delete(ctx: typer.Context, name: GroupName) -> None:
    """Delete a group (cluster admins): its members lose the roles given to it."""
    teams.delete_group(open_session(ctx), name)
    say(f"Deleted group {name}")


@app.command()
def add(ctx: typer.Context, name: GroupName, usernames: Usernames) -> None:
    """Add users to a group (cluster admins); they hold its roles from their next command."""
    session = open_session(ctx)
    for username in usernames:
        teams.add_group_member(session, name, username)
        say(f"Added {username} to group {name}")


@app.command()
def remove(ctx: typer.Context, name: GroupName, usernames: Usernames) -> None:
    """Take users out of a group (cluster admins); they lose its roles at once."""
    session = open_session(ctx)
    for username in usernames:
        teams.remove_group_member(session, name, username)
        say(f"Removed {username} from group {name}")
