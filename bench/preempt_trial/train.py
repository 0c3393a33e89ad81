"""A trial for bench/preempt_latency.py: it reports a step every 10 ms and checks
should_preempt() after each; preempted, it writes a 4 MB checkpoint, prints how long that
took, and exits. hparams: steps (0: until preempted)."""

import os
import time

import shipyard.core

MARK = "CHECKPOINT_WRITE_S "

with shipyard.core.init() as ctx:
    steps = ctx.info.hparams.get("steps", 0)
    step = 0
    while True:
        step += 1
        ctx.train.report_training_metrics(step, {"loss": 1.0 / step})
        if ctx.preempt.should_preempt():
            started = time.perf_counter()
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _):
                (path / "state.bin").write_bytes(os.urandom(4 << 20))
            print(f"{MARK}{time.perf_counter() - started:.4f}", flush=True)
            break
        if steps and step >= steps:
            break
        time.sleep(0.01)
