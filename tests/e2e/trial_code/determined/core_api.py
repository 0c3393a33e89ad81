"""A Determined Core API script as a Determined user writes it (imports only `determined`
and the standard library), using every call of the API Shipyard's shim presents."""

import json
import logging
import pathlib
import tempfile

import determined as det
from determined import core

logging.basicConfig(level=logging.INFO, format=det.LOG_FORMAT)

info = det.get_cluster_info()
assert info is not None, "not in a trial"
hparams = info.trial.hparams
if hparams["lr"] <= 0:
    raise det.InvalidHP(f"lr must be > 0, got {hparams['lr']}")
print(
    f"info trial={info.trial.trial_id} experiment={info.trial.experiment_id} hparams={hparams} "
    f"latest={info.latest_checkpoint} data={info.user_data} container_rank={info.container_rank} "
    f"addr0={info.container_addrs[0]} slots={info.slot_ids}",
    flush=True,
)

distributed = core.DistributedContext(
    rank=0, size=1, local_rank=0, local_size=1, cross_rank=0, cross_size=1
)
with core.init(distributed=distributed) as ctx:
    dist = ctx.distributed
    print(
        f"dist rank={dist.get_rank()} local={dist.get_local_rank()} size={dist.get_size()} "
        f"allgather={dist.allgather(1)} gather={dist.gather(2)} broadcast={dist.broadcast(3)} "
        f"allgather_local={dist.allgather_local(4)} gather_local={dist.gather_local(5)} "
        f"broadcast_local={dist.broadcast_local(6)}",
        flush=True,
    )
    tb = ctx.train.get_tensorboard_path()
    (tb / "events.txt").write_text("tensorboard files go here")

    steps = 0
    for op in ctx.searcher.operations():
        while steps < op.length:
            steps += 1
            loss = hparams["lr"] * 10 / steps
            ctx.train.report_training_metrics(steps_completed=steps, metrics={"loss": loss})
            if steps % 2 == 0:  # a group of the script's own, beside training and validation
                ctx.train.report_metrics("test", steps, {"acc": steps / 10})
            op.report_progress(steps)
            if ctx.preempt.should_preempt():
                break
        ctx.train.report_metrics("training", steps, {"extra": 1.0})
        ctx.train.report_validation_metrics(steps_completed=steps, metrics={"val_loss": loss})
        ctx.train.report_metrics(group="validation", steps_completed=steps, metrics={"acc": 0.5})
        ctx.train.report_progress(1.0)
        # The searcher's metric in another group, better than any validation: not read by it.
        ctx.train.report_metrics(
            group="eval.extra", steps_completed=steps, metrics={"val_loss": 0.01}
        )
        try:
            ctx.train.report_metrics(group="has space", steps_completed=steps, metrics={"x": 1})
        except ValueError as exc:
            print(f"refused: {exc}", flush=True)

        with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, storage_id):
            (path / "state.json").write_text(json.dumps({"steps": steps}))
        with ctx.checkpoint.restore_path(storage_id) as path:
            restored = json.loads((path / "state.json").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            (pathlib.Path(tmp) / "weights.txt").write_text("w")
            uploaded = ctx.checkpoint.upload(tmp, {"steps_completed": steps, "kind": "upload"})
            ctx.checkpoint.download(uploaded, pathlib.Path(tmp, "copy"))
            copied = sorted(p.name for p in pathlib.Path(tmp, "copy").iterdir())
        metadata = ctx.checkpoint.get_metadata(uploaded)
        print(
            f"checkpoints stored={storage_id} restored={restored} uploaded={uploaded} "
            f"copied={copied} kind={metadata['kind']}",
            flush=True,
        )
        ctx.checkpoint.delete(storage_id)
        print(f"deleted {storage_id}", flush=True)
        try:  # the one this trial would resume from
            ctx.checkpoint.delete(uploaded)
        except Exception as exc:
            print(f"kept {uploaded}: {exc}", flush=True)
        op.report_completed(loss)
    print("core api done", flush=True)
