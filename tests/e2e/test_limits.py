"""Limits on running trials through a real master: a hung trial (no heartbeat) is killed
and restarted from its checkpoint; a trial past its time limit is stopped."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.test_lifecycle import config

CODE = Path(__file__).parent / "trial_code"


@pytest.fixture(scope="module")
def master(shared_master):
    return shared_master


def test_a_hung_trial_is_killed_and_resumes_from_its_checkpoint(master):
    exp = master.create(
        config(
            "  steps: 12\n  sleep: 0.05\n  hang_at: 7",
            extra="heartbeat_timeout: 2",
        ),
        CODE,
    )
    done = master.wait(exp["id"])
    assert done["state"] == "COMPLETED"
    trial = master.trial(done["trials"][0]["id"])
    hung_run, rerun = trial["runs"]
    assert hung_run["ended_how"].startswith("killed by signal 15: no heartbeat for ")
    assert hung_run["ended_how"].endswith(" s (heartbeat_timeout: 2 s); restart 1 of 2")
    assert rerun["ended_how"] == "exited with code 0; completed"
    logs = master.logs(trial["id"])
    assert "hanging at step 7" in logs and "resumed from step 5" in logs
    assert [s for s, _ in master.metrics(trial["id"], "training", "loss")] == list(range(1, 13))


def test_a_slow_but_healthy_trial_keeps_its_heartbeat(master):
    # Steps of 1 s against a 2 s timeout, reporting nothing: its calls to should_preempt()
    # keep the heartbeat (core beats while the loop calls it).
    exp = master.create(
        config(
            "  steps: 4\n  sleep: 1.0\n  quiet: true\n  ckpt_every: 100",
            extra="heartbeat_timeout: 2",
        ),
        CODE,
    )
    done = master.wait(exp["id"])
    assert done["state"] == "COMPLETED"
    assert master.trial(done["trials"][0]["id"])["restarts"] == 0


def test_a_trial_past_its_time_limit_is_stopped_with_the_reason(master):
    exp = master.create(config("  steps: 400\n  sleep: 0.05", extra="trial_time_limit: 2"), CODE)
    done = master.wait(exp["id"])
    assert done["state"] == "COMPLETED"  # the search ran to its end
    trial = master.trial(done["trials"][0]["id"])
    assert trial["state"] == "STOPPED"
    assert trial["end_reason"].startswith("stopped: exceeded its time limit: ran ")
    assert trial["end_reason"].endswith(" s, trial_time_limit is 2 s")
    assert 0 < trial["steps_completed"] < 400
    # It heard the stop like a searcher stop: it saved its work and exited cleanly.
    [run] = trial["runs"]
    assert run["ended_how"].startswith("exited with code 0; exceeded its time limit")
    assert any(
        line.startswith("stopped by the searcher at step") for line in master.logs(trial["id"])
    )
