"""The PyTorchTrial runner's parts in one process, local mode: lengths from the config, the
LR scheduler's step modes, the refusals, and when it starts a rank per slot. The whole runner
against a real master is tests/e2e/test_determined_trial.py."""

from __future__ import annotations

import os
import textwrap
from typing import Any

import pytest

from tests.fixtures.require import module

torch = module("torch", "the torch extra; make setup installs it")

from torch import nn  # noqa: E402
from torch.utils.data import TensorDataset  # noqa: E402

import shipyard.core  # noqa: E402
from shipyard.common.errors import NotSupportedYet  # noqa: E402
from shipyard.integrations.determined_trial import run  # noqa: E402
from shipyard.integrations.determined_trial._adapter import DeterminedTrial  # noqa: E402
from shipyard.integrations.determined_trial._data import DataLoader  # noqa: E402
from shipyard.integrations.determined_trial._lengths import plan  # noqa: E402
from shipyard.integrations.determined_trial._load import load_trial_class  # noqa: E402
from shipyard.integrations.determined_trial._lr import LRScheduler  # noqa: E402
from shipyard.integrations.determined_trial._trial import PyTorchTrial  # noqa: E402
from shipyard.integrations.torch import Batches, Epochs, Trainer  # noqa: E402
from shipyard.integrations.torch._units import to_steps  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.fixture(autouse=True)
def local_mode(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith("SHIPYARD_") or name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    torch.set_num_threads(1)


def test_lengths_in_batches_epochs_and_records():
    config = {
        "searcher": {"max_length": 640, "max_length_unit": "records"},
        "min_validation_period": {"epochs": 1},
        "min_checkpoint_period": {"records": 100},
        "perform_initial_validation": True,
    }
    p = plan(config, global_batch_size=32)
    assert p.searcher_unit(640) == Batches(20)  # whole global batches
    assert p.validation_period == Epochs(1)  # a pass over the loader
    assert p.checkpoint_period == Batches(3)
    assert p.initial_validation
    older = plan({**config, "records_per_epoch": 320}, global_batch_size=32)
    assert older.validation_period == Batches(10)  # Determined's records_per_epoch rule
    assert to_steps(plan({"searcher": {}}, None).searcher_unit(7), 10) == 7
    with pytest.raises(ValueError, match="global_batch_size"):
        plan(config, global_batch_size=None).searcher_unit(640)


class EpochScheduled(PyTorchTrial):
    def __init__(self, context: Any) -> None:
        self.context = context
        self.model = context.wrap_model(nn.Linear(4, 2))
        self.optimizer = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=1.0))
        self.scheduler = context.wrap_lr_scheduler(
            torch.optim.lr_scheduler.StepLR(self.optimizer, step_size=1, gamma=0.5),
            LRScheduler.StepMode.STEP_EVERY_EPOCH,
        )
        self.lrs: list[float] = []

    def build_training_data_loader(self) -> Any:
        data = TensorDataset(torch.randn(20, 4), torch.randint(0, 2, (20,)))
        return DataLoader(data, batch_size=self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self) -> Any:
        return self.build_training_data_loader()

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Any:
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.optimizer)
        self.lrs.append(self.scheduler.get_last_lr()[0])
        return loss  # a bare loss tensor is {"loss": loss}

    def evaluate_full_dataset(self, data_loader: Any) -> dict[str, Any]:
        return {"n": float(len(data_loader.dataset))}


def test_epoch_scheduler_steps_after_each_epoch_and_full_dataset_validation():
    reports: dict[int, dict] = {}
    with shipyard.core.init(hparams={"global_batch_size": 5}) as ctx:
        ctx.train.report_validation_metrics = lambda s, m: reports.update({s: m})
        trial = DeterminedTrial(ctx, EpochScheduled, global_batch_size=5, experiment_config={})
        Trainer(trial, ctx).fit(max_length=Epochs(3))
    assert trial.user.lrs == [1.0] * 4 + [0.5] * 4 + [0.25] * 4
    assert reports[12]["n"] == 20 and reports[12]["epochs"] == 3


def write_module(tmp_path, source: str) -> None:
    (tmp_path / "model_def.py").write_text(textwrap.dedent(source))


