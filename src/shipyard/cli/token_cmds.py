"""`shipyard token create | list | revoke`: API tokens for scripts, CI and service accounts.

A token's secret is printed once, when it is made; the master keeps only its hash."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from shipyard.cli.context import open_session
from shipyard.cli.output import JsonFlag, err, out, print_json, say
from shipyard.cli.render import add_row, fmt_time
from shipyard.client import users
from shipyard.common.api_users import TokenInfo

app = typer.Typer(no_args_is_help=True)


def tokens_table(tokens: list[TokenInfo]) -> Table:
    table = Table()
    columns = ("ID", "User", "Name", "Kind", "Starts with", "Created", "Expires", "Last used")
    for column in columns:
        table.add_column(
            column,
            justify="right" if column == "ID" else "left",
            no_wrap=column in ("Starts with", "Created", "Expires", "Last used"),
        )
    for token in tokens:
        add_row(
            table,
            str(token.id),
            token.username,
            token.name or "-",
            token.kind,
            token.prefix + "…",
            fmt_time(token.created_at),
            fmt_time(token.expires_at) if token.expires_at else "never",
            fmt_time(token.last_used_at),
        )
    return table


@app.command()
def create(
    ctx: typer.Context,
    name: Annotated[str, typer.Option(help="What the token is for (e.g. ci).")] = "",
    expires_in_days: Annotated[
        float | None,
        typer.Option(min=0.001, max=3650, help="Lifetime in days (default: 90)."),
    ] = None,
    never_expires: Annotated[
        bool, typer.Option("--never-expires", help="A token that does not expire.")
    ] = False,
    user: Annotated[
        str | None,
        typer.Option("--user", help="Whose (cluster admins: another user or a service account)."),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Make an API token; the token alone goes to stdout, shown this once."""
    if never_expires and expires_in_days is not None:
        raise typer.BadParameter(
            "give --expires-in-days or --never-expires, not both",
            param_hint="'--never-expires'",
        )
    lifetime = users.NEVER if never_expires else expires_in_days
    made = users.create_token(open_session(ctx), name=name, expires_in_days=lifetime, username=user)
    if json_output:
        print_json(made)
        return
    typer.echo(made.token)
    expires = f"expires {fmt_time(made.expires_at)}" if made.expires_at else "never expires"
    label = f" ({made.name})" if made.name else ""
    err.print(
        Text(
            f"Token {made.id}{label} of {made.username}, {expires}. It is not shown again: "
            "keep it now (send it as SHIPYARD_TOKEN, or as the header "
            "`Authorization: Bearer <token>`).",
            style="yellow",
        ),
        soft_wrap=True,
    )


@app.command("list")
def list_command(
    ctx: typer.Context,
    all_users: Annotated[bool, typer.Option("--all", help="Everyone's (cluster admins).")] = False,
    json_output: JsonFlag = False,
) -> None:
    """Live tokens and login sessions, newest first (never their secrets)."""
    found = users.list_tokens(open_session(ctx), all_users=all_users)
    if json_output:
        print_json(found)
    elif not found:
        say("No live tokens.")
    else:
        out.print(tokens_table(found))


@app.command()
def revoke(
    ctx: typer.Context,
    token_id: Annotated[
        int, typer.Argument(help="The token's id (see `token list`).", metavar="ID")
    ],
    json_output: JsonFlag = False,
) -> None:
    """Revoke a token (yours, or anyone's as a cluster admin): it fails from its next use."""
    token = users.revoke_token(open_session(ctx), token_id)
    if json_output:
        print_json(token)
    else:
        label = f" ({token.name})" if token.name else ""
        say(f"Revoked token {token.id}{label} of {token.username}")
