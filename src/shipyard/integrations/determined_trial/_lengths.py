"""The experiment config's lengths as the Trainer's: searcher.max_length, min_validation_period
and min_checkpoint_period in batches, epochs or records, as Determined reads them."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from shipyard.integrations.torch import Batches, Epochs
from shipyard.integrations.torch._units import Length

UNITS = ("batches", "epochs", "records")


@dataclass(frozen=True)
class Plan:
    searcher_unit: Callable[[int], Length]
    # The searcher's time in its unit, from (batches trained, epochs completed): what each
    # validation reports, for the master to compare with the searcher's lengths.
    time_metrics: Callable[[int, int], Mapping[str, float]]
    validation_period: Length | None
    checkpoint_period: Length | None
    initial_validation: bool


class Units:
    """A count in one of the config's units, as a Trainer length. Records are whole global
    batches (at least one), as in Determined; epochs are passes over the training loader,
    or records_per_epoch records when the config sets it (Determined's older rule).
    ``round_up``: the searcher's lengths take the whole global batches that hold at least
    the records asked for, so that the time reported back (``time``) reaches them."""

    def __init__(self, global_batch_size: int | None, records_per_epoch: int | None) -> None:
        self.gbs = global_batch_size
        self.records_per_epoch = records_per_epoch or None

    def length(self, unit: str, n: int, *, round_up: bool = False) -> Length:
        if unit == "batches":
            return Batches(max(n, 1))
        if unit == "records":
            return Batches(max(self._batches(n, "records", round_up), 1))
        if unit == "epochs":
            if self.records_per_epoch:
                return Batches(
                    max(self._batches(n * self.records_per_epoch, "epochs", round_up), 1)
                )
            return Epochs(max(n, 1))
        raise ValueError(f"unknown length unit {unit!r}; expected one of {', '.join(UNITS)}")

    def time(self, unit: str, batches: int, epochs: int) -> float:
        """How far ``batches`` trained (``epochs`` passes over the loader) is in ``unit``:
        the inverse of ``length(..., round_up=True)``."""
        if unit == "records":
            return batches * self._gbs("records")
        if unit == "epochs":
            if self.records_per_epoch:
                return batches * self._gbs("epochs") // self.records_per_epoch
            return epochs
        return batches

    def _batches(self, records: int, unit: str, round_up: bool) -> int:
        gbs = self._gbs(unit)
        return -(-records // gbs) if round_up else records // gbs

    def _gbs(self, unit: str) -> int:
        if not self.gbs:
            raise ValueError(
                f"a length in {unit} needs hyperparameters.global_batch_size in the "
                "experiment config"
            )
        return self.gbs


def _period(value: Any, units: Units) -> Length | None:
    """A period ({batches: N}, ...); 0 or unset: none."""
    if not value:
        return None
    if isinstance(value, int):
        return units.length("batches", value) if value > 0 else None
    ((unit, n),) = value.items()
    return units.length(unit, n) if n > 0 else None


def plan(config: dict[str, Any], global_batch_size: int | None) -> Plan:
    units = Units(global_batch_size, config.get("records_per_epoch"))
    searcher = config.get("searcher") or {}
    # The searcher's lengths count its time_metric when it has one, else max_length's unit.
    # The config gives a model_def entrypoint's length in epochs or records that form
    # (common/config/experiment.py): the master then reads the time each validation reports.
    unit = searcher.get("time_metric") or searcher.get("max_length_unit") or "batches"
    if unit not in UNITS:
        raise ValueError(
            f"searcher.time_metric {unit!r}: a PyTorchTrial reports batches and epochs; use "
            "one of those (or records)"
        )
    return Plan(
        searcher_unit=lambda n: units.length(unit, n, round_up=True),
        time_metrics=lambda batches, epochs: {unit: units.time(unit, batches, epochs)},
        validation_period=_period(config.get("min_validation_period"), units),
        checkpoint_period=_period(config.get("min_checkpoint_period"), units),
        initial_validation=bool(config.get("perform_initial_validation")),
    )
