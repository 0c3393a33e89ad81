"""What a run's exit means for its trial (server/workers/run_exit.py): the lifecycle event,
the trial's exit reason and the run's `ended_how`, in the order the supervisor checks them.
The words are the ones `trial describe` shows; the e2e tests see the same on real runs."""

from __future__ import annotations

import pytest

from shipyard.backends.base import RunState, RunStatus
from shipyard.common.config import load_config
from shipyard.server import orm
from shipyard.server.services.lifecycle import Event
from shipyard.server.workers.run_exit import describe, judge

CONFIG = load_config(
    """
name: run-exit
entrypoint: python3 train.py
searcher: {name: single, metric: loss, max_length: {batches: 100}}
max_restarts: 2
""",
    "run-exit.yaml",
).to_json_dict()

CLEAN = RunState(RunStatus.EXITED, exit_code=0)
FAILED = RunState(RunStatus.EXITED, exit_code=3)
STOP = "stopped by the searcher: rung 1"


def case(exp_state="ACTIVE", run=FAILED, reason=None, can_restart=True, **trial_fields):
    trial = orm.Trial(restarts=1, stop_requested=False, preempt_requested=False)
    trial.waiting_for_searcher = False
    trial.steps_completed, trial.searcher_time, trial.run_error = 10, None, None
    trial.exit_reason = None
    for name, value in trial_fields.items():
        setattr(trial, name, value)
    exp = orm.Experiment(state=exp_state, config=CONFIG)
    verdict = judge(trial, exp, run, reason or describe(run), can_restart=can_restart)
    return verdict.event, verdict.exit_reason, verdict.run_ended_how


ROWS = {
    "the experiment was killed": (
        dict(exp_state="CANCELED", run=CLEAN),
        (
            Event.EXITED_KILLED,
            "the experiment was killed",
            "exited with code 0; canceled: the experiment was killed",
        ),
    ),
    "a trial a user killed (`shipyard trial kill`)": (
        dict(
            run=RunState(RunStatus.EXITED, exit_code=-15),
            stop_requested=True,
            exit_reason="killed by alice",
            restarts=0,
        ),
        (
            Event.EXITED_KILLED,
            "killed by alice",
            "killed by signal 15; canceled: the trial was killed",
        ),
    ),
    "a stopped trial that exits cleanly": (
        dict(run=CLEAN, stop_requested=True, exit_reason=STOP),
        (Event.EXITED_STOPPING, STOP, "exited with code 0; stopped by the searcher"),
    ),
    "a stopped trial that is killed": (
        dict(run=RunState(RunStatus.EXITED, exit_code=-15), stop_requested=True, exit_reason=STOP),
        (
            Event.EXITED_STOPPING,
            f"{STOP}; then killed by signal 15",
            "killed by signal 15; stopped by the searcher",
        ),
    ),
    "a trial over its time limit": (
        dict(run=CLEAN, stop_requested=True, exit_reason="exceeded its time limit (60 s)"),
        (
            Event.EXITED_STOPPING,
            "exceeded its time limit (60 s)",
            "exited with code 0; exceeded its time limit (60 s)",
        ),
    ),
    "a clean exit": (
        dict(run=CLEAN, exit_reason="an older reason"),
        (Event.FINISHED, None, "exited with code 0; completed"),
    ),
    "a clean exit at max_length while a pause is pending": (
        dict(exp_state="PAUSED", run=CLEAN, preempt_requested=True, steps_completed=100),
        (Event.FINISHED, None, "exited with code 0; completed"),
    ),
    "a clean exit short of max_length while a pause is pending": (
        dict(exp_state="PAUSED", run=CLEAN, preempt_requested=True),
        (Event.YIELDED_PAUSED, None, "exited with code 0; preempted: resumes from its checkpoint"),
    ),
    "a clean exit to wait for the searcher": (
        dict(run=CLEAN, waiting_for_searcher=True),
        (Event.YIELDED, None, "exited with code 0; waits for the searcher's next target"),
    ),
    "preempted by its engine": (
        dict(run=RunState(RunStatus.PREEMPTED, reason="requeued by Slurm")),
        (Event.YIELDED, None, "requeued by Slurm; resumes from its checkpoint"),
    ),
    "a crash with restarts left": (
        dict(run=FAILED),
        (Event.CRASHED, "exited with code 3; restart 2 of 2", "exited with code 3; restart 2 of 2"),
    ),
    "a crash the trial explained": (
        dict(run=FAILED, run_error="ValueError: nan loss"),
        (
            Event.CRASHED,
            "exited with code 3: ValueError: nan loss; restart 2 of 2",
            "exited with code 3: ValueError: nan loss; restart 2 of 2",
        ),
    ),
    "a crash with no restarts left": (
        dict(run=FAILED, restarts=2),
        (
            Event.FAILED,
            "exited with code 3; no restarts left (max_restarts: 2)",
            "exited with code 3; no restarts left (max_restarts: 2)",
        ),
    ),
    "a launch that would fail the same way": (
        dict(run=RunState(RunStatus.LOST), reason="launch failed: bad image", can_restart=False),
        (
            Event.FAILED,
            "launch failed: bad image; not restarted: it would fail the same way",
            "launch failed: bad image; not restarted: it would fail the same way",
        ),
    ),
    "a lost process": (
        dict(run=RunState(RunStatus.LOST)),
        (
            Event.CRASHED,
            "the trial's process was lost (no exit code); restart 2 of 2",
            "the trial's process was lost (no exit code); restart 2 of 2",
        ),
    ),
}


@pytest.mark.parametrize("name", list(ROWS))
def test_an_exit_gives_its_event_and_words(name):
    facts, expected = ROWS[name]
    assert case(**facts) == expected


def test_a_pause_before_any_validation_is_not_the_end_of_a_length_in_epochs():
    """model_def:MyTrial with {epochs: 5} counts epochs (searcher.time_metric): 12 batches
    without a validation yet are not 5 epochs."""
    config = load_config(
        "entrypoint: model_def:MyTrial\n"
        "searcher: {name: single, metric: loss, max_length: {epochs: 5}}\n"
    ).to_json_dict()
    trial = orm.Trial(restarts=0, stop_requested=False, preempt_requested=True)
    trial.waiting_for_searcher = False
    trial.steps_completed, trial.searcher_time, trial.run_error = 12, None, None
    trial.exit_reason = None
    exp = orm.Experiment(state="ACTIVE", config=config)
    assert judge(trial, exp, CLEAN, describe(CLEAN), can_restart=True).event == Event.YIELDED
    trial.searcher_time = 5.0  # its validation at the end of epoch 5
    assert judge(trial, exp, CLEAN, describe(CLEAN), can_restart=True).event == Event.FINISHED
