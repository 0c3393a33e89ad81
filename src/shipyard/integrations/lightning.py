"""PyTorch Lightning through ``shipyard.core``: metrics, checkpoints, preemption, resuming and
the processes of a multi-slot trial.

    with shipyard.core.init() as ctx:
        trainer = lightning.Trainer(
            **trainer_kwargs(ctx), max_steps=500, callbacks=[ShipyardCallback(ctx)]
        )
        with latest_checkpoint_path(ctx) as ckpt_path:
            trainer.fit(model, datamodule=data, ckpt_path=ckpt_path)

See docs/integrations.md. Needs the ``lightning`` extra (``pip install 'shipyard[lightning]'``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from shipyard.core import Context
from shipyard.integrations._callbacks import (
    LAUNCHER,
    check_context,
    check_positive_int,
    check_processes,
    scalar,
)

try:
    import lightning.pytorch as pl
    from lightning.fabric.plugins import CheckpointIO
    from lightning.fabric.plugins.environments import TorchElasticEnvironment
    from lightning.pytorch.plugins import AsyncCheckpointIO
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(
        "shipyard.integrations.lightning needs PyTorch Lightning: pip install 'shipyard[lightning]'"
    ) from exc

__all__ = ["ShipyardCallback", "latest_checkpoint_path", "trainer_kwargs"]

FILE_KEY = "lightning_file"  # checkpoint metadata: the Lightning checkpoint inside it
OWN_FILE = "shipyard.ckpt"  # what ShipyardCallback itself saves (preemption, end of training)
FORMAT = "shipyard.integrations.lightning/1"

Outcome = Literal["done", "preempted", "stopped"]


class ShipyardCallback(pl.Callback):
    """Reports what the LightningModule logs and registers Lightning's checkpoints with the
    master; stops training, after a checkpoint, when the trial is preempted, and when the
    searcher stops it.

    - Training metrics: every value logged with ``self.log`` in ``training_step``, the mean
      over each ``report_every`` optimizer steps (and over the last, shorter period),
      reported at ``trainer.global_step``.
    - Validation metrics: every value logged during a validation, plus ``batches`` (the
      global step), at the end of each validation (not the sanity check).
    - Checkpoints: each one Lightning saves (``ModelCheckpoint``, ``trainer.save_checkpoint``
      during ``fit``) is stored through ``ctx.checkpoint`` at its global step, and so is one
      of its own when preempted and at the end of training, unless that step is stored.
    - Every optimizer step, on every process, ``ctx.preempt.should_preempt()`` and
      ``ctx.searcher.should_stop()`` (one collective with several ranks); either sets
      ``trainer.should_stop``.

    ``outcome`` is "done", "preempted" or "stopped" once training ends. Only the chief
    (rank 0) reports: log with ``sync_dist=True`` for values averaged over the processes.
    """

    def __init__(self, ctx: Context, *, report_every: int = 10) -> None:
        check_context(ctx, "ShipyardCallback(ctx)")
        self.report_every = check_positive_int("report_every", report_every)
        self.outcome: Outcome | None = None
        self._ctx = ctx
        self._period: dict[str, list[float]] = {}
        self._logged_before: dict[str, Any] = {}
        self._last_step = -1
        self._stored_step = -1
        self._saving_own = False
        # A save Lightning made: (global step, epoch), seen on every rank in
        # on_save_checkpoint, and its path, seen by the chief's CheckpointIO. It is stored at
        # our next hook: every rank calls a hook at the same point, and the file is written.
        self._pending: tuple[int, int] | None = None
        self._written: str | None = None

    @property
    def _chief(self) -> bool:
        return self._ctx.distributed.is_chief

    # ------------------------------------------------------------------ setup
    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        check_processes(self._ctx, trainer.world_size, trainer.global_rank, "Lightning")
        strategy = trainer.strategy
        if isinstance(strategy.checkpoint_io, AsyncCheckpointIO):
            # Its file is still being written when our next hook would copy it.
            raise ValueError(
                "ShipyardCallback does not support AsyncCheckpointIO: Shipyard stores each "
                "checkpoint once Lightning has written it; use the default CheckpointIO"
            )
        if not isinstance(strategy.checkpoint_io, _NoticeWrites):
            strategy.checkpoint_io = _NoticeWrites(strategy.checkpoint_io, self._written_to)
        self.outcome = None
        self._period, self._last_step = {}, -1

    # ------------------------------------------------------------------ training
    def on_train_batch_start(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, batch: Any, batch_idx: int
    ) -> None:
        self._store_pending()
        if self._chief:
            self._logged_before = dict(trainer.callback_metrics)

    def on_train_batch_end(
        self,
        trainer: pl.Trainer,
        pl_module: pl.LightningModule,
        outputs: Any,
        batch: Any,
        batch_idx: int,
    ) -> None:
        self._store_pending()
        if self._chief:
            for name, value in _logged_since(self._logged_before, trainer.callback_metrics):
                self._period.setdefault(name, []).append(value)
        step = trainer.global_step
        if step == self._last_step:
            return  # accumulating gradients: no optimizer step yet
        self._last_step = step
        if step % self.report_every == 0:
            self._report_training(step)
        # A collective with several ranks: every rank asks, once per optimizer step.
        preempted, stopped = self._ctx.should_preempt_or_stop()
        if preempted:
            self._report_training(step)
            self._store_own(trainer)
            self.outcome = "preempted"
            trainer.should_stop = True
        elif stopped:
            self._report_training(step)
            self.outcome = "stopped"
            trainer.should_stop = True

    def on_train_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._store_pending()

    def on_train_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._store_pending()
        self._report_training(trainer.global_step)
        if self.outcome is None:
            self.outcome = "done"
            self._store_own(trainer)  # the end of training is a checkpoint, as in Determined

    def on_fit_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._store_pending()  # ModelCheckpoint's save_last runs after our on_train_end

    def _report_training(self, step: int) -> None:
        period, self._period = self._period, {}
        if period and self._chief:
            means = {name: sum(values) / len(values) for name, values in period.items()}
            self._ctx.train.report_training_metrics(step, means)

    # ------------------------------------------------------------------ validation
    def on_validation_start(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._store_pending()
        if self._chief:
            self._logged_before = dict(trainer.callback_metrics)

    def on_validation_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
        self._store_pending()
        if trainer.sanity_checking or not self._chief:
            return
        metrics = dict(_logged_since(self._logged_before, trainer.callback_metrics))
        if not metrics:
            return
        step = trainer.global_step
        # "batches": the time_metric adaptive searchers read (docs/core-api.md).
        metrics.setdefault("batches", step)
        self._ctx.train.report_validation_metrics(step, metrics)
        if trainer.state.fn != "fit":
            return  # trainer.validate(): no training to measure (and no training data)
        total = trainer.estimated_stepping_batches
        if 0 < total < float("inf"):
            self._ctx.train.report_progress(min(1.0, step / total))

    # ------------------------------------------------------------------ checkpoints
    def on_save_checkpoint(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, checkpoint: dict[str, Any]
    ) -> None:
        if not self._saving_own:
            self._pending = (int(checkpoint["global_step"]), int(checkpoint["epoch"]))

    def _written_to(self, path: str) -> None:
        """Called by the chief's CheckpointIO after it wrote a checkpoint."""
        if not self._saving_own:
            self._written = path

    def _store_pending(self) -> None:
        """Store the checkpoint Lightning saved since our last hook (a collective: every rank
        calls it, the chief copies the file)."""
        if self._pending is None:
            return
        (step, epoch), self._pending = self._pending, None
        written, self._written = self._written, None
        if step == self._stored_step:
            return  # the same training state is stored already
        name = Path(written).name if written else ""
        metadata = _metadata(step, epoch, name)
        with self._ctx.checkpoint.store_path(metadata, steps_completed=step) as (path, _uuid):
            if not self._chief:
                pass  # the chief copies; the other ranks only take part
            elif written:
                _copy(Path(written), path / name)
            else:  # raised inside the block, so that every rank fails alike
                raise RuntimeError(
                    f"Lightning saved a checkpoint at step {step} but not through the "
                    "strategy's CheckpointIO on rank 0: ShipyardCallback supports strategies "
                    "that save that way (one device, DDP)"
                )
        self._stored_step = step

    def _store_own(self, trainer: pl.Trainer) -> None:
        """Save the trainer's state into a new checkpoint (every rank takes part, as
        ``trainer.save_checkpoint`` needs; Lightning writes the file on rank 0)."""
        step = trainer.global_step
        if step == self._stored_step:
            return
        metadata = _metadata(step, trainer.current_epoch, OWN_FILE)
        self._saving_own = True
        try:
            store = self._ctx.checkpoint.store_path(metadata, steps_completed=step, shard=True)
            with store as (path, _uuid):
                trainer.save_checkpoint(path / OWN_FILE)
        finally:
            self._saving_own = False
        self._stored_step = step


