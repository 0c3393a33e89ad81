"""Turns a scheduled trial into a TrialLaunchSpec: working dir, environment, argv."""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path

from shipyard.backends.base import Slot, TrialLaunchSpec
from shipyard.common.config import ExperimentConfig
from shipyard.common.config.environment import BindMount, DeviceImages
from shipyard.common.determined_shim import with_shim
from shipyard.common.errors import ConfigError
from shipyard.common.node_env import CA_PEM_ENV, CONTEXT_ENV, SHIP_LOGS_ENV
from shipyard.launch import entry
from shipyard.search.registry import full_length
from shipyard.server import orm
from shipyard.server.services import checkpoint_storage, share_nothing
from shipyard.server.services.contexts import unpack_context
from shipyard.server.services.experiment_config import config_of
from shipyard.server.settings import Settings
from shipyard.server.workers.run_secrets import Injection


def _experiment_config_file(settings: Settings, exp: orm.Experiment) -> Path:
    path = settings.home / "experiments" / str(exp.id) / "config.json"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(exp.config))
        os.replace(tmp, path)
    return path


def _workdir(settings: Settings, exp: orm.Experiment, trial: orm.Trial) -> Path:
    """The unpacked context, made once per trial: a restart keeps the files it wrote."""
    workdir = settings.home / "trials" / str(trial.id)
    marker = workdir / ".shipyard-context"
    if not marker.exists():
        if exp.context_id:
            unpack_context(settings.home, exp.context_id, workdir)
        workdir.mkdir(parents=True, exist_ok=True)
        _bind_mounts(config_of(exp).bind_mounts, workdir)
        marker.write_text(exp.context_id or "")
    return workdir


def _bind_mounts(mounts: list[BindMount], workdir: Path) -> None:
    """Processes share the host's file system: a relative container_path becomes a link
    in the working dir; an absolute one equal to host_path needs nothing."""
    for mount in mounts:
        target = Path(mount.container_path)
        if not target.is_absolute():
            link = workdir / target
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.exists():
                link.symlink_to(mount.host_path)


def _base_env() -> dict[str, str]:
    # The master's own settings (database URL, home) are not the trial's business.
    env = {k: v for k, v in os.environ.items() if not k.startswith("SHIPYARD_")}
    bin_dir = os.path.dirname(sys.executable)
    env["PATH"] = bin_dir + os.pathsep + env.get("PATH", "")
    env["PYTHONUNBUFFERED"] = "1"
    return env


def choose_image(image: str | DeviceImages | dict | None, slots: list[Slot]) -> str | None:
    """The image to run on these slots: Determined's per-device map gives `cpu` to CPU
    slots and `cuda` (or its old name `gpu`) to GPU slots."""
    if image is None or isinstance(image, str):
        return image
    if isinstance(image, DeviceImages):
        image = image.model_dump()
    kind = "gpu" if any(s.kind == "gpu" for s in slots) else "cpu"
    keys = ("cuda", "gpu") if kind == "gpu" else ("cpu",)
    for key in keys:
        if image.get(key):
            return image[key]
    named = ", ".join(k for k, v in image.items() if v) or "none"
    raise ConfigError(
        f"environment.image has no image for {kind} slots: set environment.image.{keys[0]} "
        f"(it names {named})"
    )


def _optional(value: int | None) -> str:
    return "" if value is None else str(value)


def run_log_path(settings: Settings, trial: orm.Trial) -> str:
    """Where the backend writes the output of the trial's current run."""
    return str(settings.home / "logs" / f"trial-{trial.id}-run-{trial.run_id}.log")


def _heartbeat_interval(timeout: int | None) -> str:
    """Four beats per heartbeat_timeout: one lost beat never kills a healthy trial. No
    timeout, no beats (reports still count as heartbeats)."""
    return "" if timeout is None else str(timeout / 4)


