"""A DDP loop for bench/ddp_overhead.py, the same script under Shipyard's launcher and under
plain torchrun: a 3-layer MLP on synthetic data, gloo on CPU. Rank 0 appends its samples/s
(timed after a warm-up, so start-up is not in it) to the file named by hparam or argv.
Uses shipyard.core for a metric every 20 steps either way (under torchrun: local mode)."""

import json
import os
import sys
import time

import torch
import torch.distributed as dist
from torch import nn

import shipyard.core

WARMUP, STEPS, BATCH = 20, 200, 64

torch.manual_seed(0)
torch.set_num_threads(1)  # two ranks on two cores
dist.init_process_group("gloo")
rank = dist.get_rank()
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(
        nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10)
    )
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
data = torch.randn(BATCH, 256)
target = torch.randint(0, 10, (BATCH,))
with shipyard.core.init() as ctx:
    out = ctx.info.hparams.get("result_path") or sys.argv[1]
    for step in range(WARMUP + STEPS):
        if step == WARMUP:
            started = time.perf_counter()
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(data), target)
        loss.backward()
        optimizer.step()
        if step % 20 == 0:
            ctx.train.report_training_metrics(step + 1, {"loss": loss.item()})
    elapsed = time.perf_counter() - started
if rank == 0:
    samples_per_s = STEPS * BATCH * dist.get_world_size() / elapsed
    with open(out, "a") as f:
        f.write(json.dumps({"samples_per_s": samples_per_s, "pid": os.getpid()}) + "\n")
dist.destroy_process_group()
