"""A trial whose hyperparameters cannot work says so with det.InvalidHP (imports only
`determined`): Determined ends it without a restart."""

import determined as det
from determined import core

with core.init() as ctx:
    lr = det.get_cluster_info().trial.hparams["lr"]
    ctx.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
    if lr > 1:
        raise det.InvalidHP(f"lr {lr} diverges")
print("not reached", flush=True)
