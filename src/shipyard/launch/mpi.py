"""Run an MPI (or Horovod) program on every slot of a trial: ``python3 -m shipyard.launch.mpi
[--nproc N] [--] CMD ARGS...``.

One ``mpirun`` is the gang: a hostfile in a temporary directory, ``-np N``, and each rank
started through ``shipyard.launch._mpi_rank``, which maps Open MPI's rank variables to
Shipyard's (SHIPYARD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE) and torch's (RANK, WORLD_SIZE,
LOCAL_RANK, LOCAL_WORLD_SIZE), pins CUDA_VISIBLE_DEVICES to the rank's GPU, sends its output
to this launcher (relayed as ``[rank=R] line``, as the other launchers do) and execs CMD.
SHIPYARD_DIST_ADDR is the coordinator for ``ctx.distributed``.

Several nodes (SHIPYARD_NUM_NODES, the contract in ``_gang``): node 0's launcher runs the one
mpirun, its hostfile listing node 0 and then ``shipyard-node-K`` for each other node, with as
many slots each, so that global rank = node rank * local slots + local rank as on the other
launchers. mpirun starts Open MPI's daemon on node K through node K's launcher instead of ssh
(launch/_mpi_agent.py); that launcher gives the daemon its node's rank environment and stops
its ranks when it is stopped. Every rank's output reaches node 0's launcher.

One unit: mpirun stops every rank when one fails; node 0's launcher exits with that rank's
code, names it (from mpirun's report) and tells the master; the others exit 0 when their
daemon does. At SIGTERM/SIGINT a launcher sends SIGTERM to its node's ranks' process groups
(Open MPI gives each rank one), SIGKILL after the grace, stops mpirun (or its daemon) and
exits 143. mpirun runs in a process group of its own and gets SIGKILL when the launcher dies,
as the ranks do when mpirun (or their daemon) dies.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from shipyard.common.log_prefix import rank_prefix
from shipyard.launch import _gang, _mpi_agent, _nodes, _procs
from shipyard.launch._mpi_rank import HELLO, OUTPUT_ENV

PROG = "shipyard.launch.mpi"
LOCALHOST = "127.0.0.1"
EXIT_NO_MPIRUN = 127
_MPIRUN_SLACK_S = 5.0  # mpirun's own SIGTERM-then-SIGKILL of the ranks takes a little longer
_KEEP_STDERR = 200  # mpirun's last lines kept to find which rank failed
# Variables passed on with -x (local ranks inherit mpirun's environment anyway; -x is what
# reaches ranks on other hosts). Names only: values never appear on the command line.
_EXPORTED = (
    "PATH",
    "LD_LIBRARY_PATH",
    "PYTHONPATH",
    "PYTHONUNBUFFERED",
    "VIRTUAL_ENV",
    "MASTER_ADDR",
    "MASTER_PORT",
)
# mpirun starts the other nodes' daemons through their launchers (launch/_mpi_agent.py), one
# by one from node 0 (no tree: the agent's table is on node 0 only), and they stay attached to
# the agent's connection rather than daemonize, so each node's launcher supervises its ranks.
REMOTE_DAEMONS = [
    # Inside a Slurm (or other resource manager's) job: not its srun to start the daemons,
    # and not its allocation instead of our hostfile (whose names are ours).
    *("--mca", "plm", "rsh"),
    *("--mca", "ras", "^slurm,tm,lsf,gridengine"),
    *("--mca", "plm_rsh_agent", f"{sys.executable} -m {_mpi_agent.PROG}"),
    *("--mca", "plm_rsh_no_tree_spawn", "1"),
    *("--mca", "orte_leave_session_attached", "1"),
]
_FAILED = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]\s*\n\s*Exit code:\s*(\d+)")
_SIGNALED = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)")


def hostfile(hosts: list[tuple[str, int]]) -> str:
    """Open MPI's hostfile for (host, slots) pairs: ``host slots=N`` a line."""
    return "".join(f"{host} slots={slots}\n" for host, slots in hosts)


def mpirun_command(
    mpirun: str,
    hostfile_path: str,
    hosts: list[tuple[str, int]],
    nproc: int,
    env: dict[str, str],
    command: list[str],
    mca: list[str] | None = None,
) -> list[str]:
    """``env``: the variables to pass on with -x (their names only)."""
    args = [mpirun, "--hostfile", hostfile_path, "-np", str(nproc), *(mca or [])]
    if os.geteuid() == 0:
        args.append("--allow-run-as-root")
    if nproc > sum(slots for _, slots in hosts):
        args.append("--oversubscribe")
    args += ["--bind-to", "none"]
    names = sorted(n for n in env if n.startswith(("SHIPYARD_", "OMPI_MCA_")) or n in _EXPORTED)
    for name in names:
        args += ["-x", name]
    return [*args, sys.executable, "-m", "shipyard.launch._mpi_rank", "--", *command]


