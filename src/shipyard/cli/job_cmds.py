"""`shipyard job list`: what runs, and the queue in scheduling order with why each waits."""

from __future__ import annotations

import typer
from rich.table import Table

from shipyard.cli.context import open_session
from shipyard.cli.output import CsvFlag, JsonFlag, print_list
from shipyard.cli.render import add_row, styled_state
from shipyard.client.jobs import list_jobs
from shipyard.common.api import JobInfo

app = typer.Typer(no_args_is_help=True)


def jobs_table(jobs: list[JobInfo]) -> Table:
    table = Table()
    for column in ("#", "Trial", "Experiment", "Pool", "State", "Priority", "Weight", "Slots"):
        table.add_column(column, justify="left" if column in ("Pool", "State") else "right")
    table.add_column("Why")
    for job in jobs:
        add_row(
            table,
            str(job.position),
            str(job.trial_id),
            f"{job.experiment_id} {job.experiment_name}",
            job.resource_pool,
            styled_state(job.state),
            str(job.priority),
            f"{job.weight:g}",
            str(job.slots_needed),
            job.reason,
        )
    return table


@app.command("list")
def list_command(
    ctx: typer.Context, json_output: JsonFlag = False, csv_output: CsvFlag = False
) -> None:
    """Running trials, then queued ones in the order the scheduler takes them."""
    print_list(
        list_jobs(open_session(ctx)),
        jobs_table,
        json_output=json_output,
        csv_output=csv_output,
        empty="No jobs: nothing runs or waits.",
    )
