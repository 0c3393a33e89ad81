"""Minimal reproductions of the bugs the chaos suite found in src/; each now guards its fix.

1. Metrics reported before a checkpoint are lost when the trial is killed right after the
   checkpoint is registered. `ctx.checkpoint.store_path` registers the checkpoint with the
   master synchronously, but the training metrics reported before it are still in the
   asynchronous sender's queue (it gathers for 0.2 s between deliveries). A kill at that
   moment loses them, and the restarted run resumes *after* them, from the checkpoint, so
   they are never reported again. Fix (core/checkpoint.py, MasterCheckpoint._register):
   flush the metric queue before registering the checkpoint, so a checkpoint becomes the
   resume point only once every metric reported before it is committed. The control case
   (flush_first: the trial flushes before each checkpoint) passes. Fixed in 02b8144.

2. Checkpoint directories the master never registered stay in the checkpoint storage for
   good. A trial killed inside `store_path` (files written, not finalized) leaves a partial
   directory; one killed between finalizing (metadata.json written) and registering leaves
   a complete-looking checkpoint that no row owns (the chaos kill scenario leaves 0-3 of
   them in 20 kills; since 02b8144 the metric flush sits in that window, which widens it).
   Retention only deletes checkpoints the database knows, so nothing ever removes them: a
   disk leak, and `storage.list_complete()` would offer the finalized ones as checkpoints.
   Possible fixes: flush the metrics before finalizing rather than after; have housekeeping
   delete, for a trial whose run ended, the directories of its storage that no checkpoint
   row owns (the uuid is random, so the directory would need a trial marker, or the trial
   could register the uuid as PENDING before writing). Fixed in 01b26bf (.writing marks).

3. A master killed between starting a trial's process and recording its handle runs the
   trial twice after its restart. `Supervisor.schedule` commits the trial as STARTING,
   starts the process (`backend.launch`), then records the handle in a second transaction
   (an fsync later, with synchronous=FULL: milliseconds). Killed in between, the restarted
   master finds a STARTING trial with no handle: `recover()` logs "trial N was not found
   after the restart; requeued" and launches run N+1, while run N still runs: two processes
   of one trial on one slot, the first one unsupervised (a kill of the experiment does not
   reach it), its reports accepted until run N+1 starts (its run_id is still the trial's),
   then refused with 409 (it dies at its next report; a trial that reports rarely lives on),
   and a checkpoint it finalizes after that left in the storage. Found by killing the master
   0-0.3 s after activating a paused experiment; made deterministic here by holding the
   SQLite write lock from the test while the master launches, so its handle write waits.
   Possible fixes: record the handle (or a launch marker the backend can find again, e.g.
   a pid file the wrapper writes next to the log) before the process can outlive the master,
   and have recover() re-attach or kill a STARTING trial's process before requeueing it.
   Fixed: the local backend's wrapper writes a pid file before the trial runs, and
   recover() finds the launch through it (Backend.find_launch).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.chaos import harness
from tests.e2e.master import Master
from tests.fixtures.poll import poll

CODE = Path(__file__).parent / "trial_code"


@pytest.fixture
def master(tmp_path):
    m = Master(tmp_path / "home", slots=1).start()
    yield m
    m.stop()
    for proc in harness.trial_processes(m).values():
        harness.kill9(proc.pid)


def _config(flush_first: bool) -> str:
    return f"""
name: kill-after-checkpoint
entrypoint: python3 kill_after_checkpoint.py
hyperparameters: {{steps: 10, ckpt_every: 5, kill_at: 5, flush_first: {str(flush_first).lower()}}}
searcher: {{name: single, metric: loss}}
max_restarts: 1
"""


@pytest.mark.parametrize("flush_first", [False, True], ids=["as_documented", "flush_first"])
def test_kill_right_after_a_checkpoint_loses_no_metric(master, flush_first):
    exp = master.create(_config(flush_first), CODE)
    done = master.wait(exp["id"], timeout=60)
    trial = master.trial(done["trials"][0]["id"])
    assert trial["state"] == "COMPLETED" and trial["restarts"] == 1, trial
    assert "killing myself after the checkpoint at step 5" in master.logs(trial["id"])
    steps = [s for s, _ in master.metrics(trial["id"], "training", "loss")]
    assert steps == list(range(1, 11)), f"steps lost: {sorted(set(range(1, 11)) - set(steps))}"


def test_checkpoint_of_a_trial_killed_while_writing_it_does_not_stay_on_disk(master):
    store = master.home / "store"
    config = f"""
