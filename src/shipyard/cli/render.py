"""Rich tables and short formats for the models of shipyard.common.api."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from rich.table import Table
from rich.text import Text

from shipyard.common.api import (
    CheckpointInfo,
    ExperimentSummary,
    MetricSummary,
    RunInfo,
    SlotInfo,
    TrialListItem,
    TrialSummary,
)

STATE_STYLES = {
    "ACTIVE": "cyan",
    "RUNNING": "cyan",
    "STARTING": "cyan",
    "QUEUED": "dim",
    "PAUSED": "yellow",
    "COMPLETED": "green",
    "STOPPED": "green",
    "ERRORED": "red",
    "CANCELED": "magenta",
}


def fmt_number(value: float | None) -> str:
    return "-" if value is None else f"{value:.6g}"


def fmt_time(value: datetime | None) -> str:
    if value is None:
        return "-"
    return value.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def fmt_size(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024  # type: ignore[assignment]
    return str(size)


def styled_state(state: str) -> Text:
    return Text(str(state), style=STATE_STYLES.get(str(state), ""))


def add_row(table: Table, *cells: str | Text) -> None:
    """Add cells as literal text: names and hyperparameters are user data, not rich markup."""
    table.add_row(*(cell if isinstance(cell, Text) else Text(cell) for cell in cells))


def _flatten(hparams: dict[str, Any], prefix: str = "") -> Iterable[tuple[str, Any]]:
    for key, value in hparams.items():
        if isinstance(value, dict):
            yield from _flatten(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}", value


def short_hparams(hparams: dict[str, Any], width: int = 40) -> str:
    """`lr=0.001, arch.width=64`, cut to `width` characters for a table cell."""
    parts = []
    for key, value in _flatten(hparams):
        shown = f"{value:.4g}" if isinstance(value, float) else json.dumps(value)
        parts.append(f"{key}={shown.strip(chr(34))}")
    return cut(", ".join(parts), width)


def cut(text: str, width: int) -> str:
    """The text, or its first width - 1 characters and "…" when it is longer."""
    return text if len(text) <= width else text[: width - 1] + "…"


def fields_table(rows: Iterable[tuple[str, Any]]) -> Table:
    """A two-column key/value listing (values are printed literally, not as markup)."""
    table = Table.grid(padding=(0, 2))
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        add_row(table, key, "-" if value in (None, "") else str(value))
    return table


def experiments_table(experiments: list[ExperimentSummary]) -> Table:
    table = Table(title=None)
    columns = ("ID", "Name", "Owner", "State", "Searcher", "Progress", "Trials", "Best", "Created")
    for column in columns:
        table.add_column(
            column,
            justify="right" if column in ("ID", "Trials") else "left",
            no_wrap=column in ("State", "Created"),
        )
    for exp in experiments:
        add_row(
            table,
            str(exp.id),
            exp.name,
            exp.owner or "-",
            styled_state(exp.state) + (" (archived)" if exp.archived else ""),
            exp.searcher,
            f"{exp.progress:.0%}",
            str(exp.num_trials),
            fmt_number(exp.best_validation),
            fmt_time(exp.created_at),
        )
    return table


def trials_table(trials: list[TrialSummary]) -> Table:
    """Best and Last are the searcher metric's validation values; Rung (or PBT's round) and
    the parent appear when the searcher has them."""
    with_rungs = any(t.rung is not None for t in trials)
    with_parents = any(t.parent_trial_id is not None for t in trials)
    table = Table()
    table.add_column("ID", justify="right")
    table.add_column("State", no_wrap=True)
    if with_rungs:
        table.add_column("Rung", justify="right")
    if with_parents:
        table.add_column("Parent", justify="right")
    table.add_column("Hyperparameters")
    table.add_column("Steps", justify="right")
    table.add_column("Best", justify="right")
    table.add_column("Last", justify="right")
    table.add_column("Restarts", justify="right")
    table.add_column("Why it ended")
    for trial in trials:
        cells: list[str | Text] = [str(trial.id), styled_state(trial.state)]
        if with_rungs:
            cells.append("" if trial.rung is None else str(trial.rung))
        if with_parents:
            cells.append("" if trial.parent_trial_id is None else str(trial.parent_trial_id))
        cells += [
            short_hparams(trial.hparams),
            str(trial.steps_completed),
            fmt_number(trial.best_validation),
            fmt_number(trial.latest_validation),
            str(trial.restarts),
            trial.end_reason or "",
        ]
        add_row(table, *cells)
    return table


def trial_list_table(trials: list[TrialListItem]) -> Table:
    """Trials of several experiments: each with its experiment and how it ended."""
    table = Table()
    for column in ("ID", "Experiment", "State", "Restarts", "Steps", "Ended", "Why it ended"):
        table.add_column(
            column,
            justify="right" if column in ("ID", "Restarts", "Steps") else "left",
            no_wrap=column in ("State", "Ended"),
        )
    for trial in trials:
        add_row(
            table,
            str(trial.id),
            f"{trial.experiment_name} ({trial.experiment_id})",
            styled_state(trial.state),
            str(trial.restarts),
            str(trial.steps_completed),
            fmt_time(trial.ended_at),
            trial.end_reason or "",
        )
    return table


def slots_table(slots: list[SlotInfo]) -> Table:
    table = Table()
    for column in ("Slot", "Kind", "Device", "Pool", "Trial", "Experiment"):
        table.add_column(column)
    for slot in slots:
        add_row(
            table,
            slot.id,
            slot.kind,
            slot.device,
            slot.pool or "-",
            _holder(slot.trial_id, slot.busy),
            _holder(slot.experiment_id, slot.busy),
        )
    return table


def _holder(object_id: int | None, busy: bool) -> str:
    """A slot's trial or experiment: "busy" when it is another workspace's."""
    if object_id is not None:
        return str(object_id)
    return "busy" if busy else "-"


def checkpoints_table(checkpoints: list[CheckpointInfo]) -> Table:
    table = Table()
    for column in ("UUID", "Trial", "Steps", "Validation", "Size", "State", "Created"):
        table.add_column(column, no_wrap=column == "UUID")
    for ckpt in checkpoints:
        add_row(
            table,
            ckpt.uuid,
            str(ckpt.trial_id),
            str(ckpt.steps_completed),
            fmt_number(ckpt.validation),
            fmt_size(ckpt.size),
            ckpt.state,
            fmt_time(ckpt.created_at),
        )
    return table


def metrics_table(metrics: list[MetricSummary]) -> Table:
    table = Table()
    for column in ("Group", "Metric", "Count", "Last", "Min", "Max", "Best", "Best step"):
        table.add_column(column, justify="left" if column in ("Group", "Metric") else "right")
    for m in metrics:
        add_row(
            table,
            m.group,
            m.name,
            str(m.count),
            fmt_number(m.last),
            fmt_number(m.min),
            fmt_number(m.max),
            fmt_number(m.best),
            "-" if m.best_step is None else str(m.best_step),
        )
    return table


def pareto_table(
    front: list[dict[str, Any]], objectives: list[str], trials: list[TrialSummary]
) -> Table:
    """A multi-objective search's non-dominated trials, one column per objective."""
    by_request = {t.request_id: t.id for t in trials}
    table = Table(title="Pareto front")
    table.add_column("Trial", justify="right")
    for name in objectives:
        table.add_column(name, justify="right")
    for member in front:
        trial_id = by_request.get(member.get("request_id", ""))
        values = [fmt_number(v) for v in member.get("values", [])]
        add_row(table, "" if trial_id is None else str(trial_id), *values)
    return table


def runs_table(runs: list[RunInfo]) -> Table:
    """Every launch of a trial and how it ended."""
    table = Table(title="Runs")
    for column in ("Run", "Slots", "Where", "Started", "Ended", "How it ended"):
        table.add_column(column, justify="right" if column == "Run" else "left")
    for run in runs:
        add_row(
            table,
            str(run.run_id),
            ", ".join(run.slots),
            " ".join(f"{k}={v}" for k, v in (run.environment or {}).items()),
            fmt_time(run.started_at),
            fmt_time(run.ended_at),
            run.ended_how or ("running" if run.ended_at is None else ""),
        )
    return table
