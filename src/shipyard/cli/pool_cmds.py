"""`shipyard pool list`: each resource pool, its backend, slots and whether it can run."""

from __future__ import annotations

import typer
from rich.table import Table
from rich.text import Text

from shipyard.cli.context import open_session
from shipyard.cli.output import CsvFlag, JsonFlag, print_list
from shipyard.cli.render import add_row
from shipyard.client.pools import list_pools
from shipyard.common.api import PoolInfo

app = typer.Typer(no_args_is_help=True)


def pools_table(pools: list[PoolInfo]) -> Table:
    table = Table()
    for column in ("Pool", "Backend", "Slots used", "Scheduler", "Health"):
        table.add_column(column, justify="right" if column == "Slots used" else "left")
    for pool in pools:
        scheduler = pool.scheduler + (", preemption" if pool.preemption else "")
        add_row(
            table,
            pool.name + (" (default)" if pool.default else ""),
            pool.type,
            f"{pool.slots_used}/{pool.slots_total}",
            scheduler,
            Text("ok") if pool.healthy else Text(f"unreachable: {pool.problem}", style="red"),
        )
    return table


@app.command("list")
def list_command(
    ctx: typer.Context, json_output: JsonFlag = False, csv_output: CsvFlag = False
) -> None:
    """Each pool: its backend, slots in use of its total, scheduler, and health."""
    print_list(
        list_pools(open_session(ctx)), pools_table, json_output=json_output, csv_output=csv_output
    )
