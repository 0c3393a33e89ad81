"""shipyard.integrations.huggingface with the real Hugging Face Trainer on the CPU, in local
mode (no master), training the model of examples/digits_huggingface: what is reported and
at which step, the Trainer's checkpoints stored through ctx and loadable, preemption and the
searcher's stop, and a preempted run resumed to exactly the parameters of an undisturbed one.
tests/e2e/test_framework_examples.py runs the example through a master."""

from __future__ import annotations

import importlib.util
import json
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from tests.fixtures.require import module

module("transformers", "the huggingface extra; make setup installs it")
module("accelerate", "the huggingface extra; make setup installs it")
torch = module("torch", "the torch extra; make setup installs it")
module("sklearn", "the torch extra; make setup installs it")

from safetensors.torch import load_file  # noqa: E402
from transformers import Trainer, TrainingArguments  # noqa: E402

import shipyard.core  # noqa: E402
from shipyard.integrations.huggingface import (  # noqa: E402
    ShipyardCallback,
    download_latest_checkpoint,
)
from tests.integrations.trial_records import Reports, metadata_of, stored  # noqa: E402

pytestmark = [pytest.mark.huggingface, pytest.mark.usefixtures("local_trial")]

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "digits_huggingface" / "train.py"


@pytest.fixture(scope="module")
def example() -> ModuleType:
    """examples/digits_huggingface/train.py as a module: its model, data and metric."""
    spec = importlib.util.spec_from_file_location("digits_huggingface_train", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HUB_OFFLINE", "1")  # the example sets it; keep it from leaking
        spec.loader.exec_module(module)
    return module


@dataclass
class Run:
    trainer: Trainer
    callback: ShipyardCallback
    reports: Reports
    latest: str | None


def train(
    example: ModuleType,
    steps: int,
    *,
    output_dir: str = "hf_output",
    latest: str | None = None,
    preempt_at: int | None = None,
    stop_at: int | None = None,
    **overrides: Any,
) -> Run:
    """Train the example's model with the Trainer and ShipyardCallback in local mode: logs
    every 10 steps, evaluates every 25, saves every 20; resumes from ``latest``; preempted
    (or stopped by the searcher) right after that step."""
    torch.set_num_threads(1)  # tiny matrices: more threads only contend
    torch.manual_seed(0)
    with shipyard.core.init(hparams={}) as ctx:
        ctx.info.latest_checkpoint = latest
        reports = Reports(ctx)
        callback = ShipyardCallback(ctx)
        train_set, val_set = example.datasets()
        settings: dict[str, Any] = {
            "max_steps": steps,
            "per_device_train_batch_size": 32,
            "learning_rate": 0.01,
            "logging_steps": 10,
            "eval_strategy": "steps",
            "eval_steps": 25,
            "save_strategy": "steps",
            "save_steps": 20,
            "seed": 0,
            "report_to": "none",
            "disable_tqdm": True,
            "use_cpu": True,
            "dataloader_pin_memory": False,
        }
        args = TrainingArguments(output_dir=output_dir, **{**settings, **overrides})
        trainer = Trainer(
            model=example.DigitsMLP(32),
            args=args,
            train_dataset=train_set,
            eval_dataset=val_set,
            compute_metrics=example.accuracy,
            callbacks=[callback],
        )
        ctx.preempt.should_preempt = lambda: trainer.state.global_step == preempt_at  # type: ignore[method-assign]
        ctx.searcher.should_stop = lambda: trainer.state.global_step == stop_at  # type: ignore[method-assign]
        trainer.train(resume_from_checkpoint=download_latest_checkpoint(ctx, "resume"))
        return Run(trainer, callback, reports, ctx.info.latest_checkpoint)


def params(trainer: Trainer) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}


def test_reports_what_the_trainer_logs_and_evaluates(example, local_trial):
    """Each log the Trainer makes (its own record: state.log_history) is reported at its
    step: training logs as training metrics, evaluations (with batches) as validation
    metrics, never the other way round."""
    run = train(example, 60)
    history = run.trainer.state.log_history
    evaluations = [entry for entry in history if "eval_loss" in entry]
    logs = [entry for entry in history if "eval_loss" not in entry]

    expected_training: dict[int, dict[str, float]] = {}
    for entry in logs:  # the summary at the end repeats "epoch": reported once
        values = {k: float(v) for k, v in entry.items() if k != "step"}
        expected_training.setdefault(entry["step"], {}).update(values)
    assert sorted(expected_training) == [10, 20, 30, 40, 50, 60]
    assert run.reports.training == expected_training
    assert {"loss", "grad_norm", "learning_rate", "train_loss"} <= run.reports.training[60].keys()

    # Every 25 steps, and at the end (the Trainer evaluates there too).
    assert sorted(run.reports.validation) == [e["step"] for e in evaluations] == [25, 50, 60]
    for entry in evaluations:
        step = entry["step"]
        expected = {k: float(v) for k, v in entry.items() if k != "step"}
        assert run.reports.validation[step] == {**expected, "batches": step}
    assert run.reports.validation[50]["eval_accuracy"] > 0.8
    assert run.reports.progress == pytest.approx([25 / 60, 50 / 60, 1.0])
    assert run.callback.outcome == "done"


