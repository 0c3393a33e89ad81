"""The trial lifecycle table (server/services/lifecycle.py) on a real database: every allowed
transition gives the state and the effects a user sees (ended_at, restarts, the run's row,
the searcher's exit event), every other one raises and changes nothing, and the table in
docs/architecture.md is the code's. `python -m tests.server.test_trial_lifecycle` rewrites
the docs' table from the code."""

from __future__ import annotations

import itertools
import re
import sys
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from shipyard.common.states import TrialState
from shipyard.server import orm
from shipyard.server.db import Database
from shipyard.server.orm import utcnow
from shipyard.server.services import lifecycle, workspaces
from shipyard.server.services.lifecycle import TRANSITIONS, Event, ForbiddenTransition

Q, S, R, P = TrialState.QUEUED, TrialState.STARTING, TrialState.RUNNING, TrialState.PAUSED
COMPLETED, STOPPED = TrialState.COMPLETED, TrialState.STOPPED
ERRORED, CANCELED = TrialState.ERRORED, TrialState.CANCELED
OPENS, CLOSES, RESTART, PREEMPTION = "opens run", "closes run", "restart", "preemption cleared"
ENDED = "ended_at"


def told(reason: str) -> str:
    return f"searcher told {reason}"


# What each transition does today, as the supervisor, the searcher and the user's pause,
# activate and kill did it before the table existed: (state, event) -> (next, effects).
RUN_END = {CLOSES}
EXPECTED: dict[tuple[TrialState | None, Event], tuple[TrialState, set[str]]] = {
    (None, Event.CREATED): (Q, set()),
    (None, Event.CREATED_PAUSED): (P, set()),
    (Q, Event.PAUSED): (P, set()),
    (P, Event.ACTIVATED): (Q, set()),
    (Q, Event.KILLED): (CANCELED, {ENDED}),
    (P, Event.KILLED): (CANCELED, {ENDED}),
    (Q, Event.TRIAL_KILLED): (CANCELED, {ENDED, told("CANCELED")}),
    (P, Event.TRIAL_KILLED): (CANCELED, {ENDED, told("CANCELED")}),
    (Q, Event.STOPPED): (STOPPED, {ENDED, told("STOPPED")}),
    (P, Event.STOPPED): (STOPPED, {ENDED, told("STOPPED")}),
    (Q, Event.PLACED): (S, {OPENS, PREEMPTION}),  # a new run starts with no preemption
    (S, Event.LAUNCHED): (R, set()),
    **{(h, Event.REATTACHED): (R, set()) for h in (S, R)},
    **{(h, Event.LOST): (Q, RUN_END) for h in (S, R)},
    **{(h, Event.LOST_STOPPING): (STOPPED, RUN_END | {ENDED, told("STOPPED")}) for h in (S, R)},
    **{(h, Event.EXITED_KILLED): (CANCELED, RUN_END | {ENDED, told("CANCELED")}) for h in (S, R)},
    **{(h, Event.EXITED_STOPPING): (STOPPED, RUN_END | {ENDED, told("STOPPED")}) for h in (S, R)},
    **{
        (h, Event.FINISHED): (COMPLETED, RUN_END | {PREEMPTION, ENDED, told("COMPLETED")})
        for h in (S, R)
    },
    **{(h, Event.YIELDED): (Q, RUN_END | {PREEMPTION}) for h in (S, R)},
    **{(h, Event.YIELDED_PAUSED): (P, RUN_END | {PREEMPTION}) for h in (S, R)},
    **{(h, Event.CRASHED): (Q, RUN_END | {RESTART}) for h in (S, R)},
    **{(h, Event.FAILED): (ERRORED, RUN_END | {ENDED, told("ERRORED")}) for h in (S, R)},
    # `experiment continue`: an ended trial trains again, its end cleared.
    **{(e, Event.CONTINUED): (Q, set()) for e in (COMPLETED, STOPPED, ERRORED, CANCELED)},
}

HOW = "exited with code 3; what the run's row records"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = Database(f"sqlite:///{tmp_path_factory.mktemp('lifecycle') / 'shipyard.db'}")
    database.migrate()
    yield database
    database.close()


def add_experiment(s) -> orm.Experiment:
    project = workspaces.default_project(session=s)
    exp = orm.Experiment(
        workspace_id=project.workspace_id,
        project_id=project.id,
        name="lifecycle",
        config={},
        config_yaml="",
        state="ACTIVE",
        seed=1,
        checkpoint_base="/nowhere",
    )
    s.add(exp)
    s.flush()
    return exp


def new_trial(exp: orm.Experiment) -> orm.Trial:
    n = next(_numbers)
    return orm.Trial(
        experiment_id=exp.id, workspace_id=exp.workspace_id, request_id=f"r{n}", hparams={}, seed=n
    )


_numbers = itertools.count()


def add_trial(s, state: TrialState) -> orm.Trial:
    """A trial in `state` on its first run, with a preemption pending (so clearing it shows)."""
    holds = state in (S, R)
    trial = new_trial(add_experiment(s))
    trial.state = state  # the test's setup: the lifecycle writes every state after this one
    trial.restarts = 2
    trial.run_id = 1
    trial.slots = ["cpu0"] if holds else []
    trial.handle = {"pid": 1} if holds else None
    trial.preempt_requested = True
    trial.preempt_deadline = utcnow() + timedelta(seconds=60)
    s.add(trial)
    s.flush()
    s.add(orm.TrialRun(trial_id=trial.id, run_id=1, slots=trial.slots))
    s.flush()
    return trial


