"""A test trial that fails the way the hparam `fail` says, after one reported step.

fail: value_error (a ValueError), long (a ValueError with a 5000-character message),
exit_message (sys.exit with a message), exit_code (sys.exit(4)).
"""

import sys

import shipyard.core

with shipyard.core.init() as ctx:
    ctx.train.report_training_metrics(1, {"loss": 1.0})
    fail = ctx.info.hparams["fail"]
    if fail == "value_error":
        raise ValueError("learning rate 0.5 is too high")
    if fail == "long":
        raise ValueError("x" * 5000)
    if fail == "exit_message":
        sys.exit("no training data in /data")
    if fail == "exit_code":
        sys.exit(4)
