"""`shipyard trial list | describe | logs | checkpoints`."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.text import Text

from shipyard.cli.context import open_session
from shipyard.cli.output import JsonFlag, out, print_json, print_log_lines, say
from shipyard.cli.render import (
    checkpoints_table,
    fields_table,
    fmt_number,
    fmt_time,
    metrics_table,
    runs_table,
    trial_list_table,
)
from shipyard.client import checkpoints, trials
from shipyard.common.states import TrialState

app = typer.Typer(no_args_is_help=True)

TrialId = Annotated[int, typer.Argument(help="Trial id.", metavar="ID")]


@app.command("list")
def list_(
    ctx: typer.Context,
    state: Annotated[
        list[TrialState] | None,
        typer.Option(
            case_sensitive=False, help="Only trials in this state (repeat it for several)."
        ),
    ] = None,
    restarted: Annotated[
        bool, typer.Option("--restarted", help="Only trials that restarted at least once.")
    ] = False,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="Show at most this many.")] = 20,
    json_output: JsonFlag = False,
) -> None:
    """Trials of every experiment, those still live first, then the latest to end: e.g.
    recent failures with --state errored."""
    found = trials.list_trials(
        open_session(ctx),
        states=[s.value for s in state or []],
        restarted=True if restarted else None,
        limit=limit,
    )
    if json_output:
        print_json(found)
    elif not found:
        say("No trial matches.")
    else:
        out.print(trial_list_table(found))


@app.command()
def describe(ctx: typer.Context, trial_id: TrialId, json_output: JsonFlag = False) -> None:
    """A trial's fields, hyperparameters, metric summaries and latest checkpoint."""
    trial = trials.get_trial(open_session(ctx), trial_id)
    if json_output:
        print_json(trial)
        return
    metric = trial.searcher_metric or "validation"
    out.print(
        fields_table(
            [
                ("ID", trial.id),
                ("Experiment", trial.experiment_id),
                ("State", trial.state),
                ("Exit reason", trial.exit_reason),
                ("Hyperparameters", json.dumps(trial.hparams, sort_keys=True)),
                ("Steps completed", trial.steps_completed),
                (f"Best {metric}", fmt_number(trial.best_validation)),
                (f"Latest {metric}", fmt_number(trial.latest_validation)),
                ("Latest checkpoint", trial.latest_checkpoint),
                ("Restarts", f"{trial.restarts} (run {trial.run_id})"),
                ("Slots", ", ".join(trial.slots)),
                ("Seed", trial.seed),
                ("Workspace", trial.workspace),
                ("Started", fmt_time(trial.started_at)),
                ("Ended", fmt_time(trial.ended_at)),
            ]
        )
    )
    if trial.metrics:
        out.print(metrics_table(trial.metrics))
    if trial.runs:
        out.print(runs_table(trial.runs))
    if trial.state == TrialState.ERRORED and trial.last_log_lines:
        out.print(Text("Last log lines", style="bold red"))
        for line in trial.last_log_lines:
            out.print(Text(line))


@app.command()
def logs(
    ctx: typer.Context,
    trial_id: TrialId,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new lines until the trial ends.")
    ] = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="One JSON object (a LogLine) per line.")
    ] = False,
    rank: Annotated[
        int | None,
        typer.Option(
            "--rank", min=0, help="Only this rank's lines (a trial run by a launcher).", metavar="R"
        ),
    ] = None,
) -> None:
    """The trial's log lines (every run and rank; a multi-rank run's prefixed by rank)."""
    session = open_session(ctx)

    def read(after: int, wait_s: float):
        return trials.get_trial_logs(session, trial_id, after=after, wait_s=wait_s, rank=rank)

    print_log_lines(read, follow=follow, json_output=json_output, show_trial=False)


@app.command("checkpoints")
def checkpoints_(ctx: typer.Context, trial_id: TrialId, json_output: JsonFlag = False) -> None:
    """The trial's checkpoints by step."""
    found = checkpoints.list_trial_checkpoints(open_session(ctx), trial_id)
    if json_output:
        print_json(found)
    elif not found:
        say(f"Trial {trial_id} has no checkpoints.")
    else:
        out.print(checkpoints_table(found))
