"""A trial for bench/stop_latency.py: its searcher metric is its trial id, so every trial
after the first is the worst at its first rung and is stopped there. It prints how long
after reporting that validation ctx.searcher.should_stop() turned true."""

import os
import time

import shipyard.core

RUNG = 10  # the searcher's first rung, in batches

with shipyard.core.init() as ctx:
    loss = float(os.environ["SHIPYARD_TRIAL_ID"])
    reported_at = None
    for step in range(1, 10_000):
        ctx.train.report_validation_metrics(step, {"loss": loss, "batches": step})
        if step == RUNG:
            reported_at = time.perf_counter()
        if ctx.searcher.should_stop():
            print(f"STOP_SEEN_AFTER_S {time.perf_counter() - reported_at:.4f}", flush=True)
            break
        if loss == 1.0 and step >= ctx.searcher.max_length:
            break  # trial 1, the best: never stopped, it trains to the full length
        time.sleep(0.01)
