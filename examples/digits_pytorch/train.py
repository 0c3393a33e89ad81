"""A small MLP on scikit-learn's bundled handwritten digits (8x8 images, no download).

Reports training loss, validation accuracy and loss; checkpoints the model and optimizer at
every epoch end; resumes from the latest checkpoint (mid-epoch too); stops when preempted.
Run it without a master to try it:

    SHIPYARD_HPARAMS='{"lr": 0.01, "hidden": 64, "dropout": 0.1, "batch_size": 32}' \
        python3 train.py
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from sklearn.datasets import load_digits
from torch import nn

import shipyard.core

DEFAULT_BATCHES = 450  # about 10 epochs at batch size 32, when no searcher sets max_length
REPORT_EVERY = 15  # batches between training-loss reports
DATA_SEED = 0  # the same 80/20 train/validation split for every trial
STATE_FILE = "state.pt"


@dataclass
class Data:
    train_x: torch.Tensor
    train_y: torch.Tensor
    val_x: torch.Tensor
    val_y: torch.Tensor


def load_data() -> Data:
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)  # pixels are 0..16
    y = torch.tensor(digits.target, dtype=torch.long)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(DATA_SEED))
    n_val = len(x) // 5
    val, train = order[:n_val], order[n_val:]
    return Data(x[train], y[train], x[val], y[val])


def make_model(hidden: int, dropout: float) -> nn.Module:
    return nn.Sequential(
        nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 10)
    )


def epoch_order(epoch: int, n: int, seed: int) -> torch.Tensor:
    """The sample order of one epoch, a function of (seed, epoch) so a resumed trial
    continues mid-epoch with exactly the batches it had not seen yet."""
    generator = torch.Generator().manual_seed(seed * 100_003 + epoch)
    return torch.randperm(n, generator=generator)


@torch.no_grad()
def validate(model: nn.Module, data: Data) -> dict[str, float]:
    model.eval()
    logits = model(data.val_x)
    model.train()
    return {
        "validation_loss": nn.functional.cross_entropy(logits, data.val_y).item(),
        "validation_accuracy": (logits.argmax(dim=1) == data.val_y).float().mean().item(),
    }


def save(
    ctx: shipyard.core.Context, model: nn.Module, optimizer: torch.optim.Optimizer, step: int
) -> None:
    with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
        state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "step": step}
        torch.save(state, path / STATE_FILE)


def restore(ctx: shipyard.core.Context, model: nn.Module, optimizer: torch.optim.Optimizer) -> int:
    """Load the latest checkpoint into model and optimizer; return its batches completed."""
    if not ctx.info.latest_checkpoint:
        return 0
    with ctx.checkpoint.restore_path(ctx.info.latest_checkpoint) as path:
        state = torch.load(path / STATE_FILE)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    return int(state["step"])


def report_validation(ctx: shipyard.core.Context, model: nn.Module, data: Data, step: int) -> None:
    # "batches" is the time_metric an adaptive config names.
    ctx.train.report_validation_metrics(
        steps_completed=step, metrics={**validate(model, data), "batches": step}
    )


def main() -> None:
    torch.set_num_threads(1)  # trials share the machine's cores; one thread each is fastest
    with shipyard.core.init() as ctx:
        hparams = ctx.info.hparams
        batch_size = int(hparams.get("batch_size", 32))
        torch.manual_seed(ctx.info.trial_seed)

        data = load_data()
        model = make_model(int(hparams.get("hidden", 64)), float(hparams.get("dropout", 0.1)))
        optimizer = torch.optim.Adam(model.parameters(), lr=float(hparams.get("lr", 0.01)))
        batches_per_epoch = -(-len(data.train_x) // batch_size)

        step = restore(ctx, model, optimizer)
        saved_step = step
        running_loss, running_count = 0.0, 0
        # Each operation is how far the searcher lets the trial train now: a rung of ASHA,
        # or the whole max_length of a random or grid search.
        for op in ctx.searcher.operations(default_length=DEFAULT_BATCHES):
            while step < op.length:
                epoch, batch_in_epoch = divmod(step, batches_per_epoch)
                order = epoch_order(epoch, len(data.train_x), ctx.info.trial_seed)
                index = order[batch_in_epoch * batch_size : (batch_in_epoch + 1) * batch_size]

                loss = nn.functional.cross_entropy(model(data.train_x[index]), data.train_y[index])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                step += 1
                running_loss, running_count = running_loss + loss.item(), running_count + 1

                if step % REPORT_EVERY == 0 or step == op.length:
                    ctx.train.report_training_metrics(
                        steps_completed=step, metrics={"loss": running_loss / running_count}
                    )
                    running_loss, running_count = 0.0, 0
                if step % batches_per_epoch == 0 and step < op.length:
                    save(ctx, model, optimizer, step)
                    saved_step = step
                    report_validation(ctx, model, data, step)
                if ctx.preempt.should_preempt() or ctx.searcher.should_stop():
                    if saved_step != step:
                        save(ctx, model, optimizer, step)
                    return
            # The end of an operation: the checkpoint first (a searcher acting on the
            # validation, PBT copying this trial, finds it), then the validation the searcher
            # decides on; a run resumed at this point reports it again.
            if saved_step != step:
                save(ctx, model, optimizer, step)
                saved_step = step
            report_validation(ctx, model, data, step)


if __name__ == "__main__":
    main()
