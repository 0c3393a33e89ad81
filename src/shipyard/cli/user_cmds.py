"""`shipyard user login | logout | whoami | create | list | activate | deactivate |
change-password`.

A login keeps its token in $SHIPYARD_HOME/auth.json (mode 0600), one per master URL;
every later command sends it to that master (SHIPYARD_TOKEN, when set, wins)."""

from __future__ import annotations

import getpass
import os
import sys
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from shipyard.cli.context import master_option, open_session
from shipyard.cli.output import JsonFlag, err, out, print_json, say
from shipyard.cli.render import add_row, fields_table, fmt_time
from shipyard.client import credentials, users
from shipyard.client.master_url import resolve_master_url
from shipyard.client.session import Session
from shipyard.common.api_users import UserInfo
from shipyard.common.errors import InvalidRequest, MasterUnavailable, ShipyardError

app = typer.Typer(no_args_is_help=True)

# Set in click's shared ctx.meta while a command checks a password: its 401 means a wrong
# password, not a missing login, so the root's "log in" hint would mislead.
LOGGING_IN = "shipyard.user.logging_in"

Username = Annotated[str, typer.Argument(help="The user's name.", metavar="USERNAME")]
PasswordStdin = Annotated[
    bool,
    typer.Option(
        "--password-stdin",
        help="Read the password from stdin (its first line) instead of asking for it.",
    ),
]


# -- passwords ----------------------------------------------------------------------------


def read_stdin_lines(*what: str) -> list[str]:
    """One non-empty line of stdin (a pipe or a file) for each of `what`, without its end."""
    lines = []
    for name in what:
        line = sys.stdin.readline()
        if not line:
            raise InvalidRequest(f"stdin ended before {name} (one a line)")
        line = line.rstrip("\r\n")
        if not line:
            raise InvalidRequest(f"{name} on stdin is empty")
        lines.append(line)
    return lines


def ask_password(prompt: str) -> str:
    """Ask on the terminal without echo; never on a pipe (use --password-stdin there)."""
    if not sys.stdin.isatty():
        raise InvalidRequest(
            "no terminal to ask for the password on: pipe it in with --password-stdin"
        )
    try:
        # getpass turns the echo off before it shows the prompt, so nothing typed shows.
        password = getpass.getpass(f"{prompt}: ")
    except EOFError:
        raise InvalidRequest("no password given") from None
    if not password:
        raise InvalidRequest("the password is empty")
    return password


def ask_new_password(prompt: str = "New password") -> str:
    password = ask_password(prompt)
    if ask_password("Repeat it") != password:
        raise InvalidRequest("the two passwords do not match; nothing was changed")
    return password


def note(message: str) -> None:
    """A remark for the person at the terminal, on stderr (stdout stays the command's data)."""
    err.print(Text(f"note: {message}", style="yellow"), soft_wrap=True)


def token_source(url: str, via: str) -> str:
    """Where the token this command sent comes from, as the Session chose it."""
    if via == "local":
        return "none needed (the master runs without authentication)"
    if os.environ.get("SHIPYARD_TOKEN"):
        return "SHIPYARD_TOKEN"
    return str(credentials.path()) if credentials.entry(url) else via


# -- logging in and out -------------------------------------------------------------------


@app.command()
def login(
    ctx: typer.Context,
    username: Annotated[
        str | None,
        typer.Argument(help="Who logs in (default: your user name here).", metavar="[USERNAME]"),
    ] = None,
    password_stdin: PasswordStdin = False,
) -> None:
    """Log in with a password and keep the token for this master in $SHIPYARD_HOME/auth.json."""
    ctx.meta[LOGGING_IN] = True
    session = open_session(ctx)
    name = username or getpass.getuser()
    if password_stdin:
        [password] = read_stdin_lines("the password")
    else:
        password = ask_password(f"Password for {name} at {session.url}")
    result = users.login(session, name, password)
    if not result.token:
        raise ShipyardError("the master answered the login without a token")
    kept = credentials.save(session.url, result.username, result.token)
    expires = f", expires {fmt_time(result.expires_at)}" if result.expires_at else ""
    say(f"Logged in to {session.url} as {result.username} (token kept in {kept}{expires})")
    if os.environ.get("SHIPYARD_TOKEN"):
        note("SHIPYARD_TOKEN is set: commands send it instead, until you unset it")


@app.command()
def logout(ctx: typer.Context) -> None:
    """Revoke this master's kept token and forget it here."""
    url = resolve_master_url(master_option(ctx))
    kept = credentials.entry(url)
    token = kept.get("token") if kept else None
    if kept is None or not isinstance(token, str):
        say(f"Not logged in to {url} (no token kept in {credentials.path()})")
    else:
        done = "token revoked"
        with Session(url, token=token) as session:
            try:
                users.logout(session)
            except MasterUnavailable:
                raise  # the token is still good there: keep it, so the logout can be retried
            except ShipyardError as error:
                note(f"the master refused the token ({error.message}); forgetting it anyway")
                done = "token forgotten here"
        credentials.forget(url)
        say(f"Logged out of {url} ({kept.get('username')}): {done}")
    if os.environ.get("SHIPYARD_TOKEN"):
        note("SHIPYARD_TOKEN is still set: commands keep sending it")


