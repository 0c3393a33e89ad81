"""The trial that bench/step_overhead.py runs on a live master.

It times the same PyTorch loop on digits with and without ctx.train.report_training_metrics
every step, alternating which goes first, and writes the timings to hparams["result_path"].
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import torch
from sklearn.datasets import load_digits
from torch import nn

import shipyard.core

SEED = 0
BATCH_SIZE = 64
HIDDEN = 256


def make_batches(steps: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)
    y = torch.tensor(digits.target, dtype=torch.long)
    generator = torch.Generator().manual_seed(SEED)
    batches = []
    for _ in range(steps):
        index = torch.randint(len(x), (BATCH_SIZE,), generator=generator)
        batches.append((x[index], y[index]))
    return batches


def timed_loop(
    batches: list[tuple[torch.Tensor, torch.Tensor]],
    ctx: shipyard.core.Context,
    *,
    report: bool,
    first_step: int,
) -> float:
    """Seconds for one pass over the batches. With ``report``, every step's loss is reported;
    the sender delivers in the background while the loop runs, as in real training. What is
    still queued at the end is flushed outside the timing, so it cannot leak into the next
    loop (it is at most 0.2 s of reports)."""
    torch.manual_seed(SEED)
    model = nn.Sequential(nn.Linear(64, HIDDEN), nn.ReLU(), nn.Linear(HIDDEN, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05)
    started = time.perf_counter()
    for offset, (x, y) in enumerate(batches):
        loss = nn.functional.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        value = loss.item()  # both loops read the loss, as any training loop that logs does
        if report:
            ctx.train.report_training_metrics(
                steps_completed=first_step + offset, metrics={"loss": value}
            )
    elapsed = time.perf_counter() - started
    if report:
        ctx.train.flush()
    return elapsed


def main() -> None:
    torch.set_num_threads(1)
    with shipyard.core.init() as ctx:
        steps = int(ctx.info.hparams["steps"])
        repetitions = int(ctx.info.hparams["repetitions"])
        batches = make_batches(steps)
        timed_loop(batches, ctx, report=False, first_step=0)  # warm-up, not counted

        plain, reporting = [], []
        for repetition in range(repetitions):
            first_step = 1 + repetition * steps
            # Alternate the order so a drifting machine doesn't favour one side.
            order = (False, True) if repetition % 2 == 0 else (True, False)
            for report in order:
                seconds = timed_loop(batches, ctx, report=report, first_step=first_step)
                (reporting if report else plain).append(seconds)

        overheads = [100 * (r - p) / p for p, r in zip(plain, reporting, strict=True)]
        # Medians of each side: one slow loop on a shared machine moves neither much.
        overall = 100 * (statistics.median(reporting) / statistics.median(plain) - 1)
        result = {
            "steps": steps,
            "repetitions": repetitions,
            "plain_s": plain,
            "reporting_s": reporting,
            "overhead_pct": overheads,
            "overhead_of_medians_pct": overall,
            "master": ctx.info.master,
        }
        Path(ctx.info.hparams["result_path"]).write_text(json.dumps(result))
        ctx.train.report_validation_metrics(
            steps_completed=repetitions * steps,
            metrics={"overhead_pct": overall},
        )


if __name__ == "__main__":
    main()
