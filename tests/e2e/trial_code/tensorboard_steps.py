"""A test trial for TensorBoard: steps.py's counting, checkpoints and crash, plus a scalar
of its own ("mine/x_squared", at each validation) written with TensorBoard's record writer
into ctx.train.get_tensorboard_path(), as a user's SummaryWriter would.

hparams: steps, ckpt_every, x, crash_at (the first run exits with code 3 after that step).
"""

import json
import os
import sys
import time

from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

import shipyard.core


def own_writer(directory):
    out = open(directory / f"events.out.tfevents.{int(time.time())}.mine.{os.getpid()}", "ab")
    writer = RecordWriter(out)
    writer.write(
        event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2").SerializeToString()
    )
    return out, writer


with shipyard.core.init() as ctx:
    hp = ctx.info.hparams
    out, writer = own_writer(ctx.train.get_tensorboard_path())
    start = 0
    if ctx.info.latest_checkpoint:
        with ctx.checkpoint.restore_path(ctx.info.latest_checkpoint) as path:
            start = json.loads((path / "state.json").read_text())["step"]
    for step in range(start + 1, hp["steps"] + 1):
        ctx.train.report_training_metrics(step, {"loss": 1.0 / step, "run": ctx.info.run_id})
        if step % hp["ckpt_every"] == 0:
            with ctx.checkpoint.store_path({"steps_completed": step}) as (path, uuid):
                (path / "state.json").write_text(json.dumps({"step": step}))
            ctx.train.report_validation_metrics(step, {"val_loss": hp["x"] ** 2 + 1.0 / step})
            value = summary_pb2.Summary.Value(tag="mine/x_squared", simple_value=hp["x"] ** 2)
            event = event_pb2.Event(
                wall_time=time.time(), step=step, summary=summary_pb2.Summary(value=[value])
            )
            writer.write(event.SerializeToString())
            out.flush()
        if step == hp.get("crash_at") and ctx.info.run_id == 1:
            sys.exit(3)
    out.close()
