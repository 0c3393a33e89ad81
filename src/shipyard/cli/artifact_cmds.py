"""`shipyard trial artifacts | artifact-download`: the files a trial logged with
ctx.artifacts (registered on the trial group by shipyard.cli.main)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shipyard.cli.context import open_session
from shipyard.cli.output import CsvFlag, JsonFlag, print_list, say
from shipyard.cli.render import add_row, fmt_size, fmt_time
from shipyard.client import artifacts as client_artifacts
from shipyard.common.api_artifacts import ArtifactInfo

TrialId = Annotated[int, typer.Argument(help="Trial id.", metavar="ID")]


def artifacts_table(found: list[ArtifactInfo]) -> Table:
    table = Table()
    for column in ("ID", "Name", "Step", "Kind", "Media type", "Size", "SHA-256", "Created"):
        table.add_column(column, no_wrap=column in ("Name", "SHA-256"))
    for artifact in found:
        add_row(
            table,
            str(artifact.id),
            artifact.name,
            "-" if artifact.steps_completed is None else str(artifact.steps_completed),
            artifact.kind,
            artifact.media_type,
            fmt_size(artifact.size),
            artifact.sha256[:12],
            fmt_time(artifact.created_at),
        )
    return table


def artifacts(
    ctx: typer.Context,
    trial_id: TrialId,
    json_output: JsonFlag = False,
    csv_output: CsvFlag = False,
) -> None:
    """The files the trial logged with ctx.artifacts (images, texts, tables, any file), by
    step; `trial artifact-download ID ARTIFACT_ID` fetches one."""
    print_list(
        client_artifacts.list_artifacts(open_session(ctx), trial_id),
        artifacts_table,
        json_output=json_output,
        csv_output=csv_output,
        empty=f"Trial {trial_id} has no artifacts (training code logs them with ctx.artifacts).",
    )


def download(
    ctx: typer.Context,
    trial_id: TrialId,
    artifact_id: Annotated[
        int, typer.Argument(help="Artifact id (`trial artifacts ID`).", metavar="ARTIFACT_ID")
    ],
    dest: Annotated[
        Path | None,
        typer.Argument(
            help="A file, or a directory to put it in under its name (default: its name "
            "in the current directory).",
            metavar="[DEST]",
        ),
    ] = None,
) -> None:
    """Download one artifact of the trial, checked against its sha256."""
    written = client_artifacts.download_artifact(open_session(ctx), trial_id, artifact_id, dest)
    say(f"Downloaded artifact {artifact_id} of trial {trial_id} to {written}.")