@app.command()
def whoami(ctx: typer.Context, json_output: JsonFlag = False) -> None:
    """Who this master takes you for, and where the token comes from."""
    session = open_session(ctx)
    me = users.whoami(session)
    if json_output:
        print_json(me)
        return
    roles = [r for r, on in (("cluster admin", me.admin), ("service account", me.service)) if on]
    out.print(
        fields_table(
            [
                ("User", me.username),
                ("Role", ", ".join(roles) or "user"),
                ("Master", session.url),
                ("Token", token_source(session.url, me.via)),
            ]
        )
    )


# -- users --------------------------------------------------------------------------------


def users_table(found: list[UserInfo]) -> Table:
    table = Table()
    for column in ("User", "Admin", "Service", "Active", "Password", "Created"):
        table.add_column(column, no_wrap=column == "Created")
    for user in found:
        add_row(
            table,
            user.username,
            "yes" if user.admin else "",
            "yes" if user.service else "",
            "yes" if user.active else "no",
            "yes" if user.has_password else "no",
            fmt_time(user.created_at),
        )
    return table


@app.command()
def create(
    ctx: typer.Context,
    username: Username,
    admin: Annotated[bool, typer.Option("--admin", help="A cluster admin.")] = False,
    service: Annotated[
        bool, typer.Option("--service", help="A service account: tokens only, no password.")
    ] = False,
    password_stdin: PasswordStdin = False,
    json_output: JsonFlag = False,
) -> None:
    """Make a user (cluster admins). Asks for the password twice, unless --service."""
    session = open_session(ctx)
    password = None
    if service and password_stdin:
        raise InvalidRequest("a service account has no password: leave out --password-stdin")
    if password_stdin:
        [password] = read_stdin_lines("the password")
    elif not service:
        password = ask_new_password(f"Password for {username}")
    made = users.create_user(session, username, password=password, admin=admin, service=service)
    if json_output:
        print_json(made)
        return
    kind = "service account" if made.service else "cluster admin" if made.admin else "user"
    say(f"Created {kind} {made.username}")
    if made.service:
        say(
            f"It logs in with tokens only: `shipyard token create --user {made.username} "
            "--never-expires`"
        )


@app.command("list")
def list_command(ctx: typer.Context, json_output: JsonFlag = False) -> None:
    """Every user: admin, service account, active, whether it has a password."""
    found = users.list_users(open_session(ctx))
    if json_output:
        print_json(found)
    else:
        out.print(users_table(found))


@app.command()
def deactivate(ctx: typer.Context, username: Username, json_output: JsonFlag = False) -> None:
    """Stop a user (cluster admins): their tokens and sessions stop working at once."""
    user = users.deactivate_user(open_session(ctx), username)
    if json_output:
        print_json(user)
    else:
        say(f"Deactivated {user.username}: their tokens and sessions no longer work")


@app.command()
def activate(ctx: typer.Context, username: Username, json_output: JsonFlag = False) -> None:
    """Let a deactivated user back in (cluster admins); they log in again for a new token."""
    user = users.activate_user(open_session(ctx), username)
    if json_output:
        print_json(user)
    else:
        say(f"Activated {user.username}; tokens revoked before stay revoked: log in again")


@app.command("change-password")
def change_password(
    ctx: typer.Context,
    username: Annotated[
        str | None,
        typer.Argument(
            help="Whose (cluster admins: anyone's; default: your own).", metavar="[USERNAME]"
        ),
    ] = None,
    password_stdin: Annotated[
        bool,
        typer.Option(
            "--password-stdin",
            help="Read from stdin instead of asking: your own: the old password, then the "
            "new one, a line each; another user's (admins): the new one.",
        ),
    ] = False,
) -> None:
    """Change your own password (asks the old one), or as a cluster admin anyone's."""
    session = open_session(ctx)
    me = users.whoami(session)
    target = username or me.username
    own = target == me.username
    old = None
    if password_stdin:
        if own:
            old, new = read_stdin_lines("the old password", "the new password")
        else:
            [new] = read_stdin_lines("the new password")
    else:
        if own:
            old = ask_password(f"Current password of {target}")
        new = ask_new_password(f"New password of {target}")
    ctx.meta[LOGGING_IN] = True  # from here a 401 means a wrong old password
    users.change_password(session, target, new, old_password=old)
    say(f"Changed the password of {target}")
