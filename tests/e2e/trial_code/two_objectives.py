"""A test trial with two objectives that pull apart: error falls as x nears 0.3, cost
grows with x. Reports both once, as validation metrics."""

import shipyard.core

with shipyard.core.init() as ctx:
    x = float(ctx.info.hparams["x"])
    ctx.train.report_validation_metrics(1, {"error": (x - 0.3) ** 2, "cost": x})
