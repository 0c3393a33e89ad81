"""Trainer overhead: shipyard.integrations.torch.Trainer vs a hand-written loop.

Single process, local mode (no master), one thread. Both train the same digits MLP (batch 64,
hidden 256, Adam) from the same seed over the same shuffled DataLoader for EPOCHS epochs,
report the mean training loss every REPORT_EVERY steps through ctx.train, check
ctx.preempt.should_preempt() and ctx.searcher.should_stop() every step, and end with one
validation pass and one checkpoint (model + optimizer). Timed from the model's construction
to the end, alternating which goes first, REPETITIONS times. Local mode's printed reports
are discarded. Overhead = median(Trainer) / median(hand-written) - 1. Prints one JSON
object. Target: < 3 %.
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
from pathlib import Path
from typing import Any

import torch
from _stats import summary
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import shipyard.core
from shipyard.integrations.torch import Batches, Epochs, Trainer, Trial

EPOCHS = 10
BATCH_SIZE = 64
HIDDEN = 256
REPORT_EVERY = 10
REPETITIONS = 15
TARGET_PCT = 3.0


def datasets() -> tuple[TensorDataset, TensorDataset]:
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.long)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(0))
    val, train = order[:360], order[360:]
    return TensorDataset(x[train], y[train]), TensorDataset(x[val], y[val])


TRAIN_SET, VAL_SET = datasets()


class DigitsTrial(Trial):
    def build_model(self) -> nn.Module:
        return nn.Sequential(nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10))

    def build_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.Adam(model.parameters(), lr=1e-3)

    def build_training_data_loader(self) -> DataLoader:
        return DataLoader(TRAIN_SET, batch_size=BATCH_SIZE, shuffle=True)

    def build_validation_data_loader(self) -> DataLoader:
        return DataLoader(VAL_SET, batch_size=256)

    def train_batch(self, batch: Any, model: nn.Module, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        return {"loss": nn.functional.cross_entropy(model(x), y)}

    def evaluate_batch(self, batch: Any, model: nn.Module) -> dict[str, Any]:
        x, y = batch
        logits = model(x)
        return {
            "validation_loss": nn.functional.cross_entropy(logits, y),
            "validation_accuracy": (logits.argmax(1) == y).float().mean(),
        }


def hand_written(ctx: shipyard.core.Context) -> tuple[float, int]:
    torch.manual_seed(0)
    started = time.perf_counter()
    trial = DigitsTrial(ctx)
    model = trial.build_model()
    optimizer = trial.build_optimizer(model)
    loader, val_loader = trial.build_training_data_loader(), trial.build_validation_data_loader()
    step, losses = 0, []
    for _epoch in range(EPOCHS):
        for batch in loader:
            loss = trial.train_batch(batch, model, step)["loss"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            step += 1
            losses.append(loss.detach())
            if step % REPORT_EVERY == 0:
                ctx.train.report_training_metrics(step, {"loss": torch.stack(losses).mean().item()})
                losses = []
            if ctx.preempt.should_preempt() or ctx.searcher.should_stop():
                break
    if losses:
        ctx.train.report_training_metrics(step, {"loss": torch.stack(losses).mean().item()})
    model.eval()
    sums: dict[str, float] = {}
    with torch.no_grad():
        for batch in val_loader:
            for name, value in trial.evaluate_batch(batch, model).items():
                sums[name] = sums.get(name, 0.0) + float(value) * len(batch[0])
    model.train()
    with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
        torch.save(model.state_dict(), path / "model.pt")
        torch.save(optimizer.state_dict(), path / "optimizer.pt")
    metrics = {name: total / len(VAL_SET) for name, total in sums.items()}
    ctx.train.report_validation_metrics(step, {**metrics, "batches": step})
    return time.perf_counter() - started, step


def with_trainer(ctx: shipyard.core.Context) -> tuple[float, int]:
    torch.manual_seed(0)
    started = time.perf_counter()
    trainer = Trainer(DigitsTrial(ctx), ctx)
    trainer.fit(max_length=Epochs(EPOCHS), report_period=Batches(REPORT_EVERY))
    return time.perf_counter() - started, trainer.steps_completed


def main() -> None:
    torch.set_num_threads(1)
    for name in [n for n in os.environ if n.startswith("SHIPYARD_")]:
        del os.environ[name]  # local mode
    plain_s: list[float] = []
    trainer_s: list[float] = []
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)  # local checkpoints go to ./checkpoints
        sink = io.StringIO()
        with contextlib.redirect_stdout(sink), shipyard.core.init() as ctx:
            hand_written(ctx)  # warm-up, not counted
            ctx.info.latest_checkpoint = None
            with_trainer(ctx)
            for repetition in range(REPETITIONS):
                runs = (hand_written, with_trainer)
                for run in runs if repetition % 2 == 0 else runs[::-1]:
                    ctx.info.latest_checkpoint = None  # each run starts afresh
                    seconds, steps = run(ctx)
                    (plain_s if run is hand_written else trainer_s).append(seconds)
            ctx.train.flush()
        checkpoints = len(list(Path(scratch, "checkpoints").glob("*/metadata.json")))
    samples = steps * BATCH_SIZE
    plain, trainer = statistics.median(plain_s), statistics.median(trainer_s)
    overhead = (trainer / plain - 1) * 100
    paired = [(t / p - 1) * 100 for p, t in zip(plain_s, trainer_s, strict=True)]
    json.dump(
        {
            "benchmark": "trainer_overhead",
            "unit": "%",
            "what": "Trainer.fit vs a hand-written loop: same model, data, reports, "
            "validation and checkpoint; single process, CPU, 1 thread",
            "steps_per_run": steps,
            "batch_size": BATCH_SIZE,
            "repetitions": REPETITIONS,
            "checkpoints_written": checkpoints,
            "hand_written_s_median": round(plain, 4),
            "trainer_s_median": round(trainer, 4),
            "hand_written_samples_per_s": round(samples / plain),
            "trainer_samples_per_s": round(samples / trainer),
            "overhead_pct": round(overhead, 2),
            "paired_overhead_pct": summary(paired, digits=2),
            "target": TARGET_PCT,
            "meets_target": overhead < TARGET_PCT,
        },
        sys.stdout,
    )
    print()


if __name__ == "__main__":
    main()
