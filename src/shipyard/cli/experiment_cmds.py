"""`shipyard experiment ...`: create, list, describe, logs, pause, activate, kill, archive,
unarchive, move, wait."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from shipyard.cli.context import open_session
from shipyard.cli.follow import follow_experiment
from shipyard.cli.output import JsonFlag, out, print_json, print_log_lines, say
from shipyard.cli.render import (
    experiments_table,
    fields_table,
    fmt_number,
    fmt_time,
    pareto_table,
    trials_table,
)
from shipyard.client import experiments, teams
from shipyard.client.submit import submit_experiment
from shipyard.common.api import ExperimentDetail, ExperimentResources
from shipyard.common.errors import InvalidRequest
from shipyard.common.states import ExperimentState

app = typer.Typer(no_args_is_help=True)

ExperimentId = Annotated[int, typer.Argument(help="Experiment id.", metavar="ID")]
FollowFlag = Annotated[
    bool, typer.Option("--follow", "-f", help="Keep printing new lines until the end.")
]


def _exit_for(experiment: ExperimentDetail) -> None:
    """0 when the experiment completed, 1 when it errored or was canceled."""
    if experiment.state != ExperimentState.COMPLETED:
        raise typer.Exit(1)


@app.command()
def create(
    ctx: typer.Context,
    config: Annotated[Path, typer.Argument(help="Experiment config (YAML).")],
    context_dir: Annotated[Path, typer.Argument(help="Directory with the training code.")],
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Watch the trials until the experiment ends.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Check the config here, upload the code directory, and start the experiment."""
    session = open_session(ctx)
    experiment = submit_experiment(session, config, context_dir)
    if json_output:
        if follow:
            experiment = experiments.wait_for_experiment(session, experiment.id)
        print_json(experiment)
    else:
        say(f"Created experiment {experiment.id}")
        if follow:
            experiment = follow_experiment(session, experiment.id)
    if follow:
        _exit_for(experiment)


