"""The record of the environment a trial rank runs in (schema 1): sections that two runs
can be compared on, a hash of each, a volatile part that differs between any two runs
(host, time, pid, GPU UUIDs, rank and address variables), the probes' errors, and how
long it took. Standard library only, and it never raises: a probe that fails or hangs
is an entry in `errors`, and its section holds what it got."""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from shipyard.common.environment.canonical import section_hash
from shipyard.common.environment.cpu import cpu_section
from shipyard.common.environment.env_vars import env_sections
from shipyard.common.environment.framework import framework_section
from shipyard.common.environment.gpu import GpuProbe
from shipyard.common.environment.packages import installed_packages
from shipyard.common.environment.system import os_section, python_section

SCHEMA = 1
SECTIONS = ("python", "packages", "framework", "gpu", "cpu", "os", "env")

Probe = Callable[[dict[str, Any], list[str]], None]


def capture_environment(
    *,
    environ: Mapping[str, str] | None = None,
    secret_values: Iterable[str] = (),
    path: list[str] | None = None,
    nvml_timeout_s: float = 2.0,
) -> dict[str, Any]:
    """environ defaults to os.environ, path to sys.path. secret_values: values that must
    not be in the record, not even hashed (the variables SHIPYARD_MASK_ENV names are
    secret too; the caller adds the files of SHIPYARD_SECRETS_DIR). NVML is waited for
    until nvml_timeout_s after the start; an answer that comes while the other probes
    still run is taken even when it came later."""
    started = time.perf_counter()
    environ = os.environ if environ is None else environ
    search = sys.path if path is None else path
    sections: dict[str, dict[str, Any]] = {name: {} for name in SECTIONS}
    errors: list[dict[str, str]] = []
    volatile: dict[str, Any] = {}
    try:
        # NVML first, in its thread: the other probes run while it answers.
        gpu = GpuProbe()
        _run("gpu", lambda out, problems: gpu.start(), sections, errors)
        _run("python", python_section, sections, errors)
        _run("packages", lambda o, p: installed_packages(search, o, p), sections, errors)
        _run("framework", framework_section, sections, errors)
        _run("cpu", cpu_section, sections, errors)
        _run("os", os_section, sections, errors)
        volatile_env: dict[str, Any] = {}

        def env(out: dict[str, Any], problems: list[str]) -> None:
            section, volatile_part = env_sections(environ, secret_values)
            out.update(section)
            volatile_env.update(volatile_part)

        _run("env", env, sections, errors)
        waited = time.perf_counter() - started
        section, uuids, problems = gpu.result(nvml_timeout_s - waited, nvml_timeout_s)
        sections["gpu"] = section
        errors += [{"section": "gpu", "message": m} for m in problems]
        volatile = {
            "hostname": platform.node(),
            "captured_at": _utc_now(),
            "pid": os.getpid(),
            "gpu_uuids": uuids,
            "env": volatile_env,
        }
    except Exception as exc:  # noqa: BLE001 - a bug here still gives a record
        errors.append({"section": "capture", "message": _message(exc)})
    sections = _decodable(sections)
    hashes = _hashes(sections, errors)
    return {
        "schema": SCHEMA,
        "sections": sections,
        "hashes": hashes,
        "volatile": _decodable(volatile),
        "errors": _decodable(errors),
        "capture_ms": round((time.perf_counter() - started) * 1000, 3),
    }


def _run(
    name: str, probe: Probe, sections: dict[str, dict[str, Any]], errors: list[dict[str, str]]
) -> None:
    problems: list[str] = []
    try:
        probe(sections[name], problems)
    except Exception as exc:  # noqa: BLE001 - the section keeps what the probe got
        problems.append(_message(exc))
    errors += [{"section": name, "message": m} for m in problems]


def _hashes(sections: dict[str, dict[str, Any]], errors: list[dict[str, str]]) -> dict[str, str]:
    hashes = {}
    for name in SECTIONS:
        try:
            hashes[name] = section_hash(sections[name])
        except Exception as exc:  # noqa: BLE001 - a section that is not JSON is emptied
            errors.append({"section": name, "message": f"not recordable: {_message(exc)}"})
            sections[name] = {}
            hashes[name] = section_hash({})
    return hashes


def _decodable(value: Any) -> Any:
    """Strings with undecodable bytes (a path, a variable's name, kept by Python as
    surrogates) as UTF-8 JSON can hold them."""
    if isinstance(value, str):
        return value.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {_decodable(k): _decodable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decodable(v) for v in value]
    return value


def _utc_now() -> str:
    # Not datetime: one module fewer for every trial to import.
    now = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now % 1 * 1000):03d}Z"


def _message(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"
