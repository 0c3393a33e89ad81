"""The Trainer's view of the user's data loaders: sharded across processes when
distributed, and able to resume an epoch where a checkpoint left it."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sized
from typing import Any

import torch
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    DistributedSampler,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
)


class ResumableBatchSampler(Sampler[list[int]]):
    """The user's batches, from the start of the epoch or, once after a resume, from its
    ``skip``-th batch. Skipped batches are only indexed, never loaded, so a dataset with
    random transforms does not draw random numbers for them; ``after_skip`` runs once the
    skipped batches are passed (the Trainer restores the checkpoint's random state there)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.skip = 0
        self.after_skip: Callable[[], None] | None = None

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[list[int]]:
        it = iter(self.inner)
        skip, self.skip = self.skip, 0
        after_skip, self.after_skip = self.after_skip, None
        for _ in range(skip):
            if next(it, None) is None:
                break
        if after_skip is not None:
            after_skip()
        yield from it


class ShardSampler(Sampler[int]):
    """Every ``world``-th index of ``inner`` from ``rank``: each sample goes to exactly one
    process (unlike DistributedSampler, which repeats samples to even the shards)."""

    def __init__(self, inner: Any, rank: int, world: int) -> None:
        self.inner, self.rank, self.world = inner, rank, world

    def __len__(self) -> int:
        return len(range(self.rank, len(self.inner), self.world))

    def __iter__(self) -> Iterator[int]:
        return itertools.islice(iter(self.inner), self.rank, None, self.world)


def _check_map_style(loader: object, method: str) -> DataLoader:
    if not isinstance(loader, DataLoader):
        raise TypeError(
            f"{method}() must return a torch.utils.data.DataLoader, got {type(loader).__name__}"
        )
    if isinstance(loader.dataset, IterableDataset):
        raise ValueError(
            f"{method}() returned a DataLoader over an IterableDataset: the Trainer needs a "
            "map-style dataset (with __len__ and __getitem__) to shard and resume it"
        )
    if loader.batch_sampler is None:
        raise ValueError(
            f"{method}() returned a DataLoader with batch_size=None: the Trainer needs "
            "batches (give a batch_size, or a batch_sampler)"
        )
    return loader


def _rebuilt(loader: DataLoader, batch_sampler: Sampler[list[int]]) -> DataLoader:
    """A DataLoader like ``loader`` (workers, collate_fn, generator, ...) over other batches."""
    kwargs: dict[str, Any] = {
        "num_workers": loader.num_workers,
        "collate_fn": loader.collate_fn,
        "pin_memory": loader.pin_memory,
        "timeout": loader.timeout,
        "worker_init_fn": loader.worker_init_fn,
        "multiprocessing_context": loader.multiprocessing_context,
        "generator": loader.generator,
        "persistent_workers": loader.persistent_workers,
    }
    if loader.num_workers > 0:
        kwargs["prefetch_factor"] = loader.prefetch_factor
    if getattr(loader, "in_order", True) is False:
        kwargs["in_order"] = False
    return DataLoader(loader.dataset, batch_sampler=batch_sampler, **kwargs)


def _distributed_sampler(
    loader: DataLoader, rank: int, world: int, seed: int, method: str
) -> Sampler[int]:
    sampler, dataset = loader.sampler, loader.dataset
    if isinstance(sampler, DistributedSampler):
        if sampler.num_replicas == world and sampler.rank == rank:
            return sampler
        return DistributedSampler(
            dataset,
            num_replicas=world,
            rank=rank,
            shuffle=sampler.shuffle,
            seed=sampler.seed,
            drop_last=sampler.drop_last,
        )
    if isinstance(sampler, SequentialSampler):
        return DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=False)
    if (
        isinstance(sampler, RandomSampler)
        and not sampler.replacement
        and sampler.num_samples == len(dataset)  # type: ignore[arg-type]
    ):
        return DistributedSampler(dataset, num_replicas=world, rank=rank, shuffle=True, seed=seed)
    raise ValueError(
        f"{method}() returned a DataLoader with a {type(sampler).__name__}, which the Trainer "
        "cannot shard across processes: use shuffle=True or False, or a "
        "torch.utils.data.DistributedSampler (the Trainer sets its rank and world size)"
    )


class TrainingData:
    """The training loader as the Trainer iterates it."""

    def __init__(self, loader: object, *, rank: int, world: int, seed: int, method: str) -> None:
        user = _check_map_style(loader, method)
        self.distributed_sampler: DistributedSampler | None = None
        if world > 1:
            if user.batch_size is None:
                raise ValueError(
                    f"{method}() returned a DataLoader with a custom batch_sampler, which the "
                    "Trainer cannot shard across processes: give a batch_size (and shuffle or "
                    "a DistributedSampler) instead"
                )
            sampler: Any = _distributed_sampler(user, rank, world, seed, method)
            inner: Any = BatchSampler(sampler, user.batch_size, user.drop_last)
        else:
            sampler = user.sampler
            inner = user.batch_sampler
        if isinstance(sampler, DistributedSampler):
            self.distributed_sampler = sampler
        self.batches = ResumableBatchSampler(inner)
        self.loader = _rebuilt(user, self.batches)
        self.batches_per_epoch = len(self.batches)
        if self.batches_per_epoch == 0:
            raise ValueError(f"{method}() returned a DataLoader with no batches")
        # Generators whose state decides the order of an epoch (saved with the RNG state).
        self.generators: list[torch.Generator] = []
        for gen in (user.generator, getattr(sampler, "generator", None)):
            if isinstance(gen, torch.Generator) and all(gen is not g for g in self.generators):
                self.generators.append(gen)

    def start_epoch(self, epoch: int) -> Iterator[Any]:
        if self.distributed_sampler is not None:
            self.distributed_sampler.set_epoch(epoch)
        return iter(self.loader)


def validation_loader(loader: object, *, rank: int, world: int, method: str) -> DataLoader:
    user = _check_map_style(loader, method)
    if world == 1:
        return user
    if user.batch_size is None:
        raise ValueError(
            f"{method}() returned a DataLoader with a custom batch_sampler, which the Trainer "
            "cannot shard across processes: give a batch_size instead"
        )
    sampler: Any = user.sampler
    if isinstance(sampler, DistributedSampler):  # its own shards repeat samples: take all
        sampler = SequentialSampler(user.dataset)  # type: ignore[arg-type]
    shard = ShardSampler(sampler, rank, world)
    return _rebuilt(user, BatchSampler(shard, user.batch_size, user.drop_last))


def batch_size_of(batch: Any) -> int:
    """The number of samples in a batch: the first dimension of its first tensor (1 if it
    has none)."""
    if isinstance(batch, torch.Tensor):
        return int(batch.shape[0]) if batch.dim() > 0 else 1
    if isinstance(batch, dict):
        batch = list(batch.values())
    if isinstance(batch, list | tuple):
        for item in batch:
            if isinstance(item, torch.Tensor | list | tuple | dict):
                return batch_size_of(item)
    if isinstance(batch, Sized) and not isinstance(batch, str | bytes):
        return len(batch)
    return 1


def to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, dict):
        return {k: to_device(v, device) for k, v in batch.items()}
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # namedtuple
        return type(batch)(*(to_device(v, device) for v in batch))
    if isinstance(batch, list | tuple):
        return type(batch)(to_device(v, device) for v in batch)
    return batch
