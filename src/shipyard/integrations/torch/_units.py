"""Lengths for Trainer.fit: Batches(n) and Epochs(n). Records(n) is refused (not yet)."""

from __future__ import annotations

from dataclasses import dataclass

from shipyard.common.errors import NotSupportedYet


def _check_count(unit: str, n: object) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"{unit}({n!r}): the count must be a positive int (1 or more)")


@dataclass(frozen=True)
class Batches:
    """n optimizer steps (each of ``gradient_accumulation`` data-loader batches; with no
    accumulation, n batches of the training data loader)."""

    n: int

    def __post_init__(self) -> None:
        _check_count("Batches", self.n)


@dataclass(frozen=True)
class Epochs:
    """n passes over the training data loader."""

    n: int

    def __post_init__(self) -> None:
        _check_count("Epochs", self.n)


class Records:
    """Lengths in records (samples) are not supported yet: use Batches or Epochs."""

    def __init__(self, n: int) -> None:
        raise NotSupportedYet(
            f"Records({n!r}): lengths in records are not supported yet; use Batches(n) "
            "(optimizer steps) or Epochs(n)"
        )


Length = Batches | Epochs


def check_length(name: str, value: object, *, optional: bool) -> None:
    if value is None and optional:
        return
    if not isinstance(value, Batches | Epochs):
        raise TypeError(
            f"{name} must be Batches(n) or Epochs(n)"
            + (" or None" if optional else "")
            + f", got {value!r}"
        )


def to_steps(length: Length, steps_per_epoch: int) -> int:
    """A length in optimizer steps."""
    if isinstance(length, Epochs):
        return length.n * steps_per_epoch
    return length.n