def observed(s, trial: orm.Trial, run_id_before: int) -> set[str]:
    """The effects a user can see: in the trial's row, its runs, its searcher events."""
    s.flush()
    seen = set()
    if trial.run_id == run_id_before + 1 and s.get(orm.TrialRun, (trial.id, trial.run_id)):
        seen.add(OPENS)
    run = s.get(orm.TrialRun, (trial.id, run_id_before))
    if run is not None and run.ended_at is not None:
        assert run.ended_how == HOW
        assert trial.slots == [] and trial.handle is None, "a closed run keeps no slot"
        seen.add(CLOSES)
    if trial.restarts == 3:
        seen.add(RESTART)
    if not trial.preempt_requested and trial.preempt_deadline is None:
        seen.add(PREEMPTION)
    if trial.ended_at is not None:
        seen.add(ENDED)
    events = s.scalars(select(orm.SearcherEvent).where(orm.SearcherEvent.trial_id == trial.id))
    seen |= {told(e.payload["reason"]) for e in events if e.kind == "exit"}
    return seen


def test_the_table_holds_exactly_the_transitions_of_today():
    assert set(TRANSITIONS) == set(EXPECTED)


@pytest.mark.parametrize(
    ("before", "event"), list(EXPECTED), ids=lambda v: str(v) if v is not None else "new"
)
def test_each_allowed_transition_gives_its_state_and_effects(db, before, event):
    to, effects = EXPECTED[(before, event)]
    with db.write() as s:
        if before is None:
            trial = new_trial(add_experiment(s))
            lifecycle.apply(s, trial, event)
            s.add(trial)
            s.flush()
            assert trial.state == to and trial.ended_at is None and trial.run_id == 0
            assert effects == set()
            return
        trial = add_trial(s, before)
        lifecycle.apply(s, trial, event, slots=["cpu1", "cpu2"], run_ended_how=HOW)
        assert trial.state == to
        assert observed(s, trial, run_id_before=1) == effects
        if OPENS in effects:
            assert trial.slots == ["cpu1", "cpu2"]
            assert s.get(orm.TrialRun, (trial.id, 2)).slots == ["cpu1", "cpu2"]


FORBIDDEN = [
    (before, event)
    for before in [None, *TrialState]
    for event in Event
    if (before, event) not in TRANSITIONS
]


@pytest.mark.parametrize(
    ("before", "event"), FORBIDDEN, ids=lambda v: str(v) if v is not None else "new"
)
def test_every_other_event_raises_and_changes_nothing(db, before, event):
    with db.write() as s:
        trial = add_trial(s, before or Q)
        if before is None:
            trial.state = None  # a trial not created yet: only a creation may happen to it
        with pytest.raises(ForbiddenTransition):
            lifecycle.apply(s, trial, event, slots=["cpu1"], run_ended_how=HOW)
        assert trial.state == before and trial.ended_at is None and trial.run_id == 1
        s.rollback()


def test_a_completed_trial_cannot_start_again(db):
    with db.write() as s:
        trial = add_trial(s, COMPLETED)
        with pytest.raises(ForbiddenTransition, match="placed cannot happen to a COMPLETED"):
            lifecycle.apply(s, trial, Event.PLACED, slots=["cpu0"])


def test_only_continue_moves_an_ended_trial():
    moving = {key[1] for key in TRANSITIONS if key[0] is not None and key[0].terminal}
    assert moving == {Event.CONTINUED}


def test_every_state_is_reached():
    assert {t.to for t in TRANSITIONS.values()} == set(TrialState)


# -- the picture in docs/architecture.md ------------------------------------------------------

DOC = Path(__file__).parents[2] / "docs" / "architecture.md"
BEGIN = (
    "<!-- trial-lifecycle: generated from the code, see tests/server/test_trial_lifecycle.py -->"
)
END = "<!-- /trial-lifecycle -->"


def _name(state: TrialState | None) -> str:
    return "[*]" if state is None else state.value


def render() -> str:
    """The lifecycle as docs/architecture.md shows it: a state diagram and the table."""
    grouped: dict[tuple[Event, lifecycle.Transition], list[TrialState | None]] = {}
    for (before, event), transition in TRANSITIONS.items():
        grouped.setdefault((event, transition), []).append(before)
    edges: dict[tuple[str, str], list[str]] = {}
    for (event, transition), befores in grouped.items():
        for before in befores:
            edges.setdefault((_name(before), transition.to.value), []).append(event.value)
    lines = ["```mermaid", "stateDiagram-v2"]
    lines += [f"    {a} --> {b}: {', '.join(events)}" for (a, b), events in edges.items()]
    lines += ["```", "", "| from | event | to | effects |", "|---|---|---|---|"]
    for (event, transition), befores in grouped.items():
        froms = ", ".join("(new)" if b is None else b.value for b in befores)
        effects = ", ".join(transition.effects()) or "-"
        lines.append(f"| {froms} | {event.value} | {transition.to.value} | {effects} |")
    return "\n".join(lines) + "\n"


def _section(text: str) -> re.Match | None:
    return re.search(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), text, re.S)


def test_the_docs_show_the_table_of_the_code():
    section = _section(DOC.read_text())
    assert section is not None and section.group(1) == render(), (
        "docs/architecture.md's trial lifecycle differs from server/services/lifecycle.py: "
        "run `python -m tests.server.test_trial_lifecycle` to write it again"
    )


if __name__ == "__main__":
    text = DOC.read_text()
    section = _section(text)
    if section is None:
        sys.exit(f"{DOC}: no section between {BEGIN!r} and {END!r}")
    DOC.write_text(text[: section.start(1)] + render() + text[section.end(1) :])
