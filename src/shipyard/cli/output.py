"""Where the CLI writes: data on stdout (tables, or JSON with --json), errors in red on stderr."""

from __future__ import annotations

import json
import os
import sys
from typing import Annotated, Any

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.text import Text

from shipyard.client.logs import format_log_line, iter_log_lines
from shipyard.common.errors import ShipyardError

# Piped output (grep, less, CI logs) gets wide tables instead of rich's 80-column fallback.
PIPED_WIDTH = 200


def _width() -> int | None:
    return None if sys.stdout.isatty() or os.environ.get("COLUMNS") else PIPED_WIDTH


# Rich looks sys.stdout/sys.stderr up on every write, so test runners that swap them still work.
out = Console(highlight=False, width=_width())
err = Console(stderr=True, highlight=False)

JsonFlag = Annotated[
    bool, typer.Option("--json", help="Print the API's JSON and nothing else on stdout.")
]


def to_jsonable(data: Any) -> Any:
    if isinstance(data, BaseModel):
        return data.model_dump(mode="json")
    if isinstance(data, list | tuple):
        return [to_jsonable(item) for item in data]
    if isinstance(data, dict):
        return {key: to_jsonable(value) for key, value in data.items()}
    return data


def print_json(data: Any, *, indent: int | None = 2) -> None:
    typer.echo(json.dumps(to_jsonable(data), indent=indent))


def print_log_lines(read, *, follow: bool, json_output: bool, show_trial: bool) -> None:
    """Print a trial's or an experiment's log lines; `read(after, wait_s)` gets one page."""
    for line in iter_log_lines(read, follow=follow):
        if json_output:
            print_json(line, indent=None)
        else:
            typer.echo(format_log_line(line, show_trial=show_trial))


def say(message: str, style: str | None = None) -> None:
    """A line for a person; printed verbatim (square brackets are not rich markup here)."""
    out.print(Text(message, style=style or ""), soft_wrap=True)


def detail_line(detail: dict) -> str:
    where = detail.get("path") or ""
    if detail.get("line"):
        where += f" (line {detail['line']}, column {detail.get('column') or 1})"
    message = detail.get("message", "")
    return f"  {where}: {message}" if where else f"  {message}"


def print_error(error: ShipyardError) -> None:
    err.print(Text(f"error: {error.message}", style="bold red"), soft_wrap=True)
    for detail in error.details:
        err.print(Text(detail_line(detail), style="red"), soft_wrap=True)
