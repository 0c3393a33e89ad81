"""A test trial: counts steps, checkpoints, validates, and misbehaves on request.

hparams: steps, ckpt_every, x, sleep, crash_at (step), crash_runs (runs that crash there),
silent (exit without reporting), ignore_sigterm (keep running when terminated),
ignore_preempt (never look at should_preempt), hang_at (step where the first run hangs
without calling shipyard.core), quiet (no training metrics).
"""

import json
import signal
import sys
import time

import shipyard.core

with shipyard.core.init() as ctx:
    hp = ctx.info.hparams
    if hp.get("ignore_sigterm"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if hp.get("silent"):
        print("exiting without a metric")
        sys.exit(0)
    start = 0
    if ctx.info.latest_checkpoint:
        with ctx.checkpoint.restore_path(ctx.info.latest_checkpoint) as path:
            start = json.loads((path / "state.json").read_text())["step"]
        print(f"resumed from step {start}", flush=True)
    for step in range(start + 1, hp.get("steps", 10) + 1):
        if not hp.get("quiet"):
            ctx.train.report_training_metrics(step, {"loss": 1.0 / step, "run": ctx.info.run_id})
        if step % hp.get("ckpt_every", 5) == 0:
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, uuid):
                (path / "state.json").write_text(json.dumps({"step": step}))
            ctx.train.report_validation_metrics(
                step, {"val_loss": hp.get("x", 1.0) ** 2 + 1.0 / step}
            )
        if step == hp.get("crash_at") and ctx.info.run_id <= hp.get("crash_runs", 1):
            print(f"boom at step {step} in run {ctx.info.run_id}", flush=True)
            sys.exit(3)
        if step == hp.get("hang_at") and ctx.info.run_id == 1:
            print(f"hanging at step {step}", flush=True)
            time.sleep(3600)
        if not hp.get("ignore_preempt") and ctx.preempt.should_preempt():
            print(f"preempted at step {step}", flush=True)
            break
        if ctx.searcher.should_stop():
            print(f"stopped by the searcher at step {step}", flush=True)
            break
        time.sleep(hp.get("sleep", 0))
    print("finished", flush=True)