def test_other_trial_apis_are_refused_by_name(tmp_path):
    write_module(
        tmp_path,
        """
        class TFKerasTrial: ...
        class DeepSpeedTrial: ...
        class KerasOne(TFKerasTrial): ...
        class SpeedOne(DeepSpeedTrial): ...
        class Plain: ...
        """,
    )
    with pytest.raises(NotSupportedYet, match="is a TFKerasTrial: Shipyard runs Determined's"):
        load_trial_class("model_def:KerasOne")
    with pytest.raises(NotSupportedYet, match="is a DeepSpeedTrial"):
        load_trial_class("model_def:SpeedOne")
    with pytest.raises(TypeError, match="must subclass determined.pytorch.PyTorchTrial"):
        load_trial_class("model_def:Plain")
    with pytest.raises(ValueError, match="has no class 'Missing'"):
        load_trial_class("model_def:Missing")


def test_a_rank_per_slot_only_when_no_launcher_started_it():
    assert not run._needs_launcher({"SHIPYARD_SLOT_IDS": "cpu0"})
    assert not run._needs_launcher({"SHIPYARD_SLOT_IDS": ""})  # slots_per_trial: 0
    assert run._needs_launcher({"SHIPYARD_SLOT_IDS": "cpu0,cpu1"})
    assert run._needs_launcher({"SHIPYARD_SLOT_IDS": "cpu0", "SHIPYARD_NUM_NODES": "2"})
    assert not run._needs_launcher({"SHIPYARD_SLOT_IDS": "cpu0,cpu1", "WORLD_SIZE": "2"})
    assert run.main(["--help"]) == 2


def test_the_searcher_time_is_reported_in_its_unit_and_reaches_its_lengths():
    """A length in records or epochs is trained as whole batches that reach it, and each
    validation reports the time in that unit (the master compares it with the length)."""
    records = plan({"searcher": {"time_metric": "records", "max_time": 100}}, 32)
    assert records.searcher_unit(100) == Batches(4)  # 128 records: at least 100
    assert records.time_metrics(4, 0) == {"records": 128}
    older = plan(
        {"searcher": {"time_metric": "epochs", "max_time": 3}, "records_per_epoch": 100}, 32
    )
    assert older.searcher_unit(3) == Batches(10)  # 320 records: 3 epochs of 100
    assert older.time_metrics(10, 0) == {"epochs": 3}
    epochs = plan({"searcher": {"time_metric": "epochs", "max_time": 2}}, 32)
    assert epochs.searcher_unit(2) == Epochs(2) and epochs.time_metrics(8, 2) == {"epochs": 2}

    reports: dict[int, dict] = {}
    with shipyard.core.init(hparams={"global_batch_size": 5}) as ctx:
        ctx.train.report_validation_metrics = lambda s, m: reports.update({s: m})
        trial = DeterminedTrial(ctx, EpochScheduled, global_batch_size=5, experiment_config={})
        p = plan({"searcher": {"time_metric": "records", "max_time": 12}}, 5)
        Trainer(trial, ctx).fit(
            max_length=p.searcher_unit(12),
            searcher_unit=p.searcher_unit,
            progress_metrics=p.time_metrics,
        )
    assert reports[3]["records"] == 15 and reports[3]["batches"] == 3


class Recorder(EpochScheduled):
    """Records what the context says at each batch."""

    def train_batch(self, batch: Any, epoch_idx: int, batch_idx: int) -> Any:
        seen = (batch_idx, self.context.is_epoch_start(), self.context.is_epoch_end())
        self.seen = [*getattr(self, "seen", []), (*seen, self.context.get_initial_batch())]
        return super().train_batch(batch, epoch_idx, batch_idx)


def test_initial_batch_and_epoch_boundaries_after_a_resume():
    def fit(length: int, latest: str | None) -> tuple[DeterminedTrial, str | None]:
        with shipyard.core.init(hparams={"global_batch_size": 5}) as ctx:
            ctx.info.latest_checkpoint = latest
            trial = DeterminedTrial(ctx, Recorder, global_batch_size=5, experiment_config={})
            Trainer(trial, ctx).fit(max_length=Batches(length))
            return trial, ctx.info.latest_checkpoint

    first, uuid = fit(6, None)
    assert uuid is not None
    assert [s[3] for s in first.user.seen] == [0] * 6
    resumed, _ = fit(9, uuid)
    # 20 samples in batches of 5: 4 batches an epoch; the resumed run starts at batch 6.
    assert resumed.user.seen == [(6, False, False, 6), (7, False, True, 6), (8, True, False, 6)]
    assert resumed.context is not None and resumed.context.get_initial_batch() == 6


