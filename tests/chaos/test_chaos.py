"""Chaos: a trial can be killed, preempted or lose its master at any moment, and the experiment
still finishes with every metric and checkpoint it had, none counted twice.

Each scenario runs the same grid of deterministic trials (trial_code/train.py) as the
undisturbed reference (conftest.py), injects its faults, and `chaos.finish` compares
everything: each trial's final and best validation, every metric point (step and exact value),
the metric summaries (counts: nothing counted twice), the kept checkpoints, the end states.
Counts go to <pytest tmp dir>/chaos/<scenario>.json and are printed (run with -s to see them).
The faults are drawn from a seeded random.Random; CHAOS_SEED=<n> draws other ones.
"""

from __future__ import annotations

import random
import time
from pathlib import Path

from tests.chaos import harness
from tests.e2e.master import TERMINAL
from tests.fixtures.poll import poll
from tests.fixtures.small_disk import fill_disk

TRIAL_KILLS = 20
MASTER_KILLS = 2
PAUSES = 4
PREEMPTIONS = 5
E2E_CODE = Path(__file__).parents[1] / "e2e" / "trial_code"


def test_trial_code_resumes_bit_identically(tmp_path, monkeypatch):
    """The premise of the suite, checked without a master: train.py resumed from a checkpoint
    (a preemption at an odd step, then one at a checkpoint step) reports exactly the values of
    an uninterrupted run."""
    import importlib.util

    import shipyard.core

    spec = importlib.util.spec_from_file_location("chaos_train", harness.CODE / "train.py")
    train = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("SHIPYARD_MASTER", raising=False)
    hparams = {"seed": 5, "lr": 0.1, "steps": 45, "ckpt_every": 10}

    def run(preempt_at: int | None, latest: str | None) -> tuple[dict, str | None]:
        reports: dict = {}
        with shipyard.core.init(hparams=hparams) as ctx:
            ctx.info.latest_checkpoint = latest
            ctx.train.report_training_metrics = lambda s, m: reports.update({("t", s): m})
            ctx.train.report_validation_metrics = lambda s, m: reports.update({("v", s): m})
            trainer = train.Trainer(ctx)
            ctx.preempt.should_preempt = lambda: trainer.step == preempt_at
            trainer.run()
            return reports, ctx.info.latest_checkpoint

    whole, _ = run(None, None)
    first, ckpt = run(17, None)
    second, ckpt = run(30, ckpt)
    third, _ = run(None, ckpt)
    assert len(whole) == 45 + 5  # a training report every step, a validation every 10 and at 45
    assert {**first, **second, **third} == whole
    assert ("v", 30) in third  # resumed at a checkpoint step, it reports that validation again


def test_trial_processes_killed_at_random_steps(chaos, reference):
    """kill -9 of a random running trial's Python process, 20 times, each after a random delay
    (so at a random step: in the middle of a step, of a checkpoint, of a metric delivery).
    Each kill costs the trial a restart from its latest checkpoint."""
    seed = harness.chaos_seed(20240601)
    rng = random.Random(seed)
    # The sleep in each checkpoint widens the window between writing the files and
    # registering the checkpoint, so some kills land there.
    run = chaos.start(timing={"step_sleep": 0.03, "ckpt_sleep": 0.02})
    faulted: set[int] = set()
    kills: list[tuple[int, int, int]] = []  # (trial, run, steps the master had then)
    total = len(harness.SEEDS) * len(harness.LRS) * harness.MAX_STEPS
    deadline = time.monotonic() + 150  # for all the kills
    while len(kills) < TRIAL_KILLS:
        # Spread the kills over the whole search: kill i waits until the search has done
        # about i / (kills + 1) of its steps, then picks a running trial and a delay.
        threshold = (len(kills) + rng.uniform(0.3, 1.0)) / (TRIAL_KILLS + 1) * total

        def running_past(threshold: float = threshold) -> dict | None:
            trials = run.trials()
            procs = harness.trial_processes(run.master)
            if procs and sum(t["steps_completed"] for t in trials) >= threshold:
                return procs
            assert run.experiment()["state"] not in TERMINAL, (
                f"the experiment ended after only {len(kills)} of {TRIAL_KILLS} kills"
            )
            return None

        procs = poll(
            running_past,
            f"kill {len(kills) + 1} of {TRIAL_KILLS} in 150 s: {threshold:.0f} steps done",
            timeout_s=deadline - time.monotonic(),
            every_s=0.02,
        )
        victim = procs[rng.choice(sorted(procs))]
        time.sleep(rng.uniform(0.0, 0.3))
        now = harness.trial_processes(run.master).get(victim.trial_id)
        if now is None or now.pid != victim.pid:
            continue  # it ended or restarted meanwhile: draw again
        steps = run.master.trial(victim.trial_id)["steps_completed"]
        harness.kill9(victim.pid)
        # Count the kill only if it killed: a process already exiting by itself (done)
        # records its own exit code, and then it is no fault.
        if harness.run_exit_code(run.master, victim.trial_id, victim.run_id) == -9:
            kills.append((victim.trial_id, victim.run_id, steps))
            faulted.add(victim.trial_id)
    print("kills (trial, run, steps the master had):", kills)
    run.counts.update(
        seed=seed,
        faults_injected=len(kills),
        kills_per_trial={str(t): sum(1 for k in kills if k[0] == t) for t in sorted(faulted)},
        faulted_trial_ids=faulted,
    )
    chaos.finish(run, reference)
    record = harness.record(run.master, run.experiment_id, run.store)
    restarts = {t.trial_id: t.restarts for t in record.trials.values()}
    for trial_id in faulted:  # every kill is one restart, no more, no less
        assert restarts[trial_id] == sum(1 for k in kills if k[0] == trial_id), restarts


