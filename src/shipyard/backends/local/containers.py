"""Trials in containers: `docker run` or `podman run` in the foreground is the trial process.

The local backend starts the container CLI where it would start the trial, so its mechanics
stay: the wrapper's pid and exit files, the process group, the output file. The CLI forwards
SIGTERM to the container (``--init`` delivers it to a PID-1 Python without a handler); what
the CLI cannot forward, a SIGKILL, is done by name (``rm -f``) so no container is left.

Inside, the trial sees the host's paths: its working dir, the checkpoint storage and the
experiment config are mounted where the environment says they are, and the master is on
127.0.0.1 (``--network host``). The master's own ``shipyard`` package is mounted read-only
and put on PYTHONPATH, so an image needs only a python3 (>= 3.11) for ``shipyard.core``.
Images are not pulled: one missing locally is a launch error. With
environment.force_pull_image the run pulls it first (`run --pull always`, in the trial's
output); the run then records the image's name, not an id the master cannot know yet.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import shipyard
from shipyard.backends.base import Handle, TrialLaunchSpec
from shipyard.backends.local.options import ContainersConfig
from shipyard.common.determined_shim import with_shim
from shipyard.common.masking import SECRETS_DIR_ENV, masked_names

RUNTIMES = ("docker", "podman")
PROPAGATIONS = ("rprivate", "private", "rshared", "shared", "rslave", "slave")
# Where the master's shipyard package is mounted inside, and put on PYTHONPATH.
SHIPYARD_LIB = "/opt/shipyard/lib"
# Podman's name of NVIDIA GPU N (CDI, from `nvidia-ctk cdi generate`): add "N".
PODMAN_GPU = "nvidia.com/gpu="
_CLI_TIMEOUT_S = 60.0


class ContainerError(Exception):
    """A trial's container cannot start; the message says what to do (it becomes the run's
    failure reason)."""


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    read_only: bool = False
    propagation: str = "rprivate"

    def volume_arg(self) -> str:
        options = ["ro"] if self.read_only else []
        if self.propagation != "rprivate":  # the engines' default
            options.append(self.propagation)
        volume = f"{self.source}:{self.target}"
        return f"{volume}:{','.join(options)}" if options else volume


@dataclass(frozen=True)
class ImageInfo:
    id: str
    digest: str | None


@dataclass(frozen=True)
class ContainerRuntime:
    """One engine's CLI: ``name`` is docker or podman, ``env`` the CLI's environment."""

    name: str
    exe: str
    env: Mapping[str, str]

    @classmethod
    def choose(
        cls, config: ContainersConfig, engine_env: Mapping[str, str] | None = None
    ) -> ContainerRuntime:
        """The configured runtime, or the one this machine has (see ContainersConfig)."""
        if config.runtime != "auto":
            runtime = cls.named(config.runtime, engine_env)
            if runtime is None:
                raise ContainerError(
                    f"containers.runtime is {config.runtime!r} in the master config, but "
                    f"`{config.runtime}` is not on the master's PATH; install it or change "
                    "containers.runtime"
                )
            return runtime
        docker, podman = (cls.named(name, engine_env) for name in RUNTIMES)
        if docker and podman:
            return docker if docker.answers() else podman
        if docker or podman:
            return docker or podman  # type: ignore[return-value]
        raise ContainerError(
            "environment.image needs Docker or Podman, and neither `docker` nor `podman` is on "
            "the master's PATH; install one, or run the experiment without environment.image"
        )

    @classmethod
    def named(
        cls, name: str, engine_env: Mapping[str, str] | None = None
    ) -> ContainerRuntime | None:
        """``name``'s CLI on the master's PATH, or None."""
        env = {**os.environ, **(engine_env or {})}
        exe = shutil.which(name, path=env.get("PATH"))
        return cls(name, exe, env) if exe else None

    def cli(self, *args: str, timeout: float = _CLI_TIMEOUT_S) -> subprocess.CompletedProcess:
        return subprocess.run(
            [self.exe, *args],
            capture_output=True,
            text=True,
            env=dict(self.env),
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def answers(self) -> bool:
        try:
            return self.cli("version", timeout=10).returncode == 0
        except (OSError, subprocess.TimeoutExpired):
            return False

    def inspect_image(self, image: str) -> ImageInfo:
        try:
            result = self.cli("image", "inspect", image)
        except subprocess.TimeoutExpired as exc:
            raise ContainerError(f"`{self.name} image inspect {image}` did not answer") from exc
        if result.returncode != 0:
            err = result.stderr.strip()
            if "no such image" in err.lower() or "image not known" in err.lower():
                raise ContainerError(
                    f"image {image!r} not found locally by {self.name} (Shipyard never "
                    f"pulls): build or load it first, e.g. `{self.name} load -i image.tar`"
                )
            raise ContainerError(f"`{self.name} image inspect {image}` failed: {err}")
        info = json.loads(result.stdout)[0]
        digests = info.get("RepoDigests") or []
        return ImageInfo(
            id=info["Id"], digest=info.get("Digest") or (digests[0] if digests else None)
        )

    def remove_argv(self, name: str) -> list[str]:
        """The command that kills and removes the container (quiet when it is gone)."""
        # podman's rm -f would first wait its stop timeout (10 s) after a SIGTERM
        return [self.exe, "rm", "-f", *(["--time", "0"] if self.name == "podman" else []), name]

    def remove(self, name: str) -> None:
        """Kill and remove the container if it is still there (quiet when it is gone)."""
        try:
            self.cli(*self.remove_argv(name)[1:])
        except (OSError, subprocess.TimeoutExpired):
            pass


def container_name(spec: TrialLaunchSpec) -> str:
    # The log path is unique per master and run: two masters on one engine never clash.
    suffix = hashlib.sha256(str(spec.log_path or spec.workdir).encode()).hexdigest()[:8]
    return f"shipyard-trial-{spec.trial_id}-run-{spec.run_id}-{suffix}"


def shipyard_package_dir() -> str:
    return str(Path(shipyard.__file__).resolve().parent)


def _storage_base(env: Mapping[str, str]) -> str | None:
    try:
        storage = json.loads(env.get("SHIPYARD_CHECKPOINT_STORAGE") or "{}")
    except ValueError:
        return None
    base = storage.get("base_path") if isinstance(storage, dict) else None
    return base if isinstance(base, str) and os.path.isabs(base) else None


def _within(path: str, mounts: list[Mount]) -> bool:
    return any(path == m.target or path.startswith(m.target.rstrip("/") + "/") for m in mounts)


def mounts_for(spec: TrialLaunchSpec) -> list[Mount]:
    """What the trial needs at the host's paths, then the experiment's bind_mounts."""
    mounts = [Mount(spec.workdir, spec.workdir)]
    base = _storage_base(spec.env)
    if base and not _within(base, mounts):
        mounts.append(Mount(base, base))
    config = spec.env.get("SHIPYARD_EXPERIMENT_CONFIG")
    # Only a file that exists: docker would make a missing one a directory on the host.
    if config and os.path.isfile(config) and not _within(config, mounts):
        mounts.append(Mount(config, config, read_only=True))
    secret_files = spec.env.get(SECRETS_DIR_ENV)  # the run's secret files, at the same path
    if secret_files and os.path.isdir(secret_files):
        mounts.append(Mount(secret_files, secret_files, read_only=True))
    mounts.append(Mount(shipyard_package_dir(), f"{SHIPYARD_LIB}/shipyard", read_only=True))
    ours = {m.target for m in mounts}
    for i, raw in enumerate(spec.bind_mounts):
        where = f"bind_mounts[{i}]"
        host = str(raw["host_path"])
        target = str(raw["container_path"])
        # A relative container_path is a link in the working dir to host_path (the launcher
        # made it): mounting host_path at its own path makes the link work inside too.
        if not os.path.isabs(target):
            target = host
        if target in ours:
            raise ContainerError(
                f"{where}.container_path {target} is where Shipyard mounts the trial's own "
                "files; choose another path"
            )
        if not os.path.exists(host):
            raise ContainerError(f"{where}.host_path {host} does not exist on this machine")
        propagation = str(raw.get("propagation") or "rprivate")
        if propagation not in PROPAGATIONS:
            raise ContainerError(
                f"{where}.propagation {propagation!r} is not one of {', '.join(PROPAGATIONS)}"
            )
        mounts.append(Mount(host, target, bool(raw.get("read_only")), propagation))
    for m in mounts:
        if ":" in m.source or ":" in m.target:
            raise ContainerError(f"cannot mount a path with ':' in a container: {m.source}")
    return mounts


def ready_mounts(spec: TrialLaunchSpec) -> list[Mount]:
    """mounts_for, with the checkpoint storage made: podman refuses to mount a missing path."""
    mounts = mounts_for(spec)
    base = _storage_base(spec.env)
    if base:
        os.makedirs(base, exist_ok=True)
    return mounts


def container_env(spec: TrialLaunchSpec) -> dict[str, str]:
    """The trial's environment inside: shipyard importable, GPU slots as the container sees
    them (its GPUs are numbered from 0)."""
    env = dict(spec.env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (SHIPYARD_LIB, env.get("PYTHONPATH")) if p)
    with_shim(env, SHIPYARD_LIB)  # `import determined` is Shipyard's shim (docs/determined.md)
    gpus = [s for s in spec.slots if s.kind == "gpu"]
    if gpus:
        env["SHIPYARD_SLOT_IDS"] = ",".join(f"gpu{i}" for i in range(len(gpus)))
    return env


def gpu_args(runtime: str, spec: TrialLaunchSpec) -> list[str]:
    indexes = [str(s.index) for s in spec.slots if s.kind == "gpu"]
    if not indexes:
        return []
    if runtime == "docker":
        # The quotes keep the comma inside one value of --gpus' CSV syntax.
        return ["--gpus", f'"device={",".join(indexes)}"']
    return [arg for i in indexes for arg in ("--device", f"{PODMAN_GPU}{i}")]


def user_args(runtime: str) -> list[str]:
    """Files the trial writes (checkpoints) belong to the master's user, so it can delete
    them: a non-root master runs the container as itself."""
    if os.getuid() == 0:
        return []
    if runtime == "docker":
        return ["--user", f"{os.getuid()}:{os.getgid()}"]
    return ["--userns", "keep-id"]  # rootless podman: the same uid inside


def run_options(
    exe: str,
    spec: TrialLaunchSpec,
    *,
    mounts: list[Mount],
    name: str | None,
    env_file: str,
    env_names: list[str],
) -> list[str]:
    """`<exe> run` and the options of every trial's container, up to its GPUs, user, the
    extra arguments and the image. ``name`` None: the caller names it itself."""
    argv = [exe, "run", "--rm"]
    if name is not None:
        argv += ["--name", name]
    argv += [
        "--label",
        f"shipyard.trial-id={spec.trial_id}",
        "--label",
        f"shipyard.run-id={spec.run_id}",
        "--network",
        "host",  # the master listens on 127.0.0.1
        "--init",  # a PID-1 Python without a SIGTERM handler still stops on SIGTERM
        "--pull",
        "always" if spec.force_pull_image else "never",
        "--workdir",
        spec.workdir,
        "--env-file",
        env_file,
    ]
    for var in env_names:
        argv += ["--env", var]  # the value comes from the CLI's environment
    for mount in mounts:
        argv += ["--volume", mount.volume_arg()]
    return argv


def run_argv(
    runtime: ContainerRuntime,
    spec: TrialLaunchSpec,
    *,
    mounts: list[Mount],
    name: str,
    image_ref: str,
    env_file: str,
    env_names: list[str],
    extra_args: list[str],
) -> list[str]:
    """The `docker run` / `podman run` command line (values of variables are not on it)."""
    argv = run_options(
        runtime.exe, spec, mounts=mounts, name=name, env_file=env_file, env_names=env_names
    )
    argv += gpu_args(runtime.name, spec) + user_args(runtime.name) + list(extra_args)
    return [*argv, image_ref, *spec.argv]


def write_env_file(env: Mapping[str, str], path: Path) -> dict[str, str]:
    """Write the variables to ``path`` (mode 0600: values may be secrets) for `--env-file`,
    one line each; returns those that must go through the CLI's environment instead
    (`--env NAME`, never on the command line): a value with a newline, and the secrets,
    which are kept out of files."""
    secret_names = masked_names(env)
    via_cli = {k: v for k, v in env.items() if "\n" in v or "\r" in v or k in secret_names}
    path.unlink(missing_ok=True)  # a new file gets mode 0600, an old one keeps its own
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        f.writelines(f"{k}={v}\n" for k, v in env.items() if k not in via_cli)
    return via_cli


def image_to_run(runtime: ContainerRuntime, spec: TrialLaunchSpec) -> tuple[str, dict[str, str]]:
    """The image reference `run` gets and what the run records of it: the local image's id
    (exactly the image recorded, even if the tag moves), or with force_pull_image the name,
    pulled by `run --pull always` itself (in the trial's output, not the master's thread)."""
    assert spec.image is not None
    if spec.force_pull_image:
        return spec.image, {"runtime": runtime.name, "image": spec.image, "pull": "always"}
    info = runtime.inspect_image(spec.image)
    return info.id, image_environment(runtime.name, spec.image, info)


def image_environment(runtime: str, image: str, info: ImageInfo) -> dict[str, str]:
    """What a run records of its image (Handle.ENVIRONMENT): `trial describe` shows it."""
    environment = {"runtime": runtime, "image": image, "image_id": info.id}
    if info.digest:
        environment["image_digest"] = info.digest
    return environment


@dataclass
class ContainerLaunch:
    """What the local backend starts instead of the trial's argv."""

    argv: list[str]
    cli_env: dict[str, str]
    data: dict[str, Any]  # goes into the handle


def prepare(
    runtime: ContainerRuntime, spec: TrialLaunchSpec, exit_file: Path, extra_args: list[str]
) -> ContainerLaunch:
    """Check the image, write the env file (mode 0600: values may be secrets) and build the
    command. Raises ContainerError with what to do."""
    image_ref, environment = image_to_run(runtime, spec)
    mounts = ready_mounts(spec)
    env_file = Path(f"{exit_file}.env")
    via_cli = write_env_file(container_env(spec), env_file)
    name = container_name(spec)
    argv = run_argv(
        runtime,
        spec,
        name=name,
        mounts=mounts,
        image_ref=image_ref,
        env_file=str(env_file),
        env_names=sorted(via_cli),
        extra_args=extra_args,
    )
    data = {
        "container": {"runtime": runtime.name, "name": name, "env_file": str(env_file)},
        Handle.ENVIRONMENT: environment,
    }
    return ContainerLaunch(argv=argv, cli_env={**runtime.env, **via_cli}, data=data)
