"""`shipyard secret set | list | delete`, and `shipyard admin rotate-keys`.

A value never comes from the command line (it would stay in the shell's history and in
`ps`): it is read from a file (`--from-file`), from stdin when it is a pipe, or asked for
without echo on a terminal. The master never sends a value back."""

from __future__ import annotations

import getpass
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shipyard.cli.context import open_session
from shipyard.cli.output import JsonFlag, out, print_json, say
from shipyard.cli.render import add_row, fmt_time
from shipyard.client import secrets
from shipyard.common.api_teams import SecretInfo
from shipyard.common.errors import InvalidRequest

app = typer.Typer(no_args_is_help=True)

Workspace = Annotated[str, typer.Argument(help="The workspace.", metavar="WORKSPACE")]
Name = Annotated[str, typer.Argument(help="The secret's name, e.g. WANDB_API_KEY.", metavar="NAME")]


def read_value(from_file: Path | None, name: str) -> str:
    """The value: the file's whole content; else stdin's (one line end at its end dropped,
    as `echo` adds one); else asked for on the terminal, without echo."""
    if from_file is not None:
        try:
            value = from_file.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidRequest(f"{from_file} is not UTF-8 text: a secret is text") from None
    elif not sys.stdin.isatty():
        value = sys.stdin.read()
        value = value.removesuffix("\n").removesuffix("\r")
    else:
        try:
            value = getpass.getpass(f"Value of {name} (not shown): ")
        except EOFError:
            raise InvalidRequest("no value given") from None
    if not value:
        raise InvalidRequest(f"the value of {name} is empty; nothing was changed")
    return value


def secrets_table(found: list[SecretInfo]) -> Table:
    table = Table()
    for column in ("Name", "Version", "Updated", "By", "Created"):
        table.add_column(column, no_wrap=column in ("Name", "Updated", "Created"))
    for secret in found:
        add_row(
            table,
            secret.name,
            str(secret.version),
            fmt_time(secret.updated_at),
            secret.updated_by,
            fmt_time(secret.created_at),
        )
    return table


@app.command("set")
def set_command(
    ctx: typer.Context,
    workspace: Workspace,
    name: Name,
    from_file: Annotated[
        Path | None,
        typer.Option(
            "--from-file",
            help="Read the value from this file (all of it) instead of stdin or the terminal.",
            exists=True,
            dir_okay=False,
            readable=True,
        ),
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Create a secret or give it a new value (workspace admins).

    The value comes from --from-file, from stdin, or is asked for without echo; never
    from the command line."""
    value = read_value(from_file, name)
    made = secrets.set_secret(open_session(ctx), workspace, name, value)
    if json_output:
        print_json(made)
    else:
        say(f"Set {made.name} in {made.workspace} (version {made.version})")


@app.command("list")
def list_command(ctx: typer.Context, workspace: Workspace, json_output: JsonFlag = False) -> None:
    """The workspace's secrets: names, versions, who set them; never their values."""
    found = secrets.list_secrets(open_session(ctx), workspace)
    if json_output:
        print_json(found)
    elif not found:
        say(f"No secrets in {workspace}.")
    else:
        out.print(secrets_table(found))


@app.command()
def delete(ctx: typer.Context, workspace: Workspace, name: Name) -> None:
    """Delete a secret (workspace admins). Runs that start later and name it fail to start."""
    secrets.delete_secret(open_session(ctx), workspace, name)
    say(f"Deleted {name} from {workspace}")


def rotate_keys(ctx: typer.Context, json_output: JsonFlag = False) -> None:
    """Seal every secret anew under a new key, then drop the old keys (cluster admins)."""
    done = secrets.rotate_keys(open_session(ctx))
    if json_output:
        print_json(done)
    else:
        say(f"Re-encrypted {done.reencrypted} secret(s) under the new key {done.key_id}")
