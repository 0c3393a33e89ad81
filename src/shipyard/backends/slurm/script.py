"""A trial as a Slurm batch job: the files next to its log, the batch script, sbatch's arguments.

The script runs on the node: it exports the trial's environment, names the slots Slurm gave
(SHIPYARD_SLOT_IDS), runs the trial's argv in its working dir (in its image, through
images.py, when it has one) and writes the exit code to a file, which survives a restart of
the master and outlives Slurm's memory of the job. Every user value is shell-quoted; the
script is mode 0600 because the environment may hold secrets.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shipyard.backends.base import SHELL_SIGNAL_AS_NEGATIVE, TrialLaunchSpec
from shipyard.backends.slurm.images import JobImage, run_lines
from shipyard.backends.slurm.nodes import node_owned
from shipyard.backends.slurm.options import SlurmOptions
from shipyard.common.files import read_int

# Exit code of a run whose script could not start the trial (no working dir, no GPUs).
EXIT_SETUP = 125
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class JobFiles:
    """The files of one run, next to its log (on a file system the nodes share)."""

    log: Path
    script: Path
    exit: Path  # the exit code, written by the script when the trial ends
    preempted: Path  # why Slurm took the job back (requeue), written once it is known
    job_id: Path  # the job id: finds a job the master submitted but never recorded
    env: Path  # a container's variables (images.py)
    kill: Path  # written by the master when its grace is over: kill the trial's container

    @classmethod
    def for_log(cls, log_path: str) -> JobFiles:
        log = Path(log_path)
        return cls(
            log=log,
            script=log.with_suffix(".sbatch"),
            exit=log.with_suffix(".exit"),
            preempted=log.with_suffix(".preempted"),
            job_id=log.with_suffix(".jobid"),
            env=log.with_suffix(".env"),
            kill=log.with_suffix(".kill"),
        )

    def exit_code(self) -> int | None:
        return read_int(self.exit)

    def recorded_job_id(self) -> int | None:
        return read_int(self.job_id)

    def preempted_reason(self) -> str | None:
        try:
            return self.preempted.read_text().strip() or None
        except OSError:
            return None

    def handle_data(self, job_id: int) -> dict[str, Any]:
        return {
            "job_id": job_id,
            "log_path": str(self.log),
            "exit_file": str(self.exit),
            "script": str(self.script),
        }


def batch_script(
    spec: TrialLaunchSpec,
    files: JobFiles,
    options: SlurmOptions,
    nodes: int = 1,
    image: JobImage | None = None,
) -> str:
    q = shlex.quote
    # In an image the trial's variables are in the env file: the node's shell gets only what
    # podman needs (its settings, and the values it passes on by name).
    variables = image.cli_env if image else spec.env
    exports, skipped = [], []
    for key, value in variables.items():
        if node_owned(key):
            continue
        if _NAME.match(key):
            exports.append(f"export {key}={q(value)}")
        else:
            skipped.append(key)
    lines = [
        "#!/bin/sh",
        f"# Shipyard trial {spec.trial_id}, run {spec.run_id}, written by the Slurm backend.",
        "# It holds the trial's environment, which may hold secrets: keep it private (0600).",
        f"exit_file={q(str(files.exit))}",
        "record() {",
        '    echo "$1" > "$exit_file.tmp" && mv -f "$exit_file.tmp" "$exit_file"',
        "}",
        "# Slurm requeued the job (preemption, node failure, scontrol requeue): this copy would",
        "# run with a stale environment. Shipyard restarts the trial from its checkpoint itself.",
        'if [ "${SLURM_RESTART_COUNT:-0}" != 0 ]; then',
        '    echo "[shipyard] Slurm requeued job $SLURM_JOB_ID: this copy does not run the'
        ' trial; Shipyard restarts it from its latest checkpoint" >&2',
        f'    echo "Slurm requeued job $SLURM_JOB_ID" > {q(str(files.preempted) + ".tmp")}'
        f" && mv -f {q(str(files.preempted) + '.tmp')} {q(str(files.preempted))}",
        "    exit 0",
        "fi",
        f'echo "$SLURM_JOB_ID" > {q(str(files.job_id) + ".tmp")}'
        f" && mv -f {q(str(files.job_id) + '.tmp')} {q(str(files.job_id))}",
        *exports,
    ]
    if skipped:
        lines.append(f"# not exported (not shell names): {' '.join(sorted(skipped))}")
    per_node = len(spec.slots) // nodes
    if nodes == 1:
        lines += _slot_ids(per_node, options, fail=f"record {EXIT_SETUP}; exit {EXIT_SETUP}")
        lines.append("export SHIPYARD_SLOT_IDS")
    else:
        lines += _rendezvous(nodes)
    gpus = options.slot_type == "gpu"
    lines += [
        f"cd {q(spec.workdir)} || {{ record {EXIT_SETUP}; exit {EXIT_SETUP}; }}",
        "# scancel --signal=TERM --full signals the trial itself; the script lives on to",
        "# record how the trial ended.",
        "trap : TERM",
        # As arguments, never as shell words: an argv[0] like A=1 is a command, not a variable.
        f"set -- {shlex.join(spec.argv)}",
    ]
    if nodes == 1:
        if image:
            lines += run_lines(image, files.kill, gpus=gpus, gang=False)
        else:
            lines += ['"$@"', "code=$?"]
    else:
        # One task a node, each naming its own slots; one failing task ends them all.
        per_task = _slot_ids(per_node, options, fail=f"exit {EXIT_SETUP}") + [
            "export SHIPYARD_SLOT_IDS",
            "SHIPYARD_NODE_RANK=$SLURM_NODEID; export SHIPYARD_NODE_RANK",
        ]
        if image:  # the task outlives a SIGTERM, as the script does, to end with the trial
            per_task += ["trap : TERM", *run_lines(image, files.kill, gpus=gpus, gang=True)]
            per_task.append('exit "$code"')
        else:
            per_task.append('exec "$@"')
        lines += [
            f"srun --nodes={nodes} --ntasks={nodes} --ntasks-per-node=1 --kill-on-bad-exit=1 "
            f'sh -c {q(chr(10).join(per_task))} shipyard-node "$@"',
            "code=$?",
        ]
    lines += [SHELL_SIGNAL_AS_NEGATIVE, 'record "$rec"', 'exit "$code"']
    return "\n".join(lines) + "\n"


# A port p with p+1 free too, on the node running the batch script (node 0 of the job):
# the launchers of node 0 bind both (launch/_nodes.py). shipyard.common.ports does the same,
# but this runs with the node's python3, which need not be the one with Shipyard installed:
# a copy on purpose, in the script's own words.
_FREE_PORT_PAIR = """
import socket
for _ in range(50):
    with socket.socket() as a, socket.socket() as b:
        a.bind(("", 0))
        port = a.getsockname()[1]
        try:
            b.bind(("", port + 1))
        except OSError:
            continue
    print(port)
    break
