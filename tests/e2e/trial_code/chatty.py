"""A test trial that prints many log lines (hparam `lines`), then reports one validation."""

import shipyard.core

with shipyard.core.init() as ctx:
    for i in range(ctx.info.hparams.get("lines", 1000)):
        print(f"line {i:06d} of a chatty trial, padded to make the output long enough", flush=False)
    ctx.train.report_validation_metrics(1, {"val_loss": 1.0})
