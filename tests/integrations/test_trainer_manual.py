"""The Trainer's manual-optimization mode (a ManualTrial calls backward and steps its own
optimizers; several models and optimizers) with real torch on the CPU, in local mode."""

from __future__ import annotations

import os
from typing import Any

import pytest

from tests.fixtures.require import module

torch = module("torch", "the torch extra; make setup installs it")
module("sklearn", "the torch extra; make setup installs it")

from torch import nn  # noqa: E402
from torch.utils.data import DataLoader, TensorDataset  # noqa: E402

import shipyard.core  # noqa: E402
from shipyard.integrations.torch import (  # noqa: E402
    Batches,
    Epochs,
    ManualOptimization,
    ManualTrial,
    Trainer,
)
from tests.integrations.digits_trial import digits  # noqa: E402

pytestmark = pytest.mark.torch

N = 320  # 10 batches of 32
HP = {"lr": 0.05}


@pytest.fixture(autouse=True)
def local_mode(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith("SHIPYARD_") or name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # local checkpoints go to ./checkpoints
    torch.set_num_threads(1)


def two_models() -> tuple[nn.Module, nn.Module]:
    return nn.Sequential(nn.Linear(64, 16), nn.ReLU()), nn.Linear(16, 10)


class TwoOptimizers(ManualTrial):
    """An encoder and a head, each with its own optimizer and the head with a scheduler:
    what the automatic mode cannot express."""

    full_dataset = False

    def setup(self, opt: ManualOptimization) -> None:
        self.opt = opt
        encoder, head = two_models()
        self.encoder, self.head = opt.model(encoder), opt.model(head)
        self.enc_opt = opt.optimizer(torch.optim.SGD(encoder.parameters(), lr=HP["lr"]))
        self.head_opt = opt.optimizer(torch.optim.Adam(head.parameters(), lr=0.01))
        self.sched = opt.lr_scheduler(torch.optim.lr_scheduler.StepLR(self.head_opt, 3, 0.5))
        self.epochs_ended: list[int] = []

    def build_training_data_loader(self) -> DataLoader:
        x, y, _, _ = digits()
        return DataLoader(TensorDataset(x[:N], y[:N]), batch_size=32, shuffle=True)

    def build_validation_data_loader(self) -> DataLoader:
        _, _, x, y = digits()
        return DataLoader(TensorDataset(x[:200], y[:200]), batch_size=50)

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        loss = nn.functional.cross_entropy(self.head(self.encoder(x)), y)
        self.opt.backward(loss)
        self.opt.step(self.enc_opt)
        self.opt.step(self.head_opt, clip_grads=lambda p: nn.utils.clip_grad_norm_(p, 1.0))
        self.sched.step()
        return {"loss": loss, "epoch": epoch_idx}

    def evaluate_batch(self, batch: Any, batch_idx: int) -> dict[str, Any]:
        x, y = batch
        return {"val_loss": nn.functional.cross_entropy(self.head(self.encoder(x)), y)}

    def on_epoch_end(self, epoch_idx: int) -> None:
        self.epochs_ended.append(epoch_idx)


class FullDataset(TwoOptimizers):
    evaluate_batch = None  # type: ignore[assignment]

    def evaluate_full_dataset(self, data_loader: DataLoader) -> dict[str, Any]:
        losses = [
            nn.functional.cross_entropy(self.head(self.encoder(x)), y, reduction="sum")
            for x, y in data_loader
        ]
        return {"val_loss": float(sum(losses)) / len(data_loader.dataset)}  # type: ignore[arg-type]


def train(cls: type = TwoOptimizers, *, latest=None, preempt_at=None, **fit):
    torch.manual_seed(0)
    reports: dict = {"training": {}, "validation": {}}
    with shipyard.core.init(hparams=HP) as ctx:
        ctx.info.latest_checkpoint = latest
        ctx.train.report_training_metrics = lambda s, m: reports["training"].update({s: m})
        ctx.train.report_validation_metrics = lambda s, m: reports["validation"].update({s: m})
        trial = cls(ctx)
        trainer = Trainer(trial, ctx)
        if preempt_at is not None:
            ctx.preempt.should_preempt = lambda: trainer._batches_trained == preempt_at
        trainer.fit(**fit)
        return trainer, trial, reports, ctx.info.latest_checkpoint


def state(trial: TwoOptimizers) -> list[torch.Tensor]:
    return [
        *trial.opt.models[0].state_dict().values(),
        *trial.opt.models[1].state_dict().values(),
    ]


def hand_written(epochs: int) -> list[torch.Tensor]:
    torch.manual_seed(0)
    encoder, head = two_models()
    enc_opt = torch.optim.SGD(encoder.parameters(), lr=HP["lr"])
    head_opt = torch.optim.Adam(head.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(head_opt, 3, 0.5)
    x, y, _, _ = digits()
    loader = DataLoader(TensorDataset(x[:N], y[:N]), batch_size=32, shuffle=True)
    for _ in range(epochs):
        for bx, by in loader:
            loss = nn.functional.cross_entropy(head(encoder(bx)), by)
            loss.backward()
            enc_opt.step()
            enc_opt.zero_grad(set_to_none=True)
            nn.utils.clip_grad_norm_(head.parameters(), 1.0)
            head_opt.step()
            head_opt.zero_grad(set_to_none=True)
            sched.step()
    return [*encoder.state_dict().values(), *head.state_dict().values()]


def test_manual_mode_matches_a_hand_written_loop_with_two_optimizers():
    trainer, trial, reports, _ = train(
        max_length=Epochs(2), validation_period=Batches(7), report_period=Batches(5)
    )
    assert trainer.steps_completed == 20 and trainer.outcome == "done"
    for mine, theirs in zip(state(trial), hand_written(2), strict=True):
        assert torch.equal(mine, theirs)
    assert trial.epochs_ended == [0, 1]
    # Every report_period, and at each validation too (a resumed run reports the same means).
    assert sorted(reports["training"]) == [5, 7, 10, 14, 15, 20]
    assert reports["training"][10]["epoch"] == 0 and reports["training"][15]["epoch"] == 1
    assert sorted(reports["validation"]) == [7, 14, 20]


def test_manual_mode_resumes_bit_identically_with_every_optimizer_and_scheduler():
    fit = {"max_length": Epochs(3), "validation_period": Batches(10)}
    _, whole, whole_reports, _ = train(**fit)
    first, _, _, ckpt = train(preempt_at=13, **fit)
    assert first.outcome == "preempted" and first.steps_completed == 13
    third, resumed, reports, _ = train(latest=ckpt, **fit)
    assert third.steps_completed == 30
    for mine, theirs in zip(state(resumed), state(whole), strict=True):
        assert torch.equal(mine, theirs)
    assert resumed.sched.state_dict() == whole.sched.state_dict()
    assert reports["validation"][30] == whole_reports["validation"][30]


def test_checkpoint_holds_one_file_per_model_and_optimizer(tmp_path):
    _, trial, _, uuid = train(max_length=Batches(4))
    names = {p.name for p in (tmp_path / "checkpoints" / uuid).iterdir()}
    assert {"model.pt", "model_1.pt", "optimizer.pt", "optimizer_1.pt", "lr_scheduler.pt"} <= names
    head = nn.Linear(16, 10)
    head.load_state_dict(torch.load(tmp_path / "checkpoints" / uuid / "model_1.pt"))
    assert torch.equal(head.weight, trial.opt.models[1].weight)


def test_evaluate_full_dataset_and_initial_validation():
    _, _, reports, _ = train(FullDataset, max_length=Batches(5), initial_validation=True)
    assert sorted(reports["validation"]) == [0, 5]
    assert reports["validation"][5]["val_loss"] < reports["validation"][0]["val_loss"]


def test_request_stop_checkpoints_and_ends():
    class Stops(TwoOptimizers):
        def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> dict[str, Any]:
            if batch_idx == 5:
                self.opt.request_stop()
            return super().train_batch(batch, epoch_idx, batch_idx)

    trainer, _, _, uuid = train(Stops, max_length=Batches(20))
    assert trainer.outcome == "stopped" and trainer.steps_completed == 6 and uuid


def test_manual_mode_errors_are_clear():
    class Nothing(TwoOptimizers):
        def setup(self, opt: ManualOptimization) -> None:
            pass

    with pytest.raises(ValueError, match="at least one model"):
        train(Nothing, max_length=Batches(2))

    class Both(TwoOptimizers):
        def evaluate_full_dataset(self, data_loader: DataLoader) -> dict[str, Any]:
            return {}

    with pytest.raises(TypeError, match="exactly one of evaluate_batch"):
        train(Both, max_length=Batches(2))
    with pytest.raises(ValueError, match="neither amp nor gradient_accumulation"):
        train(max_length=Batches(2), gradient_accumulation=2)
