"""A 2-rank torch.distributed (gloo) trial run by shipyard.launch.torch_distributed: every rank
adds its rank+1; rank 0 reports the sum as val_loss.

hparams: crash_rank (that rank exits 3 before joining the group), crash_runs (runs that crash).
"""

import json
import os
import sys

import torch
import torch.distributed as dist

hp = json.loads(os.environ.get("SHIPYARD_HPARAMS", "{}"))
rank = int(os.environ["RANK"])
run_id = int(os.environ.get("SHIPYARD_RUN_ID", "1"))
print(f"rank {rank} of {os.environ['WORLD_SIZE']} on slot {os.environ['SHIPYARD_SLOT_IDS']}")
if rank == hp.get("crash_rank") and run_id <= hp.get("crash_runs", 1):
    print(f"rank {rank} crashes in run {run_id}", flush=True)
    sys.exit(3)

dist.init_process_group(os.environ["SHIPYARD_DIST_BACKEND"])  # env://: MASTER_ADDR etc.
total = torch.tensor([float(rank + 1)])
dist.all_reduce(total)
print(f"rank {rank} sum {total.item():g}", flush=True)
if rank == 0:  # only the chief talks to the master (ctx.distributed is single-process for now)
    import shipyard.core

    with shipyard.core.init() as ctx:
        ctx.train.report_validation_metrics(1, {"val_loss": total.item()})
dist.barrier()
dist.destroy_process_group()
