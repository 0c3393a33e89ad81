"""A small Trial on scikit-learn's digits for the Trainer tests (also run by ddp_script.py
under torchrun)."""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

N_TRAIN = 1408  # 44 batches of 32, 22 of 64
DATA_SEED = 0


@functools.cache
def digits() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    data = load_digits()
    x = torch.tensor(data.data / 16.0, dtype=torch.float32)
    y = torch.tensor(data.target, dtype=torch.long)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(DATA_SEED))
    train, val = order[:N_TRAIN], order[N_TRAIN:]
    return x[train], y[train], x[val], y[val]


DEFAULTS: dict[str, Any] = {
    "lr": 0.05,
    "hidden": 32,
    "dropout": 0.0,
    "batch_size": 32,
    "shuffle": "random",  # "random" (RandomSampler), "seeded" (its own generator), "distributed"
    "optimizer": "sgd",
    "scheduler": False,
}


def make_model(hidden: int, dropout: float) -> nn.Module:
    return nn.Sequential(
        nn.Linear(64, hidden), nn.ReLU(), nn.Dropout(dropout), nn.Linear(hidden, 10)
    )


class DigitsTrial:
    """Mixed into a Trial subclass below (kept importable without the Trainer)."""

    def __init__(self, ctx: Any = None, hparams: dict[str, Any] | None = None) -> None:
        given = hparams if hparams is not None else dict(ctx.info.hparams)
        self.hp = {**DEFAULTS, **given}

    def build_model(self) -> nn.Module:
        return make_model(self.hp["hidden"], self.hp["dropout"])

    def build_optimizer(self, model: nn.Module) -> torch.optim.Optimizer:
        if self.hp["optimizer"] == "adam":
            return torch.optim.Adam(model.parameters(), lr=self.hp["lr"])
        return torch.optim.SGD(model.parameters(), lr=self.hp["lr"], momentum=0.9)

    def build_lr_scheduler(self, optimizer: torch.optim.Optimizer) -> Any:
        if self.hp["scheduler"]:
            return torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.7)
        return None

    def build_training_data_loader(self) -> DataLoader:
        x, y, _, _ = digits()
        dataset = TensorDataset(x, y)
        batch_size = self.hp["batch_size"]
        if self.hp["shuffle"] == "distributed":
            sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=3)
            return DataLoader(dataset, batch_size=batch_size, sampler=sampler)
        if self.hp["shuffle"] == "seeded":
            generator = torch.Generator().manual_seed(11)
            return DataLoader(dataset, batch_size=batch_size, shuffle=True, generator=generator)
        return DataLoader(dataset, batch_size=batch_size, shuffle=True)

    def build_validation_data_loader(self) -> DataLoader:
        _, _, x, y = digits()
        return DataLoader(TensorDataset(x, y), batch_size=100)

    def train_batch(self, batch: Any, model: nn.Module, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        logits = model(x)
        loss = nn.functional.cross_entropy(logits, y)
        return {"loss": loss, "accuracy": (logits.argmax(1) == y).float().mean()}

    def evaluate_batch(self, batch: Any, model: nn.Module) -> dict[str, Any]:
        x, y = batch
        logits = model(x)
        return {
            "validation_loss": nn.functional.cross_entropy(logits, y),
            "validation_accuracy": (logits.argmax(1) == y).float().mean(),
        }


def trial_class() -> type:
    from shipyard.integrations.torch import Trial

    class Digits(DigitsTrial, Trial):
        pass

    return Digits