def test_master_killed_twice_during_a_search(chaos, reference):
    """kill -9 of the master twice while the grid search runs, restarted on the same home
    and port after a random downtime; the trials keep training meanwhile and retry their
    reports, and the restarted master re-attaches them."""
    seed = harness.chaos_seed(7)
    rng = random.Random(seed)
    run = chaos.start(timing={"step_sleep": 0.025})
    total = len(harness.SEEDS) * len(harness.LRS) * harness.MAX_STEPS
    fractions = sorted(rng.uniform(0.15, 0.35) + 0.35 * i for i in range(MASTER_KILLS))
    kills = []
    faulted: set[int] = set()
    for fraction in fractions:
        run.master.wait_for(
            lambda f=fraction: sum(t["steps_completed"] for t in run.trials()) >= f * total,
            timeout=60,
            what=f"{fraction:.0%} of the search done",
        )
        before = harness.trial_processes(run.master)
        run.master.kill9()
        downtime = rng.uniform(0.5, 2.0)
        time.sleep(downtime)
        alive = harness.trial_processes(run.master)
        run.master.start()
        kills.append(
            {
                "at_fraction": round(fraction, 3),
                "downtime_s": round(downtime, 2),
                "trials_running": sorted(before),
                "trials_alive_after_downtime": sorted(alive),
            }
        )
        faulted.update(before)
    print("master kills:", kills)
    run.counts.update(
        seed=seed, faults_injected=len(kills), master_kills=kills, faulted_trial_ids=faulted
    )
    chaos.finish(run, reference)
    # Re-attached, not restarted: a master's death is not the trials' failure.
    record = harness.record(run.master, run.experiment_id, run.store)
    assert all(t.restarts == 0 for t in record.trials.values()), record.trials


def test_pause_and_activate_while_checkpointing(chaos, reference):
    """Pause the experiment while a trial is writing a checkpoint (the trial sleeps inside
    the store_path block at two steps), wait until the trials left their slots, activate;
    four times. The trial resumes from the checkpoint it was writing; the other running
    trial is paused wherever it is (a checkpoint at that step, which retention drops later)."""
    slow_steps = [40, 80]
    run = chaos.start(timing={"step_sleep": 0.01, "ckpt_sleep": 1.0, "slow_ckpt_steps": slow_steps})
    paused_in_checkpoint = 0
    pauses = []
    seen: set[str] = set()

    def being_written():
        # A directory without metadata.json is a checkpoint being written, or one that
        # retention is deleting (metadata.json goes first): only the master knows the latter.
        for path, step in harness.checkpoint_in_progress(run.store):
            if step in slow_steps and path.name not in seen:
                if run.master.http.get(f"/checkpoints/{path.name}").status_code == 404:
                    return path, step
        return None

    for _ in range(PAUSES):
        path, step = run.master.wait_for(being_written, timeout=60, what="a checkpoint written")
        seen.add(path.name)
        answer = run.master.http.post(f"/experiments/{run.experiment_id}/pause").json()
        assert answer["state"] == "PAUSED", answer
        trials = run.master.wait_for(
            lambda: (
                [t for t in run.trials() if t["state"] not in ("RUNNING", "STARTING")]
                if all(t["state"] not in ("RUNNING", "STARTING") for t in run.trials())
                else None
            ),
            timeout=30,
            what="every trial off its slot",
        )
        assert not harness.trial_processes(run.master)
        ckpt = run.master.http.get(f"/checkpoints/{path.name}").json()
        assert ckpt.get("state") == "COMPLETED", f"the checkpoint being written is lost: {ckpt}"
        owner = run.master.trial(ckpt["trial_id"])
        assert owner["state"] == "PAUSED", owner
        if owner["latest_checkpoint"] == path.name:
            paused_in_checkpoint += 1  # it stopped right after that checkpoint, as asked
        pauses.append(
            {
                "trial": owner["id"],
                "step": step,
                "others_paused": {
                    str(t["id"]): t["steps_completed"]
                    for t in trials
                    if t["state"] == "PAUSED" and t["id"] != owner["id"]
                },
            }
        )
        answer = run.master.http.post(f"/experiments/{run.experiment_id}/activate").json()
        assert answer["state"] == "ACTIVE", answer
    print("pauses:", pauses)
    run.counts.update(
        faults_injected=len(pauses),
        paused_in_checkpoint=paused_in_checkpoint,
        pauses=pauses,
        faulted_trial_ids={p["trial"] for p in pauses},
    )
    chaos.finish(run, reference)
    assert paused_in_checkpoint == PAUSES, pauses


