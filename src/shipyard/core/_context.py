"""The Context that ``shipyard.core.init()`` returns, and how it is assembled for each mode."""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from shipyard.common.errors import InvalidRequest
from shipyard.core._env import env_int, env_json, env_str
from shipyard.core._run_error import failure_message, send_run_error
from shipyard.core.artifacts import ArtifactsContext, DroppedArtifacts, make_artifacts
from shipyard.core.checkpoint import CheckpointContext, LocalCheckpoint, MasterCheckpoint
from shipyard.core.distributed import DistributedContext, make_distributed
from shipyard.core.info import Info, info_from_env
from shipyard.core.preempt import LocalPreempt, MasterPreempt, PreemptContext
from shipyard.core.searcher import LocalSearcher, MasterSearcher, SearcherContext
from shipyard.core.train import DEFAULT_FLUSH_TIMEOUT_S, LocalTrain, TrainContext
from shipyard.storage import CheckpointStorage, storage_at, storage_from_spec

LOCAL_CHECKPOINT_DIR = "checkpoints"


class Context:
    """Everything training code talks to. Use it as ``with shipyard.core.init() as ctx:``;
    leaving the block (even with an exception) delivers every reported metric first. An
    exception leaving the block is also sent to the master (``on_error``), which shows it in
    the run's exit reason."""

    def __init__(
        self,
        *,
        info: Info,
        train: TrainContext,
        checkpoint: CheckpointContext,
        preempt: PreemptContext,
        searcher: SearcherContext,
        distributed: DistributedContext,
        on_close: list[Any] | None = None,
        on_error: Callable[[str], None] | None = None,
        artifacts: ArtifactsContext | None = None,
    ) -> None:
        self.info = info
        # make_context gives every context its own (core/artifacts.py).
        self.artifacts: ArtifactsContext = artifacts or DroppedArtifacts()
        self.train = train
        self.checkpoint = checkpoint
        self.preempt = preempt
        self.searcher = searcher
        self.distributed = distributed
        self._on_close = on_close or []
        self._on_error = on_error
        self._closed = False

    @property
    def local(self) -> bool:
        """True when running without a master (metrics printed, checkpoints kept locally)."""
        return self.info.master is None

    def should_preempt_or_stop(self) -> tuple[bool, bool]:
        """(``preempt.should_preempt()``, ``searcher.should_stop()``): for a loop that asks
        both every step. With several ranks it is one collective instead of two."""
        from shipyard.core._chief import should_preempt_or_stop

        return should_preempt_or_stop(self.preempt, self.searcher)

    def __enter__(self) -> Context:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # A collective that failed because another rank exited says less than that rank's
        # own error, which it sends itself: don't overwrite it.
        caused_elsewhere = getattr(exc, "peer_left", False) is True
        if exc is not None and self._on_error is not None and not caused_elsewhere:
            # Before the metrics flush, which can wait long on an unreachable master.
            message = failure_message(exc)
            if message is not None:
                self._on_error(message)
        self.close(raise_errors=exc is None)

    def close(
        self, *, timeout_s: float = DEFAULT_FLUSH_TIMEOUT_S, raise_errors: bool = True
    ) -> None:
        """Deliver every reported metric (waiting at most ``timeout_s``), then stop the
        background threads. Errors are raised, or only printed when ``raise_errors`` is False
        (so they don't hide the exception that is already leaving the ``with`` block)."""
        if self._closed:
            return
        self._closed = True
        try:
            try:
                self.train.close(timeout_s)
            finally:  # the artifacts logged so far are stored, whatever the metrics did
                self.artifacts.close(timeout_s)
        except Exception as exc:
            if raise_errors:
                raise
            print(f"[shipyard] {exc}", file=sys.stderr)
        finally:
            for hook in self._on_close:
                hook()


def make_context(
    *,
    master: str | None,
    hparams: dict[str, Any] | None,
    distributed: DistributedContext | None = None,
) -> Context:
    """``distributed``: this process's connection to the other ranks, when the caller made
    it already (a rank has one; Determined's shim makes it before ``init``)."""
    master = master or env_str("SHIPYARD_MASTER")
    info = info_from_env(master=master, hparams=hparams)
    if distributed is None:
        distributed = make_distributed()
    try:
        if distributed.size > 1 and not distributed.is_chief:
            context = _worker_context(info, distributed)
        elif master is None:
            context = _local_context(info, distributed)
        else:
            context = _master_context(master, info, distributed)
        _attach_tensorboard(context, info, distributed.rank, with_master=master is not None)
    except BaseException:
        distributed.close()
        raise
    context.artifacts = make_artifacts(
        master=master,
        trial_id=info.trial_id,
        run_id=info.run_id,
        is_chief=distributed.is_chief,
        storage=_storage_from_env,
    )
    if distributed.size > 1:
        _chief_decides(context, distributed)
    if master is not None and info.trial_id is not None:
        from shipyard.core._environment_report import start_report

        report = start_report(master, info.trial_id, info.run_id, distributed.rank)
        if report is not None:
            context._on_close.insert(0, report.close)
    return context


def _local_context(info: Info, distributed: DistributedContext) -> Context:
    storage_dir = Path(os.getcwd(), LOCAL_CHECKPOINT_DIR)
    return Context(
        info=info,
        train=LocalTrain(),
        checkpoint=LocalCheckpoint(lambda: _local_storage(storage_dir), info),
        preempt=LocalPreempt(),
        searcher=LocalSearcher(),
        distributed=distributed,
        on_close=[distributed.close],
    )


