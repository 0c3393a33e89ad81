"""Determined's chief-only checkpoint in a multi-rank trial: only rank 0 enters
store_path(shard=False); the other ranks go on (imports only `determined` and the stdlib)."""

import determined as det
from determined import core

distributed = core.DistributedContext.from_torch_distributed()
with core.init(distributed=distributed) as ctx:
    rank = ctx.distributed.get_rank()
    steps = 4
    for step in range(1, steps + 1):
        ctx.train.report_training_metrics(steps_completed=step, metrics={"loss": 1.0 / step})
    total = sum(ctx.distributed.allgather(rank + 1))
    if rank == 0:
        ctx.train.report_validation_metrics(steps_completed=steps, metrics={"val_loss": 0.5})
        with ctx.checkpoint.store_path({"steps_completed": steps}, shard=False) as (path, sid):
            (path / "model.txt").write_text("chief's weights")
        print(f"rank 0 stored {sid}", flush=True)
    else:
        try:
            with ctx.checkpoint.store_path({"steps_completed": steps}) as (path, sid):
                pass
        except RuntimeError as exc:
            print(f"rank {rank} refused: {exc}", flush=True)
    # The ranks meet again after the chief's checkpoint: no rank waits for another there.
    stored = ctx.distributed.broadcast(sid if rank == 0 else None)
    # Sharded: metadata is optional per rank (only the merged one needs steps_completed)
    # and the ranks' dicts merge recursively.
    shards = {"shards": {f"rank{rank}": f"rank{rank}.txt"}}
    metadata = {"steps_completed": steps + 1, **shards} if rank == 0 else shards
    with ctx.checkpoint.store_path(metadata, shard=True) as (path, both):
        (path / f"rank{rank}.txt").write_text(str(rank))
    info = det.get_cluster_info()
    print(
        f"rank {rank} of {ctx.distributed.get_size()} local {ctx.distributed.get_local_rank()} "
        f"sum {total} chief's {stored} sharded {both} slots {info.slot_ids}",
        flush=True,
    )
