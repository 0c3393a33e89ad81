"""PyTorchTrial adapter overhead: a Determined ``PyTorchTrial`` run by Shipyard's runner
(the Trainer's manual mode, through ``PyTorchTrialContext``) vs the same model as a Shipyard
``Trial`` under ``Trainer.fit``.

Single process, local mode (no master), one thread: the model, data, optimizer, reports,
final validation and checkpoint of bench/trainer_overhead.py (digits MLP, batch 64, hidden
256, Adam, EPOCHS epochs, training reports every REPORT_EVERY steps). Timed from the
trial's construction to the end, alternating which goes first, REPETITIONS times.
Overhead = median(adapter) / median(Trainer) - 1, in wall time and in the process's CPU
time (steadier when other work shares the machine). Prints one JSON object. Target: < 3 %.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import time
from typing import Any

import torch
from _stats import summary
from torch import nn
from trainer_overhead import BATCH_SIZE, EPOCHS, HIDDEN, REPORT_EVERY, TRAIN_SET, VAL_SET
from trainer_overhead import DigitsTrial as ShipyardTrial

import shipyard.core
from shipyard.integrations.determined_trial._adapter import DeterminedTrial
from shipyard.integrations.determined_trial._data import DataLoader
from shipyard.integrations.determined_trial._trial import PyTorchTrial
from shipyard.integrations.torch import Batches, Epochs, Trainer

REPETITIONS = 15
TARGET_PCT = 3.0


class DeterminedDigits(PyTorchTrial):
    """The same model as trainer_overhead's DigitsTrial, as a Determined user writes it."""

    def __init__(self, context: Any) -> None:
        self.context = context
        model = nn.Sequential(nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10))
        self.model = context.wrap_model(model)
        self.optimizer = context.wrap_optimizer(torch.optim.Adam(model.parameters(), lr=1e-3))

    def build_training_data_loader(self) -> DataLoader:
        return DataLoader(
            TRAIN_SET, batch_size=self.context.get_per_slot_batch_size(), shuffle=True
        )

    def build_validation_data_loader(self) -> DataLoader:
        return DataLoader(VAL_SET, batch_size=256)

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        return {"loss": loss}

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        logits = self.model(x)
        return {
            "validation_loss": nn.functional.cross_entropy(logits, y),
            "validation_accuracy": (logits.argmax(1) == y).float().mean(),
        }


def fit(trial: Any, ctx: shipyard.core.Context) -> tuple[float, float, int]:
    """(wall seconds, this process's CPU seconds, steps)."""
    torch.manual_seed(0)
    started, cpu = time.perf_counter(), time.process_time()
    trainer = Trainer(trial(), ctx)
    trainer.fit(max_length=Epochs(EPOCHS), report_period=Batches(REPORT_EVERY))
    return time.perf_counter() - started, time.process_time() - cpu, trainer.steps_completed


def main() -> None:
    torch.set_num_threads(1)
    for name in [n for n in os.environ if n.startswith("SHIPYARD_")]:
        del os.environ[name]  # local mode
    times: dict[str, list[float]] = {"trainer": [], "adapter": []}
    cpu: dict[str, list[float]] = {"trainer": [], "adapter": []}
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)  # local checkpoints go to ./checkpoints
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), shipyard.core.init(hparams={}) as ctx:
            makers = {
                "trainer": lambda: ShipyardTrial(ctx),
                "adapter": lambda: DeterminedTrial(
                    ctx, DeterminedDigits, global_batch_size=BATCH_SIZE, experiment_config={}
                ),
            }
            for maker in makers.values():  # warm-up, not counted
                ctx.info.latest_checkpoint = None
                fit(maker, ctx)
            for repetition in range(REPETITIONS):
                order = list(makers) if repetition % 2 == 0 else list(makers)[::-1]
                for name in order:
                    ctx.info.latest_checkpoint = None  # each run starts afresh
                    seconds, cpu_s, steps = fit(makers[name], ctx)
                    times[name].append(seconds)
                    cpu[name].append(cpu_s)
            ctx.train.flush()
    trainer, adapter = statistics.median(times["trainer"]), statistics.median(times["adapter"])
    overhead = (adapter / trainer - 1) * 100
    paired = [(a / t - 1) * 100 for t, a in zip(times["trainer"], times["adapter"], strict=True)]
    samples = steps * BATCH_SIZE
    # CPU time: the same comparison, steadier on a machine shared with other work.
    cpu_trainer, cpu_adapter = statistics.median(cpu["trainer"]), statistics.median(cpu["adapter"])
    json.dump(
        {
            "benchmark": "pytorch_trial_overhead",
            "unit": "%",
            "what": "a Determined PyTorchTrial through Shipyard's runner (Trainer manual mode) "
            "vs the same model as a Shipyard Trial under Trainer.fit; single process, CPU, "
            "1 thread",
            "steps_per_run": steps,
            "batch_size": BATCH_SIZE,
            "repetitions": REPETITIONS,
            "trainer_s_median": round(trainer, 4),
            "adapter_s_median": round(adapter, 4),
            "trainer_samples_per_s": round(samples / trainer),
            "adapter_samples_per_s": round(samples / adapter),
            "overhead_pct": round(overhead, 2),
            "paired_overhead_pct": summary(paired, digits=2),
            "trainer_cpu_s_median": round(cpu_trainer, 4),
            "adapter_cpu_s_median": round(cpu_adapter, 4),
            "cpu_overhead_pct": round((cpu_adapter / cpu_trainer - 1) * 100, 2),
            "target": TARGET_PCT,
            "meets_target": overhead < TARGET_PCT,
        },
        sys.stdout,
    )
    print()


if __name__ == "__main__":
    main()