class OutputServer:
    """Where the ranks' stdout and stderr arrive (one connection each): relayed as
    ``[rank=R] line``. Records each rank's pid."""

    def __init__(self, out: _gang.Output, host: str = LOCALHOST) -> None:
        self.out = out
        self.pids: dict[int, int] = {}
        self._listener = socket.create_server((host, 0))
        self._listener.settimeout(0.2)
        self._stopping = False
        self._relays: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._accepter = threading.Thread(target=self._accept, daemon=True, name="mpi-output")
        self._accepter.start()

    def rank_pids(self) -> dict[int, int]:
        """The pid (and process group) of each rank that connected, by rank."""
        with self._lock:
            return dict(self.pids)

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def _accept(self) -> None:
        while not self._stopping:
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            relay = threading.Thread(target=self._relay, args=(conn,), daemon=True)
            with self._lock:
                self._relays.append(relay)
            relay.start()

    def _relay(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(None)
            stream = conn.makefile("rb")
            hello = stream.readline(256).decode("ascii", errors="replace").split()
            if len(hello) != 4 or hello[0] != HELLO or not hello[1].isdigit():
                stream.close()
                return  # not one of our ranks
            rank = int(hello[1])
            if hello[3].isdigit():
                with self._lock:
                    self.pids[rank] = int(hello[3])
            _gang._relay(stream, rank_prefix(rank).encode(), self.out)

    def close(self, wait_s: float) -> None:
        """Stop accepting; give the output of ranks that exited ``wait_s`` to drain."""
        if self._stopping:
            return
        self._stopping = True
        self._accepter.join(timeout=1.0)
        self._listener.close()
        with self._lock:
            relays = list(self._relays)
        _gang.join_all(relays, wait_s)


class MpiGang:
    """One mpirun: started, its messages relayed, stopped as one unit."""

    def __init__(
        self,
        args: list[str],
        env: dict[str, str],
        nproc: int,
        grace_s: float,
        out: _gang.Output,
        output: OutputServer,
        *,
        local_ranks: int,
    ) -> None:
        self.args = args
        # Ranks 0..local_ranks-1 run on this node: the only ones it may signal (on several
        # nodes a pid of another node's rank means nothing here).
        self.local_ranks = local_ranks
        self.env = env
        self.nproc = nproc
        self.grace_s = grace_s
        self.out = out
        self.output = output
        self.proc: subprocess.Popen | None = None
        self._stderr: list[str] = []
        self._relays: list[threading.Thread] = []
        self._signals = _gang.StopSignals()

    def run(self) -> int:
        with self._signals:
            try:
                # A group of its own: a SIGTERM to the launcher's group (the master stopping
                # the trial) reaches the launcher only, which stops the ranks with the grace
                # (mpirun would SIGKILL them after 1 s). It dies with the launcher.
                self.proc = subprocess.Popen(
                    self.args,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    process_group=0,
                    preexec_fn=_procs.die_with_parent(),
                )
            except OSError as exc:
                self.out.say(f"cannot start {self.args[0]}: {exc.strerror}")
                return EXIT_NO_MPIRUN
            try:
                for pipe, keep in ((self.proc.stdout, False), (self.proc.stderr, True)):
                    relay = threading.Thread(target=self._relay, args=(pipe, keep), daemon=True)
                    relay.start()
                    self._relays.append(relay)
                return self._supervise(self.proc)
            finally:
                _gang.join_all(self._relays)

    def _relay(self, pipe, keep: bool) -> None:  # type: ignore[no-untyped-def]
        with pipe:
            for raw in iter(lambda: pipe.readline(_gang._MAX_LINE), b""):
                line = raw.decode("utf-8", errors="replace").rstrip("\n")
                if keep:
                    self._stderr.append(line)
                    del self._stderr[:-_KEEP_STDERR]
                if line.strip(" -"):  # leave out mpirun's banners' rules and blank lines
                    self.out.say(f"mpirun: {line}")

    def _supervise(self, proc: subprocess.Popen) -> int:
        while True:
            if self._signals.received is not None:
                self._stop(proc, f"the launcher got {self._signals.name}")
                return _gang.EXIT_TERMINATED
            code = proc.poll()
            if code is not None:
                break
            time.sleep(_gang._POLL_S)
        for relay in self._relays:  # mpirun's report of the failure is on its stderr
            relay.join(timeout=_gang._JOIN_S)
        self.output.close(_gang._JOIN_S)  # the ranks' last lines before the verdict
        if code == 0:
            return 0
        failed = self.failed_rank()
        if failed is not None:
            rank, rank_code = failed
            how = _gang.describe_exit(rank_code)
            self.out.say(f"rank {rank} {how}; mpirun stopped the gang")
            _gang.tell_master(f"rank {rank} of {self.nproc} {how}")
            self._kill_left()
            return _gang.exit_status(rank_code)
        how = _gang.describe_exit(code)
        self.out.say(f"mpirun {how}")
        _gang.tell_master(f"mpirun (the gang of {self.nproc} rank(s)) {how}")
        self._kill_left()
        return _gang.exit_status(code)

    def failed_rank(self) -> tuple[int, int] | None:
        """(rank, exit code, negative for a signal) of the first rank mpirun says failed."""
        text = "\n".join(self._stderr)
        exited = _FAILED.search(text)
        if exited:
            return int(exited.group(1)), int(exited.group(2))
        signaled = _SIGNALED.search(text)
        if signaled:
            return int(signaled.group(1)), -int(signaled.group(2))
        return None

    def _stop(self, proc: subprocess.Popen, why: str) -> None:
        """SIGTERM to every rank's process group, SIGKILL to those left after the grace, then
        mpirun (which noticed and is stopping already). mpirun is not signalled first: it
        would SIGKILL the ranks after its own 1 s, not the gang's grace."""
        pids = self._local_pids()
        self.out.say(
            f"{why}: sending SIGTERM to rank(s) {', '.join(str(r) for r in sorted(pids)) or '-'}"
            f" (SIGKILL after {self.grace_s:g} s)"
        )
        for pid in pids.values():
            _procs.killpg(pid, signal.SIGTERM)
        if len(pids) < self.local_ranks:  # a rank not connected yet: mpirun must stop it
            _procs.send(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        while time.monotonic() < deadline and any(_procs.alive(p) for p in pids.values()):
            time.sleep(_gang._POLL_S)
        for rank, pid in sorted(pids.items()):
            if _procs.alive(pid):
                self.out.say(f"rank {rank} still running after {self.grace_s:g} s: SIGKILL")
                _procs.killpg(pid, signal.SIGKILL)
        # mpirun sees its ranks die, aborts and reaps them (a SIGTERM in the middle of its
        # abort can crash it and leave the ranks unreaped): it is signalled only if it lingers.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                proc.wait(timeout=_MPIRUN_SLACK_S)
                break
            except subprocess.TimeoutExpired:
                self.out.say(f"mpirun still running after its ranks: {sig.name}")
                _procs.send(proc.pid, sig)
        proc.wait()
        self._kill_left()
        self.output.close(_gang._JOIN_S)

    def _local_pids(self) -> dict[int, int]:
        return {r: p for r, p in self.output.rank_pids().items() if r < self.local_ranks}

    def _kill_left(self) -> None:
        """Each rank leads a process group of its own (Open MPI's doing): SIGKILL those left."""
        for rank, pid in sorted(self._local_pids().items()):
            if _procs.alive(pid):
                self.out.say(f"rank {rank} (pid {pid}) outlived mpirun: SIGKILL to its group")
                _procs.killpg(pid, signal.SIGKILL)


def main() -> int:
    env = dict(os.environ)
    read = _gang.read_options(PROG, env)
    if read is None:
        return _gang.EXIT_USAGE
    options, slots, grace = read
    try:
        nodes = _nodes.from_env(env)
    except _gang.UsageError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return _gang.EXIT_USAGE
    if shutil.which("mpirun", path=env.get("PATH")) is None:
        print(
            f"{PROG}: mpirun not found on PATH: install Open MPI (Debian: apt-get install "
            "openmpi-bin libopenmpi-dev; in a Shipyard checkout: make setup)",
            file=sys.stderr,
        )
        return EXIT_NO_MPIRUN
    env.setdefault("PYTHONUNBUFFERED", "1")  # rank output reaches the log as it is written
    out = _gang.Output(sys.stdout.buffer)
    if nodes is None or nodes.rank == 0:
        return run_mpirun(options.command, slots, grace, env, nodes, out)
    return host_ranks(slots, grace, env, nodes, out)


def run_mpirun(
    command: list[str],
    slots: list[_gang.Slot],
    grace: float,
    env: dict[str, str],
    nodes: _nodes.Nodes | None,
    out: _gang.Output,
) -> int:
    """Node 0 (or the only node): the output server, mpirun and the verdict."""
    output = OutputServer(out, LOCALHOST if nodes is None else "")
    meeting = _nodes.meet_or_exit(PROG, out, len(slots), env, {"output_port": output.port})
    if isinstance(meeting, int):
        output.close(0)
        return meeting
    code = 1
    try:
        layout = meeting.layout
        output_host = LOCALHOST if nodes is None else nodes.host
        env = ranks_env(env, slots, layout, meeting, f"{output_host}:{output.port}")
        local = len(slots)
        hosts = [(LOCALHOST, local)] + [(remote_host(k), local) for k in range(1, layout.nodes)]
        nproc = layout.world_size
        mca: list[str] = []
        if layout.nodes > 1:
            env[_mpi_agent.AGENTS_ENV] = json.dumps(agents(layout))
            mca = REMOTE_DAEMONS
        with tempfile.TemporaryDirectory(prefix="shipyard-mpi-") as tmp:
            path = os.path.join(tmp, "hostfile")
            Path(path).write_text(hostfile(hosts))
            # By name, not by path: Open MPI takes /usr/bin/mpirun as --prefix /usr and puts
            # /usr/bin first on the ranks' PATH, ahead of the trial's venv. On several nodes
            # nothing is exported: each node's ranks get that node's environment.
            exported = env if layout.nodes == 1 else {}
            args = mpirun_command("mpirun", path, hosts, nproc, exported, command, mca)
            where = ",".join(s.id for s in slots)
            if layout.nodes > 1:
                where += f" and the same on {layout.nodes - 1} more node(s)"
            out.say(f"starting {nproc} rank(s) on {where}: {shlex.join(command)}")
            out.say(f"mpirun: {shlex.join(args)}")
            code = MpiGang(args, env, nproc, grace, out, output, local_ranks=local).run()
        if code == 0:
            out.say(f"all {nproc} rank(s) exited with code 0")
        return code
    finally:
        output.close(_gang._JOIN_S)
        meeting.finish(code)


def host_ranks(
    slots: list[_gang.Slot],
    grace: float,
    env: dict[str, str],
    nodes: _nodes.Nodes,
    out: _gang.Output,
) -> int:
    """Node 1 and up: meet, then run the Open MPI daemon node 0's mpirun sends, whose
    children are this node's ranks. Their output goes to node 0's output server."""
    host = _mpi_agent.OrtedHost(env, out)
    extra = {"agent_port": host.port, "agent_token": host.token}
    meeting = _nodes.meet_or_exit(PROG, out, len(slots), env, extra)
    if isinstance(meeting, int):
        return meeting
    code = 1
    try:
        layout = meeting.layout
        output = f"{nodes.host}:{layout.peers[0]['output_port']}"
        where = ",".join(s.id for s in slots)
        out.say(f"{layout.describe()} on {where}, started by node 0's mpirun")
        with _daemon_dirs() as dirs, _gang.StopSignals() as signals:
            host.env = {**ranks_env(env, slots, layout, meeting, output), **dirs}
            code = host.serve(signals, meeting.host_left, grace)
        return code
    finally:
        meeting.finish(code)


def ranks_env(
    env: dict[str, str],
    slots: list[_gang.Slot],
    layout: _nodes.Layout,
    meeting: _nodes.Meeting,
    output: str,
) -> dict[str, str]:
    """What a node's ranks get beside Open MPI's variables: on node 0 through mpirun's
    environment, on the others through their daemon's. Every node builds its own."""
    env = dict(env)
    env["SHIPYARD_SLOT_IDS"] = ",".join(s.id for s in slots)  # the shim picks each rank's one
    env["SHIPYARD_DIST_BACKEND"] = "nccl" if all(s.gpu_index is not None for s in slots) else "gloo"
    env["MASTER_ADDR"] = layout.master_addr  # for torch.distributed's env:// under Horovod/MPI
    env["MASTER_PORT"] = str(layout.master_port)
    assert meeting.dist_addr is not None
    env["SHIPYARD_DIST_ADDR"] = meeting.dist_addr  # ctx.distributed's collectives
    env[OUTPUT_ENV] = output
    return env


def remote_host(node_rank: int) -> str:
    """Node k's name in the hostfile: a name of ours, not the node's, so that mpirun always
    starts a daemon there through the agent (nodes may share a machine, or an address)."""
    return f"shipyard-node-{node_rank}"


def agents(layout: _nodes.Layout) -> dict[str, str]:
    """The agent's table: each remote node's launcher, as "addr:port:token"."""
    return {
        remote_host(k): f"{peer['host']}:{peer['agent_port']}:{peer['agent_token']}"
        for k, peer in enumerate(layout.peers)
        if k > 0
    }


@contextlib.contextmanager
def _daemon_dirs() -> Iterator[dict[str, str]]:
    """Open MPI's session directory and shared-memory files of this node's daemon, private:
    its names come from the host name and job id, the same as node 0's when two nodes share
    a machine (their shared-memory segments would collide)."""
    with tempfile.TemporaryDirectory(prefix="shipyard-mpi-") as tmp:
        shm = "/dev/shm" if os.path.isdir("/dev/shm") else None
        with tempfile.TemporaryDirectory(prefix="shipyard-mpi-", dir=shm) as segments:
            yield {
                "OMPI_MCA_orte_tmpdir_base": tmp,
                "OMPI_MCA_btl_vader_backing_directory": segments,
            }


if __name__ == "__main__":
    sys.exit(main())
