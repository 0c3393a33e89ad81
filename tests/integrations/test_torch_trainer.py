"""shipyard.integrations.torch.Trainer with real torch on the CPU, in local mode (no master):
the same parameters as a hand-written loop, bit-identical resumption after a preemption,
plain-torch.load checkpoints, gradient accumulation, 1 vs 2 processes (torchrun, gloo)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.require import module

torch = module("torch", "the torch extra; make setup installs it")
module("sklearn", "the torch extra; make setup installs it")

import shipyard.core  # noqa: E402
from shipyard.common.errors import NotSupportedYet  # noqa: E402
from shipyard.integrations.torch import Batches, Epochs, Records, Trainer  # noqa: E402
from tests.integrations.digits_trial import digits, make_model, trial_class  # noqa: E402

pytestmark = pytest.mark.torch

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BATCHES_PER_EPOCH = 44  # 1408 training images in batches of 32


@pytest.fixture(autouse=True)
def local_mode(monkeypatch, tmp_path):
    for name in list(os.environ):
        if name.startswith("SHIPYARD_") or name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)  # local checkpoints go to ./checkpoints
    torch.set_num_threads(1)


def train(hparams: dict, *, latest: str | None = None, preempt_at: int | None = None, **fit):
    """Seed, then train with the Trainer; returns (trainer, reports, latest checkpoint)."""
    torch.manual_seed(0)
    reports: dict = {"training": {}, "validation": {}}
    with shipyard.core.init(hparams=hparams) as ctx:
        ctx.info.latest_checkpoint = latest
        ctx.train.report_training_metrics = lambda s, m: reports["training"].update({s: m})
        ctx.train.report_validation_metrics = lambda s, m: reports["validation"].update({s: m})
        trainer = Trainer(trial_class()(ctx), ctx)
        if preempt_at is not None:
            ctx.preempt.should_preempt = lambda: trainer._batches_trained == preempt_at
        trainer.fit(**fit)
        return trainer, reports, ctx.info.latest_checkpoint


def params(trainer: Trainer) -> dict:
    assert trainer.model is not None
    return {k: v.detach().clone() for k, v in trainer.model.state_dict().items()}


def assert_params(a: dict, b: dict, *, exact: bool = False, atol: float = 0.0) -> None:
    assert a.keys() == b.keys()
    for key in a:
        if exact:
            assert torch.equal(a[key], b[key]), key
        else:
            assert torch.allclose(a[key], b[key], rtol=0, atol=atol), (
                key,
                (a[key] - b[key]).abs().max().item(),
            )


def hand_written(hp: dict, *, epochs: int, bf16: bool = False):
    """The loop the Trainer replaces, seeded as train() seeds: (model, per-batch losses)."""
    torch.manual_seed(0)
    plain = trial_class()(hparams=hp)
    model = plain.build_model()
    optimizer = plain.build_optimizer(model)
    scheduler = plain.build_lr_scheduler(optimizer)
    loader = plain.build_training_data_loader()
    plain.build_validation_data_loader()
    model.train()
    losses = []
    for _epoch in range(epochs):
        for batch in loader:
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                loss = plain.train_batch(batch, model, 0)["loss"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            losses.append(loss.item())
    return model, losses


def test_trainer_matches_a_hand_written_loop():
    """Dropout, a shuffling loader on the global RNG, Adam and an LR scheduler: the Trainer
    (validating and checkpointing along the way) ends with exactly the parameters of a plain
    loop; training reports average their period, validations carry "batches"."""
    hp = {"dropout": 0.2, "optimizer": "adam", "lr": 0.01, "scheduler": True}
    trainer, reports, _ = train(
        hp,
        max_length=Epochs(2),
        validation_period=Batches(30),
        checkpoint_period=Batches(25),
        report_period=Batches(10),
    )

    model, losses = hand_written(hp, epochs=2)

    assert_params(params(trainer), {k: v for k, v in model.state_dict().items()}, exact=True)
    total = 2 * BATCHES_PER_EPOCH
    assert trainer.steps_completed == total and trainer.outcome == "done"
    assert sorted(reports["training"]) == [*range(10, total, 10), total]
    assert reports["training"][10]["loss"] == pytest.approx(sum(losses[:10]) / 10, rel=1e-6)
    assert reports["training"][total]["loss"] == pytest.approx(
        sum(losses[80:]) / len(losses[80:]), rel=1e-6
    )
    assert sorted(reports["validation"]) == [30, 60, total]
    last = reports["validation"][total]
    assert last["batches"] == total and 0.8 < last["validation_accuracy"] <= 1.0


@pytest.mark.parametrize("shuffle", ["random", "seeded"])
def test_preempted_mid_epoch_and_resumed_is_bit_identical(shuffle):
    """Preempted at batch 57 (epoch 1, batch 13), resumed, preempted again at 70 in the same
    epoch, resumed: the final parameters and validation equal an uninterrupted run's."""
    hp = {"dropout": 0.3, "optimizer": "adam", "lr": 0.01, "scheduler": True, "shuffle": shuffle}
    fit = {"max_length": Epochs(3), "validation_period": Batches(40)}
    whole, whole_reports, _ = train(hp, **fit)

    first, _, ckpt = train(hp, preempt_at=57, **fit)
    assert first.outcome == "preempted" and first.steps_completed == 57
    second, _, ckpt = train(hp, latest=ckpt, preempt_at=70, **fit)
    assert second.outcome == "preempted" and second.steps_completed == 70
    third, third_reports, _ = train(hp, latest=ckpt, **fit)

    assert third.steps_completed == 3 * BATCHES_PER_EPOCH
    assert_params(params(third), params(whole), exact=True)
    assert third_reports["validation"][132] == whole_reports["validation"][132]
    assert third_reports["validation"][120] == whole_reports["validation"][120]


