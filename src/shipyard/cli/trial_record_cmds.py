"""`shipyard trial diff | environment | rerun`: what a trial ran, what two trials ran
differently, and a trial run again (registered on the trial group by shipyard.cli.main)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from shipyard.cli.context import open_session
from shipyard.cli.experiment_cmds import show_created
from shipyard.cli.output import JsonFlag, out, print_json, say
from shipyard.cli.render import add_row, cut, fields_table, fmt_time
from shipyard.client import run_records
from shipyard.common.api_runs import TrialDiff, TrialEnvironment

VALUE_WIDTH = 48  # a value longer than this is cut in the table (--json has it whole)

Rank = Annotated[int, typer.Option(min=0, help="Whose capture: rank N of each trial's gang.")]


def diff(
    ctx: typer.Context,
    a: Annotated[int, typer.Argument(help="A trial id.", metavar="A")],
    b: Annotated[int, typer.Argument(help="Another trial id (any experiment).", metavar="B")],
    rank: Rank = 0,
    json_output: JsonFlag = False,
) -> None:
    """Every difference between what trials A and B ran, by category: code, hyperparameters,
    config, packages, framework build, GPU and driver, CPU, Python, OS, image, environment
    variables. Host names, times and GPU UUIDs are left out. Exit 0 when identical, 1 when
    not."""
    result = run_records.diff_trials(open_session(ctx), a, b, rank=rank)
    if json_output:
        print_json(result)
    else:
        _print_diff(result)
    raise typer.Exit(0 if result.identical else 1)


def _print_diff(result: TrialDiff) -> None:
    for missing in result.missing:
        say(f"Not compared: {missing}.", style="yellow")
    if not result.differences:
        if not result.missing:
            say(f"Trials {result.a} and {result.b} ran the same thing.")
        return
    table = Table(title=f"Trial {result.a} vs trial {result.b}")
    for column in ("Category", "Item", "Change", f"Trial {result.a}", f"Trial {result.b}"):
        table.add_column(column)
    for d in result.differences:
        add_row(table, d.category, d.item, d.change, _shown(d.a), _shown(d.b))
    out.print(table)
    say(f"{len(result.differences)} difference(s).")


def _shown(value: Any) -> str:
    return cut("-" if value is None else str(value), VALUE_WIDTH)


def environment(
    ctx: typer.Context,
    trial_id: Annotated[int, typer.Argument(help="Trial id.", metavar="ID")],
    run_id: Annotated[
        int | None, typer.Option("--run", min=0, help="Which run (default: the latest).")
    ] = None,
    json_output: JsonFlag = False,
) -> None:
    """What a run of the trial ran: its code (git at submit), image, and each rank's
    Python, packages, framework build, GPU, CPU and OS."""
    record = run_records.get_trial_environment(open_session(ctx), trial_id, run_id=run_id)
    if json_output:
        print_json(record)
        return
    out.print(fields_table(_code_rows(record)))
    for rank in record.ranks:
        out.print(Text(f"Rank {rank.rank} (captured {fmt_time(rank.received_at)})", style="bold"))
        out.print(fields_table(_rank_rows(rank.record)))
    if not record.ranks:
        say("No rank of this run has recorded its environment.", style="yellow")


def _code_rows(record: TrialEnvironment) -> list[tuple[str, Any]]:
    code = record.code or {}
    image = record.image or {}
    dirty = code.get("dirty")
    return [
        ("Trial", record.trial_id),
        ("Run", record.run_id),
        ("Commit", code.get("commit") or "(not a git work tree)"),
        ("Branch", code.get("branch")),
        ("Remote", code.get("remote")),
        (
            "Uncommitted",
            None
            if dirty is None
            else f"{code.get('changed_files', 0)} file(s)"
            if dirty
            else "none",
        ),
        ("Unpushed commits", len(code.get("unpushed") or [])),
        ("Snapshot", record.context_id),
        ("Seed", record.seed),
        ("Image", image.get("image")),
        ("Image digest", image.get("image_digest") or image.get("image_id")),
    ]


def _rank_rows(capture: dict[str, Any]) -> list[tuple[str, Any]]:
    sections = capture.get("sections") or {}
    python = sections.get("python") or {}
    torch = (sections.get("framework") or {}).get("torch") or {}
    gpu = sections.get("gpu") or {}
    cpu = sections.get("cpu") or {}
    system = sections.get("os") or {}
    devices = [f"{d.get('name')} ({d.get('memory_mib')} MiB)" for d in gpu.get("devices") or []]
    errors = [f"{e.get('section')}: {e.get('message')}" for e in capture.get("errors") or []]
    return [
        ("Python", f"{python.get('version')} ({python.get('executable')})"),
        ("Packages", len(sections.get("packages") or {})),
        ("torch", ", ".join(f"{k} {v}" for k, v in torch.items() if v is not None) or None),
        ("GPUs", "; ".join(devices) or "none"),
        ("Driver", gpu.get("driver")),
        ("CPU", f"{cpu.get('model')} ({cpu.get('logical_cpus')} logical)"),
        ("OS", f"{system.get('distribution')}, kernel {system.get('kernel')}"),
        ("Probe errors", "; ".join(errors) or None),
    ]


def rerun(
    ctx: typer.Context,
    trial_id: Annotated[int, typer.Argument(help="Trial id.", metavar="ID")],
    follow: Annotated[
        bool,
        typer.Option("--follow", "-f", help="Watch it until it ends (exit 1 unless it completes)."),
    ] = False,
    paused: Annotated[
        bool, typer.Option("--paused", help="Create it paused: start it with `activate`.")
    ] = False,
    json_output: JsonFlag = False,
) -> None:
    """Run a trial again: a new one-trial experiment with the same code snapshot, config,
    hyperparameters and seed. With reproducibility.experiment_seed set and deterministic
    training, it reports the same metrics; `trial diff` says what else changed."""
    if paused and follow:
        raise typer.BadParameter("a paused experiment has nothing to follow", param_hint="'-f'")
    session = open_session(ctx)
    made = run_records.rerun_trial(session, trial_id, paused=paused)
    how = f" (rerun of trial {trial_id}{', paused' if paused else ''})"
    show_created(session, made, follow, json_output, how)
