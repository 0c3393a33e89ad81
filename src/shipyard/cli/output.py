"""Where the CLI writes: data on stdout (tables, JSON with --json, CSV with --csv), errors in
red on stderr."""

from __future__ import annotations

import csv
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table
from rich.text import Text

from shipyard.client.contexts import Progress
from shipyard.client.logs import format_log_line, iter_log_lines
from shipyard.common.errors import InvalidRequest, ShipyardError

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


CsvFlag = Annotated[
    bool,
    typer.Option(
        "--csv", help="Print the table's columns as CSV (a header row, then one row each)."
    ),
]

Item = TypeVar("Item")


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


def _cell_text(cell: Any) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def table_rows(table: Table) -> tuple[list[str], list[list[str]]]:
    """A rich table's header and rows as plain text (styles dropped, cells as shown)."""
    header = [_cell_text(column.header) for column in table.columns]
    cells = [[_cell_text(cell) for cell in column.cells] for column in table.columns]
    return header, [list(row) for row in zip(*cells, strict=True)] if cells else []


def print_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    """RFC 4180 CSV on stdout: the header, then the rows (None as an empty field)."""
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow(["" if value is None else value for value in row])
    sys.stdout.flush()


def print_table_csv(table: Table) -> None:
    """The same columns and cells as the rich table, as CSV."""
    header, rows = table_rows(table)
    print_csv(header, rows)


def check_one_format(*, json_output: bool, csv_output: bool) -> None:
    if json_output and csv_output:
        raise InvalidRequest("choose one of --json and --csv")


def print_list(
    items: list[Item],
    table: Callable[[list[Item]], Table],
    *,
    json_output: bool = False,
    csv_output: bool = False,
    empty: str | None = None,
) -> None:
    """A list command's output: JSON, CSV (the table's columns; only the header when there
    is nothing), or the table (or `empty`, a sentence for a person, when there is nothing)."""
    check_one_format(json_output=json_output, csv_output=csv_output)
    if json_output:
        print_json(items)
    elif csv_output:
        print_table_csv(table(items))
    elif not items and empty is not None:
        say(empty)
    else:
        out.print(table(items))


@contextmanager
def transfer_bar(description: str, *, enabled: bool = True) -> Iterator[Progress | None]:
    """A progress bar on stderr for an upload or a download (bytes, speed, time left), given
    to the client as its `progress`; None (nothing shown) unless enabled (not with --json)
    and stderr is a terminal: pipes, files and CI logs never see it. It goes when done."""
    if not enabled or not sys.stderr.isatty():
        yield None
        return
    from rich import progress as rich_progress  # only a command that transfers pays for it

    columns = (
        rich_progress.TextColumn("{task.description}"),
        rich_progress.BarColumn(),
        rich_progress.DownloadColumn(),
        rich_progress.TransferSpeedColumn(),
        rich_progress.TimeRemainingColumn(),
    )
    with rich_progress.Progress(*columns, console=err, transient=True) as bar:
        task = bar.add_task(description, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None)

        yield update


def print_log_lines(
    read, *, follow: bool, json_output: bool, show_trial: bool, head: int | None = None
) -> None:
    """Print a trial's or an experiment's log lines; `read(after, wait_s)` gets one page;
    `head`: stop after that many lines."""
    lines = iter_log_lines(read, follow=follow)
    for count, line in enumerate(lines, start=1):
        if json_output:
            print_json(line, indent=None)
        else:
            typer.echo(format_log_line(line, show_trial=show_trial))
        if count == head:
            return  # no page past the N-th line is read


def say(message: str, style: str | None = None) -> None:
    """A line for a person; printed verbatim (square brackets are not rich markup here)."""
    out.print(Text(message, style=style or ""), soft_wrap=True)


def warn(message: str) -> None:
    """Something the user should know that did not stop the command: on stderr."""
    err.print(Text(f"warning: {message}", style="yellow"), soft_wrap=True)


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


def confirm_or_exit(question: str) -> None:
    """Ask before something that cannot be undone; no answer (end of input) is a no. Exit 1,
    having said nothing was done, unless the user says yes."""
    try:
        confirmed = typer.confirm(question, default=False, err=True)
    except typer.Abort:
        confirmed = False
    if not confirmed:
        err.print(Text("Nothing deleted (add --yes to skip the question).", style="red"))
        raise typer.Exit(1)
