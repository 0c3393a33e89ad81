"""Run an MPI (or Horovod) program on every slot of a trial: ``python3 -m shipyard.launch.mpi
[--nproc N] [--] CMD ARGS...``.

One ``mpirun`` is the gang: a hostfile (``127.0.0.1 slots=N``: one machine today) in a
temporary directory, ``-np N``, and each rank started through ``shipyard.launch._mpi_rank``,
which maps Open MPI's rank variables to Shipyard's (SHIPYARD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE)
and torch's (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE), pins CUDA_VISIBLE_DEVICES to the
rank's GPU, sends its output to this launcher (relayed as ``[rank=R] line``, as the other
launchers do) and execs CMD. SHIPYARD_DIST_ADDR is the coordinator for ``ctx.distributed``.

One unit: mpirun stops every rank when one fails; the launcher exits with that rank's code,
names it (from mpirun's report) and tells the master. At SIGTERM/SIGINT the launcher sends
SIGTERM to every rank's process group (Open MPI gives each rank one), SIGKILL after the grace,
stops mpirun and exits 143. mpirun runs in a process group of its own and gets SIGKILL when
the launcher dies, as the ranks do when mpirun dies.
"""

from __future__ import annotations

import contextlib
import ctypes
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
from collections.abc import Callable
from pathlib import Path

from shipyard.launch import _coordinator, _gang, _nodes
from shipyard.launch._mpi_rank import HELLO, OUTPUT_ENV, PR_SET_PDEATHSIG

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
) -> list[str]:
    args = [mpirun, "--hostfile", hostfile_path, "-np", str(nproc)]
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
    def address(self) -> str:
        host, port = self._listener.getsockname()[:2]
        return f"{host}:{port}"

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
            _gang._relay(stream, f"[rank={rank}] ".encode(), self.out)

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
    ) -> None:
        self.args = args
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
                    preexec_fn=_die_with_parent(),
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
        pids = self.output.rank_pids()
        self.out.say(
            f"{why}: sending SIGTERM to rank(s) {', '.join(str(r) for r in sorted(pids)) or '-'}"
            f" (SIGKILL after {self.grace_s:g} s)"
        )
        for pid in pids.values():
            _killpg(pid, signal.SIGTERM)
        if len(pids) < self.nproc:  # a rank not connected yet: mpirun must stop it
            _send(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        while time.monotonic() < deadline and any(_alive(p) for p in pids.values()):
            time.sleep(_gang._POLL_S)
        for rank, pid in sorted(pids.items()):
            if _alive(pid):
                self.out.say(f"rank {rank} still running after {self.grace_s:g} s: SIGKILL")
                _killpg(pid, signal.SIGKILL)
        # mpirun sees its ranks die, aborts and reaps them (a SIGTERM in the middle of its
        # abort can crash it and leave the ranks unreaped): it is signalled only if it lingers.
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                proc.wait(timeout=_MPIRUN_SLACK_S)
                break
            except subprocess.TimeoutExpired:
                self.out.say(f"mpirun still running after its ranks: {sig.name}")
                _send(proc.pid, sig)
        proc.wait()
        self._kill_left()
        self.output.close(_gang._JOIN_S)

    def _kill_left(self) -> None:
        """Each rank leads a process group of its own (Open MPI's doing): SIGKILL those left."""
        for rank, pid in sorted(self.output.rank_pids().items()):
            if _alive(pid):
                self.out.say(f"rank {rank} (pid {pid}) outlived mpirun: SIGKILL to its group")
                _killpg(pid, signal.SIGKILL)


def _send(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, sig)


def _killpg(pid: int, sig: int) -> None:
    """``sig`` to the process group ``pid`` leads (a rank's: Open MPI makes one per rank)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        return
    except PermissionError:
        _send(pid, sig)


def _die_with_parent() -> Callable[[], None] | None:
    """A preexec_fn that makes the child get SIGKILL when the launcher dies (Linux), resolved
    before the fork: the child only makes the one system call."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    sigkill = int(signal.SIGKILL)

    def preexec() -> None:
        prctl(PR_SET_PDEATHSIG, sigkill, 0, 0, 0)

    return preexec


def _alive(pid: int) -> bool:
    """A process that runs (not a zombie waiting for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def main() -> int:
    env = dict(os.environ)
    read = _gang.read_options(PROG, env)
    if read is None:
        return _gang.EXIT_USAGE
    options, slots, grace = read
    nodes = env.get(_nodes.NUM_NODES, "").strip()
    if nodes not in ("", "1"):  # one hostfile line per node, later
        print(
            f"{PROG}: multi-node trials ({_nodes.NUM_NODES}={nodes}) are not supported yet by "
            "this launcher: use shipyard.launch.torch_distributed or shipyard.launch.tensorflow, "
            "or fit the trial on one node",
            file=sys.stderr,
        )
        return _gang.EXIT_USAGE
    if shutil.which("mpirun", path=env.get("PATH")) is None:
        print(
            f"{PROG}: mpirun not found on PATH: install Open MPI (Debian: apt-get install "
            "openmpi-bin libopenmpi-dev; in a Shipyard checkout: make setup)",
            file=sys.stderr,
        )
        return EXIT_NO_MPIRUN
    nproc = len(slots)
    hosts = [(LOCALHOST, nproc)]  # one machine today; several (host, slots) pairs later
    env.setdefault("PYTHONUNBUFFERED", "1")  # rank output reaches the log as it is written
    env["SHIPYARD_SLOT_IDS"] = ",".join(s.id for s in slots)  # the shim picks each rank's one
    env["SHIPYARD_DIST_BACKEND"] = "nccl" if all(s.gpu_index is not None for s in slots) else "gloo"
    env["MASTER_ADDR"] = LOCALHOST  # for torch.distributed's env:// under Horovod/MPI
    env["MASTER_PORT"] = str(_gang.free_port())
    out = _gang.Output(sys.stdout.buffer)
    address, stop_coordinator = _coordinator.serve(nproc)
    output = OutputServer(out)
    try:
        env["SHIPYARD_DIST_ADDR"] = address  # ctx.distributed's collectives
        env[OUTPUT_ENV] = output.address
        with tempfile.TemporaryDirectory(prefix="shipyard-mpi-") as tmp:
            path = os.path.join(tmp, "hostfile")
            Path(path).write_text(hostfile(hosts))
            # By name, not by path: Open MPI takes /usr/bin/mpirun as --prefix /usr and puts
            # /usr/bin first on the ranks' PATH, ahead of the trial's venv.
            args = mpirun_command("mpirun", path, hosts, nproc, env, options.command)
            where = ",".join(s.id for s in slots)
            out.say(f"starting {nproc} rank(s) on {where}: {shlex.join(options.command)}")
            out.say(f"mpirun: {shlex.join(args)}")
            code = MpiGang(args, env, nproc, grace, out, output).run()
        if code == 0:
            out.say(f"all {nproc} rank(s) exited with code 0")
        return code
    finally:
        output.close(_gang._JOIN_S)
        stop_coordinator()


if __name__ == "__main__":
    sys.exit(main())
