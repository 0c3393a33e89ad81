"""A trial for the torch launcher whose every rank uses shipyard.core: steps with a checkpoint
every 5, should_preempt() each step (a collective: the chief decides for every rank).

hparams: steps, hang_rank and hang_at (that rank hangs at that step in run 1, without
calling shipyard.core: the chief then waits for it in the next collective).
"""

import json
import time

import shipyard.core

with shipyard.core.init() as ctx:
    hp = ctx.info.hparams
    rank = ctx.distributed.rank
    start = 0
    if ctx.info.latest_checkpoint:
        with ctx.checkpoint.restore_path(ctx.info.latest_checkpoint) as path:
            start = json.loads((path / "state.json").read_text())["step"]
        print(f"rank {rank} resumed from step {start}", flush=True)
    for step in range(start + 1, hp["steps"] + 1):
        ctx.train.report_training_metrics(step, {"loss": 1.0 / step, "run": ctx.info.run_id})
        if step == hp.get("hang_at") and rank == hp.get("hang_rank") and ctx.info.run_id == 1:
            print(f"rank {rank} hangs at step {step}", flush=True)
            time.sleep(3600)
        if step % 5 == 0:
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
                if ctx.distributed.is_chief:
                    (path / "state.json").write_text(json.dumps({"step": step}))
        if ctx.preempt.should_preempt():
            break
        time.sleep(0.05)
    print(f"rank {rank} finished", flush=True)
