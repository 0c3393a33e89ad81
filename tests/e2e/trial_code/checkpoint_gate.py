"""A test trial for checkpoint storage faults: trains `steps` steps and checkpoints every
`ckpt_every` (state.json plus `ckpt_bytes` of weights); before the checkpoint at step
`gate_step` it waits until the file `<gate>.<run_id>` exists, so a test can fill or free the
checkpoint disk at a known point of each run, without timing. Without a gate (a trial that
shares no file with the test), `sleep` seconds a step leave the test time to watch.

hparams: steps, ckpt_every, ckpt_bytes, and gate (absolute path prefix) with gate_step, or
sleep.
"""

import json
import time
from pathlib import Path

import shipyard.core

with shipyard.core.init() as ctx:
    hp = ctx.info.hparams
    start = 0
    if ctx.info.latest_checkpoint:
        with ctx.checkpoint.restore_path(ctx.info.latest_checkpoint) as path:
            start = json.loads((path / "state.json").read_text())["step"]
        print(f"resumed from step {start}", flush=True)
    for step in range(start + 1, hp["steps"] + 1):
        ctx.train.report_training_metrics(step, {"loss": 1.0 / step, "run": ctx.info.run_id})
        time.sleep(hp.get("sleep", 0))
        if step % hp["ckpt_every"]:
            continue
        if step == hp.get("gate_step"):
            gate = Path(f"{hp['gate']}.{ctx.info.run_id}")
            print(f"waiting at the gate before checkpoint {step}", flush=True)
            while not gate.exists():
                time.sleep(0.02)
        with ctx.checkpoint.store_path({"steps_completed": step}) as (path, uuid):
            (path / "state.json").write_text(json.dumps({"step": step}))
            (path / "weights.bin").write_bytes(b"w" * hp["ckpt_bytes"])
        print(f"checkpoint {uuid} at step {step}", flush=True)
        ctx.train.report_validation_metrics(step, {"val_loss": 1.0 / step})
    print("finished", flush=True)
