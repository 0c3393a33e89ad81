"""The Ray driver: a child process of the master that talks to one Ray cluster.

`python -m shipyard.backends.ray.driver --address HOST:PORT --namespace NS` reads requests on
stdin and answers on stdout (protocol.py). It is a separate process because a Ray driver
exits when its cluster's GCS goes away, and ``ray.init`` to a dead address hangs for
minutes: the master must outlive both, so it only ever talks to this process (backend.py).
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

from shipyard.backends.ray import payload, protocol
from shipyard.backends.ray.runner import TrialRunner, read_run_files

_CONNECT_CHECK_S = 2.0


class NotSupportedYet(Exception):
    """Sent to the backend as kind NotSupportedYet (the master's ConfigError subclass)."""


class Driver:
    def __init__(self, address: str, namespace: str, timeout_s: float) -> None:
        import ray
        from ray.exceptions import GetTimeoutError, RayActorError

        self.ray = ray
        self.dead_errors = (RayActorError,)
        self.timeout_errors = (GetTimeoutError,)
        self.address, self.namespace, self.timeout_s = address, namespace, timeout_s
        # Any: Ray's stubs do not know the methods of a remote class.
        self.runner: Any = ray.remote(TrialRunner)
        self.read_files: Any = ray.remote(num_cpus=0)(read_run_files)
        self._actors: dict[str, Any] = {}
        self._ended: dict[str, dict[str, Any]] = {}  # actor -> final poll answer
        self._lock = threading.Lock()

    # -- helpers ---------------------------------------------------------------------------

    def _get(self, ref: Any, timeout: float | None = None) -> Any:
        return self.ray.get(ref, timeout=timeout or self.timeout_s)

    def _actor(self, name: str) -> Any | None:
        with self._lock:
            if name in self._actors:
                return self._actors[name]
        try:
            actor = self.ray.get_actor(name, namespace=self.namespace)
        except ValueError:
            return None  # no live actor of that name
        with self._lock:
            self._actors[name] = actor
        return actor

    def _on_node(self, node_id: str) -> Any:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        strategy = NodeAffinitySchedulingStrategy(node_id=node_id, soft=False)
        return self.read_files.options(scheduling_strategy=strategy)

    def _node_files(self, a: dict[str, Any], offset: int) -> tuple[int, bytes, int | None]:
        return self._get(self._on_node(a["node_id"]).remote(a["log"], offset, a["exit_file"]))

    def _forget(self, name: str, pg_name: str | None) -> None:
        """Kill the run's actor and free its placement group (its slots)."""
        with self._lock:
            actor = self._actors.pop(name, None)
        actor = actor or self._actor(name)
        with self._lock:
            self._actors.pop(name, None)
        if actor is not None:
            try:
                self._get(actor.kill.remote())  # the trial's whole process group first
            except (*self.dead_errors, *self.timeout_errors):
                pass
            self.ray.kill(actor, no_restart=True)
        if pg_name:
            try:
                pg = self.ray.util.get_placement_group(pg_name)
            except ValueError:
                return
            self.ray.util.remove_placement_group(pg)

    # -- operations --------------------------------------------------------------------------

    def op_ping(self) -> dict[str, Any]:
        return {"resources": self.ray.cluster_resources()}

    def op_capacity(self, slot_type: str) -> dict[str, Any]:
        key = "GPU" if slot_type == "gpu" else "CPU"
        nodes = {
            n["NodeID"]: int(n["Resources"].get(key, 0)) for n in self.ray.nodes() if n["Alive"]
        }
        return {"total": int(self.ray.cluster_resources().get(key, 0)), "nodes": nodes}

    def op_launch(self, **a: Any) -> dict[str, Any]:
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        kind, count = a["slot_kind"], a["slots"]
        key = "GPU" if kind == "gpu" else "CPU"
        sizes = self.op_capacity(kind)["nodes"].values()
        if count > max(sizes, default=0):
            if count <= sum(sizes):
                raise NotSupportedYet(
                    f"a trial of {count} slots does not fit on one node of the Ray cluster "
                    f"(its largest node has {max(sizes, default=0)} {key}s): multi-node "
                    "trials are not supported yet"
                )
            raise ValueError(f"a trial of {count} slots asks for more {key}s than the Ray "
                             f"cluster has ({sum(sizes)})")  # fmt: skip
        code = payload.pack(a["workdir"], a["max_code_bytes"], skip=tuple(a["skip"]))
        config = None
        if a.get("config_path") and os.path.isfile(a["config_path"]):
            with open(a["config_path"], "rb") as f:
                config = f.read()
        name = a["actor"]
        if self._actor(name) is not None:  # an orphan of a master that died mid-launch
            self._forget(name, a["pg"])
        # One bundle of all the slots: it always lands on one node, and the actor holding
        # it sees all of its GPUs (Ray sets CUDA_VISIBLE_DEVICES to them).
        pg = placement_group(
            [{key: float(count)}], strategy="STRICT_PACK", name=a["pg"], lifetime="detached"
        )
        started = time.monotonic()
        if not pg.wait(timeout_seconds=a["wait_s"]):
            self.ray.util.remove_placement_group(pg)
            raise RuntimeError(
                f"the Ray cluster did not give {count} {key}(s) on one node within "
                f"{a['wait_s']:.0f} s (busy, or no node that large)"
            )
        resources = {"num_gpus": count, "num_cpus": 0} if kind == "gpu" else {"num_cpus": count}
        actor: Any = self.runner.options(
            name=name,
            namespace=self.namespace,
            lifetime="detached",
            max_concurrency=4,  # a blocking call never holds up poll and read_log
            max_restarts=0,
            scheduling_strategy=PlacementGroupSchedulingStrategy(pg, 0),
            **resources,
        ).remote()
        keys = ("argv", "env", "trial_id", "run_id", "token", "work_root", "pool")
        spec = {k: a[k] for k in keys}
        spec.update(namespace=self.namespace, code=code, config=config, slot_kind=kind)
        spec["slots"] = count
        try:
            info = self._get(actor.start.remote(spec))
        except Exception:
            self.ray.kill(actor, no_restart=True)
            self.ray.util.remove_placement_group(pg)
            raise
        with self._lock:
            self._actors[name] = actor
        info["placed_s"] = round(time.monotonic() - started, 3)
        return info

    def op_poll(self, **a: Any) -> dict[str, Any]:
        name = a["actor"]
        with self._lock:
            if name in self._ended:
                return self._ended[name]
        actor = self._actor(name)
        if actor is None:
            return self._end(a, "its Ray actor is gone")
        try:
            code = self._get(actor.poll.remote())
        except self.dead_errors as exc:
            return self._end(a, f"its Ray actor died: {str(exc).splitlines()[0]}")
        if code is None:
            return {"status": "RUNNING"}
        self._forget(name, a.get("pg"))  # frees the slots; output and code stay on the node
        return self._remember(name, {"status": "EXITED", "code": code})

    def _end(self, a: dict[str, Any], why: str) -> dict[str, Any]:
        """The actor is gone: the node's exit file says whether the trial had ended."""
        self._forget(a["actor"], a.get("pg"))
        try:
            _, _, code = self._node_files(a, 0)
        except Exception as exc:  # noqa: BLE001 - the node itself may be gone
            why = f"{why}; its node cannot be read: {str(exc).splitlines()[0]}"
            code = None
        if code is None:
            return self._remember(a["actor"], {"status": "LOST", "reason": why})
        return self._remember(a["actor"], {"status": "EXITED", "code": code})

    def _remember(self, name: str, answer: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._ended[name] = answer
        return answer

    def op_terminate(self, actor: str, grace_s: float) -> None:
        handle = self._actor(actor)
        if handle is not None:
            handle.terminate.remote(grace_s)  # returns at once; the actor escalates

    def op_read_log(self, **a: Any) -> dict[str, Any]:
        actor = self._actor(a["actor"])
        offset = a["offset"]
        try:
            if actor is None:
                raise LookupError
            new, data = self._get(actor.read_log.remote(offset))
        except (LookupError, *self.dead_errors):
            new, data, _ = self._node_files(a, offset)
        return {"offset": new, "data": protocol.to_b64(data)}

    def op_release(self, actor: str, pg: str | None = None) -> None:
        self._forget(actor, pg)

    def op_recover(self, **a: Any) -> dict[str, Any]:
        if self._actor(a["actor"]) is not None:
            return {"found": True}
        state = self.op_poll(**a)  # gone: found only if the node recorded its exit
        return {"found": state["status"] == "EXITED"}


def _connect(address: str, namespace: str) -> None:
    import ray

    host, _, port = address.rpartition(":")
    # ray.init to an address nobody listens on hangs for minutes: fail fast instead.
    with socket.create_connection((host, int(port)), timeout=_CONNECT_CHECK_S):
        pass
    ray.init(
        address=address,
        namespace=namespace,
        logging_level=logging.WARNING,
        log_to_driver=False,  # the actors' output goes to the trials' logs, not here
        configure_logging=False,
    )


def _serve(driver: Driver, out: BinaryIO) -> None:
    write_lock = threading.Lock()

    def answer(message: dict[str, Any]) -> None:
        with write_lock:
            out.write(protocol.encode(message))
            out.flush()

    def handle(request: dict[str, Any]) -> None:
        rid, op = request.get("id"), request.get("op")
        try:
            if op not in protocol.OPS:
                raise ValueError(f"unknown request {op!r}")
            result = getattr(driver, f"op_{op}")(**request.get("args", {}))
            answer({"id": rid, "ok": True, "result": result})
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the master
            answer({"id": rid, "ok": False, "kind": type(exc).__name__, "error": str(exc)})

    pool = ThreadPoolExecutor(max_workers=16)
    for line in sys.stdin.buffer:
        if line.strip():
            pool.submit(handle, protocol.decode(line))
    # EOF: the master closed us or died. Nobody reads answers any more, and a driver's
    # shutdown may wait for a cluster that is gone: leave at once (the actors live on).
    os._exit(0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m shipyard.backends.ray.driver")
    parser.add_argument("--address", required=True)
    parser.add_argument("--namespace", required=True)
    parser.add_argument("--timeout-s", type=float, default=30.0)
    args = parser.parse_args(argv)
    # The protocol owns the real stdout; whatever Ray prints goes to stderr.
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        _connect(args.address, args.namespace)
        driver = Driver(args.address, args.namespace, args.timeout_s)
    except Exception as exc:  # noqa: BLE001 - why we could not connect, for health()
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        out.write(protocol.encode({"id": protocol.READY_ID, "ok": False, "error": detail}))
        out.flush()
        return 1
    out.write(protocol.encode({"id": protocol.READY_ID, "ok": True, "result": "ready"}))
    out.flush()
    _serve(driver, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
