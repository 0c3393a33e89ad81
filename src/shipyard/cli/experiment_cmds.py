"""`shipyard experiment ...`: create, list, describe, logs, pause, activate, kill, archive,
unarchive, move, wait, fork, continue, delete, and set (name, description, labels,
priority, weight, max slots)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from shipyard.cli.context import open_session
from shipyard.cli.follow import follow_experiment
from shipyard.cli.output import (
    CsvFlag,
    JsonFlag,
    check_one_format,
    confirm_or_exit,
    out,
    print_json,
    print_log_lines,
    print_table_csv,
    say,
    transfer_bar,
    warn,
)
from shipyard.cli.render import (
    experiments_table,
    fields_table,
    fmt_number,
    fmt_time,
    pareto_table,
    trials_table,
)
from shipyard.client import experiments, teams
from shipyard.client.submit import read_config_text, submit_experiment
from shipyard.common.api import ExperimentDetail, ExperimentResources
from shipyard.common.errors import InvalidRequest
from shipyard.common.states import ExperimentState

# The help text only: the overrides' module (and YAML) load when an override is given.
OVERRIDE_HELP = (
    "KEY=VALUE: set a field of the config; nested fields by dots "
    "(resources.slots_per_trial=2), values read as YAML; repeat it"
)

app = typer.Typer(no_args_is_help=True)

ExperimentId = Annotated[int, typer.Argument(help="Experiment id.", metavar="ID")]
FollowFlag = Annotated[
    bool, typer.Option("--follow", "-f", help="Keep printing new lines until the end.")
]


ConfigOverrides = Annotated[
    list[str] | None,
    typer.Option("--config", metavar="KEY=VALUE", help=OVERRIDE_HELP),
]


def _overrides(texts: list[str] | None) -> dict[str, Any]:
    from shipyard.common.config.overrides import parse_overrides

    return parse_overrides(texts or [])


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
    overrides: ConfigOverrides = None,
    paused: Annotated[
        bool, typer.Option("--paused", help="Create it paused: start it with `activate`.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Check the config here, upload the code directory, and start the experiment."""
    if paused and follow:
        raise typer.BadParameter("a paused experiment has nothing to follow", param_hint="'-f'")
    session = open_session(ctx)
    with transfer_bar("code", enabled=not json_output) as progress:
        experiment = submit_experiment(
            session,
            config,
            context_dir,
            overrides=_overrides(overrides),
            paused=paused,
            progress=progress,
            warn=warn,
        )
    show_created(session, experiment, follow, json_output, " (paused)" if paused else "")


@app.command("list")
def list_(
    ctx: typer.Context,
    limit: Annotated[
        int | None, typer.Option(min=1, max=10_000, help="Show at most this many (100).")
    ] = None,
    offset: Annotated[int, typer.Option(min=0, help="Skip this many (newest first).")] = 0,
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
    labels: Annotated[
        list[str] | None,
        typer.Option("--label", "-l", help="Only those with this label (repeat: with each)."),
    ] = None,
    user: Annotated[
        str | None, typer.Option("--user", help="Only those this user submitted.")
    ] = None,
    name: Annotated[
        str | None, typer.Option("--name", help="Only those whose name contains this.")
    ] = None,
    json_output: JsonFlag = False,
    csv_output: CsvFlag = False,
) -> None:
    """List experiments, newest first (archived ones only with --all); says how many more
    there are past the page."""
    check_one_format(json_output=json_output, csv_output=csv_output)
    if project is not None and workspace is None:
        raise typer.BadParameter(
            "a project is named within a workspace: give --workspace too",
            param_hint="'--project'",
        )
    page = experiments.list_experiments_page(
        open_session(ctx),
        limit=limit,
        offset=offset,
        state=state.value if state else None,
        archived="all" if include_archived else "false",
        workspace=workspace,
        project=project,
        labels=labels or [],
        user=user,
        name=name,
    )
    found = page.items
    filtered = any(x is not None for x in (workspace, state, user, name)) or bool(labels)
    if json_output:
        print_json(found)
    elif csv_output:
        print_table_csv(experiments_table(found))
    elif not found and page.total:
        say(f"No experiments past the first {page.total} (offset {offset}).")
    elif not found and filtered:
        where = f" in workspace {workspace}" if workspace is not None else ""
        where += f", project {project}" if project is not None else ""
        what = " match the filters" if user is not None or name or labels else ""
        say(f"No {state.value + ' ' if state else ''}experiments{where}{what}.")
    elif not found:
        say("No experiments yet; create one with `shipyard experiment create CONFIG DIR`.")
    else:
        out.print(experiments_table(found))
        if page.more:
            first, last = offset + 1, offset + len(found)
            say(
                f"Experiments {first}-{last} of {page.total}; {page.more} more: "
                f"--offset {last}" + (f" --limit {limit}" if limit else ""),
                style="dim",
            )


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
                ("Code", code_summary(exp.code)),
                *([("Forked from", exp.forked_from)] if exp.forked_from is not None else []),
                *([("Rerun of trial", exp.rerun_of)] if exp.rerun_of is not None else []),
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


