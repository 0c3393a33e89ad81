"""The gang: one process per slot running the same command, started, relayed and stopped as
one unit. Shared by the launchers (torch_distributed, tensorflow; mpi runs its ranks through
mpirun and takes the options, output, stop signals and exit handling from here), which only
decide the environment of each rank.

- Output: every line a rank writes (stdout and stderr) goes to the launcher's stdout as
  ``[rank=R] line``, one relay thread per pipe, flushed per line; the launcher's own lines
  are ``[launcher] line``. The master parses these prefixes into the rank of each log line.
- One unit: a rank that exits non-zero (or is killed) takes the others down (SIGTERM, then
  SIGKILL after the grace) and the launcher exits with that rank's code (128+signal for a
  signal death). SIGTERM/SIGINT to the launcher is forwarded to every rank; the launcher
  then exits 143.
- The ranks stay in the launcher's process group, so the master's killpg reaches them all.

Multi-node trials: one launcher per node. This is the contract between a backend and the
launchers (the Ray and Kubernetes backends set these variables; docs/distributed.md):

- ``SHIPYARD_NUM_NODES`` (default 1) and ``SHIPYARD_NODE_RANK`` (0..N-1). Each node's
  launcher gets ``SHIPYARD_SLOT_IDS`` listing only that node's slots, and every node must have
  the same number of local slots: otherwise every launcher refuses (one line on stderr, exit
  code 2) once they have met.
- ``SHIPYARD_RENDEZVOUS_ADDR`` = "host:port", reachable from every node. ``port`` is torch's
  MASTER_PORT (its TCPStore, bound by global rank 0, on node 0); ``port + 1`` is Shipyard's
  coordinator, bound by node 0's launcher on every interface: the ranks' collectives of
  ``ctx.distributed`` (SHIPYARD_DIST_ADDR = host:port+1) and the launchers' own meeting,
  where they learn each other's slots and addresses (launch/_nodes.py). With
  SHIPYARD_NUM_NODES unset or 1 nothing changes: free local ports on 127.0.0.1.
- Ranks: RANK = SHIPYARD_RANK = node_rank * local_slots + local_rank, WORLD_SIZE =
  SHIPYARD_SIZE = nodes * local_slots, LOCAL_RANK and LOCAL_WORLD_SIZE (and SHIPYARD_LOCAL_*)
  within the node, NODE_RANK = GROUP_RANK = node_rank, GROUP_WORLD_SIZE = nodes,
  MASTER_ADDR/MASTER_PORT = the rendezvous host and port, as torchrun sets them; TF_CONFIG
  lists every worker of every node (worker index = global rank). ``[rank=R]`` is the global
  rank, and the chief of ``ctx.distributed`` is global rank 0.
- A rank exiting non-zero ends its own node's ranks and its launcher exits with its code;
  ending the other nodes is the backend's job (it ends the whole gang). Optional:
  SHIPYARD_RENDEZVOUS_TIMEOUT_S (default 600) bounds how long the launchers wait for each
  other; failing to meet is exit code 1.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from shipyard.common.log_prefix import LAUNCHER, rank_prefix

DEFAULT_GRACE_S = 10.0
EXIT_USAGE = 2
EXIT_TERMINATED = 128 + signal.SIGTERM  # 143
EXIT_CANNOT_START = 127
_POLL_S = 0.05
_MAX_LINE = 1 << 16  # a longer line (or a progress bar without newlines) is relayed in pieces
_JOIN_S = 5.0  # how long the output of ranks that exited may take to drain


class UsageError(Exception):
    """Bad input to a launcher: one line on stderr, exit code 2."""


@dataclass(frozen=True)
class Slot:
    id: str  # "cpu0", "gpu3"

    @property
    def gpu_index(self) -> int | None:
        rest = self.id[3:]
        return int(rest) if self.id.startswith("gpu") and rest.isdigit() else None


@dataclass
class Options:
    nproc: int | None
    command: list[str]


def parse_args(args: list[str], prog: str) -> Options:
    """``[--nproc N] [--] CMD ARGS...``: options end at ``--`` or at the first argument that is
    not one of ours (so ``python3 -u train.py`` needs no ``--``)."""
    nproc: int | None = None
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            i += 1
            break
        if arg in ("-h", "--help"):
            raise UsageError(usage(prog))
        if arg == "--nproc" or arg.startswith("--nproc="):
            if arg == "--nproc":
                if i + 1 >= len(args):
                    raise UsageError("--nproc needs a number of ranks, like --nproc 2")
                value, i = args[i + 1], i + 2
            else:
                value, i = arg.split("=", 1)[1], i + 1
            if not value.isdigit() or int(value) < 1:
                raise UsageError(f"--nproc takes a number of ranks of 1 or more, got {value!r}")
            nproc = int(value)
            continue
        if arg.startswith("-"):
            raise UsageError(f"unknown option {arg!r}; {usage(prog)}")
        break
    command = args[i:]
    if not command:
        raise UsageError(f"no command given; {usage(prog)}")
    return Options(nproc=nproc, command=command)


def usage(prog: str) -> str:
    return (
        f"usage: python3 -m {prog} [--nproc N] [--] CMD ARGS... "
        "(inside Shipyard one rank runs per slot of the trial; --nproc N runs N CPU ranks "
        "locally, without a master)"
    )


def slots_for(options: Options, prog: str, env: dict[str, str]) -> list[Slot]:
    """The trial's slots (SHIPYARD_SLOT_IDS), or --nproc CPU slots when run by hand."""
    ids = [s.strip() for s in env.get("SHIPYARD_SLOT_IDS", "").split(",") if s.strip()]
    if not ids:
        if options.nproc is None:
            raise UsageError(
                "SHIPYARD_SLOT_IDS is not set: this launcher runs inside a Shipyard trial "
                "(entrypoint: python3 -m "
                f"{prog} python3 train.py, with resources.slots_per_trial); to run locally "
                f"without a master, give the number of CPU ranks: python3 -m {prog} --nproc 2 "
                "python3 train.py"
            )
        return [Slot(f"cpu{i}") for i in range(options.nproc)]
    if options.nproc is not None and options.nproc != len(ids):
        raise UsageError(
            f"--nproc {options.nproc} does not match the {len(ids)} slot(s) of this trial "
            f"(SHIPYARD_SLOT_IDS={','.join(ids)}): drop --nproc inside Shipyard and set "
            "resources.slots_per_trial instead"
        )
    return [Slot(i) for i in ids]


