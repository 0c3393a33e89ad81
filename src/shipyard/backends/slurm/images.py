"""A trial with an environment.image on a Slurm pool: `podman run` of the image in the job.

The master looks the image up at launch with the pool's podman settings (containers.engine_env)
and every node of the job runs that id, so a gang's ranks all run the same image and the run
records which. The container gets what a local one gets (local/containers.py): the trial's
variables from an env file beside the log (secrets and values with a newline through
podman's own environment, by name), its working dir, checkpoint storage, config and
bind_mounts at the host's paths (Slurm's shared file system), the host's network, Shipyard's
package read-only. What only the node knows is added there: its slots, GPUs and node rank.

Signals: the CLI forwards the SIGTERM Slurm gives it to the trial (podman's conmon runs the
container outside the job's processes, where Slurm's signals do not reach); a SIGKILL to the
CLI would leave the container running, so once its grace is over the master writes the
run's kill file and a watcher on each node kills the container by name.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from pathlib import Path

from shipyard.backends.base import TrialLaunchSpec
from shipyard.backends.local.containers import (
    PODMAN_GPU,
    ContainerError,
    ContainerRuntime,
    container_env,
    container_name,
    image_to_run,
    ready_mounts,
    run_options,
    user_args,
    write_env_file,
)
from shipyard.backends.options import NodeContainers
from shipyard.backends.slurm.nodes import node_owned

RUNTIME = "podman"  # the one runtime NodeContainers allows today
# Set on the node (script.py) and passed on by name: a gang's node variables.
_GANG = ("SHIPYARD_NUM_NODES", "SHIPYARD_RENDEZVOUS_ADDR", "SHIPYARD_NODE_RANK")
_KILL_POLL_S = 1


@dataclass(frozen=True)
class JobImage:
    """What the batch script needs to run the trial in its image, made at launch."""

    options: list[str]  # `podman run --rm ...`, up to the container's name
    after: list[str]  # after the node's own options, before the image: user, extra args
    image_id: str
    name: str  # each node's container is <name>-<node id>
    # The CLI's variables in the job: the pool's engine_env, and the trial's it passes on
    # by name (the batch script exports them; the nodes' tasks inherit them).
    cli_env: dict[str, str]
    environment: dict[str, str]  # what the run records (Handle.ENVIRONMENT)


def prepare(
    spec: TrialLaunchSpec, containers: NodeContainers, env_file: Path, per_node: int
) -> JobImage:
    """Look the image up and write the env file; ``per_node``: the slots each node runs.
    ContainerError says what to do."""
    assert spec.image is not None
    runtime = ContainerRuntime.named(RUNTIME, containers.engine_env)
    if runtime is None:
        raise ContainerError(
            f"environment.image on a Slurm pool needs `{RUNTIME}` on the master's PATH too: "
            "the master looks up the image's id, which every node of the job then runs"
        )
    image_ref, environment = image_to_run(runtime, spec)
    mounts = ready_mounts(spec)
    env = {k: v for k, v in container_env(spec).items() if not node_owned(k)}
    # Each node's share, as the container sees it: its CPUs, or its GPUs counted from 0.
    kind = spec.slots[0].kind if spec.slots else "cpu"
    env["SHIPYARD_SLOT_IDS"] = ",".join(f"{kind}{i}" for i in range(per_node))
    by_name = write_env_file(env, env_file)
    options = run_options(
        RUNTIME,  # the node's own, found on its PATH
        spec,
        mounts=mounts,
        name=None,
        env_file=str(env_file),
        env_names=sorted(by_name),
    )
    return JobImage(
        options=options,
        after=user_args(RUNTIME) + list(containers.extra_run_args),
        image_id=image_ref,  # the id, or the name each node pulls (force_pull_image)
        name=container_name(spec),
        cli_env={**containers.engine_env, **by_name},
        environment=environment,
    )


def run_lines(image: JobImage, kill_file: Path, gpus: bool, gang: bool) -> list[str]:
    """Shell lines that run the trial's argv ("$@") in the image on this node and leave its
    exit status in $code. The shell must trap TERM: the CLI forwards it to the trial."""
    q = shlex.quote
    lines = [
        f'ctr={q(image.name)}-"${{SLURM_NODEID:-0}}"',
        f'set -- {q(image.image_id)} "$@"',
    ]
    if gpus:
        # CDI names the host's GPUs, as Slurm's GPU ids do (CUDA_VISIBLE_DEVICES may count
        # from 0 in a device cgroup).
        lines += [
            'for d in $(printf %s "${SLURM_STEP_GPUS:-${SLURM_JOB_GPUS:-$CUDA_VISIBLE_DEVICES}}"'
            " | tr , ' '); do",
            f'    set -- --device "{PODMAN_GPU}$d" "$@"',
            "done",
        ]
    words = [
        shlex.join(image.options),
        '--name "$ctr"',
        *(f"--env {name}" for name in (_GANG if gang else ())),
        shlex.join(image.after),
        '"$@"',
    ]
    return [
        *lines,
        "set -- " + " ".join(word for word in words if word),
        # SIGKILL to the CLI would leave the container running: once the master's grace is
        # over it writes the kill file, and this watcher kills the container by name.
        f"( trap '' TERM; while [ ! -e {q(str(kill_file))} ]; do sleep {_KILL_POLL_S}; done;"
        f' {RUNTIME} kill --signal KILL "$ctr" >/dev/null 2>&1 ) &',
        "watcher=$!",
        '"$@"',
        "code=$?",
        'kill -KILL "$watcher" 2>/dev/null',
    ]