def build_spec(
    settings: Settings,
    exp: orm.Experiment,
    trial: orm.Trial,
    slots: list[Slot],
    task_token: str | None = None,
    secrets: Injection | None = None,
    shares_files: bool = True,
) -> TrialLaunchSpec:
    """``shares_files``: whether the slots' nodes see the master's disk (see
    Backend.shares_masters_files); if not, the spec is made for a node that shares nothing."""
    config = config_of(exp)
    image = choose_image(config.environment.image, slots)
    # A container has its image's environment, not the master's.
    env = {"PYTHONUNBUFFERED": "1"} if image else _base_env()
    env.update(config.env_vars())
    argv = config.entrypoint_argv()
    if secrets is not None:  # the values, and the wrapper that masks them in the output
        env.update(secrets.env)
        if shares_files:  # else the entry masks them
            argv = secrets.wrap(argv)
    searcher = config.searcher
    max_length = full_length(config.searcher)
    env.update(
        {
            "SHIPYARD_MASTER": settings.master_url,
            "SHIPYARD_TRIAL_ID": str(trial.id),
            "SHIPYARD_EXPERIMENT_ID": str(exp.id),
            "SHIPYARD_RUN_ID": str(trial.run_id),
            "SHIPYARD_HPARAMS": json.dumps(trial.hparams),
            "SHIPYARD_TRIAL_SEED": str(trial.seed),
            "SHIPYARD_LATEST_CHECKPOINT": trial.latest_checkpoint or "",
            "SHIPYARD_CHECKPOINT_STORAGE": json.dumps(
                checkpoint_storage.spec_of(exp, secrets.values if secrets else None)
            ),
            "SHIPYARD_SEARCHER_METRIC": searcher.metric,
            "SHIPYARD_SEARCHER_MAX_LENGTH": _optional(max_length),
            "SHIPYARD_SEARCHER_TARGET": _optional(trial.target_length),
            "SHIPYARD_SEARCHER_TIME_METRIC": searcher.time_metric or "",
            "SHIPYARD_HEARTBEAT_INTERVAL_S": _heartbeat_interval(config.heartbeat_timeout),
            "SHIPYARD_SLOT_IDS": ",".join(s.id for s in slots),
            "SHIPYARD_RANK": "0",
            "SHIPYARD_LOCAL_RANK": "0",
            "SHIPYARD_SIZE": "1",
        }
    )
    if task_token:  # the run's own credentials (never a user's token)
        env["SHIPYARD_TASK_TOKEN"] = task_token
    if shares_files:
        env["SHIPYARD_EXPERIMENT_CONFIG"] = str(_experiment_config_file(settings, exp))
        if settings.tls_cert:  # trials trust the master's certificate
            env["SHIPYARD_CA_CERT"] = str(settings.tls_cert)
    else:
        env.update(_sharing_nothing(settings, exp, config))
        argv = [*entry.ARGV, *argv]
    if shares_files and not image:  # else the container or the node's entry adds its own path
        with_shim(env)  # `import determined` is Shipyard's shim (docs/determined.md)
    return TrialLaunchSpec(
        trial_id=trial.id,
        run_id=trial.run_id,
        argv=argv,
        env=env,
        workdir=str(_workdir(settings, exp, trial)) if shares_files else "",
        slots=slots,
        image=image,
        log_path=run_log_path(settings, trial),
        bind_mounts=[mount.model_dump() for mount in config.bind_mounts],
        shares_files=shares_files,
        force_pull_image=config.environment.force_pull_image,
    )


def _sharing_nothing(
    settings: Settings, exp: orm.Experiment, config: ExperimentConfig
) -> dict[str, str]:
    """The variables of a run on a node that does not see the master's disk, whose argv
    shipyard.launch.entry starts: it fetches the code and config with the task token, masks
    the output (in place of the masking wrapper) and sends it to the master. What lives only
    on the master's disk is refused."""
    refused = share_nothing.refusals(config, exp.checkpoint_base)
    if refused:  # the pool changed since the submit's check
        raise ConfigError("; ".join(f"{r['path']}: {r['message']}" for r in refused))
    env = {CONTEXT_ENV: exp.context_id or "", SHIP_LOGS_ENV: "1"}
    if settings.tls_cert:  # by value: the node has no file of the master's (it is public)
        env[CA_PEM_ENV] = _certificate(settings.tls_cert)
    return env


@functools.cache
def _certificate(path: Path) -> str:
    return path.read_text()
