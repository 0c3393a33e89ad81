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

from shipyard.backends.ray import payload, placement, protocol
from shipyard.backends.ray.runner import TrialRunner, read_run_files

_CONNECT_CHECK_S = 2.0
# The launchers that take the multi-node variables (launch/_nodes.py); anything else would run
# once per node, each copy believing it is the whole trial.
MULTI_NODE_LAUNCHERS = (
    "shipyard.launch.torch_distributed",
    "shipyard.launch.tensorflow",
    "shipyard.launch.mpi",
    # Determined's, which run Shipyard's (integrations/determined_compat)
    "determined.launch.torch_distributed",
    "determined.launch.deepspeed",
    "determined.launch.tensorflow",
    # entrypoint model_def:MyTrial: it starts itself under shipyard.launch.torch_distributed
    "shipyard.integrations.determined_trial.run",
)


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
        self._ended: dict[str, dict[str, Any]] = {}  # run -> final poll answer
        self._failures: dict[str, int] = {}  # run -> the first non-zero exit code seen
        self._stopping: set[str] = set()  # runs whose other nodes were sent SIGTERM
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

    def _node_files(self, m: dict[str, Any], offset: int) -> tuple[int, bytes, int | None]:
        return self._get(self._on_node(m["node_id"]).remote(m["log"], offset, m["exit_file"]))

    def _kill(self, name: str) -> None:
        """Kill one actor, the trial's whole process group first."""
        with self._lock:
            actor = self._actors.pop(name, None)
        actor = actor or self._actor(name)
        with self._lock:
            self._actors.pop(name, None)
        if actor is not None:
            try:
                self._get(actor.kill.remote())
            except (*self.dead_errors, *self.timeout_errors):
                pass
            self.ray.kill(actor, no_restart=True)

    def _forget(self, names: list[str], pg_name: str | None) -> None:
        """Kill the run's actors and free its placement group (its slots)."""
        for name in names:
            self._kill(name)
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
        """One placement group of n bundles and one actor per bundle; with n > 1 each runs
        the trial's command as one node of the launchers' multi-node contract."""
        from ray.util.placement_group import placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        kind, count, strategy = a["slot_kind"], a["slots"], a["placement_strategy"]
        key = "GPU" if kind == "gpu" else "CPU"
        sizes = [n for n in self.op_capacity(kind)["nodes"].values() if n > 0]
        try:
            n = placement.bundle_count(count, strategy, sizes)
        except placement.DoesNotFit as exc:
            raise NotSupportedYet(f"{exc} ({key}s)") from None
        per = count // n
        if n > 1 and not any(arg in MULTI_NODE_LAUNCHERS for arg in a["argv"]):
            raise NotSupportedYet(
                f"placement_strategy {strategy} puts this trial's {count} slots on {n} nodes, "
                "and only a launcher runs on several nodes: use an entrypoint like python3 -m "
                "shipyard.launch.torch_distributed python3 train.py (or "
                "shipyard.launch.tensorflow, or shipyard.launch.mpi), or placement_strategy "
                "STRICT_PACK"
            )
        code = payload.pack(a["workdir"], a["max_code_bytes"], skip=tuple(a["skip"]))
        config = None
        if a.get("config_path") and os.path.isfile(a["config_path"]):
            with open(a["config_path"], "rb") as f:
                config = f.read()
        names = member_names(a["actor"], n)
        if any(self._actor(name) is not None for name in names):  # orphans of a dead master
            self._forget(names, a["pg"])
        # One bundle per actor: the actor holding it sees its GPUs (Ray sets
        # CUDA_VISIBLE_DEVICES). One bundle is STRICT_PACK, as a one-node trial always was.
        pg = placement_group(
            [{key: float(per)}] * n,
            strategy="STRICT_PACK" if n == 1 else strategy,
            name=a["pg"],
            lifetime="detached",
        )
        started = time.monotonic()
        if not pg.wait(timeout_seconds=a["wait_s"]):
            self.ray.util.remove_placement_group(pg)
            where = "on one node" if n == 1 else f"as {n} bundles of {per} ({strategy})"
            raise RuntimeError(
                f"the Ray cluster did not give {count} {key}(s) {where} within "
                f"{a['wait_s']:.0f} s (busy, or no node that large)"
            )
        resources = {"num_gpus": per, "num_cpus": 0} if kind == "gpu" else {"num_cpus": per}
        actors: list[Any] = []
        try:
            for index, name in enumerate(names):
                actors.append(
                    self.runner.options(
                        name=name,
                        namespace=self.namespace,
                        lifetime="detached",
                        max_concurrency=4,  # a blocking call never holds up poll and read_log
                        max_restarts=0,
                        scheduling_strategy=PlacementGroupSchedulingStrategy(pg, index),
                        **resources,
                    ).remote()
                )
            keys = ("argv", "env", "trial_id", "run_id", "token", "work_root", "pool")
            spec = {k: a[k] for k in keys}
            spec.update(namespace=self.namespace, code=code, config=config, slot_kind=kind)
            spec["image"] = a.get("image")  # every node runs the image id the master found
            spec["slots"] = per
            specs = [spec]
            if n > 1:  # node 0's actor finds the rendezvous address on its node
                rendezvous = self._get(actors[0].rendezvous.remote())
                specs = [node_spec(spec, k, n, rendezvous) for k in range(n)]
            starts = [actor.start.remote(s) for actor, s in zip(actors, specs, strict=True)]
            infos = self._get(starts)
        except Exception:
            for actor in actors:
                self.ray.kill(actor, no_restart=True)
            self.ray.util.remove_placement_group(pg)
            raise
        with self._lock:
            self._actors.update(zip(names, actors, strict=True))
        for name, info in zip(names, infos, strict=True):
            info["actor"] = name
        return {"members": infos, "placed_s": round(time.monotonic() - started, 3)}

    def op_poll(self, **a: Any) -> dict[str, Any]:
        """The gang's state: EXITED 0 once every actor's trial exited 0; on a non-zero exit
        the others get SIGTERM (SIGKILL after grace_s) and the run EXITED with that code once
        they are down; LOST as soon as an actor is gone with no exit recorded."""
        key, members = a["key"], a["members"]
        with self._lock:
            if key in self._ended:
                return self._ended[key]
        states = [self._member(m) for m in members]
        lost = [(m, s) for m, s in zip(members, states, strict=True) if s["status"] == "LOST"]
        if lost:
            self._forget([m["actor"] for m in members], a.get("pg"))
            member, state = lost[0]
            reason = state["reason"] if len(members) == 1 else f"{_node(member)}: {state['reason']}"
            return self._remember(key, {"status": "LOST", "reason": reason})
        codes = [s.get("code") for s in states]
        failed = [c for c in codes if c not in (None, 0)]
        if failed:
            with self._lock:
                first = self._failures.setdefault(key, failed[0])
            if None in codes:  # end the other nodes too: the gang is one unit
                self._stop_once(key, members, codes, a.get("grace_s", 10.0))
                return {"status": "RUNNING"}
            self._forget([m["actor"] for m in members], a.get("pg"))
            return self._remember(key, {"status": "EXITED", "code": first})
        if None in codes:
            return {"status": "RUNNING"}
        self._forget([m["actor"] for m in members], a.get("pg"))  # frees the slots
        return self._remember(key, {"status": "EXITED", "code": 0})

    def _member(self, m: dict[str, Any]) -> dict[str, Any]:
        """One actor's trial: RUNNING, EXITED (code) or LOST (reason)."""
        actor = self._actor(m["actor"])
        why = "its Ray actor is gone"
        if actor is not None:
            try:
                code = self._get(actor.poll.remote())
            except self.dead_errors as exc:
                why = f"its Ray actor died: {str(exc).splitlines()[0]}"
            else:
                return {"status": "RUNNING"} if code is None else {"status": "EXITED", "code": code}
        self._kill(m["actor"])
        try:  # the actor is gone: the node's exit file says whether the trial had ended
            _, _, code = self._node_files(m, 0)
        except Exception as exc:  # noqa: BLE001 - the node itself may be gone
            why = f"{why}; its node cannot be read: {str(exc).splitlines()[0]}"
            code = None
        if code is None:
            return {"status": "LOST", "reason": why}
        return {"status": "EXITED", "code": code}

    def _stop_once(self, key: str, members: list, codes: list, grace_s: float) -> None:
        with self._lock:
            if key in self._stopping:
                return
            self._stopping.add(key)
        for member, code in zip(members, codes, strict=True):
            if code is None:
                self.op_terminate([member], grace_s)

    def _remember(self, key: str, answer: dict[str, Any]) -> dict[str, Any]:
        with self._lock:
            self._ended[key] = answer
            self._stopping.discard(key)
            self._failures.pop(key, None)
        return answer

    def op_terminate(self, members: list[dict[str, Any]], grace_s: float) -> None:
        for member in members:
            handle = self._actor(member["actor"])
            if handle is not None:
                handle.terminate.remote(grace_s)  # returns at once; the actor escalates

    def op_read_log(self, member: dict[str, Any], offset: int) -> dict[str, Any]:
        actor = self._actor(member["actor"])
        try:
            if actor is None:
                raise LookupError
            new, data = self._get(actor.read_log.remote(offset))
        except (LookupError, *self.dead_errors):
            new, data, _ = self._node_files(member, offset)
        return {"offset": new, "data": protocol.to_b64(data)}

    def op_release(self, members: list[dict[str, Any]], pg: str | None = None) -> None:
        self._forget([m["actor"] for m in members], pg)

    def op_recover(self, **a: Any) -> dict[str, Any]:
        if all(self._actor(m["actor"]) is not None for m in a["members"]):
            return {"found": True}
        state = self.op_poll(**a)  # some gone: found only if they recorded their exits
        return {"found": state["status"] != "LOST"}


def member_names(base: str, n: int) -> list[str]:
    """The actors of a run: the run's name alone for one node, "-node-<k>" for several."""
    return [base] if n == 1 else [f"{base}-node-{k}" for k in range(n)]


def node_spec(spec: dict[str, Any], rank: int, nodes: int, rendezvous: str) -> dict[str, Any]:
    """Node ``rank``'s start: the launchers' multi-node variables (launch/_nodes.py)."""
    env = dict(spec["env"])
    env.update(
        SHIPYARD_NUM_NODES=str(nodes),
        SHIPYARD_NODE_RANK=str(rank),
        SHIPYARD_RENDEZVOUS_ADDR=rendezvous,
    )
    return {**spec, "env": env, "node_rank": rank}


def _node(member: dict[str, Any]) -> str:
    return f"actor {member['actor']} on node {member['node_id']}"


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
