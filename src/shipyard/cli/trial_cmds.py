"""`shipyard trial list | describe | logs | checkpoints | kill` (alias `shipyard t`); diff,
environment and rerun are in trial_record_cmds."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from typing import Annotated

import typer
from rich.text import Text

from shipyard.cli.context import open_session
from shipyard.cli.output import (
    CsvFlag,
    JsonFlag,
    out,
    print_json,
    print_list,
    print_log_lines,
    say,
)
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
from shipyard.common.errors import InvalidRequest
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
    csv_output: CsvFlag = False,
) -> None:
    """Trials of every experiment, those still live first, then the latest to end: e.g.
    recent failures with --state errored."""
    found = trials.list_trials(
        open_session(ctx),
        states=[s.value for s in state or []],
        restarted=True if restarted else None,
        limit=limit,
    )
    print_list(
        found,
        trial_list_table,
        json_output=json_output,
        csv_output=csv_output,
        empty="No trial matches.",
    )


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


_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([smhd])")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_PAGE = 1000  # lines a page holds at most (the master allows 10,000)


def parse_since(text: str, *, now: datetime | None = None) -> datetime:
    """`--since`: a duration back from now (90s, 10m, 2h, 1d, 1.5h) or a time in ISO 8601
    (2026-11-29T10:00, 2026-11-29 10:00:00, ...Z or +02:00; local time without an offset)."""
    given = text.strip()
    match = _DURATION.fullmatch(given.lower())
    if match:
        try:
            back = timedelta(seconds=float(match.group(1)) * _SECONDS[match.group(2)])
            return (now or datetime.now().astimezone()) - back
        except OverflowError:
            raise typer.BadParameter(f"{text!r} goes back too far", param_hint="--since") from None
    try:
        moment = datetime.fromisoformat(given)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither a duration (90s, 10m, 2h, 1d) nor a time "
            "(2026-11-29T10:00, 2026-11-29 10:00:00+00:00)",
            param_hint="--since",
        ) from None
    return moment if moment.tzinfo is not None else moment.astimezone()


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
    head: Annotated[
        int | None,
        typer.Option("--head", min=1, metavar="N", help="Only the first N lines."),
    ] = None,
    tail: Annotated[
        int | None,
        typer.Option(
            "--tail",
            min=1,
            max=10_000,
            metavar="N",
            help="Only the last N lines (with -f: then the new ones as they come).",
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            "--since",
            metavar="WHEN",
            help="Only lines since then: a duration back from now (90s, 10m, 2h, 1d) or a "
            "time (2026-11-29T10:00; local time unless it has an offset).",
        ),
    ] = None,
    grep: Annotated[
        str | None,
        typer.Option(
            "--grep",
            metavar="TEXT",
            help="Only lines that contain TEXT (case-sensitive, not a regex; filtered on the "
            "master).",
        ),
    ] = None,
) -> None:
    """The trial's log lines (every run and rank; a multi-rank run's prefixed by rank).
    --head, --tail, --since and --grep are applied by the master: only the lines they keep
    are sent."""
    if head is not None and tail is not None:
        raise InvalidRequest("choose one of --head and --tail")
    if head is not None and follow:
        raise InvalidRequest("--head stops after N lines: it cannot be used with --follow")
    if grep == "":
        raise typer.BadParameter("give a text to look for", param_hint="--grep")
    since_time = parse_since(since) if since is not None else None
    session = open_session(ctx)
    first = [True]

    def read(after: int, wait_s: float):
        last = tail if first[0] else None  # the tail once; then (with -f) what follows it
        first[0] = False
        return trials.get_trial_logs(
            session,
            trial_id,
            after=after,
            limit=min(head, _PAGE) if head is not None else _PAGE,
            wait_s=wait_s,
            rank=rank,
            tail=last,
            since=since_time,
            grep=grep,
        )

    # --tail without -f: the last N lines there are now, not what a running trial adds.
    most = tail if tail is not None and not follow else head
    print_log_lines(read, follow=follow, json_output=json_output, show_trial=False, head=most)


@app.command()
def kill(ctx: typer.Context, trial_id: TrialId, json_output: JsonFlag = False) -> None:
    """Kill one trial: it ends CANCELED and its experiment goes on with its other trials
    (as `det trial kill`). A running trial is terminated now; its checkpoints stay."""
    result = trials.kill_trial(open_session(ctx), trial_id)
    if json_output:
        print_json(result)
    elif result.state == TrialState.CANCELED:
        say(f"Trial {trial_id} killed: CANCELED. Its experiment goes on with its other trials.")
    else:
        say(
            f"Trial {trial_id} is being killed: its process is terminated now, and the trial "
            "ends CANCELED once it has exited. Its experiment goes on with its other trials."
        )


@app.command("checkpoints")
def checkpoints_(
    ctx: typer.Context,
    trial_id: TrialId,
    json_output: JsonFlag = False,
    csv_output: CsvFlag = False,
) -> None:
    """The trial's checkpoints by step."""
    print_list(
        checkpoints.list_trial_checkpoints(open_session(ctx), trial_id),
        checkpoints_table,
        json_output=json_output,
        csv_output=csv_output,
        empty=f"Trial {trial_id} has no checkpoints.",
    )
