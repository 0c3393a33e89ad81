"""Determined's data helpers: its DataLoader (torch's arguments, turned into a torch
DataLoader the Trainer shards and resumes), TorchData and to_device."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch.utils import data as torch_data

from shipyard.integrations.torch._data import batch_size_of
from shipyard.integrations.torch._data import to_device as _to_device

TorchData = dict[str, torch.Tensor] | Sequence[torch.Tensor] | torch.Tensor


class DataLoader:
    """``det.pytorch.DataLoader(dataset, batch_size=..., shuffle=...)``: the arguments of
    torch's DataLoader. The batch size is per slot (``context.get_per_slot_batch_size()``);
    the runner shards the data across the trial's processes and resumes it mid-epoch."""

    def __init__(
        self,
        dataset: torch_data.Dataset,
        batch_size: int | None = 1,
        shuffle: bool = False,
        sampler: torch_data.Sampler | None = None,
        batch_sampler: torch_data.BatchSampler | None = None,
        num_workers: int = 0,
        collate_fn: Callable[..., Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: torch.Generator | None = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
    ) -> None:
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self._kwargs: dict[str, Any] = {
            "batch_size": batch_size,
            "shuffle": shuffle,
            "sampler": sampler,
            "batch_sampler": batch_sampler,
            "num_workers": num_workers,
            "collate_fn": collate_fn,
            "pin_memory": pin_memory,
            "drop_last": drop_last,
            "timeout": timeout,
            "worker_init_fn": worker_init_fn,
            "multiprocessing_context": multiprocessing_context,
            "generator": generator,
            "persistent_workers": persistent_workers,
        }
        if prefetch_factor is not None:
            self._kwargs["prefetch_factor"] = prefetch_factor
        self._loader = torch_data.DataLoader(dataset, **self._kwargs)  # checks the arguments

    def __len__(self) -> int:
        return len(self._loader)

    def get_data_loader(self, *args: Any, **kwargs: Any) -> torch_data.DataLoader:
        """The torch DataLoader (unsharded: the runner shards it)."""
        return self._loader


def torch_loader(loader: object, method: str) -> Any:
    """What the Trainer takes: a det DataLoader's torch DataLoader, or the user's own."""
    if isinstance(loader, DataLoader):
        return loader.get_data_loader()
    return loader


def to_device(data: Any, device: torch.device | str, warned_types: set | None = None) -> Any:
    """Move the tensors of a batch (nested lists, tuples, dicts) to ``device``."""
    return _to_device(data, torch.device(device))


def data_length(data: Any) -> int:
    """The number of samples in a batch."""
    return batch_size_of(data)
