"""`shipyard checkpoint list | download`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shipyard.cli.context import open_session
from shipyard.cli.output import JsonFlag, out, print_json, say
from shipyard.cli.render import checkpoints_table
from shipyard.client import checkpoints

app = typer.Typer(no_args_is_help=True)


@app.command("list")
def list_(
    ctx: typer.Context,
    experiment_id: Annotated[int, typer.Argument(help="Experiment id.", metavar="EXPERIMENT")],
    json_output: JsonFlag = False,
) -> None:
    """The experiment's checkpoints."""
    found = checkpoints.list_checkpoints(open_session(ctx), experiment_id)
    if json_output:
        print_json(found)
    elif not found:
        say(f"Experiment {experiment_id} has no checkpoints yet.")
    else:
        out.print(checkpoints_table(found))


@app.command()
def download(
    ctx: typer.Context,
    uuid: Annotated[str, typer.Argument(help="Checkpoint UUID.")],
    dest: Annotated[Path, typer.Argument(help="Directory to unpack into (created if needed).")],
) -> None:
    """Download a checkpoint's files into a directory."""
    files = checkpoints.download_checkpoint(open_session(ctx), uuid, dest)
    say(f"Downloaded checkpoint {uuid} ({len(files)} files) to {dest}")