def test_disable_auto_to_device_leaves_the_batches_to_the_trial():
    class NoMove(EpochScheduled):
        def __init__(self, context: Any) -> None:
            super().__init__(context)
            context.experimental.disable_auto_to_device()

    with shipyard.core.init(hparams={"global_batch_size": 5}) as ctx:
        trial = DeterminedTrial(ctx, NoMove, global_batch_size=5, experiment_config={})
        trainer = Trainer(trial, ctx)
        trainer.fit(max_length=Batches(1))
    assert trainer.manual is not None and trainer.manual.auto_to_device is False
    assert trial.context is not None and not trial.context.experimental.auto_to_device


def test_a_multi_node_trial_class_is_started_by_a_launcher_on_ray():
    from shipyard.backends.ray.driver import MULTI_NODE_LAUNCHERS
    from shipyard.common.config import load_config

    config = load_config("entrypoint: model_def:MyTrial\nsearcher: {name: single, metric: l}\n")
    assert any(arg in MULTI_NODE_LAUNCHERS for arg in config.entrypoint_argv())


TWO_RANKS = """
import json, os, sys
import torch
from torch import nn
from torch.utils.data import TensorDataset
import shipyard.core
from shipyard.integrations.determined_trial._adapter import DeterminedTrial
from shipyard.integrations.determined_trial._data import DataLoader
from shipyard.integrations.determined_trial._trial import PyTorchTrial
from shipyard.integrations.torch import Batches, Trainer

torch.set_num_threads(1)
rank = int(os.environ["RANK"])

class StopsOnOneRank(PyTorchTrial):
    def __init__(self, context):
        self.context = context
        self.model = context.wrap_model(nn.Linear(4, 2))
        self.opt = context.wrap_optimizer(torch.optim.SGD(self.model.parameters(), lr=0.1))
        self.ends = []

    def build_training_data_loader(self):
        g = torch.Generator().manual_seed(0)
        x, y = torch.randn(40, 4, generator=g), torch.randint(0, 2, (40,), generator=g)
        data = TensorDataset(x, y)
        return DataLoader(data, batch_size=self.context.get_per_slot_batch_size())

    def build_validation_data_loader(self):
        return self.build_training_data_loader()

    def train_batch(self, batch, epoch_idx, batch_idx):
        if self.context.is_epoch_end():
            self.ends.append(batch_idx)
        if rank == 1 and batch_idx == 5:
            self.context.set_stop_requested(True)  # this rank only
        x, y = batch
        loss = nn.functional.cross_entropy(self.model(x), y)
        self.context.backward(loss)
        self.context.step_optimizer(self.opt)
        return {"loss": loss}

    def evaluate_batch(self, batch):
        x, y = batch
        return {"validation_loss": nn.functional.cross_entropy(self.model(x), y)}

with shipyard.core.init(hparams={"global_batch_size": 10}) as ctx:
    trial = DeterminedTrial(ctx, StopsOnOneRank, global_batch_size=10, experiment_config={})
    trainer = Trainer(trial, ctx)
    trainer.fit(max_length=Batches(20))
    out = {"outcome": trainer.outcome, "steps": trainer.steps_completed, "ends": trial.user.ends}
    with open(f"rank{rank}.json", "w") as f:
        json.dump(out, f)
"""


def test_one_ranks_stop_request_stops_every_rank_and_epochs_are_per_rank(tmp_path):
    """2 gloo processes: rank 1 alone calls set_stop_requested; both stop after the same
    batch, with one checkpoint (no hang). Each rank's epoch is its half of the loader."""
    import json
    import subprocess
    import sys

    (tmp_path / "two_ranks.py").write_text(TWO_RANKS)
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SHIPYARD_") and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")
    }
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc_per_node", "2", "two_ranks.py"]
    run = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stdout + run.stderr
    for rank in (0, 1):
        out = json.loads((tmp_path / f"rank{rank}.json").read_text())
        # 40 samples, 5 a rank a batch: 4 batches an epoch on each rank (not the loader's 8).
        assert out == {"outcome": "stopped", "steps": 6, "ends": [3]}, (rank, out)
    assert len(list((tmp_path / "checkpoints").glob("*/metadata.json"))) == 1
