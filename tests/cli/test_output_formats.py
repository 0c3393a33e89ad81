"""The CLI's output helpers: a table as CSV (the same columns and cells), one format at a
time, and the transfer progress bar only on a terminal."""

from __future__ import annotations

import csv
import io
import sys

import pytest
from rich.table import Table
from rich.text import Text

from shipyard.cli import output
from shipyard.common.errors import InvalidRequest


def table() -> Table:
    made = Table()
    for column in ("ID", "Name", "State"):
        made.add_column(column)
    made.add_row("1", Text('a, "quoted" [b]'), Text("RUNNING", style="cyan"))
    made.add_row("2", "plain", "")
    return made


def test_a_table_prints_as_csv_with_its_columns_and_plain_cells(capsys):
    output.print_table_csv(table())
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows == [
        ["ID", "Name", "State"],
        ["1", 'a, "quoted" [b]', "RUNNING"],
        ["2", "plain", ""],
    ]


def test_an_empty_list_prints_only_the_header_as_csv(capsys):
    output.print_list([], lambda items: table() if items else Table("ID"), csv_output=True)
    assert capsys.readouterr().out == "ID\n"


def test_json_and_csv_together_are_refused():
    with pytest.raises(InvalidRequest, match="choose one of --json and --csv"):
        output.print_list([], lambda items: table(), json_output=True, csv_output=True)


def test_the_transfer_bar_shows_only_on_a_terminal_and_never_with_json(monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: False, raising=False)
    with output.transfer_bar("upload") as progress:
        assert progress is None
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    with output.transfer_bar("upload", enabled=False) as progress:
        assert progress is None
    with output.transfer_bar("upload") as progress:
        assert progress is not None
        progress(0, 10)
        progress(10, 10)