name: kill-inside-checkpoint
entrypoint: python3 kill_after_checkpoint.py
hyperparameters: {{steps: 10, ckpt_every: 5, kill_at: 5, kill_inside: true}}
searcher: {{name: single, metric: loss}}
max_restarts: 1
checkpoint_storage:
  {{type: shared_fs, host_path: {store}, save_trial_latest: 1, save_trial_best: 0}}
"""
    done = master.wait(master.create(config, CODE)["id"], timeout=60)
    trial = master.trial(done["trials"][0]["id"])
    assert trial["state"] == "COMPLETED" and trial["restarts"] == 1, trial
    assert "killing myself inside the checkpoint at step 5" in master.logs(trial["id"])

    def kept():  # retention has run once only the latest (step 10) is left
        rows = master.http.get(f"/experiments/{done['id']}/checkpoints").json()
        return rows if [c["steps_completed"] for c in rows] == [10] else None

    rows = master.wait_for(kept, timeout=30, what="retention of the experiment")
    on_disk = sorted(  # checkpoints: not the trials' TensorBoard files beside them
        p.name for p in store.iterdir() if p.name[0] != "." and p.name != "tensorboard"
    )
    assert on_disk == [rows[0]["uuid"]], (
        f"left in the storage: {sorted(set(on_disk) - {rows[0]['uuid']})}"
    )


def test_master_killed_before_recording_a_launch_does_not_run_the_trial_twice(master):
    config = {
        "name": "kill-master-at-launch",
        "entrypoint": "python3 train.py",
        "hyperparameters": {"seed": 1, "lr": 0.05, "steps": 100000, "step_sleep": 0.05},
        "searcher": {"name": "single", "metric": "validation_loss"},
        "max_restarts": 0,
    }
    db = sqlite3.connect(master.home / "shipyard.db", timeout=30, isolation_level=None)
    trial_id = master.create(json.dumps(config), harness.CODE)["trials"][0]["id"]
    # The local backend creates the run's log file just before it starts the process, after
    # the STARTING transaction; from now the master's next write, the handle, waits for us.
    log = master.home / "logs" / f"trial-{trial_id}-run-1.log"
    poll(log.exists, "the trial's launch", timeout_s=30, every_s=0)  # no pause: a narrow window
    db.execute("BEGIN IMMEDIATE")
    master.wait_for(lambda: trial_id in harness.trial_processes(master), what="the trial's process")
    master.kill9()
    db.execute("ROLLBACK")
    db.close()
    master.start()

    def steps_while_running() -> int:
        trial = master.trial(trial_id)
        return trial["steps_completed"] if trial["state"] == "RUNNING" else 0

    resumed_at = master.wait_for(steps_while_running, timeout=30, what="trial running")
    # The first process reports every 50 ms: once the master has ten more of its steps, a
    # second run of the trial would have been started and the first one refused.
    master.wait_for(
        lambda: master.trial(trial_id)["steps_completed"] >= resumed_at + 10,
        timeout=30,
        what="ten more steps after the restart",
    )
    trial = master.trial(trial_id)
    evidence = {
        "run_id": trial["run_id"],
        "runs": [(r["run_id"], r["ended_how"]) for r in trial["runs"]],
        "master_log": harness.master_log_lines(master, "not found after the restart"),
        "run 1 output": log.read_text().splitlines()[:3],
    }
    assert trial["run_id"] == 1 or "is on run 2, not run 1" not in log.read_text(), evidence