@app.command()
def fork(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    overrides: ConfigOverrides = None,
    config_file: Annotated[
        Path | None,
        typer.Option(
            "--config-file",
            help="A config (YAML, whole or partial) merged over the original's: sections key "
            "by key, other values replaced; --config is applied after it.",
        ),
    ] = None,
    paused: Annotated[bool, typer.Option("--paused", help="Create it paused.")] = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Watch the trials until the new one ends.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """A new experiment from this one's config and code snapshot, with changes; this one
    is left as it is."""
    if paused and follow:
        raise typer.BadParameter("a paused experiment has nothing to follow", param_hint="'-f'")
    session = open_session(ctx)
    experiment = experiments.fork_experiment(
        session,
        experiment_id,
        overrides=_overrides(overrides),
        config_yaml=read_config_text(config_file) if config_file else None,
        config_file=config_file.name if config_file else "config.yaml",
        paused=paused,
    )
    show_created(session, experiment, follow, json_output, f" (forked from {experiment_id})")


@app.command("continue")
def continue_(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    max_length: Annotated[
        int | None,
        typer.Option(
            "--max-length",
            min=1,
            help="Train to this length now (searcher.max_length, or max_time with a "
            "time_metric, in its unit): its trials that stopped short of it go on.",
        ),
    ] = None,
    max_trials: Annotated[
        int | None,
        typer.Option("--max-trials", min=1, help="A random search's new number of trials."),
    ] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Watch the trials until it ends again.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Train an ended single, random or grid search further, in place: its trials that did
    not complete (and those a longer --max-length lets go on) resume from their latest
    checkpoints; --max-trials adds trials to a random search. Its metrics, checkpoints and
    trials are kept."""
    session = open_session(ctx)
    result = experiments.continue_experiment(
        session, experiment_id, max_length=max_length, max_trials=max_trials
    )
    if json_output and not follow:
        print_json(result)
        return
    if not json_output:
        say(f"Continued experiment {result.id}")
    if follow:
        if json_output:
            exp = experiments.wait_for_experiment(session, experiment_id)
            print_json(exp)
        else:
            exp = follow_experiment(session, experiment_id)
        _exit_for(exp)


def code_summary(code: dict[str, Any] | None) -> str:
    """One line of what git said at submit: commit, branch, uncommitted and unpushed."""
    if not code:
        return "(not a git work tree)"
    parts = [
        str(code.get("commit") or "no commit")[:12],
        f"on {code.get('branch') or 'detached HEAD'}",
    ]
    if code.get("dirty"):
        parts.append(f"+ {code.get('changed_files', 0)} uncommitted file(s)")
    if code.get("unpushed"):
        parts.append(f"{len(code['unpushed'])} unpushed commit(s)")
    return ", ".join(parts)


def show_created(
    session, experiment: ExperimentDetail, follow: bool, json_output: bool, how: str
) -> None:
    """What `create`, `fork` and `trial rerun` print; with follow, the trials until the end
    (exit 1 unless it completed)."""
    if json_output:
        if follow:
            experiment = experiments.wait_for_experiment(session, experiment.id)
        print_json(experiment)
    else:
        say(f"Created experiment {experiment.id}{how}")
        if follow:
            experiment = follow_experiment(session, experiment.id)
    if follow:
        _exit_for(experiment)


@app.command()
def delete(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    json_output: JsonFlag = False,
) -> None:
    """Delete an ended experiment for good: its trials, metrics, logs and checkpoints (their
    files too). `archive` hides one and keeps everything."""
    session = open_session(ctx)
    exp = experiments.get_experiment_summary(session, experiment_id)
    if not yes:
        question = (
            f"Delete experiment {exp.id} ({exp.name}, {exp.state}, {exp.num_trials} trials) "
            "with its metrics, logs and checkpoints? This cannot be undone"
        )
        confirm_or_exit(question)
    deleted = experiments.delete_experiment(session, experiment_id)
    if json_output:
        print_json(deleted)
    else:
        say(f"Deleted experiment {deleted.id} and its {deleted.checkpoints_deleted} checkpoints")


set_app = typer.Typer(no_args_is_help=True)
app.add_typer(
    set_app,
    name="set",
    help="Change its name, description or labels, or its priority, weight or max slots.",
)


@set_app.command("name")
def set_name(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    value: Annotated[str, typer.Argument(help="The new name.")],
    json_output: JsonFlag = False,
) -> None:
    """Rename the experiment (its config keeps the name it was submitted with)."""
    result = experiments.change_experiment(open_session(ctx), experiment_id, name=value)
    _changed(result, json_output, f"is now named {result.name!r}")


@set_app.command("description")
def set_description(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    value: Annotated[str, typer.Argument(help="The new description ('' clears it).")],
    json_output: JsonFlag = False,
) -> None:
    """Describe the experiment."""
    result = experiments.change_experiment(open_session(ctx), experiment_id, description=value)
    _changed(result, json_output, "has a new description")


@set_app.command("labels")
def set_labels(
    ctx: typer.Context,
    experiment_id: ExperimentId,
    add: Annotated[
        list[str] | None, typer.Option("--add", "-a", help="Add this label (repeat it).")
    ] = None,
    remove: Annotated[
        list[str] | None, typer.Option("--remove", "-r", help="Remove this label (repeat it).")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """Add and remove labels (`experiment list --label L` finds them)."""
    if not add and not remove:
        raise typer.BadParameter("give --add LABEL or --remove LABEL", param_hint="'--add'")
    result = experiments.change_experiment(
        open_session(ctx), experiment_id, add_labels=add or [], remove_labels=remove or []
    )
    labels = ", ".join(result.labels) or "none"
    _changed(result, json_output, f"has labels: {labels}")


def _changed(result, json_output: bool, what: str) -> None:
    if json_output:
        print_json(result)
    else:
        say(f"Experiment {result.id} {what}")


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
