"""The `shipyard` command: global options, command groups, and one place that turns every
ShipyardError into a red message and exit code 1 (a user never sees a traceback)."""

from __future__ import annotations

import os
import sys
from typing import Annotated, Any

import typer
from rich.text import Text
from typer.core import TyperGroup

from shipyard import __version__
from shipyard.cli import (
    admin_cmds,
    artifact_cmds,
    checkpoint_cmds,
    config_cmds,
    experiment_cmds,
    group_cmds,
    job_cmds,
    master_cmds,
    model_cmds,
    pool_cmds,
    role_cmds,
    search_cmds,
    secret_cmds,
    token_cmds,
    trial_cmds,
    trial_record_cmds,
    user_cmds,
    workspace_cmds,
)
from shipyard.cli.output import err, print_error
from shipyard.common.errors import ShipyardError, Unauthorized

# Determined's short names, as its users type them (`shipyard e list`, `shipyard t logs 3 -f`).
# Resolved by the root group: --help and shell completion list each group once, under its
# name, and no start of the command builds a group twice.
ALIASES = {
    "e": "experiment",
    "t": "trial",
    "c": "checkpoint",
    "j": "job",
    "rp": "pool",
    "u": "user",
    "w": "workspace",
    "p": "project",
}


class ShipyardGroup(TyperGroup):
    """The root group: every subcommand runs inside its invoke, so errors are caught here."""

    def get_command(self, ctx: typer.Context, cmd_name: str) -> Any:  # type: ignore[override]
        return super().get_command(ctx, ALIASES.get(cmd_name, cmd_name))

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except ShipyardError as error:
            print_error(error)
            if (
                isinstance(error, Unauthorized)
                and not ctx.meta.get(user_cmds.LOGGING_IN)
                and "shipyard user login" not in error.message
            ):
                err.print(
                    Text(
                        "hint: log in to this master with `shipyard user login`, "
                        "or set SHIPYARD_TOKEN to an API token",
                        style="dim",
                    ),
                    soft_wrap=True,
                )
            raise typer.Exit(1) from None
        except BrokenPipeError:
            # The reader went away (`shipyard ... | head`): stop quietly, as Unix tools do.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise typer.Exit(0) from None
        except OSError as error:
            # A file we could not read or write, a signal we may not send: say which and why.
            err.print(Text(f"error: {error}", style="bold red"), soft_wrap=True)
            raise typer.Exit(1) from None


app = typer.Typer(
    cls=ShipyardGroup,
    name="shipyard",
    help="Shipyard: train, search and track deep-learning experiments.",
    no_args_is_help=True,
    # --install-completion / --show-completion (typer's: bash, zsh, fish, PowerShell).
    add_completion=True,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"shipyard {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    master: Annotated[
        str | None,
        typer.Option(
            "--master",
            "-m",
            help="Master URL. Default: $SHIPYARD_MASTER, then the master `shipyard up` "
            "started ($SHIPYARD_HOME/master.json), then http://127.0.0.1:8080.",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version."
        ),
    ] = False,
) -> None:
    ctx.obj = {"master": master}


app.command("up")(master_cmds.up)
app.command("down")(master_cmds.down)
app.command("status")(master_cmds.status)
app.command("preview-search")(search_cmds.preview_search)
app.add_typer(experiment_cmds.app, name="experiment", help="Create, watch and control experiments.")
app.add_typer(trial_cmds.app, name="trial", help="Inspect trials and read their logs.")
trial_cmds.app.command("diff")(trial_record_cmds.diff)
trial_cmds.app.command("environment")(trial_record_cmds.environment)
trial_cmds.app.command("rerun")(trial_record_cmds.rerun)
trial_cmds.app.command("artifacts")(artifact_cmds.artifacts)
trial_cmds.app.command("artifact-download")(artifact_cmds.download)
app.add_typer(job_cmds.app, name="job", help="The scheduler's queue and why each job waits.")
app.add_typer(pool_cmds.app, name="pool", help="Resource pools: backend, slots, health.")
app.add_typer(
    checkpoint_cmds.app, name="checkpoint", help="List, describe, download and delete checkpoints."
)
app.add_typer(model_cmds.app, name="model", help="The model registry: models, versions, aliases.")
app.add_typer(config_cmds.app, name="config", help="Check experiment configs locally.")
app.add_typer(user_cmds.app, name="user", help="Log in and out; users and their passwords.")
app.add_typer(token_cmds.app, name="token", help="API tokens for scripts, CI, service accounts.")
app.add_typer(admin_cmds.app, name="admin", help="Cluster admins: the audit log, key rotation.")
app.add_typer(workspace_cmds.app, name="workspace", help="Workspaces, their quotas and usage.")
app.add_typer(workspace_cmds.project_app, name="project", help="Projects within workspaces.")
app.add_typer(group_cmds.app, name="group", help="Groups of users, to give roles to.")
app.add_typer(role_cmds.app, name="role", help="Roles of users and groups, by workspace.")
app.add_typer(secret_cmds.app, name="secret", help="A workspace's secrets: set, list, delete.")
admin_cmds.app.command("rotate-keys")(secret_cmds.rotate_keys)


# The root options that take a value: the token after them is that value, not a command.
_VALUED_OPTIONS = {"--master", "-m"}


def _named_group(args: list[str]) -> str | None:
    """The command group the arguments name (`experiment` in `-m URL experiment list`)."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg in _VALUED_OPTIONS:
            skip = True
        elif not arg.startswith("-"):
            return arg
    return None


def run() -> None:
    """The `shipyard` command. Typer reads the signature of every command of every group it
    holds at each start; a command line that names a group gets only that group (a tenth of
    a second less per command). Help and errors for it are the same: they only name it."""
    named = _named_group(sys.argv[1:])
    named = ALIASES.get(named, named) if named is not None else None
    if any(group.name == named for group in app.registered_groups):
        app.registered_groups = [group for group in app.registered_groups if group.name == named]
        app.registered_commands = []
    app()


if __name__ == "__main__":
    run()
