"""What the Lightning and Hugging Face callbacks share: checking what they are given, and
turning the values a framework logs into Shipyard metrics."""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from shipyard.core import Context

LAUNCHER = "python3 -m shipyard.launch.torch_distributed"


def check_context(ctx: object, where: str) -> None:
    """``ctx`` must be what ``shipyard.core.init()`` returned: a callback handed something else
    would fail much later, at its first report, far from the mistake."""
    if not isinstance(ctx, Context):
        raise TypeError(
            f"{where}: ctx must be the shipyard.core context (`with shipyard.core.init() as "
            f"ctx:`), got {type(ctx).__name__}"
        )


def check_positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive int (1 or more), got {value!r}")
    return value


def check_processes(
    ctx: Context, world_size: int, rank: int, framework: str, *, hint: str = ""
) -> None:
    """The framework's processes must be ctx.distributed's ranks: checkpoints and signals are
    collectives among those ranks, so a process the launcher did not start would hang them."""
    dist = ctx.distributed
    if (dist.size, dist.rank) == (world_size, rank):
        return
    raise ValueError(
        f"{framework} runs this process as rank {rank} of {world_size} but ctx.distributed "
        f"says rank {dist.rank} of {dist.size}: start the processes with `{LAUNCHER} python3 "
        f"train.py` (it gives every process its rank in both), not with torchrun or "
        f"{framework}'s own launcher{hint}"
    )


def scalar(value: Any) -> float | None:
    """A number, numpy scalar or one-element tensor as a float; None for anything else
    (strings, lists, bigger tensors), which a metric cannot be."""
    if isinstance(value, numbers.Real):
        return float(value)
    numel = getattr(value, "numel", None)
    if callable(numel) and numel() == 1:
        return float(value.item())
    return None


def scalars(values: Mapping[str, Any], *, drop: tuple[str, ...] = ()) -> dict[str, float]:
    """The numeric entries of ``values`` as floats, leaving out the names in ``drop``."""
    out = {}
    for name, value in values.items():
        number = scalar(value)
        if number is not None and name not in drop:
            out[name] = number
    return out
