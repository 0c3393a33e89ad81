"""Minimize (x - target)^2 by gradient descent: the smallest complete Shipyard trial.

It reports metrics, checkpoints, resumes from its latest checkpoint and stops when asked,
in plain Python. Run it without a master to try it:

    SHIPYARD_HPARAMS='{"lr": 0.1, "target": 3.0}' python3 train.py
"""

from __future__ import annotations

import json

import shipyard.core

DEFAULT_STEPS = 100  # when no searcher sets a length (local mode)
VALIDATE_EVERY = 10
CHECKPOINT_EVERY = 25
STATE_FILE = "state.json"


def loss(x: float, target: float) -> float:
    return (x - target) ** 2


def save(ctx: shipyard.core.Context, x: float, step: int) -> None:
    with ctx.checkpoint.store_path({"steps_completed": step}) as (path, _uuid):
        (path / STATE_FILE).write_text(json.dumps({"x": x, "step": step}))


def restore(ctx: shipyard.core.Context) -> tuple[float, int]:
    """(x, steps completed) of the latest checkpoint, or the start."""
    if not ctx.info.latest_checkpoint:
        return 0.0, 0
    with ctx.checkpoint.restore_path(ctx.info.latest_checkpoint) as path:
        state = json.loads((path / STATE_FILE).read_text())
    return float(state["x"]), int(state["step"])


def validate(ctx: shipyard.core.Context, x: float, target: float, step: int) -> None:
    # "batches" is the time_metric an adaptive config may name.
    ctx.train.report_validation_metrics(
        steps_completed=step, metrics={"validation_loss": loss(x, target), "batches": step}
    )


def main() -> None:
    with shipyard.core.init() as ctx:
        lr = float(ctx.info.hparams.get("lr", 0.1))
        target = float(ctx.info.hparams.get("target", 3.0))

        x, step = restore(ctx)
        saved_step = step
        # Each operation is a length the searcher lets the trial train to: a rung of ASHA,
        # a round of PBT, or the whole max_length of a random or grid search.
        for op in ctx.searcher.operations(default_length=DEFAULT_STEPS):
            while step < op.length:
                x -= lr * 2 * (x - target)
                step += 1
                ctx.train.report_training_metrics(
                    steps_completed=step, metrics={"loss": loss(x, target)}
                )
                if step % CHECKPOINT_EVERY == 0:
                    save(ctx, x, step)
                    saved_step = step
                if step % VALIDATE_EVERY == 0 and step < op.length:
                    validate(ctx, x, target, step)
                if ctx.preempt.should_preempt() or ctx.searcher.should_stop():
                    # Save progress so a preempted trial resumes here rather than from scratch.
                    if saved_step != step:
                        save(ctx, x, step)
                    return
            # The end of an operation: the checkpoint first (a searcher acting on the
            # validation, PBT copying this trial, finds it), then the validation the searcher
            # decides on; a run resumed at this point reports it again.
            if saved_step != step:
                save(ctx, x, step)
                saved_step = step
            validate(ctx, x, target, step)


if __name__ == "__main__":
    main()
