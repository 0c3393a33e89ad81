"""shipyard.integrations.lightning with real PyTorch Lightning on the CPU, in local mode (no
master): what is reported and at which step, Lightning's checkpoints stored through ctx and
loadable, preemption and the searcher's stop, and a preempted run resumed to exactly the
parameters of an undisturbed one. tests/e2e/test_framework_examples.py runs the example
through a master, on one process and on two."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.require import module

module("lightning", "the lightning extra; make setup installs it")
torch = module("torch", "the torch extra; make setup installs it")
module("sklearn", "the torch extra; make setup installs it")

import lightning.pytorch as pl  # noqa: E402
from lightning.pytorch.callbacks import ModelCheckpoint  # noqa: E402
from lightning.pytorch.plugins import AsyncCheckpointIO  # noqa: E402

import shipyard.core  # noqa: E402
from shipyard.integrations._callbacks import check_processes  # noqa: E402
from shipyard.integrations.lightning import (  # noqa: E402
    ShipyardCallback,
    latest_checkpoint_path,
    trainer_kwargs,
)
from tests.integrations.lightning_digits import (  # noqa: E402
    BATCHES_PER_EPOCH,
    Digits,
    ResumableBatches,
    validation_batches,
)
from tests.integrations.trial_records import Reports, metadata_of, stored  # noqa: E402

pytestmark = [pytest.mark.lightning, pytest.mark.usefixtures("local_trial")]

REPO = Path(__file__).resolve().parents[2]
VALIDATE_EVERY = 25


@dataclass
class Run:
    model: Digits
    trainer: pl.Trainer
    callback: ShipyardCallback
    reports: Reports
    latest: str | None


def fit(
    steps: int,
    *,
    latest: str | None = None,
    preempt_at: int | None = None,
    stop_at: int | None = None,
    callbacks: tuple[Any, ...] = (),
    **trainer_args: Any,
) -> Run:
    """Seed, then train the digits module with Lightning and ShipyardCallback(report_every=10)
    in local mode, resuming from ``latest``; preempted (or stopped by the searcher) right
    after that step."""
    torch.set_num_threads(1)  # tiny matrices: more threads only contend
    torch.manual_seed(0)
    with shipyard.core.init(hparams={}) as ctx:
        ctx.info.latest_checkpoint = latest
        reports = Reports(ctx)
        callback = ShipyardCallback(ctx, report_every=10)
        trainer = pl.Trainer(
            **trainer_kwargs(ctx),
            max_steps=steps,
            val_check_interval=VALIDATE_EVERY,
            check_val_every_n_epoch=None,
            callbacks=[callback, *callbacks],
            logger=False,
            default_root_dir="lightning",
            enable_progress_bar=False,
            enable_model_summary=False,
            **trainer_args,
        )
        ctx.preempt.should_preempt = lambda: trainer.global_step == preempt_at  # type: ignore[method-assign]
        ctx.searcher.should_stop = lambda: trainer.global_step == stop_at  # type: ignore[method-assign]
        model = Digits()
        with latest_checkpoint_path(ctx) as ckpt_path:
            trainer.fit(model, ResumableBatches(), validation_batches(), ckpt_path=ckpt_path)
        return Run(model, trainer, callback, reports, ctx.info.latest_checkpoint)


def params(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def test_reports_what_the_module_logs_at_its_steps(local_trial):
    """Training: the mean of each period of 10 steps of every value logged in training_step
    (not the forks loss_step/loss_epoch, not the last validation's); validation: what
    validation_step logged plus batches, at each validation but not the sanity check."""
    run = fit(60)
    losses = dict(run.model.logged)
    training = run.reports.training
    assert sorted(training) == [10, 20, 30, 40, 50, 60]
    assert all(set(metrics) == {"loss", "accuracy"} for metrics in training.values())
    for step in (10, 60):
        period = [losses[s] for s in range(step - 9, step + 1)]
        assert training[step]["loss"] == pytest.approx(sum(period) / 10, rel=1e-6)

    validated = dict(run.model.validated)
    assert 0 in validated  # the sanity check ran; it is not a validation of the trial
    assert run.reports.validation == {
        step: {"validation_loss": pytest.approx(validated[step], rel=1e-6), "batches": step}
        for step in (25, 50)
    }
    assert run.reports.progress == pytest.approx([25 / 60, 50 / 60])
    assert run.callback.outcome == "done"


def test_lightnings_checkpoints_are_stored_and_load(local_trial):
    """Every file ModelCheckpoint writes is stored as a checkpoint at its step; the last one
    loads with Lightning and holds the trained parameters. The end of training is stored
    once: Lightning saved that step already."""
    every_20 = ModelCheckpoint(dirpath="ckpts", every_n_train_steps=20, save_top_k=-1)
    run = fit(60, callbacks=(every_20,))
    checkpoints = stored(local_trial)
    assert sorted(checkpoints) == [20, 40, 60]
    for step, metadata in checkpoints.items():
        assert metadata["framework"] == "lightning"
        assert metadata["lightning_file"] == f"epoch={step // BATCHES_PER_EPOCH}-step={step}.ckpt"
    last = checkpoints[60]
    assert run.latest == last["uuid"]
    path = local_trial / "checkpoints" / last["uuid"] / last["lightning_file"]
    assert torch.load(path, weights_only=False)["global_step"] == 60
    loaded = Digits.load_from_checkpoint(path)
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in params(run.model).items())


def test_preempted_twice_and_resumed_equals_an_undisturbed_run(local_trial):
    """Preempted at step 57 (mid-epoch 1) and again at 70, each time resumed from the stored
    checkpoint with latest_checkpoint_path: the final parameters, and the metrics reported
    after the resumption, are exactly an undisturbed run's."""
    whole = fit(100)

    first = fit(100, preempt_at=57)
    assert (first.callback.outcome, first.trainer.global_step) == ("preempted", 57)
    assert 57 in first.reports.training  # the period so far, reported before stopping
    assert 57 in first.reports.validation  # Lightning validates when told to stop
    preempted = metadata_of(local_trial, first.latest)
    assert (preempted["steps_completed"], preempted["lightning_file"]) == (57, "shipyard.ckpt")

    second = fit(100, latest=first.latest, preempt_at=70)
    assert (second.callback.outcome, second.trainer.global_step) == ("preempted", 70)
    assert min(second.model.logged)[0] == 58  # it went on from step 57, not from the start

    third = fit(100, latest=second.latest)
    assert (third.callback.outcome, third.trainer.global_step) == ("done", 100)
    final, undisturbed = params(third.model), params(whole.model)
    assert all(torch.equal(final[k], undisturbed[k]) for k in undisturbed)
    for step in (80, 90, 100):
        assert third.reports.training[step] == whole.reports.training[step]
    assert third.reports.validation[100] == whole.reports.validation[100]


def test_the_searchers_stop_ends_training_without_a_checkpoint(local_trial):
    run = fit(100, stop_at=30, enable_checkpointing=False)
    assert (run.callback.outcome, run.trainer.global_step) == ("stopped", 30)
    assert 30 in run.reports.training
    assert stored(local_trial) == {}


def test_the_end_of_training_is_stored_when_lightning_saves_nothing(local_trial):
    run = fit(30, enable_checkpointing=False)
    (only,) = stored(local_trial).values()
    assert (only["steps_completed"], only["lightning_file"]) == (30, "shipyard.ckpt")
    assert run.latest == only["uuid"]


def test_validate_alone_reports_its_validation(local_trial):
    """trainer.validate() outside fit: reported at the model's step, no progress (there is
    no training to measure)."""
    with shipyard.core.init(hparams={}) as ctx:
        reports = Reports(ctx)
        trainer = pl.Trainer(
            **trainer_kwargs(ctx),
            callbacks=[ShipyardCallback(ctx)],
            logger=False,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
        model = Digits()
        trainer.validate(model, validation_batches())
    ((step, value),) = model.validated
    assert step == 0
    assert reports.validation == {0: {"validation_loss": pytest.approx(value), "batches": 0}}
    assert reports.progress == [] and reports.training == {}


def test_bad_input_gets_clear_errors(local_trial, monkeypatch):
    with pytest.raises(TypeError, match=r"ShipyardCallback\(ctx\): ctx must be the shipyard"):
        ShipyardCallback({"not": "a context"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"trainer_kwargs\(ctx\): ctx must be.*got str"):
        trainer_kwargs("ctx")  # type: ignore[arg-type]
    with shipyard.core.init(hparams={}) as ctx:
        with pytest.raises(ValueError, match="report_every must be a positive int.*got 0"):
            ShipyardCallback(ctx, report_every=0)

        with ctx.checkpoint.store_path({"steps_completed": 3}) as (path, uuid):
            (path / "state.json").write_text("{}")  # not a Lightning checkpoint
        with pytest.raises(ValueError, match=f"checkpoint {uuid} has no Lightning checkpoint"):
            with latest_checkpoint_path(ctx):
                pass

        trainer = pl.Trainer(
            callbacks=[ShipyardCallback(ctx)], plugins=[AsyncCheckpointIO()], logger=False
        )
        with pytest.raises(ValueError, match="does not support AsyncCheckpointIO"):
            trainer.fit(Digits(), ResumableBatches())

        # What the callback's setup checks: Lightning's ranks must be ctx.distributed's.
        with pytest.raises(ValueError, match="Lightning runs this process as rank 1 of 2 but"):
            check_processes(ctx, world_size=2, rank=1, framework="Lightning")

        monkeypatch.setenv("WORLD_SIZE", "2")  # e.g. torchrun: ranks ctx knows nothing of
        with pytest.raises(ValueError, match="WORLD_SIZE=2 but ctx.distributed has 1 rank"):
            trainer_kwargs(ctx)


def test_the_doc_shows_the_example_as_it_is():
    """docs/integrations.md's Lightning script is examples/digits_lightning/train.py's main
    (the e2e tests run the example)."""
    doc = (REPO / "docs" / "integrations.md").read_text()
    block = doc.split("```python lightning\n", 1)[1].split("```", 1)[0]
    source = (REPO / "examples" / "digits_lightning" / "train.py").read_text()
    imports, main = block.split("\n\n\n")
    assert imports in source and main.strip() in source