def test_checkpoint_files_load_with_plain_torch_load(tmp_path):
    trainer, _, uuid = train({}, max_length=Batches(12))
    path = tmp_path / "checkpoints" / uuid
    assert {"model.pt", "optimizer.pt", "trainer_state.pt", "metadata.json"} <= {
        p.name for p in path.iterdir()
    }
    fresh = make_model(32, 0.0)
    fresh.load_state_dict(torch.load(path / "model.pt"))  # weights_only, the default
    assert_params(fresh.state_dict(), params(trainer), exact=True)
    optimizer_state = torch.load(path / "optimizer.pt")
    assert optimizer_state["param_groups"][0]["lr"] == 0.05
    state = torch.load(path / "trainer_state.pt")
    assert (state["steps"], state["epoch"], state["batch_in_epoch"]) == (12, 0, 12)
    metadata = json.loads((path / "metadata.json").read_text())
    assert metadata["steps_completed"] == 12 and metadata["framework"] == "torch"


def test_gradient_accumulation_matches_a_bigger_batch():
    """Batch 16 with 2 batches accumulated per step ≈ batch 32: same samples per step (a
    seeded shuffle over the whole set), the same 30 optimizer steps."""
    base = {"shuffle": "seeded", "optimizer": "sgd"}
    big, _, _ = train({**base, "batch_size": 32}, max_length=Batches(30))
    small, _, _ = train({**base, "batch_size": 16}, max_length=Batches(30), gradient_accumulation=2)
    assert small.steps_completed == big.steps_completed == 30
    assert small._batches_trained == 60
    assert_params(params(small), params(big), atol=1e-5)
    single, _, _ = train({**base, "batch_size": 16}, max_length=Batches(30))
    diff = max((params(single)[k] - params(big)[k]).abs().max().item() for k in params(big))
    assert diff > 1e-3  # without accumulation the result is clearly different


def test_amp_on_the_cpu_trains_in_bfloat16_as_autocast_does():
    """amp=True on the CPU is torch.autocast with bfloat16: exactly the parameters of a
    hand-written autocast loop, visibly not the float32 ones, and as accurate."""
    hp = {"optimizer": "adam", "lr": 0.01}
    amp, _, _ = train(hp, max_length=Epochs(1), amp=True)
    full, _, _ = train(hp, max_length=Epochs(1))

    model, _ = hand_written(hp, epochs=1, bf16=True)
    assert_params(params(amp), {k: v for k, v in model.state_dict().items()}, exact=True)
    diff = max((params(amp)[k] - params(full)[k]).abs().max().item() for k in params(full))
    assert diff > 1e-4  # bfloat16 rounding shows in the parameters
    assert amp.last_validation is not None and full.last_validation is not None
    accuracy = amp.last_validation["validation_accuracy"]
    assert accuracy == pytest.approx(full.last_validation["validation_accuracy"], abs=0.03)