PREEMPTING_POOL = "resource_pools:\n  - pool_name: default\n    scheduler: {preemption: true}\n"


def urgent_experiment(round_: int) -> str:
    """Priority 1 and both slots: it preempts whatever of the chaos experiment runs."""
    return (
        f"name: urgent-{round_}\n"
        "entrypoint: python3 steps.py\n"
        "hyperparameters: {steps: 3, ckpt_every: 3}\n"
        "searcher: {name: single, metric: val_loss}\n"
        f"resources: {{priority: 1, slots_per_trial: {harness.SLOTS}}}\n"
    )


def preempted_runs(run: harness.ChaosRun) -> list[tuple[int, int]]:
    return [
        (t["id"], r["run_id"])
        for t in run.trials()
        for r in run.master.trial(t["id"])["runs"]
        if (r["ended_how"] or "").endswith("preempted: resumes from its checkpoint")
    ]


def test_preemption_by_a_higher_priority_experiment(chaos, reference):
    """Five times, while the chaos trials train, a priority-1 experiment asking for every slot
    is submitted in a pool with preemption: the running trials checkpoint, give up their
    slots, wait, and resume from that checkpoint once it is done."""
    rng = random.Random(harness.chaos_seed(5))
    run = chaos.start(timing={"step_sleep": 0.05}, master_config=PREEMPTING_POOL)
    rounds = []
    for i in range(PREEMPTIONS):
        at_step = rng.randrange(5, 100)
        running = run.master.wait_for(
            lambda at_step=at_step: [
                t["id"]
                for t in run.trials()
                if t["state"] == "RUNNING" and t["steps_completed"] >= at_step
            ],
            timeout=60,
            what=f"a chaos trial running past step {at_step}",
        )
        urgent = run.master.create(urgent_experiment(i), E2E_CODE)
        assert run.master.wait(urgent["id"], timeout=60)["state"] == "COMPLETED"
        rounds.append({"at_step": at_step, "running": running})
    preempted = preempted_runs(run)
    run.counts.update(
        faults_injected=len(rounds),
        preempted_runs=len(preempted),
        rounds=rounds,
        faulted_trial_ids={trial_id for trial_id, _ in preempted},
    )
    chaos.finish(run, reference)
    # Each urgent experiment took both slots from running chaos trials; none is a restart.
    assert len(preempted) >= PREEMPTIONS, rounds
    record = harness.record(run.master, run.experiment_id, run.store)
    assert all(t.restarts == 0 for t in record.trials.values()), record.trials


def test_full_checkpoint_disk_then_space_freed(chaos, reference, small_disk):
    """The checkpoint storage is a small real file system. Mid-search it is filled up: the
    checkpoints being written fail (their runs fail naming the path and "No space left on
    device", and restart from the previous checkpoint, which stays usable); then the space
    is freed and the search ends as if nothing happened."""
    disk = small_disk(4 << 20)
    run = chaos.start(timing={"step_sleep": 0.02}, store=disk)
    run.master.wait_for(
        lambda: any(t["steps_completed"] >= 30 for t in run.trials()),
        timeout=60,
        what="a trial past step 30",
    )
    ballast = fill_disk(disk)
    failures = run.master.wait_for(
        lambda: disk_full_runs(run) if len(disk_full_runs(run)) >= 2 else None,
        timeout=60,
        what="two runs failed on the full disk",
    )
    ballast.unlink()
    run.counts.update(
        faults_injected=len(disk_full_runs(run)),
        faulted_trial_ids={trial_id for trial_id, _ in failures},
    )
    chaos.finish(run, reference)
    for _, how in disk_full_runs(run):
        assert f"to {disk}/" in how, how  # the message names where it could not write


def disk_full_runs(run: harness.ChaosRun) -> list[tuple[int, str]]:
    return [
        (t["id"], r["ended_how"])
        for t in run.trials()
        for r in run.master.trial(t["id"])["runs"]
        if "No space left on device" in (r["ended_how"] or "")
    ]
