"""A trial with an environment.image on a Ray pool: its actor runs the argv in `podman run`.

Not Ray's ``runtime_env={"image_uri": ...}``: that runs the actor itself in the image, which
must then hold the cluster's exact Ray and Python versions; a user's training image does
not. The actor stays in the node's own Ray Python and starts the container, as a Slurm job
does (slurm/images.py), so the image needs only a python3: the node's shipyard package is
mounted read-only on PYTHONPATH, as for a local container (local/containers.py).

The master looks the image up at launch with the pool's podman settings
(containers.engine_env) and every actor of the run is given that id, so a gang's nodes all
run the same image and the run records which. The rest is made on the node, where its paths
are: the env file in the run's dir, the code dir as working dir, the config, checkpoint
storage and bind_mounts at their paths, the GPUs Ray gave the actor.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shipyard.backends.base import Slot, TrialLaunchSpec
from shipyard.backends.local.containers import (
    ContainerError,
    ContainerRuntime,
    container_env,
    container_name,
    image_to_run,
    ready_mounts,
    run_argv,
    write_env_file,
)
from shipyard.backends.options import NodeContainers

RUNTIME = "podman"  # the one runtime NodeContainers allows today


def _runtime(engine_env: dict[str, str], where: str) -> ContainerRuntime:
    runtime = ContainerRuntime.named(RUNTIME, engine_env)
    if runtime is None:
        raise ContainerError(
            f"environment.image on a Ray pool needs `{RUNTIME}` on the {where}'s PATH: the "
            "master looks up the image's id, and each node runs the trial in it"
        )
    return runtime


def prepare(
    spec: TrialLaunchSpec, containers: NodeContainers
) -> tuple[dict[str, Any], dict[str, str]]:
    """On the master: what the actors need to run the spec's image (JSON), and what the run
    records of it (Handle.ENVIRONMENT). ContainerError says what to do."""
    assert spec.image is not None
    image_ref, environment = image_to_run(_runtime(containers.engine_env, "master"), spec)
    for_nodes = {
        "id": image_ref,  # the id recorded, or the name each node pulls (force_pull_image)
        "force_pull": spec.force_pull_image,
        "name": container_name(spec),  # unique per master and run; each node adds its rank
        "extra_args": list(containers.extra_run_args),
        "engine_env": dict(containers.engine_env),
        "bind_mounts": spec.bind_mounts,
    }
    return for_nodes, environment


@dataclass(frozen=True)
class NodeContainer:
    """What the actor starts under the keeper instead of the trial's argv."""

    argv: list[str]
    cli_env: dict[str, str]  # podman's environment: the node's, engine_env, secrets by name
    runtime: ContainerRuntime
    name: str
    env_file: Path  # the trial's variables (mode 0600), removed when the trial ends


def on_node(
    image: dict[str, Any],
    spec: dict[str, Any],
    env: dict[str, str],
    code_dir: Path,
    run_file: Path,
    gpus: list[str],
) -> NodeContainer:
    """In the actor: write the env file (``run_file``.env, mode 0600) and build `podman run`
    of the image for the trial's argv. ``gpus``: the CUDA devices Ray gave the actor."""
    slots = [Slot(id=f"gpu{d}", kind="gpu", device="cuda", index=int(d)) for d in gpus]
    inside = {k: v for k, v in env.items() if k != "CUDA_VISIBLE_DEVICES"}  # CDI numbers them
    node = TrialLaunchSpec(
        trial_id=spec["trial_id"],
        run_id=spec["run_id"],
        argv=spec["argv"],
        env=inside,
        workdir=str(code_dir),
        slots=slots,
        image=image["id"],
        log_path=str(run_file),
        bind_mounts=image["bind_mounts"],
        force_pull_image=bool(image.get("force_pull")),
    )
    runtime = _runtime(image["engine_env"], "node")
    mounts = ready_mounts(node)
    env_file = Path(f"{run_file}.env")
    by_name = write_env_file(container_env(node), env_file)
    name = f"{image['name']}-{spec.get('node_rank') or 0}"
    argv = run_argv(
        runtime,
        node,
        mounts=mounts,
        name=name,
        image_ref=image["id"],
        env_file=str(env_file),
        env_names=sorted(by_name),
        extra_args=image["extra_args"],
    )
    return NodeContainer(argv, {**runtime.env, **by_name}, runtime, name, env_file)