def test_the_trainers_checkpoints_are_stored_and_load(example, local_trial):
    """Every checkpoint-<step> the Trainer saves is stored at its step with its files; the
    last step is saved although save_steps does not fall on it, and its weights are the
    trained ones."""
    run = train(example, 50)
    checkpoints = stored(local_trial)
    assert sorted(checkpoints) == [20, 40, 50]
    for step, metadata in checkpoints.items():
        assert metadata["framework"] == "huggingface"
        directory = local_trial / "checkpoints" / metadata["uuid"]
        state = json.loads((directory / "trainer_state.json").read_text())
        assert state["global_step"] == step
        assert {"model.safetensors", "optimizer.pt", "scheduler.pt"} <= set(metadata["resources"])
    assert run.latest == checkpoints[50]["uuid"]
    weights = load_file(local_trial / "checkpoints" / run.latest / "model.safetensors")
    assert all(torch.equal(weights[k], v) for k, v in params(run.trainer).items())


def test_preempted_and_resumed_equals_an_undisturbed_run(example, local_trial):
    """Preempted at step 37 (mid-epoch), resumed from the stored checkpoint with
    download_latest_checkpoint: the final parameters and the later evaluations are exactly
    an undisturbed run's."""
    whole = train(example, 80, output_dir="whole")

    first = train(example, 80, output_dir="first", preempt_at=37)
    assert (first.callback.outcome, first.trainer.state.global_step) == ("preempted", 37)
    assert metadata_of(local_trial, first.latest)["steps_completed"] == 37

    second = train(example, 80, output_dir="second", latest=first.latest)
    assert (second.callback.outcome, second.trainer.state.global_step) == ("done", 80)
    assert min(second.reports.training) == 40  # it went on from step 37
    final, undisturbed = params(second.trainer), params(whole.trainer)
    assert all(torch.equal(final[k], undisturbed[k]) for k in undisturbed)
    for step in (50, 75):  # (eval_runtime and the speeds differ: they are timings)
        ours, undisturbed_metrics = second.reports.validation[step], whole.reports.validation[step]
        for name in ("eval_loss", "eval_accuracy"):
            assert ours[name] == undisturbed_metrics[name]


def test_the_searchers_stop_ends_training_without_a_checkpoint(example, local_trial):
    run = train(example, 80, stop_at=30, save_strategy="no")
    assert (run.callback.outcome, run.trainer.state.global_step) == ("stopped", 30)
    assert stored(local_trial) == {}


def test_bad_input_gets_clear_errors(local_trial):
    with pytest.raises(TypeError, match=r"ShipyardCallback\(ctx\): ctx must be the shipyard"):
        ShipyardCallback(None)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"download_latest_checkpoint\(ctx, directory\)"):
        download_latest_checkpoint("ctx", "resume")  # type: ignore[arg-type]
    with shipyard.core.init(hparams={}) as ctx:
        assert download_latest_checkpoint(ctx, "resume") is None  # nothing to resume
        with ctx.checkpoint.store_path({"framework": "lightning"}) as (path, uuid):
            (path / "shipyard.ckpt").write_bytes(b"")
        with pytest.raises(ValueError, match=f"{uuid} is not a Hugging Face Trainer checkpoint"):
            download_latest_checkpoint(ctx, "resume")


def test_the_doc_shows_the_example_as_it_is():
    """docs/integrations.md's Hugging Face script is examples/digits_huggingface/train.py's
    main (the e2e tests run the example)."""
    doc = (REPO / "docs" / "integrations.md").read_text()
    block = doc.split("```python huggingface\n", 1)[1].split("```", 1)[0]
    source = EXAMPLE.read_text()
    imports, main = block.split("\n\n\n")
    assert imports in source and main.strip() in source