def grace_s(env: dict[str, str]) -> float:
    raw = env.get("SHIPYARD_GANG_GRACE_S", "").strip()
    if not raw:
        return DEFAULT_GRACE_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0:
        raise UsageError(f"SHIPYARD_GANG_GRACE_S must be a number of seconds >= 0, got {raw!r}")
    return value


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def read_options(prog: str, env: dict[str, str]) -> tuple[Options, list[Slot], float] | None:
    """A launcher's command line, slots and grace; None after printing a usage error (the
    launcher then exits with EXIT_USAGE)."""
    try:
        options = parse_args(sys.argv[1:], prog)
        return options, slots_for(options, prog, env), grace_s(env)
    except UsageError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None


def describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with code {code}"


def exit_status(code: int) -> int:
    """A process's exit as a shell reports it: a signal death is 128+signal."""
    return 128 - code if code < 0 else code


class Output:
    """The launcher's stdout, shared by the relay threads: whole lines, flushed one by one."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        self._lock = threading.Lock()

    def line(self, prefix: bytes, data: bytes) -> None:
        if not data.endswith(b"\n"):
            data += b"\n"  # a partial last line, or a piece of a very long one
        with self._lock:
            try:
                self._stream.write(prefix + data)
                self._stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass  # nowhere to write to: the ranks must still run and be stopped

    def say(self, message: str) -> None:
        self.line(LAUNCHER.encode(), message.encode("utf-8", errors="replace"))


class StopSignals:
    """While a gang runs: SIGTERM/SIGINT to the launcher are noted (the first one), for its
    supervising loop to stop the ranks; the previous handlers come back afterwards."""

    def __init__(self) -> None:
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        self._previous = {sig: signal.signal(sig, self._note) for sig in _FORWARDED}
        return self

    def __exit__(self, *_exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    def _note(self, signum: int, _frame: object) -> None:
        if self.received is None:
            self.received = signum

    @property
    def name(self) -> str:
        assert self.received is not None
        return signal.Signals(self.received).name


class Gang:
    """The ranks of one command. ``run()`` starts them all and returns the exit status."""

    def __init__(
        self,
        command: list[str],
        envs: list[dict[str, str]],
        grace_s: float,
        out: Output,
        *,
        ends_with: int | None = None,
        first_rank: int = 0,
        world_size: int | None = None,
        ranks: list[int] | None = None,
        ends_when: Callable[[], str | None] | None = None,
    ) -> None:
        self.command = command
        # Ranks are numbered globally (a multi-node trial's node k starts at k * local slots);
        # ``ranks`` names each process when they are not consecutive.
        self.ranks = ranks or list(range(first_rank, first_rank + len(envs)))
        self.world_size = world_size
        self.envs = envs
        self.grace_s = grace_s
        self.out = out
        # The process (an index of envs) whose exit 0 ends the gang (the others are stopped,
        # the gang exits 0): tensorflow's --ps chief, whose workers and ps serve until they
        # are stopped. ``ends_when`` does the same when it returns why (the chief's node
        # ended, for the other nodes' workers).
        self.ends_with = ends_with
        self.ends_when = ends_when
        self.procs: list[subprocess.Popen] = []
        self._relays: list[threading.Thread] = []
        self._signals = StopSignals()

    def run(self) -> int:
        with self._signals:
            try:
                started = self._start()
                if started is not None:
                    return started
                return self._supervise()
            finally:
                # A rank's leftover child may hold its pipe open: wait for the output a while.
                join_all(self._relays)

    def _start(self) -> int | None:
        for rank, env in zip(self.ranks, self.envs, strict=True):
            try:
                proc = subprocess.Popen(
                    self.command,
                    env=env,
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                )  # no new session: the master's killpg of the launcher reaches every rank
            except OSError as exc:
                self.out.say(f"cannot start rank {rank}: {self.command[0]}: {exc.strerror}")
                self._stop_all(f"rank {rank} did not start")
                return EXIT_CANNOT_START
            self.procs.append(proc)
            prefix = rank_prefix(rank).encode()
            for pipe in (proc.stdout, proc.stderr):
                relay = threading.Thread(
                    target=_relay, args=(pipe, prefix, self.out), daemon=True, name=f"rank{rank}"
                )
                relay.start()
                self._relays.append(relay)
        return None

    def _supervise(self) -> int:
        while True:
            if self._signals.received is not None:
                self._stop_all(f"the launcher got {self._signals.name}")
                return EXIT_TERMINATED
            codes = [p.poll() for p in self.procs]
            for rank, code in zip(self.ranks, codes, strict=True):
                if code is not None and code != 0:
                    how = describe_exit(code)
                    self.out.say(f"rank {rank} {how}; stopping the gang")
                    self._stop_all(f"rank {rank} failed")
                    tell_master(f"rank {rank} of {self.world_size or len(self.procs)} {how}")
                    return exit_status(code)
            if all(code == 0 for code in codes):
                return 0
            if self.ends_with is not None and codes[self.ends_with] == 0:
                rank = self.ranks[self.ends_with]
                self._stop_all(f"rank {rank} exited with code 0, which ends the gang")
                return 0
            why = self.ends_when() if self.ends_when is not None else None
            if why is not None:
                self._stop_all(f"{why}, which ends the gang")
                return 0
            time.sleep(_POLL_S)

    def _stop_all(self, why: str) -> None:
        """SIGTERM to every rank still running, SIGKILL to those left after the grace."""
        procs = zip(self.ranks, self.procs, strict=False)  # the started ones
        running = [(r, p) for r, p in procs if p.poll() is None]
        if not running:
            return
        ranks = ", ".join(str(r) for r, _ in running)
        self.out.say(
            f"{why}: sending SIGTERM to rank(s) {ranks} (SIGKILL after {self.grace_s:g} s)"
        )
        for _, proc in running:
            _send(proc, signal.SIGTERM)
        deadline = time.monotonic() + self.grace_s
        while time.monotonic() < deadline and any(p.poll() is None for _, p in running):
            time.sleep(_POLL_S)
        for rank, proc in running:
            if proc.poll() is None:
                self.out.say(f"rank {rank} still running after {self.grace_s:g} s: SIGKILL")
                _send(proc, signal.SIGKILL)
                proc.wait()


_FORWARDED = (signal.SIGTERM, signal.SIGINT)


def join_all(threads: list[threading.Thread], wait_s: float = _JOIN_S) -> None:
    """Join the threads, all of them within ``wait_s``."""
    deadline = time.monotonic() + wait_s
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))


def _send(proc: subprocess.Popen, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(sig)


def _relay(pipe: BinaryIO, prefix: bytes, out: Output) -> None:
    with pipe:
        while True:
            data = pipe.readline(_MAX_LINE)
            if not data:
                return
            out.line(prefix, data)


def tell_master(message: str) -> None:
    """Add why the gang failed to the run's exit reason (POST run-error, appended to what a
    rank itself reported). Only inside a Shipyard trial; a failure is noted and ignored."""
    master = os.environ.get("SHIPYARD_MASTER")
    trial_id = os.environ.get("SHIPYARD_TRIAL_ID")
    run_id = os.environ.get("SHIPYARD_RUN_ID", "")
    if not master or not trial_id or not run_id.isdigit():
        return
    parts = urlsplit(master)
    conn_class = (
        http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    )
    body = json.dumps({"run_id": int(run_id), "message": message, "append": True})
    try:
        conn = conn_class(parts.hostname or "127.0.0.1", parts.port, timeout=5)
        conn.request(
            "POST",
            f"{parts.path.rstrip('/')}/api/v1/trials/{trial_id}/run-error",
            body=body,
            headers={"Content-Type": "application/json"},
        )
        conn.getresponse().read()
        conn.close()
    except (OSError, http.client.HTTPException) as exc:
        print(f"{LAUNCHER}could not tell the master why the gang failed: {exc}", file=sys.stderr)


def main(
    prog: str, build_envs: Callable[[list[Slot], dict[str, str], Any], list[dict[str, str]]]
) -> int:
    """A launcher's main: parse, meet the other nodes (if any), build each rank's env
    (``build_envs(slots, env, layout)``, layout: a ``_nodes.Layout``), run the gang. Usage
    errors: one line on stderr and exit code 2."""
    from shipyard.launch import _nodes  # not at the top: it imports this module

    env = dict(os.environ)
    read = read_options(prog, env)
    if read is None:
        return EXIT_USAGE
    options, slots, grace = read
    env.setdefault("PYTHONUNBUFFERED", "1")  # rank output reaches the log as it is written
    out = Output(sys.stdout.buffer)
    meeting = _nodes.meet_or_exit(prog, out, len(slots), env)
    if isinstance(meeting, int):
        return meeting
    code = 1
    try:
        layout = meeting.layout
        assert meeting.dist_addr is not None
        env["SHIPYARD_DIST_ADDR"] = meeting.dist_addr  # ctx.distributed's collectives
        envs = build_envs(slots, env, layout)
        where = ",".join(s.id for s in slots)
        if layout.nodes > 1:
            where += f" ({layout.describe()})"
        out.say(f"starting {len(envs)} rank(s) on {where}: {shlex.join(options.command)}")
        gang = Gang(
            options.command,
            envs,
            grace,
            out,
            first_rank=layout.first_rank,
            world_size=layout.world_size,
        )
        code = gang.run()
        if code == 0:
            out.say(f"all {len(envs)} rank(s) exited with code 0")
            if layout.nodes > 1 and layout.node_rank == 0:
                out.say("waiting for the other nodes' launchers (this one hosts the coordinator)")
        return code
    finally:
        meeting.finish(code)
