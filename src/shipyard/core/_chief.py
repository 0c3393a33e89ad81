"""Chief decides, workers follow: ctx.train, ctx.preempt and ctx.searcher for a trial with
several ranks.

Only the chief (rank 0) talks to the master. The other ranks' reports are checked and
dropped. should_preempt(), should_stop(), target and operations() become collectives: the
chief reads its own answer and broadcasts it, so every rank gets the same answer at the same
call and all ranks stop at the same step. Every rank must call them, in the same order.
A loop that asks both every step calls should_preempt_or_stop(): one collective for the two.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from shipyard.common.errors import InvalidRequest
from shipyard.core._tensorboard import TensorBoard, directory_of
from shipyard.core.distributed import DistributedContext
from shipyard.core.preempt import PreemptContext
from shipyard.core.searcher import DEFAULT_WAIT_S, SearcherContext, SearcherOperation
from shipyard.core.train import TRAINING, VALIDATION, check_group, check_progress, make_report


class WorkerTrain:
    """ctx.train on a rank other than the chief: reports are checked (a bad one raises on
    every rank alike) and dropped; the chief's reports are the trial's metrics. Average or
    gather values across ranks yourself (ctx.distributed.allgather) when they differ."""

    def report_training_metrics(self, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        make_report(TRAINING, steps_completed, metrics)

    def report_validation_metrics(self, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        make_report(VALIDATION, steps_completed, metrics)

    def report_metrics(self, group: str, steps_completed: int, metrics: Mapping[str, Any]) -> None:
        make_report(check_group(group), steps_completed, metrics)

    def report_progress(self, fraction: float) -> None:
        check_progress(fraction)

    # Set by make_context: this rank's own directory, tensorboard/rank-<n> (no scalars).
    tensorboard: TensorBoard | None = None

    def get_tensorboard_path(self) -> Path:
        if self.tensorboard is None:
            rank = int(os.environ.get("SHIPYARD_RANK") or 0)
            self.tensorboard = TensorBoard(directory_of(os.getcwd(), rank))
        return self.tensorboard.path()

    def flush(self, timeout_s: float = 0.0) -> None:
        return None

    def close(self, timeout_s: float = 0.0) -> None:
        return None


class CollectivePreempt:
    def __init__(self, inner: PreemptContext, dist: DistributedContext) -> None:
        self._inner = inner
        self._dist = dist

    def should_preempt(self) -> bool:
        """A collective: every rank gets the chief's answer."""
        mine = self._inner.should_preempt() if self._dist.is_chief else None
        return bool(self._dist.broadcast(mine))


def should_preempt_or_stop(preempt: PreemptContext, searcher: SearcherContext) -> tuple[bool, bool]:
    """(``preempt.should_preempt()``, ``searcher.should_stop()``). With several ranks one
    collective: the chief asks both and broadcasts the pair, so every rank gets the same
    answers at the same call; every rank must call it where the others do."""
    if isinstance(preempt, CollectivePreempt) and isinstance(searcher, CollectiveSearcher):
        dist = preempt._dist
        mine = (
            (preempt._inner.should_preempt(), searcher._inner.should_stop())
            if dist.is_chief
            else None
        )
        answer = dist.broadcast(mine)
        assert answer is not None  # the chief's pair, on every rank
        return bool(answer[0]), bool(answer[1])
    return bool(preempt.should_preempt()), bool(searcher.should_stop())


class CollectiveSearcher:
    """max_length, metric and time_metric come from the environment, the same on every
    rank; target, should_stop() and operations() are the chief's, broadcast."""

    def __init__(self, inner: SearcherContext, dist: DistributedContext) -> None:
        self._inner = inner
        self._dist = dist
        self.max_length = inner.max_length
        self.metric = inner.metric
        self.time_metric = inner.time_metric

    @property
    def target(self) -> int | None:
        """A collective: every rank gets the chief's current target."""
        mine = self._inner.target if self._dist.is_chief else None
        value: int | None = self._dist.broadcast(mine)
        return value

    def should_stop(self) -> bool:
        """A collective: every rank gets the chief's answer."""
        mine = self._inner.should_stop() if self._dist.is_chief else None
        return bool(self._dist.broadcast(mine))

    def operations(
        self, *, default_length: int | None = None, wait_s: float = DEFAULT_WAIT_S
    ) -> Iterator[SearcherOperation]:
        """The chief's operations, one broadcast each (and one for the end), so every rank
        trains to the same lengths and leaves the loop together."""
        chief_ops = (
            self._inner.operations(default_length=default_length, wait_s=wait_s)
            if self._dist.is_chief
            else None
        )
        while True:
            length: int | None = None
            if chief_ops is not None:
                try:
                    op = next(chief_ops, None)
                except Exception as exc:
                    self._dist.broadcast(("error", f"{type(exc).__name__}: {exc}"))
                    raise
                length = None if op is None else op.length
            answer = self._dist.broadcast(("length", length))
            if answer[0] == "error":
                raise InvalidRequest(f"the chief's ctx.searcher.operations() failed: {answer[1]}")
            if answer[1] is None:
                return
            yield SearcherOperation(answer[1])
