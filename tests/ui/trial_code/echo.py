"""A trial for the web UI's tests: it trains slowly (a training loss every step, a
validation loss every 5) and prints the text of each *.txt file that appears in its folder
<inbox>/<trial id>, then deletes it, so a test can make a running trial print a line while
the page is open. It stops when the master asks (pause) and never ends by itself.

hparams: inbox (absolute path of a folder), lr (how fast the loss falls).
"""

import math
import time
from pathlib import Path

import shipyard.core

with shipyard.core.init() as ctx:
    inbox = Path(ctx.info.hparams["inbox"]) / str(ctx.info.trial_id)
    inbox.mkdir(parents=True, exist_ok=True)
    lr = float(ctx.info.hparams.get("lr", 0.1))
    print("echo trial ready", flush=True)
    step = 0
    while not ctx.preempt.should_preempt():
        for path in sorted(inbox.glob("*.txt")):
            print(path.read_text().strip(), flush=True)
            path.unlink()
        step += 1
        loss = 1.0 / (1.0 + lr * step) + 0.02 * math.sin(step)
        ctx.train.report_training_metrics(step, {"loss": loss})
        if step % 5 == 0:
            ctx.train.report_validation_metrics(step, {"val_loss": loss + 0.05})
        time.sleep(0.1)
    print(f"paused at step {step}", flush=True)
