"""A test trial for adaptive searchers: its searcher metric is its trial id (trial 1 is the
best of all), reported with the time metric "batches" at every step.

hparams: length (steps to train unless the searcher says otherwise), sleep (per step),
ignore_stop (never look at should_stop: the master must terminate it), no_time_metric
(leave "batches" out of the validation metrics), checkpoint_at_end (a checkpoint when it
trains to the end too).
"""

import json
import os
import time

import shipyard.core

with shipyard.core.init() as ctx:
    hp = ctx.info.hparams
    loss = float(os.environ["SHIPYARD_TRIAL_ID"])
    step = 0
    while step < hp.get("length", 1000):
        step += 1
        metrics = {"loss": loss} if hp.get("no_time_metric") else {"loss": loss, "batches": step}
        ctx.train.report_validation_metrics(step, metrics)
        if not hp.get("ignore_stop") and ctx.searcher.should_stop():
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
                (path / "state.json").write_text(json.dumps({"step": step}))
            print(f"stopped by the searcher at step {step}", flush=True)
            break
        time.sleep(hp.get("sleep", 0.05))
    else:
        if hp.get("checkpoint_at_end"):
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
                (path / "state.json").write_text(json.dumps({"step": step}))
    print("finished", flush=True)
