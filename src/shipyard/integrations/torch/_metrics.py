"""What a Trainer reports from a Trial's batches: the loss it backpropagates, the training
metrics averaged over a reporting period, and the validation metrics averaged over the whole
validation set; averaged over every rank when there are several."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from shipyard.integrations.torch._data import batch_size_of, to_device


def loss_of(out: Any, name: str) -> torch.Tensor:
    """The "loss" tensor of ``train_batch``'s dict; ``name``: the Trial class, for errors."""
    if type(out) is not dict and not isinstance(out, Mapping):
        raise TypeError(
            f"{name}.train_batch() must return a dict of metrics including "
            f'"loss", got {type(out).__name__}'
        )
    loss = out.get("loss")
    if loss is None or (type(loss) is not torch.Tensor and not isinstance(loss, torch.Tensor)):
        raise ValueError(
            f'{name}.train_batch() must return a dict with a "loss" tensor to '
            f"backpropagate; it returned keys {sorted(out)}"
            + (f' with "loss" a {type(loss).__name__}' if "loss" in out else "")
        )
    if loss.numel() != 1 or not loss.requires_grad:
        raise ValueError(
            f'{name}.train_batch(): "loss" must be a scalar tensor that requires '
            f"grad, got shape {tuple(loss.shape)}, requires_grad={loss.requires_grad}"
        )
    return loss


def training_means(
    records: dict[str, list[Any]], *, device: torch.device, world: int, name: str
) -> dict[str, float]:
    """Each metric's mean over the batches recorded, then over the ranks."""
    keys = sorted(records)
    means = []
    for key in keys:
        try:
            values = [
                torch.as_tensor(v, dtype=torch.float64, device=device).reshape(())
                for v in records[key]
            ]
        except (TypeError, ValueError, RuntimeError) as exc:
            raise ValueError(
                f"{name}.train_batch(): metric {key!r} must be a number or a "
                f"one-element tensor ({exc})"
            ) from None
        means.append(torch.stack(values).mean())
    vector = torch.stack(means)
    if world > 1:
        dist.all_reduce(vector)
        vector /= world
    return dict(zip(keys, vector.tolist(), strict=True))


def validation_means(
    evaluate: Callable[[Any, Any], Mapping[str, Any]],
    models: list[nn.Module],
    loader: Iterable[Any],
    *,
    device: torch.device,
    amp_dtype: torch.dtype | None,
    world: int,
    name: str,
    with_index: bool = False,
    move_batches: bool = True,
) -> dict[str, float]:
    """Each metric of ``evaluate(batch, models[0])`` (``with_index``: ``evaluate(batch,
    batch_idx)``) averaged over the whole validation set (every rank's share of it),
    weighted by batch size. The models are in eval mode meanwhile. ``move_batches``
    False: the batches stay where the loader puts them."""
    sums: dict[str, torch.Tensor] = {}
    counts: dict[str, float] = {}
    with _eval_mode(models), torch.no_grad():
        for index, batch in enumerate(loader):
            n = batch_size_of(batch)
            if move_batches and device.type != "cpu":
                batch = to_device(batch, device)
            second = index if with_index else models[0]
            if amp_dtype is None:
                out = evaluate(batch, second)
            else:
                with torch.autocast(device.type, dtype=amp_dtype):
                    out = evaluate(batch, second)
            if not isinstance(out, Mapping):
                raise TypeError(
                    f"{name}.evaluate_batch() must return a dict of metrics, "
                    f"got {type(out).__name__}"
                )
            for key, value in out.items():
                try:
                    value = torch.as_tensor(value, dtype=torch.float64, device=device).reshape(())
                except (TypeError, ValueError, RuntimeError) as exc:
                    raise ValueError(
                        f"{name}.evaluate_batch(): metric {key!r} must be a "
                        f"number or a one-element tensor ({exc})"
                    ) from None
                sums[key] = sums[key] + value * n if key in sums else value * n
                counts[key] = counts.get(key, 0.0) + n
    keys = sorted(sums)
    if world > 1:
        gathered: list[Any] = [None] * world
        dist.all_gather_object(gathered, keys)
        keys = sorted({k for rank_keys in gathered for k in rank_keys})
    zero = torch.zeros((), dtype=torch.float64, device=device)
    count_of = [counts.get(k, 0.0) for k in keys]
    vector = torch.cat(
        [
            torch.stack([sums.get(k, zero) for k in keys] or [zero])[: len(keys)],
            torch.tensor(count_of, dtype=torch.float64, device=device),
        ]
    )
    if world > 1:
        dist.all_reduce(vector)
    values = vector.tolist()
    n_keys = len(keys)
    return {
        k: values[i] / values[n_keys + i] if values[n_keys + i] else float("nan")
        for i, k in enumerate(keys)
    }


@contextlib.contextmanager
def _eval_mode(models: list[nn.Module]) -> Iterator[None]:
    for model in models:
        model.eval()
    try:
        yield
    finally:
        for model in models:
            model.train()


def full_dataset_metrics(
    evaluate: Callable[[Any], Mapping[str, Any]],
    models: list[nn.Module],
    loader: Any,
    *,
    chief: bool,
    world: int,
    name: str,
) -> dict[str, float]:
    """``evaluate(loader)`` on the chief (the whole validation set), in eval mode and
    without gradients; the other ranks receive its metrics."""
    metrics: dict[str, float] | None = None
    if chief:
        with _eval_mode(models), torch.no_grad():
            out = evaluate(loader)
        if not isinstance(out, Mapping):
            raise TypeError(
                f"{name}.evaluate_full_dataset() must return a dict of metrics, got "
                f"{type(out).__name__}"
            )
        metrics = {}
        for key, value in out.items():
            try:
                metrics[key] = float(torch.as_tensor(value, dtype=torch.float64).reshape(()))
            except (TypeError, ValueError, RuntimeError) as exc:
                raise ValueError(
                    f"{name}.evaluate_full_dataset(): metric {key!r} must be a number or a "
                    f"one-element tensor ({exc})"
                ) from None
    if world > 1:
        box = [metrics]
        dist.broadcast_object_list(box, src=0)
        metrics = box[0]
    assert metrics is not None
    return metrics
