"""One ``mpirun`` as the gang of an MPI trial: started in a process group of its own, its
messages relayed as the launcher's, stopped as one unit with the gang's grace, and its
verdict: the rank that failed (from mpirun's report), told to the master."""

from __future__ import annotations

import re
import signal
import subprocess
import threading
import time

from shipyard.launch import _procs
from shipyard.launch._exits import (
    EXIT_CANNOT_START,
    EXIT_TERMINATED,
    describe_exit,
    exit_status,
    tell_master,
)
from shipyard.launch._gang import POLL_S, StopSignals
from shipyard.launch._mpi_output import OutputServer
from shipyard.launch._output import JOIN_S, MAX_LINE, Output, join_all

_MPIRUN_SLACK_S = 5.0  # mpirun's own SIGTERM-then-SIGKILL of the ranks takes a little longer
_KEEP_STDERR = 200  # mpirun's last lines kept to find which rank failed
_FAILED = re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]\s*\n\s*Exit code:\s*(\d+)")
_SIGNALED = re.compile(r"process rank (\d+) with PID \d+ on node \S+ exited on signal (\d+)")


class MpiGang:
    """One mpirun: started, its messages relayed, stopped as one unit."""

    def __init__(
        self,
        args: list[str],
        env: dict[str, str],
        nproc: int,
        grace_s: float,
        out: Output,
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
        self._signals = StopSignals()

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
                return EXIT_CANNOT_START
            try:
                for pipe, keep in ((self.proc.stdout, False), (self.proc.stderr, True)):
                    relay = threading.Thread(target=self._relay, args=(pipe, keep), daemon=True)
                    relay.start()
                    self._relays.append(relay)
                return self._supervise(self.proc)
            finally:
                join_all(self._relays)

    def _relay(self, pipe, keep: bool) -> None:  # type: ignore[no-untyped-def]
        with pipe:
            for raw in iter(lambda: pipe.readline(MAX_LINE), b""):
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
                return EXIT_TERMINATED
            code = proc.poll()
            if code is not None:
                break
            time.sleep(POLL_S)
        for relay in self._relays:  # mpirun's report of the failure is on its stderr
            relay.join(timeout=JOIN_S)
        self.output.close(JOIN_S)  # the ranks' last lines before the verdict
        if code == 0:
            return 0
        failed = self.failed_rank()
        if failed is not None:
            rank, rank_code = failed
            how = describe_exit(rank_code)
            self.out.say(f"rank {rank} {how}; mpirun stopped the gang")
            tell_master(f"rank {rank} of {self.nproc} {how}")
            self._kill_left()
            return exit_status(rank_code)
        how = describe_exit(code)
        self.out.say(f"mpirun {how}")
        tell_master(f"mpirun (the gang of {self.nproc} rank(s)) {how}")
        self._kill_left()
        return exit_status(code)

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
            time.sleep(POLL_S)
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
        self.output.close(JOIN_S)

    def _local_pids(self) -> dict[int, int]:
        return {r: p for r, p in self.output.rank_pids().items() if r < self.local_ranks}

    def _kill_left(self) -> None:
        """Each rank leads a process group of its own (Open MPI's doing): SIGKILL those left."""
        for rank, pid in sorted(self._local_pids().items()):
            if _procs.alive(pid):
                self.out.say(f"rank {rank} (pid {pid}) outlived mpirun: SIGKILL to its group")
                _procs.killpg(pid, signal.SIGKILL)