"""


def _rendezvous(nodes: int) -> list[str]:
    """Shell lines that export the multi-node variables every node's launcher reads: the
    number of nodes and where node 0 (the first of the allocation) listens."""
    return [
        f"SHIPYARD_NUM_NODES={nodes}; export SHIPYARD_NUM_NODES",
        'first=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)',
        "addr=$(scontrol show node \"$first\" -o | sed -n 's/.* NodeAddr=\\([^ ]*\\).*/\\1/p')",
        f"port=$(python3 -c {shlex.quote(_FREE_PORT_PAIR)})",
        'SHIPYARD_RENDEZVOUS_ADDR="${addr:-$first}:$port"; export SHIPYARD_RENDEZVOUS_ADDR',
    ]


def _slot_ids(count: int, options: SlurmOptions, fail: str) -> list[str]:
    """Shell lines that set SHIPYARD_SLOT_IDS to what Slurm gave on this node: N CPUs are
    cpu0..cpuN-1; GPUs are gpu<d> for each device d of CUDA_VISIBLE_DEVICES (the CUDA index
    the launcher pins each rank to); ``fail`` runs when Slurm gave no GPUs."""
    if options.slot_type == "cpu":
        return ["SHIPYARD_SLOT_IDS=" + ",".join(f"cpu{i}" for i in range(count))]
    missing = (
        f"[shipyard] Slurm set no CUDA_VISIBLE_DEVICES for this job (--gres={options.gres}:"
        f"{count}): check the node's gres.conf"
    )
    return [
        'if [ -z "${CUDA_VISIBLE_DEVICES:-}" ]; then',
        f"    echo {shlex.quote(missing)} >&2",
        f"    {fail}",
        "fi",
        "SHIPYARD_SLOT_IDS=$(printf '%s' \"$CUDA_VISIBLE_DEVICES\" | sed 's/[^,][^,]*/gpu&/g')",
    ]


def sbatch_args(
    spec: TrialLaunchSpec, files: JobFiles, options: SlurmOptions, nodes: int = 1
) -> list[str]:
    """sbatch's arguments: one task a node, each with its share of the trial's slots, the
    output appended to the run's log, requeue allowed (Slurm may preempt it); the pool's
    options, then its extra sbatch_args (last, so they win), then the script."""
    count = len(spec.slots) // nodes  # per node: --gres and --cpus-per-task are
    args = [
        "--parsable",
        f"--job-name=shipyard-trial-{spec.trial_id}-run-{spec.run_id}",
        f"--output={_no_patterns(str(files.log))}",
        "--open-mode=append",
        f"--nodes={nodes}",
        f"--ntasks={nodes}",
        "--ntasks-per-node=1",
        "--requeue",
    ]
    if options.slot_type == "cpu":
        args.append(f"--cpus-per-task={count}")
    else:
        args.append(f"--gres={options.gres}:{count}")
    for flag, value in (
        ("--partition", options.partition),
        ("--account", options.account),
        ("--qos", options.qos),
        ("--time", options.time_limit),
    ):
        if value is not None:
            args.append(f"{flag}={value}")
    return [*args, *options.sbatch_args, str(files.script)]


def _no_patterns(path: str) -> str:
    """sbatch expands %j, %x, ... in --output: a literal % is written %%."""
    return path.replace("%", "%%")
