"""A light trial for bench/recovery.py: it reports a training metric at every step, one
step every ``interval_s``, and checks should_preempt() as a real training loop does (so its
signal long-poll is open too); it goes on through master restarts (the metric sender
retries while the master is down). No framework: 50 of these share two cores with the master.

It ends when ``stop_file`` exists or after ``max_runtime_s``, so it cannot outlive the
benchmark even if the benchmark's own cleanup fails.
"""

import os
import time

import shipyard.core

with shipyard.core.init() as ctx:
    hparams = ctx.info.hparams
    stop_file = hparams["stop_file"]
    interval_s = float(hparams["interval_s"])
    deadline = time.monotonic() + float(hparams["max_runtime_s"])
    step = 0
    while time.monotonic() < deadline and not os.path.exists(stop_file):
        step += 1
        ctx.train.report_training_metrics(step, {"loss": 1.0 / step})
        if ctx.preempt.should_preempt():
            break
        time.sleep(interval_s)
