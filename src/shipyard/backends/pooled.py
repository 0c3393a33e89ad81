"""One master, several engines: the Backend the master uses, routing each call to the backend
of the trial's pool (local processes, a Ray cluster, a Slurm cluster, ...).

Local pools share one LocalBackend (they split the machine's slots); every other pool has its
own backend, and its slot ids are prefixed with the pool's name ("ray/gpu0") so they stay
unique. Each handle records its pool, so a restarted master routes it again.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from shipyard.backends.base import (
    Backend,
    Handle,
    LogSource,
    RunState,
    Slot,
    TrialLaunchSpec,
    numbered_slots,
)

LOCAL = ""  # the key of the shared local backend (its slot ids have no prefix)


class PooledBackend(Backend, LogSource):
    name = "pooled"

    def __init__(
        self, backends: dict[str, Backend], expected: dict[str, tuple[int, str]] | None = None
    ) -> None:
        """``backends``: pool name -> backend, LOCAL -> the local backend (if any).
        ``expected``: pool name -> (slots, kind) to assume when its engine does not answer
        now (the pool's configured `slots`), so its trials queue until the engine is back
        instead of being refused."""
        self._backends = backends
        self._slots: dict[str, tuple[str, Slot]] = {}  # outer slot id -> (key, inner slot)
        for key, backend in backends.items():
            slots = backend.capacity()
            if not slots and key in (expected or {}):
                count, kind = (expected or {})[key]
                slots = numbered_slots(kind, count, f"{key}: not reached yet")
            for slot in slots:
                outer = slot.id if key == LOCAL else f"{key}/{slot.id}"
                self._slots[outer] = (key, slot)

    def capacity(self) -> list[Slot]:
        return [
            slot if key == LOCAL else dataclasses.replace(slot, id=outer)
            for outer, (key, slot) in self._slots.items()
        ]

    def capacity_of(self, key: str) -> list[Slot]:
        return [s for s in self.capacity() if self._slots[s.id][0] == key]

    def backend_of_pool(self, pool: str) -> Backend:
        return self._backends.get(pool) or self._backends[LOCAL]

    def health(self) -> str | None:
        problems = [f"{k}: {p}" for k, b in self._backends.items() if (p := b.health())]
        return "; ".join(problems) or None

    def health_of(self, pool: str) -> str | None:
        """Why this pool's engine cannot run trials now, or None."""
        return self.backend_of_pool(pool).health()

    def _pool_key(self, slots: list[Slot]) -> str:
        if not slots and LOCAL in self._backends:
            # slots_per_trial 0: no slot says where, and only pools on the master's
            # machine take such trials (checked at submit), all served by LOCAL.
            return LOCAL
        keys = {self._slots[s.id][0] for s in slots}
        if len(keys) != 1:
            raise ValueError(f"a trial's slots must come from one pool, got {sorted(keys)}")
        return keys.pop()

    def shares_masters_files(self, slots: list[Slot]) -> bool:
        key = self._pool_key(slots)
        return self._backends[key].shares_masters_files([self._slots[s.id][1] for s in slots])

    def launch(self, spec: TrialLaunchSpec) -> Handle:
        key = self._pool_key(spec.slots)
        inner = dataclasses.replace(spec, slots=[self._slots[s.id][1] for s in spec.slots])
        handle = self._backends[key].launch(inner)
        handle.data["pool"] = key
        return handle

    def _route(self, handle: Handle) -> Backend:
        # Handles stored before pools had backends carry no pool: they are local.
        return self._backends[handle.data.get("pool", LOCAL)]

    def poll(self, handle: Handle) -> RunState:
        return self._route(handle).poll(handle)

    def terminate(self, handle: Handle, grace_s: float) -> None:
        self._route(handle).terminate(handle, grace_s)

    def release(self, handle: Handle) -> None:
        self._route(handle).release(handle)

    def recover(self, handle_data: dict[str, Any]) -> Handle | None:
        key = handle_data.get("pool", LOCAL)
        backend = self._backends.get(key)
        if backend is None:
            return None  # its pool is gone from the config: the trial is requeued
        handle = backend.recover(handle_data)
        if handle is not None:
            handle.data["pool"] = key
        return handle

    def find_launch(self, log_path: str) -> Handle | None:
        for key, backend in self._backends.items():
            handle = backend.find_launch(log_path)
            if handle is not None:
                handle.data["pool"] = key
                return handle
        return None

    def read_output(self, handle: Handle, offset: int, final: bool = False) -> tuple[bytes, int]:
        backend = self._route(handle)
        if not isinstance(backend, LogSource):
            return b"", offset
        return backend.read_output(handle, offset, final)

    def set_exit_listener(self, listener) -> None:
        for backend in self._backends.values():
            backend.set_exit_listener(listener)

    def close(self) -> None:
        for backend in self._backends.values():
            backend.close()
