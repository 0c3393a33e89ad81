"""Watching an experiment until it ends: a live table on a terminal, plain lines elsewhere."""

from __future__ import annotations

import time

from rich.console import Group
from rich.live import Live
from rich.text import Text

from shipyard.cli.output import out, say
from shipyard.cli.render import fmt_number, styled_state, trials_table
from shipyard.client.experiments import get_experiment
from shipyard.client.session import Session
from shipyard.common.api import ExperimentDetail

REFRESH_S = 0.5


def experiment_view(experiment: ExperimentDetail) -> Group:
    heading = Text.assemble(
        (f"Experiment {experiment.id} ", "bold"),
        (experiment.name + " ", ""),
        styled_state(experiment.state),
        f"  progress {experiment.progress:.0%}",
        f"  best {experiment.metric} {fmt_number(experiment.best_validation)}",
    )
    return Group(heading, trials_table(experiment.trials))


def follow_experiment(session: Session, experiment_id: int) -> ExperimentDetail:
    """Refresh until the experiment is terminal; print its final table; return it."""
    if out.is_terminal:
        experiment = _follow_live(session, experiment_id)
    else:
        experiment = _follow_plain(session, experiment_id)
    out.print(experiment_view(experiment))
    return experiment


def _follow_live(session: Session, experiment_id: int) -> ExperimentDetail:
    experiment = get_experiment(session, experiment_id)
    with Live(experiment_view(experiment), console=out, auto_refresh=False, transient=True) as live:
        while not experiment.state.terminal:
            time.sleep(REFRESH_S)
            experiment = get_experiment(session, experiment_id)
            live.update(experiment_view(experiment), refresh=True)
    return experiment


def _follow_plain(session: Session, experiment_id: int) -> ExperimentDetail:
    """One line per state change, so logs of CI runs stay readable."""
    seen: dict[str, str] = {}
    while True:
        experiment = get_experiment(session, experiment_id)
        changes = {f"trial {t.id}": str(t.state) for t in experiment.trials}
        changes[f"experiment {experiment.id}"] = str(experiment.state)
        for subject, state in changes.items():
            if seen.get(subject) != state:
                say(f"{subject}: {state}")
                seen[subject] = state
        if experiment.state.terminal:
            return experiment
        time.sleep(REFRESH_S)
