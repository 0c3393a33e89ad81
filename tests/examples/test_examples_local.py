"""Each example trains in local mode (no master), as the README tells a user to try it."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.examples.local_run import run_example

QUADRATIC_HPARAMS = {"lr": 0.1, "target": 3.0}
DIGITS_HPARAMS = {"lr": 0.01, "hidden": 64, "dropout": 0.1, "batch_size": 32}
DIGITS_BATCHES_PER_EPOCH = 45  # 1438 training images in batches of 32


def test_quadratic_reports_every_step_and_its_loss_goes_down(tmp_path: Path) -> None:
    run = run_example("quadratic", tmp_path, hparams=QUADRATIC_HPARAMS, max_length=50)

    assert run.returncode == 0, run.output
    assert run.steps("training") == list(range(1, 51))
    losses = run.values("training", "loss")
    assert losses[-1] < losses[0] / 100
    assert run.steps("validation") == [10, 20, 30, 40, 50]
    assert [steps for _, steps in run.checkpoints] == [25, 50]
    for uuid, _ in run.checkpoints:
        assert (tmp_path / "checkpoints" / uuid / "metadata.json").is_file()


def test_quadratic_resumed_from_a_checkpoint_matches_an_uninterrupted_run(
    tmp_path: Path,
) -> None:
    whole = run_example("quadratic", tmp_path, hparams=QUADRATIC_HPARAMS, max_length=40)
    first_half = run_example("quadratic", tmp_path, hparams=QUADRATIC_HPARAMS, max_length=20)
    latest_uuid, latest_steps = first_half.checkpoints[-1]
    second_half = run_example(
        "quadratic",
        tmp_path,
        hparams=QUADRATIC_HPARAMS,
        max_length=40,
        latest_checkpoint=latest_uuid,
    )

    assert whole.returncode == first_half.returncode == second_half.returncode == 0
    assert latest_steps == 20
    assert second_half.steps("training") == list(range(21, 41))
    assert second_half.values("validation", "validation_loss")[-1] == pytest.approx(
        whole.values("validation", "validation_loss")[-1]
    )


@pytest.mark.torch
def test_digits_learns_to_read_digits(tmp_path: Path) -> None:
    run = run_example(
        "digits_pytorch", tmp_path, hparams=DIGITS_HPARAMS, max_length=8 * DIGITS_BATCHES_PER_EPOCH
    )

    assert run.returncode == 0, run.output
    assert run.values("validation", "validation_accuracy")[-1] > 0.8
    losses = run.values("training", "loss")
    assert losses[-1] < losses[0] / 2
    # One validation and one checkpoint at the end of every epoch.
    epoch_ends = [DIGITS_BATCHES_PER_EPOCH * epoch for epoch in range(1, 9)]
    assert run.steps("validation") == epoch_ends
    assert [steps for _, steps in run.checkpoints] == epoch_ends


@pytest.mark.torch
def test_digits_resumes_from_its_latest_checkpoint(tmp_path: Path) -> None:
    one_epoch = DIGITS_BATCHES_PER_EPOCH
    first = run_example("digits_pytorch", tmp_path, hparams=DIGITS_HPARAMS, max_length=one_epoch)
    latest_uuid, _ = first.checkpoints[-1]
    resumed = run_example(
        "digits_pytorch",
        tmp_path,
        hparams=DIGITS_HPARAMS,
        max_length=3 * one_epoch,
        latest_checkpoint=latest_uuid,
    )

    assert first.returncode == 0, first.output
    assert resumed.returncode == 0, resumed.output
    assert min(resumed.steps("training")) > one_epoch
    assert resumed.steps("validation") == [2 * one_epoch, 3 * one_epoch]
    # It continued from the trained weights: better than after the first epoch.
    first_accuracy = first.values("validation", "validation_accuracy")[-1]
    assert resumed.values("validation", "validation_accuracy")[-1] >= first_accuracy
