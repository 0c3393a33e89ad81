"""Reproduces metrics lost to a kill right after a checkpoint: the trial reports a training
metric every step, checkpoints every `ckpt_every` steps, and in its first run SIGKILLs itself
right after the checkpoint at `kill_at` is stored (registered with the master). The restarted
run resumes from that checkpoint, so it never reports the steps before it again.

hparams: steps, ckpt_every, kill_at, flush_first (call ctx.train.flush() before each
checkpoint: the workaround, and what store_path could do itself), kill_inside (SIGKILL inside
the store_path block instead, after the files are written and before it is finalized).
"""

import json
import os
import signal
import time

import shipyard.core

with shipyard.core.init() as ctx:
    hp = ctx.info.hparams
    start = 0
    if ctx.info.latest_checkpoint:
        with ctx.checkpoint.restore_path(ctx.info.latest_checkpoint) as path:
            start = json.loads((path / "state.json").read_text())["step"]
        print(f"resumed from step {start}", flush=True)
    for step in range(start + 1, hp["steps"] + 1):
        ctx.train.report_training_metrics(step, {"loss": 1.0 / step})
        if step == 1:
            # The first report leaves at once; the sender then gathers for 0.2 s, so the
            # next steps, reported 0.1 s later, wait in its queue.
            time.sleep(0.1)
        if step % hp["ckpt_every"] == 0:
            if hp.get("flush_first"):
                ctx.train.flush()
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
                (path / "state.json").write_text(json.dumps({"step": step}))
                if hp.get("kill_inside") and step == hp["kill_at"] and ctx.info.run_id == 1:
                    print(f"killing myself inside the checkpoint at step {step}", flush=True)
                    os.kill(os.getpid(), signal.SIGKILL)
            if step == hp["kill_at"] and ctx.info.run_id == 1 and not hp.get("kill_inside"):
                print(f"killing myself after the checkpoint at step {step}", flush=True)
                os.kill(os.getpid(), signal.SIGKILL)
    print("finished", flush=True)
