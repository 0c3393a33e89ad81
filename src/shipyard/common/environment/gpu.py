"""The NVIDIA GPUs, through NVML (pynvml, the module of nvidia-ml-py). A driver can hang,
so NVML is called in a daemon thread that the capture waits for only so long, while it
runs its other probes; what the thread got by then is what is recorded."""

from __future__ import annotations

import threading
from typing import Any

# NVML_ERROR_DRIVER_NOT_LOADED, NVML_ERROR_LIBRARY_NOT_FOUND: an ordinary CPU machine.
NO_NVIDIA = {9: "NVIDIA driver not loaded", 12: "NVML library not found"}


class GpuProbe:
    def __init__(self) -> None:
        # The thread writes and result() reads under the lock: after a timeout both run.
        self._lock = threading.Lock()
        self._section: dict[str, Any] = {"devices": []}
        self._uuids: list[str] = []
        self._problems: list[str] = []
        self._thread = threading.Thread(target=self._run, daemon=True, name="shipyard-nvml")

    def start(self) -> None:
        self._thread.start()

    def result(
        self, wait_s: float, timeout_s: float
    ) -> tuple[dict[str, Any], list[str], list[str]]:
        """(section, GPU UUIDs, problems) once the thread is done or wait_s has passed."""
        if self._thread.ident is None:
            return dict(self._section), [], []  # it did not start: an error of its own
        self._thread.join(max(0.0, wait_s))
        with self._lock:
            section = {**self._section, "devices": [dict(d) for d in self._section["devices"]]}
            problems = list(self._problems)
            if self._thread.is_alive():
                problems.append(f"NVML did not answer within {timeout_s} s")
            return section, list(self._uuids), problems

    def _set(self, key: str, value: Any) -> None:
        with self._lock:
            self._section[key] = value

    def _run(self) -> None:
        try:
            self._probe()
        except Exception as exc:  # noqa: BLE001 - a problem in the record, never a raise
            with self._lock:
                self._problems.append(f"{type(exc).__name__}: {exc}")

    def _probe(self) -> None:
        try:
            import pynvml  # type: ignore[import-untyped, import-not-found, unused-ignore]
        except ImportError:
            self._set("note", "nvidia-ml-py not installed")
            return
        try:
            pynvml.nvmlInit()
        except Exception as exc:
            code = getattr(exc, "value", None)
            if code in NO_NVIDIA:
                self._set("note", NO_NVIDIA[code])
                return
            raise
        try:
            self._set("driver", _text(pynvml.nvmlSystemGetDriverVersion()))
            self._set("cuda_driver", str(pynvml.nvmlSystemGetCudaDriverVersion()))
            for index in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                device = {
                    "name": _text(pynvml.nvmlDeviceGetName(handle)),
                    "memory_mib": int(pynvml.nvmlDeviceGetMemoryInfo(handle).total) // 2**20,
                }
                uuid = _text(pynvml.nvmlDeviceGetUUID(handle))
                with self._lock:
                    self._section["devices"].append(device)
                    self._uuids.append(uuid)
        finally:
            pynvml.nvmlShutdown()


def _text(value: Any) -> str:
    # Older nvidia-ml-py returns bytes, newer str.
    return value.decode("utf-8", errors="replace") if isinstance(value, bytes) else str(value)
