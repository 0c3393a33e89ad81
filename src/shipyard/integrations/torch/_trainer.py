"""Trainer: runs a Trial's training loop through shipyard.core (see docs/trainer.md)."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, Literal

import torch
import torch.distributed as dist
from torch import nn

from shipyard.integrations.torch import _ranks, _state
from shipyard.integrations.torch._data import TrainingData, to_device, validation_loader
from shipyard.integrations.torch._manual import ManualOptimization, ManualTrial
from shipyard.integrations.torch._manual_mode import ManualMode
from shipyard.integrations.torch._metrics import loss_of, training_means, validation_means
from shipyard.integrations.torch._trial import Trial
from shipyard.integrations.torch._units import Batches, Length, check_length, to_steps

Outcome = Literal["done", "preempted", "stopped"]


class Trainer(ManualMode):
    """``Trainer(trial, ctx).fit(max_length=Batches(500))`` trains ``trial`` and reports
    through ``ctx`` (a ``shipyard.core`` context). After ``fit``: ``model`` (unwrapped),
    ``steps_completed``, ``last_validation`` (the metrics last reported) and ``outcome``
    ("done", "preempted" or "stopped").

    ``trial`` is a ``Trial`` (the Trainer calls backward and steps the optimizer) or a
    ``ManualTrial`` (its train_batch does; one step is then one data-loader batch)."""

    def __init__(self, trial: Trial | ManualTrial, ctx: Any) -> None:
        if not isinstance(trial, Trial | ManualTrial):
            raise TypeError(
                "Trainer(trial, ctx): trial must be a shipyard.integrations.torch.Trial or "
                f"ManualTrial, got {type(trial).__name__}"
            )
        self.trial = trial
        self.manual: ManualOptimization | None = None  # set in fit() for a ManualTrial
        self.ctx = ctx
        self.model: nn.Module | None = None
        self.steps_completed = 0
        self.last_validation: dict[str, float] | None = None
        self.outcome: Outcome | None = None
        self._name = type(trial).__name__

    # ---------------------------------------------------------------- fit
    def fit(
        self,
        max_length: Length | None = None,
        *,
        validation_period: Length | None = None,
        checkpoint_period: Length | None = None,
        report_period: Length = Batches(10),
        amp: bool | Literal["fp16", "bf16"] = False,
        gradient_accumulation: int = 1,
        initial_validation: bool = False,
        searcher_unit: Callable[[int], Length] = Batches,
        progress_metrics: Callable[[int, int], Mapping[str, float]] | None = None,
    ) -> None:
        """Train to the searcher's lengths (``max_length`` when it sets none), validating
        and checkpointing at the end of each and every ``*_period``; return early, after a
        checkpoint, when preempted, and when the searcher stops the trial.

        ``initial_validation``: validate before the first step too. ``searcher_unit``: what
        the searcher's lengths count (e.g. ``Epochs``; default ``Batches``: steps).
        ``progress_metrics(steps_completed, epoch)``: more metrics each validation reports
        (unless the trial's own metrics have them), e.g. the searcher's ``time_metric``
        when its lengths are not steps."""
        check_length("max_length", max_length, optional=True)
        check_length("validation_period", validation_period, optional=True)
        check_length("checkpoint_period", checkpoint_period, optional=True)
        check_length("report_period", report_period, optional=False)
        if (
            isinstance(gradient_accumulation, bool)
            or not isinstance(gradient_accumulation, int)
            or gradient_accumulation < 1
        ):
            raise ValueError(
                f"gradient_accumulation must be a positive int, got {gradient_accumulation!r}"
            )
        if amp not in (False, True, "fp16", "bf16"):
            raise ValueError(f'amp must be False, True, "fp16" or "bf16", got {amp!r}')
        if isinstance(self.trial, ManualTrial) and (amp or gradient_accumulation != 1):
            raise ValueError(
                "a ManualTrial steps its own optimizers: fit() takes neither amp nor "
                "gradient_accumulation for it (use torch.autocast in its train_batch)"
            )
        if max_length is None and self.ctx.searcher.max_length is None:
            raise ValueError(
                "fit() needs max_length (e.g. Batches(500) or Epochs(3)) when the searcher "
                "sets no length (local mode, or a config without searcher.max_length)"
            )
        self._accum = gradient_accumulation
        self._progress_metrics = progress_metrics
        self._ranks = _ranks.join(self.ctx)
        try:
            self._setup(amp)
            per_epoch = self._steps_per_epoch
            self._report_every = to_steps(report_period, per_epoch)
            self._validate_every = (
                to_steps(validation_period, per_epoch) if validation_period else None
            )
            self._checkpoint_every = (
                to_steps(checkpoint_period, per_epoch) if checkpoint_period else None
            )
            self._searcher_unit = searcher_unit
            self._searcher_steps = lambda n: to_steps(searcher_unit(n), per_epoch)
            searcher_max = self.ctx.searcher.max_length
            self._full_length = (self._searcher_steps(searcher_max) if searcher_max else None) or (
                to_steps(max_length, per_epoch) if max_length else None
            )
            if initial_validation and self.steps_completed == 0:
                self._validate_and_report()
            self._revalidate_after_restore()
            self.outcome = self._run(to_steps(max_length, per_epoch) if max_length else None)
            if self._ranks.created_group:
                # Leave together: a gloo rank whose peer tears the group down first may abort.
                dist.barrier()
        finally:
            if self._ranks.created_group and dist.is_initialized():
                dist.destroy_process_group()

    def _run(self, default_length: int | None) -> Outcome:
        # default_length is in steps already, the searcher's lengths are in its unit; a
        # searcher with no length of its own gives one operation, of default_length.
        in_steps = self._searcher_unit is Batches or self.ctx.searcher.target is None
        for op in self.ctx.searcher.operations(default_length=default_length):
            outcome = self._train_to(op.length if in_steps else self._searcher_steps(op.length))
            if outcome != "done":
                return outcome
            # The end of an operation: the checkpoint first (a searcher acting on the
            # validation finds it), then the validation the searcher decides on.
            self._report_training()
            if self._saved_step != self.steps_completed:
                self._checkpoint()
            self._validate_and_report()
        return "done"

    # ---------------------------------------------------------------- setup
    def _setup(self, amp: bool | str) -> None:
        if torch.cuda.is_available():
            self.device = torch.device("cuda", self._ranks.local_rank)
            torch.cuda.set_device(self.device)
        else:
            self.device = torch.device("cpu")
        self._amp_dtype: torch.dtype | None = None
        use_scaler = False
        if amp:
            if self.device.type == "cuda":
                self._amp_dtype = torch.bfloat16 if amp == "bf16" else torch.float16
                use_scaler = self._amp_dtype == torch.float16
            elif amp == "fp16":
                raise ValueError('amp="fp16" needs CUDA; on the CPU use amp=True or "bf16"')
            else:
                self._amp_dtype = torch.bfloat16

        name = self._name
        self._scaler = torch.amp.GradScaler("cuda") if use_scaler else None
        if isinstance(self.trial, ManualTrial):
            self._setup_manual()
        else:
            model = self.trial.build_model()
            if not isinstance(model, nn.Module):
                raise TypeError(f"{name}.build_model() must return a torch.nn.Module")
            model.to(self.device)
            optimizer = self.trial.build_optimizer(model)
            if not isinstance(optimizer, torch.optim.Optimizer):
                raise TypeError(f"{name}.build_optimizer() must return a torch.optim.Optimizer")
            self.model, self._optimizer = model, optimizer
            self._scheduler = self.trial.build_lr_scheduler(optimizer)
        self._data = TrainingData(
            self.trial.build_training_data_loader(),
            rank=self._ranks.rank,
            world=self._ranks.world,
            seed=int(self.ctx.info.trial_seed or 0),
            method=f"{name}.build_training_data_loader",
        )
        if self.manual is not None:
            self.manual.batches_per_epoch = self._data.batches_per_epoch
        user_val = self.trial.build_validation_data_loader()
        self._full_val_loader = user_val  # a ManualTrial's evaluate_full_dataset: unsharded
        self._val_loader = validation_loader(
            user_val,
            rank=self._ranks.rank,
            world=self._ranks.world,
            method=f"{name}.build_validation_data_loader",
        )
        self._steps_per_epoch = -(-self._data.batches_per_epoch // self._accum)
        self._epoch = 0
        self._batch_in_epoch = 0
        self._batches_trained = 0
        self._iter: Any = None
        self._epoch_start_rng: dict[str, Any] | None = None
        self._preempt = self._stop = False
        self._train_records: dict[str, list[Any]] = {}
        self._saved_step = -1
        self._restore()
        if self.manual is not None:
            self.manual.initial_batch = self._batches_trained
            return
        model, optimizer = self.model, self._optimizer
        assert model is not None
        self._train_model: nn.Module = model
        if self._ranks.world > 1:
            device_ids = [self.device.index] if self.device.type == "cuda" else None
            self._train_model = nn.parallel.DistributedDataParallel(model, device_ids=device_ids)
        optimizer.zero_grad(set_to_none=True)
        model.train()

    def _restore(self) -> None:
        uuid = self.ctx.info.latest_checkpoint
        if not uuid:
            return
        assert self.model is not None
        with self.ctx.checkpoint.restore_path(uuid) as path:
            state = _state.read_checkpoint(path, uuid, device=self.device, **self._stateful())
        self.steps_completed = self._saved_step = int(state["steps"])
        self._batches_trained = int(state["batches_trained"])
        self._epoch = int(state["epoch"])
        self._batch_in_epoch = int(state["batch_in_epoch"])
        saved_world = int(state["world_size"])
        mine = self._ranks.rank if saved_world == self._ranks.world else 0
        if saved_world != self._ranks.world:
            warnings.warn(
                f"checkpoint {uuid} was written by {saved_world} processes and this run has "
                f"{self._ranks.world}: the model, optimizer and step count resume exactly, but the "
                "data order and random state continue from rank 0's, not as the "
                f"{saved_world} processes would have",
                stacklevel=3,
            )
        rng = state["rng"][mine]
        gens = self._data.generators
        if self._batch_in_epoch > 0 and state["epoch_start_rng"] is not None:
            # Replay the epoch's start (its shuffle), skip the batches already trained, then
            # carry on with the random state of the checkpoint.
            _state.restore_rng(state["epoch_start_rng"][mine], gens)
            self._data.batches.skip = self._batch_in_epoch
            self._data.batches.after_skip = lambda: _state.restore_rng(rng, gens)
        else:
            _state.restore_rng(rng, gens)

    def _revalidate_after_restore(self) -> None:
        """A checkpoint comes before its step's validation, so a run killed between the two
        never delivered that validation, and resuming from the checkpoint skips past it:
        report it again (the same step replaces any value the earlier run did deliver)."""
        steps = self.steps_completed
        if steps and self._validate_every and steps % self._validate_every == 0:
            self._validate_and_report()

    # ---------------------------------------------------------------- training
    def _train_to(self, length: int) -> Outcome:
        while self.steps_completed < length:
            self._train_step()
            steps = self.steps_completed
            if steps % self._report_every == 0:
                self._report_training()
            if self._preempt:
                if self._saved_step != steps:
                    self._checkpoint()
                return "preempted"
            if self._stop:
                if self.manual is not None and self.manual.stop_requested:
                    # The trial asked to stop (Determined's set_stop_requested): keep its work.
                    if self._saved_step != steps:
                        self._checkpoint()
                return "stopped"
            if steps < length:
                if self._checkpoint_every and steps % self._checkpoint_every == 0:
                    self._checkpoint()
                if self._validate_every and steps % self._validate_every == 0:
                    self._validate_and_report()
        return "done"

    def _train_step(self) -> None:
        """One optimizer step over up to ``gradient_accumulation`` batches (fewer at the end
        of an epoch: accumulation never spans epochs)."""
        data = self._data
        if self._iter is None:
            self._epoch_start_rng = _state.capture_rng(data.generators, full=False)
            self._iter = data.start_epoch(self._epoch)
        if self.manual is not None:
            self._manual_step(next(self._iter))
            return
        window = min(self._accum, data.batches_per_epoch - self._batch_in_epoch)
        ddp = self._train_model if self._train_model is not self.model else None
        for i in range(window):
            batch = next(self._iter)
            if self.device.type != "cpu":
                batch = to_device(batch, self.device)
            if ddp is not None and i < window - 1:
                with ddp.no_sync():  # type: ignore[operator]
                    out = self._forward_backward(batch, window)
            else:
                out = self._forward_backward(batch, window)
            self._record(out)
            self._batches_trained += 1
            self._batch_in_epoch += 1
        if self._scaler is not None:
            self._scaler.step(self._optimizer)
            self._scaler.update()
        else:
            self._optimizer.step()
        self._optimizer.zero_grad(set_to_none=True)
        if self._scheduler is not None:
            self._scheduler.step()
        self.steps_completed += 1
        self._end_epoch_if_done()
        self._poll_signals()

    def _forward_backward(self, batch: Any, window: int) -> Mapping[str, Any]:
        if self._amp_dtype is None:
            out = self.trial.train_batch(batch, self._train_model, self._batches_trained)
        else:
            with torch.autocast(self.device.type, dtype=self._amp_dtype):
                out = self.trial.train_batch(batch, self._train_model, self._batches_trained)
        loss = loss_of(out, self._name)
        if window > 1:
            loss = loss / window
        if self._scaler is not None:
            self._scaler.scale(loss).backward()
        else:
            loss.backward()
        return out

    def _poll_signals(self) -> None:
        """Once per optimizer step (the unit of checkpoints), on every rank: with several
        shipyard ranks one collective carries both answers. A ManualTrial's stop request is
        one rank's: with several processes it is shared (with the chief's answers when they
        need sharing too, in one all-reduce), so that every rank stops, and checkpoints,
        at the same step."""
        preempt, stop = self.ctx.should_preempt_or_stop()
        manual, ranks = self.manual, self._ranks
        asked = manual is not None and manual.stop_requested
        if ranks.broadcast_flags or (manual is not None and ranks.world > 1):
            # broadcast_flags: only the chief's answers count (as a broadcast from it);
            # else every rank has the same answers already.
            theirs = ranks.chief or not ranks.broadcast_flags
            flags = torch.tensor(
                [preempt and theirs, stop and theirs, asked], dtype=torch.uint8, device=self.device
            )
            dist.all_reduce(flags, op=dist.ReduceOp.MAX)
            preempt, stop, asked = (bool(v) for v in flags.tolist())
            if asked and manual is not None:
                manual.stop_requested = True  # another rank's trial asked: stop here too
        self._preempt = self._preempt or preempt
        self._stop = self._stop or stop or asked

    # ---------------------------------------------------------------- reporting
    def _report_training(self) -> None:
        records, self._train_records = self._train_records, {}
        if not records:
            return
        ranks = self._ranks
        means = training_means(records, device=self.device, world=ranks.world, name=self._name)
        if ranks.chief:
            self.ctx.train.report_training_metrics(self.steps_completed, means)

    def _validate_and_report(self) -> None:
        if self.manual is not None:
            self._report_training()  # a ManualTrial reports at every boundary (_checkpoint)
        metrics = self._validate()
        if self._progress_metrics is not None:
            for key, value in self._progress_metrics(self.steps_completed, self._epoch).items():
                metrics.setdefault(key, value)
        metrics.setdefault("batches", self.steps_completed)
        if self.manual is not None:  # Determined's PyTorchTrial reports both
            metrics.setdefault("epochs", self._epoch)
        self.last_validation = metrics
        if self._ranks.chief:
            self.ctx.train.report_validation_metrics(self.steps_completed, metrics)
            if self._full_length:
                self.ctx.train.report_progress(min(1.0, self.steps_completed / self._full_length))

    def _validate(self) -> dict[str, float]:
        """Metrics over the whole validation set (all ranks). The random state is put back
        afterwards, so validating does not change the training that follows."""
        assert self.model is not None
        rng = _state.capture_rng(self._data.generators)
        try:
            if self.manual is not None:
                return self._validate_manual()
            assert isinstance(self.trial, Trial)
            return validation_means(
                self.trial.evaluate_batch,
                [self.model],
                self._val_loader,
                device=self.device,
                amp_dtype=self._amp_dtype,
                world=self._ranks.world,
                name=self._name,
            )
        finally:
            _state.restore_rng(rng, self._data.generators)

    # ---------------------------------------------------------------- checkpoints
    def _checkpoint(self) -> None:
        """On the chief (every rank takes part: the random states are gathered)."""
        assert self.model is not None
        if self.manual is not None:
            # As Determined's harness: the training metrics so far are reported at each
            # checkpoint, so a run resumed from it reports the same means as one never stopped.
            self._report_training()
        position = {
            "steps": self.steps_completed,
            "batches_trained": self._batches_trained,
            "epoch": self._epoch,
            "batch_in_epoch": self._batch_in_epoch,
        }
        rng = _state.capture_rng(self._data.generators)
        epoch_start = self._epoch_start_rng if self._batch_in_epoch > 0 else None
        if self._ranks.world > 1:
            rngs: list[Any] | None = [None] * self._ranks.world if self._ranks.chief else None
            dist.gather_object((rng, epoch_start), rngs, dst=0)
        else:
            rngs = [(rng, epoch_start)]
        metadata = {
            "steps_completed": self.steps_completed,
            "framework": "torch",
            "format": "shipyard.integrations.torch.Trainer/1",
            **position,
        }
        if self._ranks.collective_checkpoint or self._ranks.chief:
            with self.ctx.checkpoint.store_path(metadata) as (path, _uuid):
                if self._ranks.chief:
                    assert rngs is not None
                    _state.write_checkpoint(
                        path,
                        **self._stateful(),
                        trainer_state={
                            **position,
                            "world_size": self._ranks.world,
                            "rng": [r for r, _ in rngs],
                            "epoch_start_rng": (
                                None if epoch_start is None else [e for _, e in rngs]
                            ),
                        },
                    )
        self._saved_step = self.steps_completed
