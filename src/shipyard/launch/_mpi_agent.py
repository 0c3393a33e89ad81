"""How node 0's ``mpirun`` starts Open MPI's daemon on the other nodes of a multi-node trial
without ssh: through their launchers.

mpirun starts a remote daemon by running its "rsh agent" as ``AGENT HOST orted ARGS...`` (the
``plm_rsh_agent`` parameter; ssh by default). Node 0's launcher makes this module the agent:
``python3 -m shipyard.launch._mpi_agent HOST WORDS...`` looks HOST up in SHIPYARD_MPI_AGENTS
(JSON: host name -> "addr:port:token", set by node 0's launcher from the nodes' meeting),
connects to that node's launcher, which runs ``/bin/sh -c "WORDS..."`` (what ssh would do)
with its own environment, and relays the command's stdout and stderr back and exits with its
exit code, as ssh would.

The other side is ``OrtedHost``, run by every launcher but node 0's: it listens on every
interface, announces its port and a random token in the meeting, and accepts one connection
that knows the token (it runs a command: nobody else may). The daemon it starts lives as long
as the connection, and its ranks are the node's ranks (each in a process group of its own,
Open MPI's doing), which the launcher stops with the gang's grace.

Wire: the agent sends one JSON line ``{"token": ..., "command": ...}``; the host answers with
frames of one kind byte (``o`` stdout, ``e`` stderr, ``x`` the exit code as text), a 4-byte
big-endian length and the data.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import BinaryIO

from shipyard.launch import _procs
from shipyard.launch._exits import EXIT_TERMINATED, EXIT_USAGE, describe_exit, exit_status
from shipyard.launch._gang import POLL_S, StopSignals
from shipyard.launch._output import Output, join_all

AGENTS_ENV = "SHIPYARD_MPI_AGENTS"
PROG = "shipyard.launch._mpi_agent"
EXIT_UNREACHABLE = 255  # as ssh: the remote side could not be reached
_HEADER = struct.Struct(">cI")
_CHUNK = 1 << 16
_REQUEST_WAIT_S = 30.0  # a connection that sends no request in this time is dropped


def write_frame(sock: socket.socket, kind: bytes, data: bytes, lock: threading.Lock) -> None:
    with lock:
        sock.sendall(_HEADER.pack(kind, len(data)) + data)


def read_frame(stream: BinaryIO) -> tuple[bytes, bytes] | None:
    """One frame, or None at the end of the stream."""
    header = stream.read(_HEADER.size)
    if len(header) < _HEADER.size:
        return None
    kind, size = _HEADER.unpack(header)
    data = stream.read(size)
    return (kind, data) if len(data) == size else None


# --- the agent: run by mpirun on node 0, one per remote node --------------------------------


def agent(argv: list[str], env: dict[str, str]) -> int:
    if len(argv) < 2:
        print(f"{PROG}: usage: {PROG} HOST COMMAND... (run by mpirun)", file=sys.stderr)
        return EXIT_USAGE
    host, words = argv[0], argv[1:]
    try:
        addr, port, token = json.loads(env.get(AGENTS_ENV, "{}"))[host].rsplit(":", 2)
    except (KeyError, ValueError, AttributeError):
        print(f"{PROG}: {host!r} is not a node of this trial ({AGENTS_ENV})", file=sys.stderr)
        return EXIT_UNREACHABLE
    try:
        sock = socket.create_connection((addr.strip("[]"), int(port)), timeout=_REQUEST_WAIT_S)
    except OSError as exc:
        where = f"the launcher of {host} at {addr}:{port}"
        print(f"{PROG}: cannot reach {where}: {exc}", file=sys.stderr)
        return EXIT_UNREACHABLE
    with sock:
        sock.settimeout(None)
        request = {"token": token, "command": " ".join(words)}
        sock.sendall(json.dumps(request).encode() + b"\n")
        stream = sock.makefile("rb")
        outputs = {b"o": sys.stdout.buffer, b"e": sys.stderr.buffer}
        while (frame := read_frame(stream)) is not None:
            kind, data = frame
            if kind == b"x":
                return int(data)
            if kind in outputs:
                outputs[kind].write(data)
                outputs[kind].flush()
    print(f"{PROG}: the launcher of {host} closed the connection", file=sys.stderr)
    return EXIT_UNREACHABLE


# --- the host: every launcher but node 0's ----------------------------------------------------


class OrtedHost:
    """Runs the one command node 0's agent sends (Open MPI's daemon) and relays it back."""

    def __init__(self, env: dict[str, str], out: Output) -> None:
        self.env = env
        self.out = out
        self.token = secrets.token_hex(16)
        self._listener = socket.create_server(("", 0))  # node 0 comes from outside
        self._listener.settimeout(POLL_S)
        self.proc: subprocess.Popen | None = None

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def serve(self, signals: StopSignals, host_left: Callable[[], bool], grace_s: float) -> int:
        """Until the daemon ends (its exit status), a stop signal (143 after stopping the
        ranks) or node 0's launcher leaving before it started one (1)."""
        try:
            accepted = self._accept(signals, host_left)
            if accepted is None:
                if signals.received is not None:
                    return EXIT_TERMINATED
                self.out.say("node 0's launcher ended before its mpirun started ranks here")
                return 1
            with accepted[0]:
                return self._run(accepted, signals, host_left, grace_s)
        finally:
            self._listener.close()

    def _accept(
        self, signals: StopSignals, host_left: Callable[[], bool]
    ) -> tuple[socket.socket, str] | None:
        while signals.received is None and not host_left():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            command = self._request(conn)
            if command is not None:
                return conn, command
            conn.close()
        return None

    def _request(self, conn: socket.socket) -> str | None:
        """The command of a connection that knows the token; None for any other."""
        try:
            conn.settimeout(_REQUEST_WAIT_S)
            request = json.loads(conn.makefile("rb").readline(1 << 20))
            token, command = str(request["token"]), str(request["command"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if not hmac.compare_digest(token, self.token):
            self.out.say("refused a connection to the MPI agent port: wrong token")
            return None
        conn.settimeout(None)
        return command

    def _run(
        self,
        accepted: tuple[socket.socket, str],
        signals: StopSignals,
        host_left: Callable[[], bool],
        grace_s: float,
    ) -> int:
        conn, command = accepted
        self.out.say("node 0's mpirun started Open MPI's daemon here")
        proc = self.proc = subprocess.Popen(
            ["/bin/sh", "-c", command],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            process_group=0,  # the shell and the daemon; each rank leads a group of its own
            preexec_fn=_procs.die_with_parent(),
        )
        lock = threading.Lock()
        relays = [
            threading.Thread(target=_send_pipe, args=(pipe, kind, conn, lock), daemon=True)
            for pipe, kind in ((proc.stdout, b"o"), (proc.stderr, b"e"))
        ]
        for relay in relays:
            relay.start()
        dropped = threading.Event()
        threading.Thread(target=_watch_closed, args=(conn, dropped), daemon=True).start()
        while proc.poll() is None:
            if signals.received is not None:
                self.stop(grace_s, f"the launcher got {signals.name}")
                return EXIT_TERMINATED
            if dropped.is_set() or host_left():
                self.stop(grace_s, "node 0's mpirun is gone")
                return 1
            time.sleep(POLL_S)
        join_all(relays)
        code = proc.returncode
        try:
            write_frame(conn, b"x", str(exit_status(code)).encode(), lock)
        except OSError:
            pass  # mpirun's agent is gone: it no longer waits for the answer
        self.out.say(f"Open MPI's daemon {describe_exit(code)}")
        return exit_status(code)

    def stop(self, grace_s: float, why: str) -> None:
        """SIGTERM to the ranks (the process groups below the daemon), SIGKILL after the
        grace, then the daemon's own group."""
        proc = self.proc
        if proc is None:
            return
        ranks = _procs.group_leaders(_procs.descendants(proc.pid))
        self.out.say(f"{why}: sending SIGTERM to this node's {len(ranks)} rank(s)")
        for pid in ranks:
            _procs.killpg(pid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(_procs.alive(p) for p in ranks):
            time.sleep(POLL_S)
        for pid in ranks:
            if _procs.alive(pid):
                _procs.killpg(pid, signal.SIGKILL)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            _procs.killpg(proc.pid, sig)
            try:
                proc.wait(timeout=5.0)
                return
            except subprocess.TimeoutExpired:
                continue


def _send_pipe(pipe: BinaryIO, kind: bytes, conn: socket.socket, lock: threading.Lock) -> None:
    with pipe:
        while data := pipe.read1(_CHUNK):  # type: ignore[attr-defined]
            try:
                write_frame(conn, kind, data, lock)
            except OSError:
                return


def _watch_closed(conn: socket.socket, dropped: threading.Event) -> None:
    """Set ``dropped`` when the agent's side closes (mpirun killed it, or died)."""
    try:
        while conn.recv(_CHUNK):
            pass
    except OSError:
        pass
    dropped.set()


if __name__ == "__main__":
    sys.exit(agent(sys.argv[1:], dict(os.environ)))