def _metadata(step: int, epoch: int, name: str) -> dict[str, Any]:
    return {
        "steps_completed": step,
        "framework": "lightning",
        "format": FORMAT,
        "epoch": epoch,
        FILE_KEY: name,
    }


def _copy(source: Path, target: Path) -> None:
    """A checkpoint file (or a sharded strategy's directory), symlinks followed."""
    if source.is_dir():
        shutil.copytree(source, target)
    else:
        shutil.copy2(source, target)


def _logged_since(before: Mapping[str, Any], now: Mapping[str, Any]) -> Iterator[tuple[str, float]]:
    """The scalar values logged since ``before`` was taken. Lightning's callback_metrics keeps
    every name ever logged (a training step still sees the last validation's); a value
    logged again is a new tensor, so what is not the same object as before is new. A name
    forked as ``x_step`` or ``x_epoch`` (logged on step and on epoch) is reported as ``x``."""
    fresh = {name: value for name, value in now.items() if before.get(name) is not value}
    for name, value in fresh.items():
        stem = name.rsplit("_", 1)[0]
        if name.endswith(("_step", "_epoch")) and fresh.get(stem) is value:
            continue
        number = scalar(value)
        if number is not None:
            yield name, number


class _NoticeWrites(CheckpointIO):
    """The strategy's CheckpointIO, telling ShipyardCallback where each checkpoint went."""

    def __init__(self, inner: CheckpointIO, written_to: Callable[[str], None]) -> None:
        self.inner = inner
        self._written_to = written_to

    def save_checkpoint(
        self, checkpoint: dict[str, Any], path: Any, storage_options: Any | None = None
    ) -> None:
        self.inner.save_checkpoint(checkpoint, path, storage_options=storage_options)
        self._written_to(os.fspath(path))

    def load_checkpoint(
        self, path: Any, map_location: Any | None = None, weights_only: bool | None = None
    ) -> dict[str, Any]:
        return self.inner.load_checkpoint(
            path, map_location=map_location, weights_only=weights_only
        )

    def remove_checkpoint(self, path: Any) -> None:
        self.inner.remove_checkpoint(path)

    def teardown(self) -> None:
        self.inner.teardown()


