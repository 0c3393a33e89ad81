"""`shipyard preview-search`: what a search will run, before running it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from shipyard.cli.context import open_session
from shipyard.cli.output import JsonFlag, out, print_json
from shipyard.cli.render import add_row
from shipyard.client.searcher import preview_search as fetch_preview
from shipyard.common.api import SearchPreview


def preview_table(plan: SearchPreview) -> Table:
    table = Table(title=f"{plan.searcher}: trials per rung and how far each trains")
    for column in ("Bracket", "Rung", "Trials", f"Length ({plan.unit})"):
        table.add_column(column, justify="right")
    table.add_column(f"Compute ({plan.unit})", justify="right")
    for bracket in plan.brackets:
        for i, rung in enumerate(bracket.rungs):
            compute = f"{bracket.compute:g}" if i == len(bracket.rungs) - 1 else ""
            add_row(
                table,
                str(bracket.bracket),
                str(rung.rung),
                str(rung.trials),
                str(rung.length),
                compute,
            )
    return table


def preview_search(
    ctx: typer.Context,
    config: Annotated[Path, typer.Argument(help="Experiment config (YAML).")],
    json_output: JsonFlag = False,
) -> None:
    """Print the brackets, rungs, trials per rung and training lengths of a search, and its
    total compute against a random search of the same trials. Runs nothing."""
    plan = fetch_preview(open_session(ctx), config)
    if json_output:
        print_json(plan)
        return
    if plan.brackets:
        out.print(preview_table(plan))
    ratio = f" ({plan.ratio:.0%} of the random search)" if plan.ratio is not None else ""
    out.print(f"Trials: {plan.total_trials}")
    out.print(
        f"Random search of the same {plan.total_trials} trials to the full length: "
        f"{plan.random_search_compute:g} {plan.unit}"
    )
    out.print(f"This search: {plan.compute:g} {plan.unit}{ratio}")
    if plan.note:
        out.print(plan.note)