@app.command("list")
def list_(
    ctx: typer.Context,
    limit: Annotated[int | None, typer.Option(min=1, help="Show at most this many.")] = None,
    state: Annotated[
        ExperimentState | None, typer.Option(case_sensitive=False, help="Only this state.")
    ] = None,
    include_archived: Annotated[
        bool, typer.Option("--all", help="Include archived experiments.")
    ] = False,
    workspace: Annotated[
        str | None, typer.Option("--workspace", help="Only this workspace's experiments.")
    ] = None,
    project: Annotated[
        str | None, typer.Option("--project", help="Only this project's (with --workspace).")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """List experiments, newest first (archived ones only with --all)."""
    if project is not None and workspace is None:
        raise typer.BadParameter(
            "a project is named within a workspace: give --workspace too",
            param_hint="'--project'",
        )
    found = experiments.list_experiments(
        open_session(ctx),
        limit=limit,
        state=state.value if state else None,
        archived="all" if include_archived else "false",
        workspace=workspace,
        project=project,
    )
    if json_output:
        print_json(found)
    elif not found and (workspace is not None or state is not None):
        where = f" in workspace {workspace}" if workspace is not None else ""
        where += f", project {project}" if project is not None else ""
        say(f"No {state.value + ' ' if state else ''}experiments{where}.")
    elif not found:
        say("No experiments yet; create one with `shipyard experiment create CONFIG DIR`.")
    else:
        out.print(experiments_table(found))


@app.command()
def describe(
    ctx: typer.Context, experiment_id: ExperimentId, json_output: JsonFlag = False
) -> None:
    """An experiment's fields, its trials, and its best validation."""
    exp = experiments.get_experiment(open_session(ctx), experiment_id)
    if json_output:
        print_json(exp)
        return
    direction = "smaller is better" if exp.smaller_is_better else "larger is better"
    best = fmt_number(exp.best_validation)
    if exp.best_trial_id is not None:
        best += f" (trial {exp.best_trial_id})"
    states = ", ".join(f"{s} {n}" for s, n in sorted(exp.trial_states.items()) if n)
    out.print(
        fields_table(
            [
                ("ID", exp.id),
                ("Name", exp.name),
                ("Description", exp.description),
                ("Labels", ", ".join(exp.labels)),
                ("Workspace / project", f"{exp.workspace} / {exp.project}"),
                ("State", f"{exp.state} (archived)" if exp.archived else exp.state),
                ("Searcher", exp.searcher),
                ("Metric", f"{exp.metric} ({direction})"),
                ("Progress", f"{exp.progress:.0%}"),
                ("Trials", f"{exp.num_trials}" + (f" ({states})" if states else "")),
                ("Best validation", best),
                ("Created", fmt_time(exp.created_at)),
                ("Ended", fmt_time(exp.ended_at)),
                ("Context", exp.context_id),
            ]
        )
    )
    if exp.trials:
        out.print(trials_table(exp.trials))
    front = exp.searcher_summary.get("pareto_front")
    if front:
        objectives = exp.config.get("searcher", {}).get("objectives") or []
        names = [o.get("metric", "") for o in objectives]
        out.print(pareto_table(front, names, exp.trials))


@app.command()
def logs(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    follow: FollowFlag = False,
    json_output: Annotated[
        bool, typer.Option("--json", help="One JSON object (a LogLine) per line.")
    ] = False,
) -> None:
    """The log lines of all the experiment's trials."""
    session = open_session(ctx)

    def read(after: int, wait_s: float):
        return experiments.get_experiment_logs(session, experiment_id, after=after, wait_s=wait_s)

    print_log_lines(read, follow=follow, json_output=json_output, show_trial=True)


@app.command()
def pause(ctx: typer.Context, experiment_id: ExperimentId, json_output: JsonFlag = False) -> None:
    """Pause: its trials stop and nothing new starts until `activate`."""
    _report(experiments.pause_experiment(open_session(ctx), experiment_id), json_output)


@app.command()
def activate(
    ctx: typer.Context, experiment_id: ExperimentId, json_output: JsonFlag = False
) -> None:
    """Resume a paused experiment."""
    _report(experiments.activate_experiment(open_session(ctx), experiment_id), json_output)


@app.command()
def kill(ctx: typer.Context, experiment_id: ExperimentId, json_output: JsonFlag = False) -> None:
    """Cancel the experiment and stop its trials."""
    _report(experiments.kill_experiment(open_session(ctx), experiment_id), json_output)


@app.command()
def archive(ctx: typer.Context, experiment_id: ExperimentId, json_output: JsonFlag = False) -> None:
    """Hide an ended experiment from `list` (nothing is deleted; `list --all` shows it)."""
    result = experiments.archive_experiment(open_session(ctx), experiment_id)
    _report(result, json_output, "archived")


@app.command()
def unarchive(
    ctx: typer.Context, experiment_id: ExperimentId, json_output: JsonFlag = False
) -> None:
    """Show an archived experiment in `list` again."""
    result = experiments.unarchive_experiment(open_session(ctx), experiment_id)
    _report(result, json_output, "no longer archived")


@app.command()
def move(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    workspace: Annotated[str, typer.Argument(help="The workspace it goes to.")],
    project: Annotated[str, typer.Argument(help="The project of that workspace.")],
    json_output: JsonFlag = False,
) -> None:
    """Move an experiment into another project, of its workspace or another one you may
    submit to; its trials and checkpoints go with it."""
    result = teams.move_experiment(open_session(ctx), experiment_id, workspace, project)
    _report(result, json_output, f"in workspace {workspace}, project {project}")


set_app = typer.Typer(no_args_is_help=True)
app.add_typer(set_app, name="set", help="Change priority, weight or max slots while it runs.")


@set_app.command("priority")
def set_priority(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    value: Annotated[int, typer.Argument(help="1..99; smaller runs first.")],
    json_output: JsonFlag = False,
) -> None:
    """Change the experiment's priority; queued trials are placed by it from now on."""
    _set(ctx, experiment_id, ExperimentResources.model_construct(priority=value), json_output)


@set_app.command("weight")
def set_weight(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    value: Annotated[float, typer.Argument(help="Share of the slots among equal priorities.")],
    json_output: JsonFlag = False,
) -> None:
    """Change the experiment's fair-share weight."""
    _set(ctx, experiment_id, ExperimentResources.model_construct(weight=value), json_output)


@set_app.command("max-slots")
def set_max_slots(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    value: Annotated[str, typer.Argument(help="Slots it may hold at once, or 'none'.")],
    json_output: JsonFlag = False,
) -> None:
    """Cap the slots the experiment holds at once ('none' removes the cap)."""
    cap = None if value.lower() == "none" else _positive_int(value)
    _set(ctx, experiment_id, ExperimentResources.model_construct(max_slots=cap), json_output)


def _positive_int(value: str) -> int:
    if not value.isdigit() or int(value) < 1:
        raise InvalidRequest(f"max slots must be a positive integer or 'none', got {value!r}")
    return int(value)


def _set(
    ctx: typer.Context, experiment_id: int, changes: ExperimentResources, json_output: bool
) -> None:
    # Not validated here: the master checks the values and names the field it refuses.
    result = experiments.set_experiment_resources(open_session(ctx), experiment_id, changes)
    if json_output:
        print_json(result)
    else:
        given = ", ".join(
            f"{k} {v}" for k, v in changes.model_dump(include=changes.model_fields_set).items()
        )
        say(f"Experiment {result.id}: {given}")


def _report(result, json_output: bool, now: str | None = None) -> None:
    """``now``: what the experiment now is, said instead of its state."""
    if json_output:
        print_json(result)
    else:
        say(f"Experiment {result.id} is {now or result.state}")


@app.command()
def wait(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    timeout: Annotated[
        float | None, typer.Option(min=0, help="Give up (exit 1) after this many seconds.")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Wait until the experiment ends; exit 0 if it completed, 1 otherwise."""
    exp = experiments.wait_for_experiment(open_session(ctx), experiment_id, timeout_s=timeout)
    if json_output:
        print_json(exp)
    else:
        best = fmt_number(exp.best_validation)
        say(f"Experiment {exp.id} {exp.state}; best {exp.metric} {best}")
    _exit_for(exp)