def test_two_processes_with_half_the_batch_match_one_process(tmp_path):
    """torchrun with 2 gloo processes of batch 32 (DDP, sharded data and validation) vs one
    process of batch 64 over the same seeded DistributedSampler order."""
    hp = {"batch_size": 64, "shuffle": "distributed", "optimizer": "sgd"}
    one, _, _ = train(hp, max_length=Epochs(2), report_period=Epochs(1))

    workdir = tmp_path / "ddp"
    workdir.mkdir()
    out = workdir / "ddp.pt"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("SHIPYARD_") and k not in ("RANK", "WORLD_SIZE")
    }
    env.update(
        SHIPYARD_HPARAMS=json.dumps({**hp, "batch_size": 32}),
        TRAINER_OUT=str(out),
        PYTHONPATH=str(REPO),
    )
    command = [sys.executable, "-m", "torch.distributed.run", "--standalone"]
    command += ["--nproc_per_node", "2", str(HERE / "ddp_script.py")]
    run = subprocess.run(command, cwd=workdir, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    two = torch.load(out)

    assert_params(two["params"], params(one), atol=1e-5)
    assert one.last_validation is not None
    assert two["validation"]["validation_accuracy"] == pytest.approx(
        one.last_validation["validation_accuracy"], abs=1e-6
    )
    assert two["validation"]["validation_loss"] == pytest.approx(
        one.last_validation["validation_loss"], abs=1e-5
    )
    assert two["validation"]["batches"] == one.steps_completed == 2 * 22
    # Only the chief checkpointed (one checkpoint, at the end).
    (manifest,) = (workdir / "checkpoints").glob("*/metadata.json")

    # One process resumes what two wrote: it says what is not exact, and goes on.
    os.chdir(workdir)
    with pytest.warns(UserWarning, match="written by 2 processes and this run has 1") as seen:
        resumed, _, _ = train(
            hp, latest=manifest.parent.name, max_length=Epochs(3), report_period=Epochs(1)
        )
    assert "data order and random state continue from rank 0's" in str(seen[0].message)
    assert resumed.steps_completed == 3 * 22


def test_bad_input_gets_clear_errors():
    class NoLoss(trial_class()):
        def train_batch(self, batch, model, batch_idx):
            return {"accuracy": torch.tensor(1.0)}

    with shipyard.core.init(hparams={}) as ctx:
        with pytest.raises(ValueError, match=r"NoLoss\.train_batch\(\).*\"loss\""):
            Trainer(NoLoss(ctx), ctx).fit(max_length=Batches(3))
        with pytest.raises(TypeError, match="max_length must be Batches"):
            Trainer(trial_class()(ctx), ctx).fit(max_length=100)
        with pytest.raises(ValueError, match="fit\\(\\) needs max_length"):
            Trainer(trial_class()(ctx), ctx).fit()
        with pytest.raises(ValueError, match="gradient_accumulation"):
            Trainer(trial_class()(ctx), ctx).fit(max_length=Batches(3), gradient_accumulation=0)
    with pytest.raises(ValueError, match=r"Batches\(0\): the count must be a positive int"):
        Batches(0)
    with pytest.raises(ValueError, match=r"Epochs\(-1\)"):
        Epochs(-1)
    with pytest.raises(NotSupportedYet, match="records are not supported yet"):
        Records(1000)


def test_the_example_runs_in_local_mode(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIPYARD_")}
    env["SHIPYARD_HPARAMS"] = json.dumps({"lr": 0.01, "hidden": 64, "batch_size": 32})
    env["SHIPYARD_SEARCHER_MAX_LENGTH"] = "90"
    script = REPO / "examples" / "digits_pytorch" / "trainer_train.py"
    run = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr
    validations = [line for line in run.stdout.splitlines() if "validation steps=" in line]
    assert validations[-1].startswith("[shipyard] validation steps=90 ")
    accuracy = float(validations[-1].split("validation_accuracy=")[1].split()[0])
    assert accuracy > 0.8
    assert "[shipyard] checkpoint" in run.stdout


def test_digits_data_split_is_fixed():
    assert len(digits()[0]) == 1408


def test_the_doc_shows_the_example_as_it_is():
    """docs/trainer.md's script is examples/digits_pytorch/trainer_train.py (run above)."""
    doc = (REPO / "docs" / "trainer.md").read_text()
    block = doc.split("```python\n", 1)[1].split("```", 1)[0]
    source = (REPO / "examples" / "digits_pytorch" / "trainer_train.py").read_text()
    imports, body = block.split("\n\n", 1)
    assert imports in source
    assert body.strip() in source
