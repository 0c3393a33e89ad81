"""The shim ``shipyard.launch.mpi`` puts in front of every rank: ``mpirun ... python3 -m
shipyard.launch._mpi_rank CMD ARGS...``. Standard library only; it execs CMD, so the rank is
CMD itself (mpirun's signals reach it directly).

- Open MPI's OMPI_COMM_WORLD_RANK/SIZE/LOCAL_RANK/LOCAL_SIZE become SHIPYARD_RANK/SIZE/
  LOCAL_RANK/LOCAL_SIZE and torch's RANK/WORLD_SIZE/LOCAL_RANK/LOCAL_WORLD_SIZE.
- SHIPYARD_SLOT_IDS (all the slots of this machine) becomes the rank's one slot; on a GPU
  slot CUDA_VISIBLE_DEVICES is that GPU (each rank sees one device), on a CPU slot it is unset.
- stdout and stderr are two connections to the launcher's output server
  (SHIPYARD_MPI_OUTPUT, "host:port"): each says which rank and stream it is, then carries the
  rank's bytes, which the launcher relays as ``[rank=R] line`` (mpirun's own forwarding can
  cut a long line and mix it with another rank's).
- The rank dies with mpirun (PR_SET_PDEATHSIG): Open MPI puts every rank in a process group
  of its own, out of reach of a killpg of the launcher's group.
"""

from __future__ import annotations

import os
import signal
import socket
import sys

PROG = "shipyard.launch._mpi_rank"
EXIT_CANNOT_START = 127
OUTPUT_ENV = "SHIPYARD_MPI_OUTPUT"
HELLO = "shipyard-mpi-rank"  # first line of each output connection: HELLO rank stream pid
PR_SET_PDEATHSIG = 1


def rank_env(env: dict[str, str]) -> dict[str, str]:
    """The rank's environment from the one mpirun gave it (raises KeyError/ValueError when
    the OMPI_COMM_WORLD_* variables are missing or not numbers)."""
    rank = int(env["OMPI_COMM_WORLD_RANK"])
    size = int(env["OMPI_COMM_WORLD_SIZE"])
    local_rank = int(env.get("OMPI_COMM_WORLD_LOCAL_RANK", rank))
    local_size = int(env.get("OMPI_COMM_WORLD_LOCAL_SIZE", size))
    out = dict(env)
    for names, value in (
        (("SHIPYARD_RANK", "RANK"), rank),
        (("SHIPYARD_SIZE", "WORLD_SIZE"), size),
        (("SHIPYARD_LOCAL_RANK", "LOCAL_RANK"), local_rank),
        (("SHIPYARD_LOCAL_SIZE", "LOCAL_WORLD_SIZE"), local_size),
    ):
        for name in names:
            out[name] = str(value)
    ids = [s.strip() for s in env.get("SHIPYARD_SLOT_IDS", "").split(",") if s.strip()]
    slot = ids[local_rank] if local_rank < len(ids) else None
    if slot is not None:
        out["SHIPYARD_SLOT_IDS"] = slot
    gpu = slot[3:] if slot is not None and slot.startswith("gpu") else ""
    if gpu.isdigit():
        out["CUDA_VISIBLE_DEVICES"] = gpu  # pinned: one device per rank
    else:
        out.pop("CUDA_VISIBLE_DEVICES", None)
    return out


def _die_with_parent() -> None:
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return


def _connect_output(address: str, rank: int) -> None:
    """Point fds 1 and 2 at the launcher's output server."""
    host, _, port = address.rpartition(":")
    for fd, stream in ((1, "stdout"), (2, "stderr")):
        sock = socket.create_connection((host, int(port)), timeout=30)
        sock.settimeout(None)
        sock.sendall(f"{HELLO} {rank} {stream} {os.getpid()}\n".encode())
        sock.shutdown(socket.SHUT_RD)  # the rank only writes
        os.dup2(sock.fileno(), fd)  # dup2'd fds are inheritable: they survive the exec
        sock.close()


def main(argv: list[str]) -> int:
    command = argv[1:]
    if command[:1] == ["--"]:
        command = command[1:]
    try:
        env = rank_env(dict(os.environ))
    except (KeyError, ValueError) as exc:
        print(
            f"{PROG}: OMPI_COMM_WORLD_RANK/SIZE missing or bad ({exc}): this runs under "
            "mpirun, started by python3 -m shipyard.launch.mpi",
            file=sys.stderr,
        )
        return 2
    if not command:
        print(f"{PROG}: no command given", file=sys.stderr)
        return 2
    parent = os.getppid()
    _die_with_parent()
    if os.getppid() != parent:  # mpirun died before the prctl
        return 1
    address = os.environ.get(OUTPUT_ENV)
    if address:
        try:
            _connect_output(address, int(env["SHIPYARD_RANK"]))
        except (OSError, ValueError) as exc:
            print(
                f"{PROG}: cannot reach the launcher's output at {address}: {exc}", file=sys.stderr
            )
            return 1
    sys.stdout.flush()
    try:
        os.execvpe(command[0], command, env)
    except OSError as exc:
        os.write(
            2, f"cannot start rank {env['SHIPYARD_RANK']}: {command[0]}: {exc.strerror}\n".encode()
        )
        return EXIT_CANNOT_START
    return EXIT_CANNOT_START  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv))