def _master_context(master: str, info: Info, distributed: DistributedContext) -> Context:
    # Only a trial talking to a master pays for http.client.
    from shipyard.core._http import JsonHttp
    from shipyard.core._signals import SignalPoller
    from shipyard.core.train import MasterTrain

    assert info.trial_id is not None  # info_from_env requires it when a master is set
    http = JsonHttp(master)
    heartbeat = _heartbeat(http, info.trial_id, info.run_id)
    signals = SignalPoller(
        http, info.trial_id, target=env_int("SHIPYARD_SEARCHER_TARGET"), heartbeat=heartbeat
    )
    train = MasterTrain(http, info.trial_id, info.run_id)
    return Context(
        info=info,
        train=train,
        checkpoint=MasterCheckpoint(_storage_from_env, info, http, flush_metrics=train.flush),
        preempt=MasterPreempt(signals),
        searcher=MasterSearcher(signals, http, info.trial_id, info.run_id, train),
        distributed=distributed,
        on_close=[signals.close, http.close, distributed.close]
        + ([heartbeat.close] if heartbeat else []),
        on_error=functools.partial(send_run_error, http, info.trial_id, info.run_id),
    )


def _worker_context(info: Info, distributed: DistributedContext) -> Context:
    """A rank other than the chief: it never reports, registers or polls; it reads
    checkpoints from the same storage, and tells the master why it failed (its error is
    usually the reason the whole trial fails)."""
    from shipyard.core._chief import WorkerTrain

    if info.master is None:
        storage_dir = Path(os.getcwd(), LOCAL_CHECKPOINT_DIR)
        storage: Callable[[], CheckpointStorage] = lambda: _local_storage(storage_dir)  # noqa: E731
        on_error = None
    else:
        storage = _storage_from_env
        on_error = functools.partial(_worker_run_error, info, distributed.rank)
    return Context(
        info=info,
        train=WorkerTrain(),
        checkpoint=LocalCheckpoint(storage, info),
        preempt=LocalPreempt(),
        searcher=LocalSearcher(),
        distributed=distributed,
        on_close=[distributed.close],
        on_error=on_error,
    )


def _attach_tensorboard(context: Context, info: Info, rank: int, *, with_master: bool) -> None:
    """ctx.train.get_tensorboard_path(), Shipyard's metrics as TensorBoard scalars and the
    copy of the directory to the checkpoint storage (core/_tensorboard.py)."""
    from shipyard.core._chief import WorkerTrain
    from shipyard.core._tensorboard import make_tensorboard
    from shipyard.core.train import _QueuedTrain

    tensorboard = make_tensorboard(
        workdir=os.getcwd(),
        rank=rank,
        with_master=with_master,
        experiment_id=info.experiment_id,
        trial_id=info.trial_id,
        store=lambda: _storage_from_env().store,
    )
    if isinstance(context.train, _QueuedTrain | WorkerTrain):
        context.train.tensorboard = tensorboard
    if isinstance(context.checkpoint, LocalCheckpoint):
        context.checkpoint.on_stored = tensorboard.checkpointed
    context._on_close.insert(0, tensorboard.close)


def _chief_decides(context: Context, distributed: DistributedContext) -> None:
    """Several ranks: signals, searcher answers and checkpoints become collectives."""
    from shipyard.core._chief import CollectivePreempt, CollectiveSearcher
    from shipyard.core._dist_checkpoint import DistributedCheckpoint

    assert isinstance(context.checkpoint, LocalCheckpoint)
    context.checkpoint = DistributedCheckpoint(context.checkpoint, distributed, context.info)
    context.preempt = CollectivePreempt(context.preempt, distributed)
    context.searcher = CollectiveSearcher(context.searcher, distributed)


def _worker_run_error(info: Info, rank: int, message: str) -> None:
    from shipyard.core._http import JsonHttp

    assert info.master is not None and info.trial_id is not None
    http = JsonHttp(info.master)
    try:
        send_run_error(http, info.trial_id, info.run_id, f"rank {rank}: {message}")
    finally:
        http.close()


def _storage_from_env() -> CheckpointStorage:
    """The master validated the experiment's checkpoint_storage and resolved it: the
    variable carries ``{"type": "shared_fs", "base_path": "/abs/dir"}`` or an s3 spec
    (bucket, prefix, endpoint_url, region and maybe credentials)."""
    name = "SHIPYARD_CHECKPOINT_STORAGE"
    where = env_json(name)
    if where is None:
        raise InvalidRequest(f"{name} is not set: the master sets it for every trial")
    try:
        return storage_from_spec(where if isinstance(where, dict) else {})
    except InvalidRequest as exc:
        raise InvalidRequest(
            f'environment variable {name} must be {{"type": "shared_fs", "base_path": '
            f'"/an/absolute/dir"}} or {{"type": "s3", "bucket": ...}} ({exc.message})'
        ) from None


def _local_storage(default_dir: Path) -> CheckpointStorage:
    if env_str("SHIPYARD_CHECKPOINT_STORAGE") is not None:
        return _storage_from_env()
    return storage_at(default_dir)


def _heartbeat(http: Any, trial_id: int, run_id: int) -> Any:
    """Beats only when the experiment has a heartbeat_timeout (the master then sets the
    interval); reports are heartbeats anyway."""
    interval = os.environ.get("SHIPYARD_HEARTBEAT_INTERVAL_S")
    if not interval:
        return None
    from shipyard.core._heartbeat import Heartbeat

    return Heartbeat(http, trial_id, run_id, float(interval))
