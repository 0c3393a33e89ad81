"""A test trial for `experiment continue`: trains to the searcher's length, checkpoints and
validates every `every` steps and at the end, and resumes from its latest checkpoint.

hparams: x (val_loss is x**2 + 1/step), every, crash_at (a step where its first run exits
with code 3, after that step's checkpoint, if any).
"""

import json
import sys

import shipyard.core

with shipyard.core.init() as ctx:
    hp = ctx.info.hparams
    start = 0
    if ctx.info.latest_checkpoint:
        with ctx.checkpoint.restore_path(ctx.info.latest_checkpoint) as path:
            start = json.loads((path / "state.json").read_text())["step"]
        print(f"resumed from step {start}", flush=True)
    length = ctx.searcher.target or 4
    every = hp.get("every", 2)
    for step in range(start + 1, length + 1):
        ctx.train.report_training_metrics(step, {"loss": 1.0 / step, "run": ctx.info.run_id})
        if step % every == 0 or step == length:
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
                (path / "state.json").write_text(json.dumps({"step": step}))
            x = hp.get("x", 1.0)
            ctx.train.report_validation_metrics(
                step, {"val_loss": x * x + 1.0 / step, "accuracy": step / (10 + x)}
            )
        if step == hp.get("crash_at") and ctx.info.run_id == 1:
            print(f"boom at step {step}", flush=True)
            sys.exit(3)
    print(f"trained to {length}", flush=True)
