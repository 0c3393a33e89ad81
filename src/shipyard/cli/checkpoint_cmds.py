"""`shipyard checkpoint list | describe | download | delete` (alias `shipyard c`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from shipyard.cli.context import open_session
from shipyard.cli.output import (
    CsvFlag,
    JsonFlag,
    confirm_or_exit,
    out,
    print_json,
    print_list,
    say,
    transfer_bar,
)
from shipyard.cli.render import checkpoints_table, fields_table, fmt_number, fmt_size, fmt_time
from shipyard.client import checkpoints
from shipyard.common.api import CheckpointInfo
from shipyard.common.errors import InvalidRequest

app = typer.Typer(no_args_is_help=True)

Uuid = Annotated[str, typer.Argument(help="Checkpoint UUID.", metavar="UUID")]


@app.command("list")
def list_(
    ctx: typer.Context,
    experiment_id: Annotated[int, typer.Argument(help="Experiment id.", metavar="EXPERIMENT")],
    json_output: JsonFlag = False,
    csv_output: CsvFlag = False,
) -> None:
    """The experiment's checkpoints."""
    print_list(
        checkpoints.list_checkpoints(open_session(ctx), experiment_id),
        checkpoints_table,
        json_output=json_output,
        csv_output=csv_output,
        empty=f"Experiment {experiment_id} has no checkpoints yet.",
    )


def _fields(ckpt: CheckpointInfo) -> list[tuple[str, object]]:
    return [
        ("UUID", ckpt.uuid),
        ("Experiment", ckpt.experiment_id),
        ("Trial", ckpt.trial_id),
        ("Run", ckpt.run_id),
        ("Steps completed", ckpt.steps_completed),
        ("Validation", fmt_number(ckpt.validation)),
        ("State", ckpt.state),
        ("Size", f"{fmt_size(ckpt.size)} in {len(ckpt.resources)} files"),
        ("Storage path", ckpt.storage_path),
        ("Created", fmt_time(ckpt.created_at)),
        ("Metadata", json.dumps(ckpt.metadata, sort_keys=True) if ckpt.metadata else None),
    ]


@app.command()
def describe(ctx: typer.Context, uuid: Uuid, json_output: JsonFlag = False) -> None:
    """A checkpoint's trial, step, searcher metric value, size, files and metadata."""
    ckpt = checkpoints.get_checkpoint(open_session(ctx), uuid)
    if json_output:
        print_json(ckpt)
        return
    out.print(fields_table(_fields(ckpt)))
    if ckpt.resources:
        out.print(Text("Files", style="bold"))
        files = sorted(ckpt.resources.items())
        out.print(fields_table((path, fmt_size(size)) for path, size in files))


def _which(
    ctx: typer.Context, best: bool, latest: bool, exp: int | None, trial: int | None
) -> CheckpointInfo | None:
    """The checkpoint --best or --latest names (None: a UUID is given instead)."""
    if best and latest:
        raise InvalidRequest("choose one of --best and --latest")
    if not (best or latest):
        if exp is not None or trial is not None:
            raise InvalidRequest("--experiment and --trial go with --best or --latest")
        return None
    if (exp is None) == (trial is None):
        raise InvalidRequest("--best and --latest need one of --experiment ID and --trial ID")
    return checkpoints.top_checkpoint(
        open_session(ctx), experiment_id=exp, trial_id=trial, order="best" if best else "latest"
    )


@app.command()
def download(
    ctx: typer.Context,
    first: Annotated[
        str | None,
        typer.Argument(
            help="Checkpoint UUID, then the directory to unpack into (created if needed; "
            "default: checkpoints/UUID). With --best or --latest: the directory only.",
            metavar="[UUID] [DEST]",
            show_default=False,
        ),
    ] = None,
    second: Annotated[str | None, typer.Argument(hidden=True, show_default=False)] = None,
    best: Annotated[
        bool,
        typer.Option(
            "--best", help="The best checkpoint, by the searcher's metric and smaller_is_better."
        ),
    ] = False,
    latest: Annotated[bool, typer.Option("--latest", help="The latest checkpoint.")] = False,
    experiment: Annotated[
        int | None,
        typer.Option(
            "--experiment", "-e", metavar="ID", help="With --best/--latest: of this experiment."
        ),
    ] = None,
    trial: Annotated[
        int | None,
        typer.Option("--trial", "-t", metavar="ID", help="With --best/--latest: of this trial."),
    ] = None,
    json_output: Annotated[
        bool,
        typer.Option("--json", help="Print the checkpoint, where and which files, as JSON."),
    ] = False,
) -> None:
    """Download a checkpoint's files into a directory: one by UUID, or an experiment's or a
    trial's best (`--best --experiment 3`) or latest (`--latest --trial 7`)."""
    chosen = _which(ctx, best, latest, experiment, trial)
    if chosen is not None:
        if second is not None:
            raise InvalidRequest("with --best or --latest, give only the directory")
        uuid, dest_text = chosen.uuid, first
    else:
        if first is None:
            raise InvalidRequest("give a checkpoint UUID, or --best or --latest")
        uuid, dest_text = first, second
    dest = Path(dest_text) if dest_text else Path("checkpoints", uuid)
    session = open_session(ctx)
    with transfer_bar(f"checkpoint {uuid[:8]}", enabled=not json_output) as progress:
        files = checkpoints.download_checkpoint(session, uuid, dest, progress=progress)
    if json_output:
        info = chosen or checkpoints.get_checkpoint(session, uuid)
        print_json({"checkpoint": info, "path": str(dest), "files": files})
        return
    what = ""
    if chosen is not None:
        value = "" if chosen.validation is None else f", validation {fmt_number(chosen.validation)}"
        what = f" (trial {chosen.trial_id}, step {chosen.steps_completed}{value})"
    say(f"Downloaded checkpoint {uuid}{what} ({len(files)} files) to {dest}")


@app.command()
def delete(
    ctx: typer.Context,
    uuid: Uuid,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json_output: JsonFlag = False,
) -> None:
    """Delete a checkpoint's files from its storage (its record stays, DELETED). Refused for
    the checkpoint a trial that may still run resumes from: kill the trial or let it end."""
    session = open_session(ctx)
    ckpt = checkpoints.get_checkpoint(session, uuid)
    if not yes:
        question = (
            f"Delete checkpoint {uuid} (trial {ckpt.trial_id}, step {ckpt.steps_completed}, "
            f"{fmt_size(ckpt.size)}) and its files from storage?"
        )
        confirm_or_exit(question)
    deleted = checkpoints.delete_checkpoint(session, uuid)
    if json_output:
        print_json(deleted)
    else:
        say(f"Deleted checkpoint {uuid}: {len(ckpt.resources)} files removed from storage.")
