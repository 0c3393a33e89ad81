"""A Determined PyTorchTrial on the digits data, written as a Determined user writes one: it
imports only `determined`, torch and the standard library (test_determined_trial.py checks).
The data are digits.pt in the context (the test writes it: torch cannot load scikit-learn)."""

import time

import torch
from determined import pytorch
from torch import nn
from torch.utils.data import TensorDataset


class DigitsTrial(pytorch.PyTorchTrial):
    def __init__(self, context: pytorch.PyTorchTrialContext) -> None:
        self.context = context
        self.x, self.y, self.val_x, self.val_y = torch.load("digits.pt")
        hidden = context.get_hparam("hidden")
        model = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))
        self.model = context.wrap_model(model)
        self.optimizer = context.wrap_optimizer(
            torch.optim.SGD(self.model.parameters(), lr=context.get_hparam("lr"), momentum=0.9)
        )
        self.scheduler = context.wrap_lr_scheduler(
            torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=5, gamma=0.8),
            step_mode=pytorch.LRScheduler.StepMode.STEP_EVERY_BATCH,
        )
        self.sleep = float(context.get_hparams().get("sleep", 0))

    def build_training_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(
            TensorDataset(self.x, self.y),
            batch_size=self.context.get_per_slot_batch_size(),
            shuffle=True,
        )

    def build_validation_data_loader(self) -> pytorch.DataLoader:
        return pytorch.DataLoader(TensorDataset(self.val_x, self.val_y), batch_size=100)

    def train_batch(self, batch: pytorch.TorchData, epoch_idx: int, batch_idx: int):
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        if self.sleep:
            time.sleep(self.sleep)  # slow enough for the test to kill it mid-training
        return {"loss": loss, "lr": self.scheduler.get_last_lr()[0]}

    def evaluate_batch(self, batch: pytorch.TorchData, batch_idx: int):
        x, y = batch
        logits = self.model(x)
        return {
            "validation_loss": nn.functional.cross_entropy(logits, y),
            "accuracy": (logits.argmax(1) == y).float().mean(),
        }
