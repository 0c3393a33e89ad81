"""A small MLP on the digits, trained by the Hugging Face Trainer as a Shipyard trial.

ShipyardCallback reports the Trainer's logs and evaluations, stores every checkpoint it
saves through Shipyard and stops (after a checkpoint) when the trial is preempted;
download_latest_checkpoint resumes a restarted trial where it stopped. The model is a plain
torch module whose forward returns {"loss", "logits"}: nothing is downloaded. Run it without
a master to try it:

    SHIPYARD_HPARAMS='{"lr": 0.005, "hidden": 64, "batch_size": 32}' python3 train.py
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # local data and model: never ask the Hub

import numpy as np
import torch
from sklearn.datasets import load_digits
from torch import nn
from torch.utils.data import Dataset
from transformers import EvalPrediction, Trainer, TrainingArguments

import shipyard.core
from shipyard.integrations.huggingface import ShipyardCallback, download_latest_checkpoint

DEFAULT_STEPS = 200  # when no searcher sets max_length (local mode)
DATA_SEED = 0  # the same 80/20 train/validation split for every trial


class DigitsMLP(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(64, hidden), nn.ReLU(), nn.Linear(hidden, 10))

    def forward(self, pixels: torch.Tensor, labels: torch.Tensor | None = None) -> dict:
        logits = self.net(pixels)
        if labels is None:
            return {"logits": logits}
        return {"loss": nn.functional.cross_entropy(logits, labels), "logits": logits}


class Digits(Dataset):
    """Examples as the Trainer passes them to forward: {"pixels": ..., "labels": ...}."""

    def __init__(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"pixels": self.x[i], "labels": self.y[i]}


def datasets() -> tuple[Digits, Digits]:
    digits = load_digits()
    x = torch.tensor(digits.data / 16.0, dtype=torch.float32)  # pixels are 0..16
    y = torch.tensor(digits.target, dtype=torch.long)
    order = torch.randperm(len(x), generator=torch.Generator().manual_seed(DATA_SEED))
    n_val = len(x) // 5
    val, train = order[:n_val], order[n_val:]
    return Digits(x[train], y[train]), Digits(x[val], y[val])


def accuracy(prediction: EvalPrediction) -> dict[str, float]:
    logits, labels = prediction.predictions, prediction.label_ids
    return {"accuracy": float(np.mean(np.argmax(logits, axis=-1) == labels))}


def main() -> None:
    torch.set_num_threads(1)  # trials share the machine's cores; one thread each is fastest
    with shipyard.core.init() as ctx:
        hparams = ctx.info.hparams
        train_set, val_set = datasets()
        args = TrainingArguments(
            output_dir="hf_output",
            max_steps=ctx.searcher.max_length or DEFAULT_STEPS,
            per_device_train_batch_size=int(hparams.get("batch_size", 32)),
            learning_rate=float(hparams.get("lr", 0.005)),
            logging_steps=10,
            eval_strategy="steps",
            eval_steps=50,
            save_strategy="steps",
            save_steps=50,  # each checkpoint-<step> is stored through Shipyard
            seed=ctx.info.trial_seed,
            report_to="none",
            disable_tqdm=True,
        )
        trainer = Trainer(
            model=DigitsMLP(int(hparams.get("hidden", 64))),
            args=args,
            train_dataset=train_set,
            eval_dataset=val_set,
            compute_metrics=accuracy,
            callbacks=[ShipyardCallback(ctx)],
        )
        trainer.train(resume_from_checkpoint=download_latest_checkpoint(ctx, "resume"))


if __name__ == "__main__":
    main()