# ---------------------------------------------------------------------- resuming
@contextlib.contextmanager
def latest_checkpoint_path(ctx: Context) -> Iterator[str | None]:
    """The path of the Lightning checkpoint in ``ctx.info.latest_checkpoint`` for
    ``trainer.fit(..., ckpt_path=...)``, or None when the trial starts afresh. The path is
    valid inside the ``with`` block. Every rank may call it (it only reads storage)."""
    check_context(ctx, "latest_checkpoint_path(ctx)")
    uuid = ctx.info.latest_checkpoint
    if not uuid:
        yield None
        return
    name = ctx.checkpoint.read_metadata(uuid).get(FILE_KEY)
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"checkpoint {uuid} has no Lightning checkpoint (its metadata has no {FILE_KEY!r}): "
            "it was not stored by shipyard.integrations.lightning.ShipyardCallback"
        )
    with ctx.checkpoint.restore_path(uuid) as path:
        yield os.fspath(path / name)


# ---------------------------------------------------------------------- processes
def trainer_kwargs(ctx: Context) -> dict[str, Any]:
    """``lightning.Trainer`` arguments that make Lightning run in the processes the trial has:
    one process, or the ranks ``python3 -m shipyard.launch.torch_distributed`` started (DDP,
    joining their process group instead of starting processes of its own)."""
    check_context(ctx, "trainer_kwargs(ctx)")
    dist = ctx.distributed
    world = int(os.environ.get("WORLD_SIZE") or 1)
    if world != dist.size:
        raise ValueError(
            f"WORLD_SIZE={world} but ctx.distributed has {dist.size} rank(s): start the "
            f"processes with `{LAUNCHER} python3 train.py`, which sets both"
        )
    if dist.size == 1:
        # devices=1: on a machine with several GPUs, Lightning would otherwise start more
        # processes than the trial has slots.
        return {"accelerator": "auto", "devices": 1, "num_nodes": 1, "strategy": "auto"}
    missing = [name for name in _TORCH_ENV if name not in os.environ]
    if missing:
        raise ValueError(
            f"{', '.join(missing)} not set: start the processes with `{LAUNCHER} python3 train.py`"
        )
    if os.environ.get("SHIPYARD_DIST_BACKEND") == "nccl":
        # The launcher gives each rank one GPU (CUDA_VISIBLE_DEVICES, seen as cuda:0): to
        # Lightning each rank is a node of one device.
        return {
            "accelerator": "gpu",
            "devices": 1,
            "num_nodes": dist.size,
            "strategy": "ddp",
            "plugins": [_OneDevicePerRank()],
        }
    return {
        "accelerator": "cpu",
        "devices": dist.local_size,
        "num_nodes": dist.size // dist.local_size,
        "strategy": "ddp",
        "plugins": [TorchElasticEnvironment()],
    }


_TORCH_ENV = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")


class _OneDevicePerRank(TorchElasticEnvironment):
    """Ranks that each see one GPU: rank R is node R with local rank 0."""

    def node_rank(self) -> int:
        return self.global_rank()

    def local_rank(self) -> int:
        return 0
