"""A test trial that waits at a gate: it prints a line, then waits until the file named by
the hparam `gate` exists, then prints again and ends. A test can act while the trial is
known to be running (follow its logs, read the slots, pause or kill it) without timing.

hparams: gate (absolute path of a file the test creates to let the trial finish).
While waiting it honours preemption (pause) and exits cleanly.
"""

import sys
import time
from pathlib import Path

import shipyard.core

with shipyard.core.init() as ctx:
    gate = Path(ctx.info.hparams["gate"])
    print(f"waiting at the gate in run {ctx.info.run_id}", flush=True)
    ctx.train.report_training_metrics(1, {"loss": 1.0})
    while not gate.exists():
        if ctx.preempt.should_preempt():
            print("preempted at the gate", flush=True)
            sys.exit(0)
        time.sleep(0.02)
    print("through the gate", flush=True)
    ctx.train.report_validation_metrics(2, {"val_loss": 0.5})
    print("finished", flush=True)
