"""The digits MLP as a LightningModule, trained by PyTorch Lightning as a Shipyard trial.

ShipyardCallback reports what the module logs, registers Lightning's checkpoints with the
master and stops (after a checkpoint) when the trial is preempted; latest_checkpoint_path
resumes a restarted trial where it stopped; trainer_kwargs runs Lightning in the trial's
processes (one, or the ranks of `python3 -m shipyard.launch.torch_distributed`, with DDP).
Run it without a master to try it:

    SHIPYARD_HPARAMS='{"lr": 0.01, "hidden": 64, "batch_size": 32}' python3 train.py
"""

from __future__ import annotations

import lightning.pytorch as pl
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import shipyard.core
from shipyard.integrations.lightning import (
    ShipyardCallback,
    latest_checkpoint_path,
    trainer_kwargs,
)

DEFAULT_STEPS = 200  # when no searcher sets max_length (local mode)
VALIDATE_EVERY = 50  # optimizer steps (global, across epochs)
DATA_SEED = 0  # the same 80/20 train/validation split for every trial


class Digits(pl.LightningModule):
    def __init__(self, hidden: int, lr: float) -> None:
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def training_step(
        self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int
    ) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("loss", loss)
        return loss

    def validation_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> None:
        x, y = batch
        logits = self.net(x)
        # sync_dist: with several processes, the mean over all of them.
        self.log("validation_loss", nn.functional.cross_entropy(logits, y), sync_dist=True)
        accuracy = (logits.argmax(dim=1) == y).float().mean()
        self.log("validation_accuracy", accuracy, sync_dist=True)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.parameters(), lr=self.lr)


def loaders(batch_size: int) -> tuple[DataLoader, DataLoader]:
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)  # pixels are 0..16
    y = torch.tensor(digits.target, dtype=torch.long)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(DATA_SEED))
    n_val = len(x) // 5
    val, train = order[:n_val], order[n_val:]
    # With several processes Lightning gives each a DistributedSampler (batch_size each).
    train_loader = DataLoader(TensorDataset(x[train], y[train]), batch_size, shuffle=True)
    return train_loader, DataLoader(TensorDataset(x[val], y[val]), batch_size=256)


def main() -> None:
    torch.set_num_threads(1)  # trials share the machine's cores; one thread each is fastest
    with shipyard.core.init() as ctx:
        hparams = ctx.info.hparams
        pl.seed_everything(ctx.info.trial_seed, verbose=False)
        model = Digits(int(hparams.get("hidden", 64)), float(hparams.get("lr", 0.01)))
        train_loader, val_loader = loaders(int(hparams.get("batch_size", 32)))
        trainer = pl.Trainer(
            **trainer_kwargs(ctx),
            max_steps=ctx.searcher.max_length or DEFAULT_STEPS,
            val_check_interval=VALIDATE_EVERY,
            check_val_every_n_epoch=None,  # validate every VALIDATE_EVERY steps, not epochs
            callbacks=[ShipyardCallback(ctx, report_every=10)],
            logger=False,
            default_root_dir="lightning",  # not ./checkpoints, where local mode keeps Shipyard's
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        with latest_checkpoint_path(ctx) as ckpt_path:
            trainer.fit(model, train_loader, val_loader, ckpt_path=ckpt_path)


if __name__ == "__main__":
    main()
