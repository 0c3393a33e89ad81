"""The digits MLP of train.py, written for shipyard.integrations.torch.Trainer: no loop.

The Trainer reports training and validation metrics, checkpoints (and resumes mid-epoch),
honours preemption and the searcher's stop and targets, and, started by
``python3 -m shipyard.launch.torch_distributed``, trains on every slot with DDP
(distributed.yaml). Run it without a master to try it:

    SHIPYARD_HPARAMS='{"lr": 0.01, "hidden": 64, "dropout": 0.1, "batch_size": 32}' \
        python3 trainer_train.py
"""

from __future__ import annotations

from typing import Any

import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

import shipyard.core
from shipyard.integrations.torch import Batches, Epochs, Trainer, Trial

DATA_SEED = 0  # the same 80/20 train/validation split for every trial


def load_data() -> tuple[TensorDataset, TensorDataset]:
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)  # pixels are 0..16
    y = torch.tensor(digits.target, dtype=torch.long)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(DATA_SEED))
    n_val = len(x) // 5
    val, train = order[:n_val], order[n_val:]
    return TensorDataset(x[train], y[train]), TensorDataset(x[val], y[val])


class DigitsTrial(Trial):
    def __init__(self, ctx: shipyard.core.Context) -> None:
        super().__init__(ctx)
        self.hparams = ctx.info.hparams
        self.train_set, self.val_set = load_data()

    def build_model(self) -> nn.Module:
        hidden, dropout = (
            int(self.hparams.get("hidden", 64)),
            float(self.hparams.get("dropout", 0.1)),
        )
        return nn.Sequential(
            nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 10)
        )

    def build_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        return torch.optim.Adam(model.parameters(), lr=float(self.hparams.get("lr", 0.01)))

    def build_training_data_loader(self) -> DataLoader:
        # Per process: with 2 slots, each of 2 processes takes batches of this size.
        batch_size = int(self.hparams.get("batch_size", 32))
        return DataLoader(self.train_set, batch_size=batch_size, shuffle=True)

    def build_validation_data_loader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=256)

    def train_batch(self, batch: Any, model: nn.Module, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        return {"loss": nn.functional.cross_entropy(model(x), y)}

    def evaluate_batch(self, batch: Any, model: nn.Module) -> dict[str, Any]:
        x, y = batch
        logits = model(x)
        return {
            "validation_loss": nn.functional.cross_entropy(logits, y),
            "validation_accuracy": (logits.argmax(dim=1) == y).float().mean(),
        }


def main() -> None:
    torch.set_num_threads(1)  # trials share the machine's cores; one thread each is fastest
    with shipyard.core.init() as ctx:
        torch.manual_seed(ctx.info.trial_seed)
        trainer = Trainer(DigitsTrial(ctx), ctx)
        # The searcher's length (max_length, or an adaptive searcher's targets) wins over
        # max_length, which is the length when no searcher sets one (local mode).
        trainer.fit(
            max_length=Epochs(10),
            validation_period=Epochs(1),
            checkpoint_period=Epochs(1),
            report_period=Batches(15),
        )


if __name__ == "__main__":
    main()
