"""The Hugging Face Trainer through ``shipyard.core``: metrics, checkpoints, preemption and
resuming (Determined's ``DetCallback``).

    with shipyard.core.init() as ctx:
        trainer = Trainer(model=model, args=args, ..., callbacks=[ShipyardCallback(ctx)])
        trainer.train(resume_from_checkpoint=download_latest_checkpoint(ctx, "resume"))

See docs/integrations.md. Needs the ``huggingface`` extra
(``pip install 'shipyard[huggingface]'``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from shipyard.core import Context
from shipyard.integrations._callbacks import check_context, check_processes, scalars

try:
    from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
    from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "shipyard.integrations.huggingface needs transformers and accelerate: "
        "pip install 'shipyard[huggingface]'"
    ) from exc

__all__ = ["ShipyardCallback", "download_latest_checkpoint"]

FRAMEWORK = "huggingface"
FORMAT = "shipyard.integrations.huggingface/1"

Outcome = Literal["done", "preempted", "stopped"]


class ShipyardCallback(TrainerCallback):
    """Reports the Trainer's logs and evaluations, stores each checkpoint it saves through
    ``ctx.checkpoint``, and stops training when the trial is preempted (after a checkpoint)
    or the searcher stops it.

    - Training metrics: every number the Trainer logs (``loss``, ``grad_norm``,
      ``learning_rate``, ``epoch``; every ``logging_steps``; the ``train_*`` summary at the
      end), at ``state.global_step``.
    - Validation metrics: what ``evaluate`` returns, named as the Trainer names them
      (``eval_loss``, ``eval_<your compute_metrics key>``), plus ``batches`` (the global step).
    - Checkpoints: each ``checkpoint-<step>`` directory the Trainer saves is stored at its
      step; the last step of training is always saved.
    - Every optimizer step, on every process, ``ctx.preempt.should_preempt()`` and
      ``ctx.searcher.should_stop()`` (one collective with several ranks). Preempted: save, then
      stop; stopped by the searcher: stop.

    ``outcome`` is "done", "preempted" or "stopped" once training ends.
    """

    def __init__(self, ctx: Context) -> None:
        check_context(ctx, "ShipyardCallback(ctx)")
        self.outcome: Outcome | None = None
        self._ctx = ctx
        self._stored_step = -1
        self._logged_at: tuple[int, set[str]] = (-1, set())  # a step and what it reported

    def on_train_begin(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        hint = ""
        if args.world_size == 1 and not args.use_cpu:
            # accelerate joins CPU ranks only when told the run is on the CPU.
            hint = "; on CPU slots, also pass TrainingArguments(use_cpu=True)"
        check_processes(
            self._ctx, args.world_size, args.process_index, "the Hugging Face Trainer", hint=hint
        )
        self.outcome = None

    def on_step_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        # A collective with several ranks: every rank asks, once per optimizer step.
        preempted, stopped = self._ctx.should_preempt_or_stop()
        if preempted:
            self.outcome = "preempted"
            control.should_save = True
            control.should_training_stop = True
        elif stopped:
            self.outcome = "stopped"
            control.should_training_stop = True
        elif state.max_steps and state.global_step >= state.max_steps:
            control.should_save = True  # the end of training is a checkpoint, as in Determined

    def on_train_end(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        if self.outcome is None:
            self.outcome = "done"

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if not logs or _is_evaluation(logs):
            return  # evaluate() logs its metrics too: on_evaluate reports them
        step = state.global_step
        if self._logged_at[0] != step:
            self._logged_at = (step, set())
        # The summary at the end of training repeats "epoch" at the last log's step.
        metrics = scalars(logs, drop=("step", *self._logged_at[1]))
        if metrics:
            self._logged_at[1].update(metrics)
            self._ctx.train.report_training_metrics(step, metrics)

    def on_evaluate(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        metrics: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        values = scalars(metrics or {}, drop=("step",))
        if not values:
            return
        step = state.global_step
        values.setdefault("batches", step)  # the time_metric adaptive searchers read
        self._ctx.train.report_validation_metrics(step, values)
        if state.max_steps:
            self._ctx.train.report_progress(min(1.0, step / state.max_steps))

    def on_save(
        self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **kwargs: Any
    ) -> None:
        step = state.global_step
        if step == self._stored_step:
            return  # saved again at the same step (e.g. also at the epoch's end)
        dist = self._ctx.distributed
        if dist.size > 1:
            dist.barrier()  # every process has written its part (its random states)
        directory = Path(str(args.output_dir), f"{PREFIX_CHECKPOINT_DIR}-{step}")
        metadata = {
            "steps_completed": step,
            "framework": FRAMEWORK,
            "format": FORMAT,
            "epoch": float(state.epoch or 0.0),
        }
        self._ctx.checkpoint.upload(directory, metadata, steps_completed=step)  # collective
        self._stored_step = step


def _is_evaluation(logs: dict[str, Any]) -> bool:
    """evaluate() logs ``<prefix>_runtime`` (and its other metrics) under its
    ``metric_key_prefix``; training logs ``loss``, and ``train_runtime`` at the end."""
    return any(k.endswith("_runtime") and k != "train_runtime" for k in logs)


def download_latest_checkpoint(ctx: Context, directory: str | Path) -> str | None:
    """Copy ``ctx.info.latest_checkpoint`` into ``directory/<uuid>`` and return that path for
    ``trainer.train(resume_from_checkpoint=...)``; None when the trial starts afresh. With
    several ranks every rank calls it (a collective): the chief copies, the others wait."""
    check_context(ctx, "download_latest_checkpoint(ctx, directory)")
    uuid = ctx.info.latest_checkpoint
    if not uuid:
        return None
    framework = ctx.checkpoint.read_metadata(uuid).get("framework")
    if framework != FRAMEWORK:
        raise ValueError(
            f"checkpoint {uuid} is not a Hugging Face Trainer checkpoint (its metadata says "
            f"framework={framework!r}): it was not stored by "
            "shipyard.integrations.huggingface.ShipyardCallback"
        )
    target = Path(directory, uuid)
    dist = ctx.distributed
    if dist.is_chief:
        ctx.checkpoint.download(uuid, target)
    dist.barrier()
    return str(target)
