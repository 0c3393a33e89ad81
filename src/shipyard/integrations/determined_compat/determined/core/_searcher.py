"""core_context.searcher: Determined's searcher operations on Shipyard's.

Determined 0.38 gives one operation of searcher.max_length; older versions, like Shipyard,
give one per rung of an adaptive search (ASHA). Each operation says how far to train
(``op.length``, absolute); the chief finishes it with ``op.report_completed(metric)``.
Shipyard's searcher decides on validation metrics: if none with the searcher's metric was
reported since the operation began, report_completed reports it (at step ``op.length``).
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from typing import Any

from .._errors import not_supported
from ._train import TrainContext


class Unit(enum.Enum):
    EPOCHS = "EPOCHS"
    RECORDS = "RECORDS"
    BATCHES = "BATCHES"


_UNITS = {unit.value for unit in Unit}


class SearcherMode(enum.Enum):
    WorkersAskChief = "WORKERS_ASK_CHIEF"
    ChiefOnly = "CHEIF_ONLY"  # sic: Determined's value


class SearcherOperation:
    def __init__(self, searcher: SearcherContext, length: int, is_chief: bool) -> None:
        self._searcher = searcher
        self._length = length
        self._is_chief = is_chief
        self._completed = False
        self._validations_at_start = searcher._train.validations

    @property
    def length(self) -> int:
        """How far to train (absolute, in the config's unit) before validating."""
        return self._length

    def report_progress(self, length: float) -> None:
        if not self._is_chief:
            raise RuntimeError("you must only call op.report_progress() from the chief worker")
        if self._completed and length != self._length:
            raise RuntimeError("you must not call op.report_progress() after op.report_completed()")
        full = self._searcher._inner.max_length or self._length
        self._searcher._train.report_progress(min(1.0, max(0.0, float(length) / full)))

    def report_completed(self, searcher_metric: Any) -> None:
        if not self._is_chief:
            raise RuntimeError("you must only call op.report_completed() from the chief worker")
        if self._completed:
            raise RuntimeError("you may only call op.report_completed() once")
        self._completed = True
        self._searcher._complete(self, searcher_metric)


class SearcherContext:
    def __init__(self, inner: Any, train: TrainContext) -> None:
        self._ctx = inner
        self._inner = inner.searcher
        self._train = train

    def operations(
        self,
        searcher_mode: SearcherMode = SearcherMode.WorkersAskChief,
        auto_ack: bool = True,
    ) -> Iterator[SearcherOperation]:
        """The operations to train for. WorkersAskChief (the default): every rank iterates
        them together. ChiefOnly: only the chief does."""
        mode = SearcherMode(searcher_mode)
        chief = self._ctx.distributed.rank == 0
        source = self._inner
        if mode == SearcherMode.ChiefOnly:
            if not chief:
                raise RuntimeError(
                    "you cannot call searcher.operations(searcher_mode=ChiefOnly) from a "
                    "non-chief worker"
                )
            source = self._chiefs_own()
        for op in source.operations():
            mine = SearcherOperation(self, op.length, chief)
            yield mine
            if chief and not mine._completed:
                raise RuntimeError("you must call op.report_completed() on each operation")

    def _chiefs_own(self) -> Any:
        """The chief's own searcher context, which the others' collective wraps."""
        if self._ctx.distributed.size == 1:
            return self._inner
        from shipyard.core._chief import CollectiveSearcher

        if not isinstance(self._inner, CollectiveSearcher):
            raise RuntimeError(
                "searcher.operations(searcher_mode=ChiefOnly): with several ranks Shipyard's "
                "searcher context should be a CollectiveSearcher, got "
                f"{type(self._inner).__name__}"
            )
        return self._inner._inner

    def _complete(self, op: SearcherOperation, value: Any) -> None:
        metric = self._inner.metric
        reported = self._train.validations > op._validations_at_start
        if reported and (metric is None or metric in self._train.validated_names):
            return  # the searcher has its metric from the script's own report
        if metric is None:
            return
        metrics = {metric: value}
        if self._inner.time_metric:
            metrics[self._inner.time_metric] = op.length
        self._train.report_validation_metrics(op.length, metrics)

    def acknowledge_out_of_ops(self) -> None:
        return None

    def get_configured_units(self) -> Unit | None:
        """The unit of searcher.max_length in the experiment config ({batches: 100} is
        Unit.BATCHES); None when it is a bare integer or there is none, as in Determined.
        The master stores max_length as an int beside its unit, max_length_unit."""
        searcher = self._ctx.info.experiment_config.get("searcher") or {}
        unit = searcher.get("max_length_unit")
        return Unit(unit.upper()) if isinstance(unit, str) and unit.upper() in _UNITS else None

    def get_max_length(self) -> int:
        length = self._inner.max_length
        if length is None:
            raise not_supported("a searcher without max_length in searcher.get_max_length()")
        return int(length)
