"""A LightningModule on scikit-learn's digits for tests/integrations/test_lightning.py, with a
training loader Lightning can resume mid-epoch, so a resumed run can equal an undisturbed one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import lightning.pytorch as pl
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.integrations.digits_trial import digits

BATCH = 32
BATCHES_PER_EPOCH = 44  # 1408 training images


class Digits(pl.LightningModule):
    """Logs "loss" and "accuracy" every step and "validation_loss" (one batch: the logged
    value is the batch's); remembers what it logged, to compare with what was reported."""

    def __init__(self, lr: float = 0.05) -> None:
        super().__init__()
        self.lr = lr
        self.net = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 10))
        self.logged: list[tuple[int, float]] = []  # (global step after the batch, loss)
        self.validated: list[tuple[int, float]] = []  # (global step, validation_loss)

    def training_step(self, batch: Any, batch_idx: int) -> torch.Tensor:
        x, y = batch
        logits = self.net(x)
        loss = nn.functional.cross_entropy(logits, y)
        self.log("loss", loss, on_step=True, on_epoch=True)  # forked: loss_step, loss_epoch
        self.log("accuracy", (logits.argmax(1) == y).float().mean())
        self.logged.append((self.global_step + 1, loss.item()))
        return loss

    def validation_step(self, batch: Any, batch_idx: int) -> None:
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("validation_loss", loss)
        self.validated.append((self.global_step, loss.item()))

    def configure_optimizers(self) -> Any:
        optimizer = torch.optim.Adam(self.parameters(), lr=self.lr)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=20, gamma=0.7)
        return {
            "optimizer": optimizer,
            "lr_scheduler": {"scheduler": scheduler, "interval": "step"},
        }


class ResumableBatches:
    """Shuffled batches, the order a function of (seed, epoch); ``state_dict`` says how far
    the epoch is, so Lightning restores it and the resumed epoch goes on with the batches it
    had not trained yet (a plain DataLoader restarts the epoch)."""

    def __init__(self, seed: int = 5) -> None:
        self.x, self.y, _, _ = digits()
        self.seed = seed
        self.epoch = -1
        self.done = 0
        self._resume: dict[str, int] | None = None

    def __len__(self) -> int:
        return -(-len(self.x) // BATCH)

    def __iter__(self) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        if self._resume is not None:
            epoch, skip = self._resume["epoch"], self._resume["done"]
            self._resume = None
            if skip >= len(self):  # saved after the epoch's last batch
                epoch, skip = epoch + 1, 0
        else:
            epoch, skip = self.epoch + 1, 0
        self.epoch, self.done = epoch, skip
        return self._batches(epoch, skip)

    def _batches(self, epoch: int, skip: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
        generator = torch.Generator().manual_seed(self.seed * 1000 + epoch)
        order = torch.randperm(len(self.x), generator=generator)
        for i in range(skip, len(self)):
            index = order[i * BATCH : (i + 1) * BATCH]
            self.done = i + 1
            yield self.x[index], self.y[index]

    def state_dict(self) -> dict[str, int]:
        return {"epoch": self.epoch, "done": self.done}

    def load_state_dict(self, state: dict[str, int]) -> None:
        self._resume = dict(state)


def validation_batches() -> DataLoader:
    _, _, x, y = digits()
    # One batch: the logged validation_loss is exactly that batch's.
    return DataLoader(TensorDataset(x, y), batch_size=len(x))
