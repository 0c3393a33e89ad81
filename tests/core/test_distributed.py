"""ctx.distributed with several ranks: real rank processes talking through a real coordinator
(shipyard.launch._coordinator.serve), started here as a launcher would start it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from shipyard.common.errors import InvalidRequest
from shipyard.launch._coordinator import serve
from tests.core.conftest import run_script


@dataclass
class Rank:
    returncode: int
    stdout: str
    stderr: str

    def result(self) -> dict:
        (line,) = [x for x in self.stdout.splitlines() if x.startswith("RESULT ")]
        return json.loads(line.removeprefix("RESULT "))


def run_ranks(
    directory: Path,
    source: str,
    *,
    size: int,
    env: dict[str, str] | None = None,
    rank_env: dict[int, dict[str, str]] | None = None,
    delay: dict[int, float] | None = None,
    timeout: float = 60,
) -> list[Rank]:
    """Start a coordinator and ``size`` processes running ``source`` with the launcher's env
    contract; wait for all of them. ``delay`` starts some ranks late."""
    script = directory / "train.py"
    script.write_text(source)
    addr, stop = serve(size=size)
    base = {k: v for k, v in os.environ.items() if not k.startswith("SHIPYARD_")}
    base.update(env or {})
    procs = []
    try:
        for rank in sorted(range(size), key=lambda r: (delay or {}).get(r, 0.0)):
            wait = (delay or {}).get(rank, 0.0)
            if wait:
                time.sleep(wait)
            rank_vars = {
                "SHIPYARD_RANK": str(rank),
                "SHIPYARD_SIZE": str(size),
                "SHIPYARD_LOCAL_RANK": str(rank),
                "SHIPYARD_LOCAL_SIZE": str(size),
                "SHIPYARD_DIST_ADDR": addr,
            }
            proc_env = {**base, **rank_vars, **(rank_env or {}).get(rank, {})}
            proc = subprocess.Popen(
                [sys.executable, str(script)],
                cwd=directory,
                env=proc_env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            procs.append((rank, proc))
        results: dict[int, Rank] = {}
        for rank, proc in procs:
            out, err = proc.communicate(timeout=timeout)
            results[rank] = Rank(proc.returncode, out, err)
        return [results[r] for r in range(size)]
    finally:
        for _, proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        stop()


COLLECTIVES = """
import json, time
import shipyard.core

with shipyard.core.init() as ctx:
    d = ctx.distributed
    out = {"who": [d.rank, d.size, d.local_rank, d.local_size, d.is_chief]}
    out["allgather"] = d.allgather({"rank": d.rank, "square": d.rank ** 2})
    out["broadcast"] = d.broadcast(f"from rank {d.rank}")
    out["broadcast_root2"] = d.broadcast(d.rank * 10, root=2)
    out["gather"] = d.gather(d.rank + 100)
    if d.rank == 2:
        time.sleep(0.5)
    out["before_barrier"] = time.time()
    d.barrier()
    out["after_barrier"] = time.time()
    size = 2 * 1024 * 1024
    big = d.allgather(bytes([d.rank]) * size)
    out["big"] = [len(b) == size and b[0] == b[-1] == i for i, b in enumerate(big)]
    out["big_broadcast"] = len(d.broadcast(b"x" * size if d.is_chief else None))
    start = time.perf_counter()
    total = 0
    for i in range(200):
        total += sum(d.allgather(i + d.rank))
    out["loop_total"] = total
    out["loop_s"] = time.perf_counter() - start
    print("RESULT " + json.dumps(out))
"""


def test_collectives_among_three_real_processes(tmp_path):
    ranks = run_ranks(tmp_path, COLLECTIVES, size=3, delay={2: 1.0})  # rank 2 connects late

    for rank in ranks:
        assert rank.returncode == 0, rank.stderr
    results = [rank.result() for rank in ranks]
    for r, out in enumerate(results):
        assert out["who"] == [r, 3, r, 3, r == 0]
        assert out["allgather"] == [{"rank": i, "square": i * i} for i in range(3)]
        assert out["broadcast"] == "from rank 0"
        assert out["broadcast_root2"] == 20
        assert out["gather"] == ([100, 101, 102] if r == 0 else None)
        assert out["big"] == [True, True, True]
        assert out["big_broadcast"] == 2 * 1024 * 1024
        assert out["loop_total"] == sum(3 * i + 3 for i in range(200))
        assert out["loop_s"] < 10
    # Nobody left the barrier before the last rank (rank 2, which slept) reached it.
    assert min(out["after_barrier"] for out in results) >= results[2]["before_barrier"]


EXITS_EARLY = """
import sys
import shipyard.core

with shipyard.core.init() as ctx:
    ctx.distributed.barrier()
    if ctx.distributed.rank == 1:
        sys.exit(3)
    ctx.distributed.allgather("never answered")
"""


def test_a_rank_that_exits_makes_the_others_fail_at_once(tmp_path):
    started = time.monotonic()
    ranks = run_ranks(tmp_path, EXITS_EARLY, size=3, env={"SHIPYARD_DIST_TIMEOUT_S": "60"})

    assert time.monotonic() - started < 20  # not the 60 s timeout
    assert ranks[1].returncode == 3
    for rank in (ranks[0], ranks[2]):
        assert rank.returncode == 1
        assert "CollectiveError: rank 1 left before collective #2" in rank.stderr, rank.stderr


HANGS = """
import time
import shipyard.core

with shipyard.core.init() as ctx:
    ctx.distributed.barrier()
    if ctx.distributed.rank == 1:
        time.sleep(30)
    ctx.distributed.allgather("waits for rank 1")
"""


def test_a_rank_that_does_not_arrive_fails_the_collective_at_the_timeout(tmp_path):
    started = time.monotonic()
    script = tmp_path / "train.py"
    script.write_text(HANGS)
    addr, stop = serve(size=3)
    procs = {}
    try:
        for rank in range(3):
            env = {k: v for k, v in os.environ.items() if not k.startswith("SHIPYARD_")}
            env.update(
                SHIPYARD_RANK=str(rank),
                SHIPYARD_SIZE="3",
                SHIPYARD_DIST_ADDR=addr,
                SHIPYARD_DIST_TIMEOUT_S="1",
            )
            procs[rank] = subprocess.Popen(
                [sys.executable, str(script)],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        for rank in (0, 2):
            _, err = procs[rank].communicate(timeout=20)
            assert procs[rank].returncode == 1
            assert "CollectiveError: rank 1 did not reach collective #2 within 1 s" in err, err
        assert time.monotonic() - started < 15  # the 1 s timeout, not rank 1's 30 s sleep
    finally:
        for proc in procs.values():
            proc.kill()
            proc.wait()
        stop()


MISMATCH = """
import shipyard.core

with shipyard.core.init() as ctx:
    if ctx.distributed.is_chief:
        ctx.distributed.broadcast(1)
    else:
        ctx.distributed.barrier()
"""


def test_ranks_calling_different_collectives_get_a_clear_error(tmp_path):
    ranks = run_ranks(tmp_path, MISMATCH, size=2)

    for rank in ranks:
        assert rank.returncode == 1
        assert (
            "collective #1 does not match across ranks: rank 0 called broadcast/0, "
            "rank 1 called barrier; every rank must call the same collectives in the same order"
        ) in rank.stderr


def test_one_process_needs_no_coordinator(tmp_path):
    script = """
import shipyard.core
with shipyard.core.init() as ctx:
    d = ctx.distributed
    d.barrier()
    print(d.rank, d.size, d.local_rank, d.local_size, d.is_chief,
          d.allgather("a"), d.broadcast("b"), d.gather("c"))
"""
    result = run_script(tmp_path, script, env={"SHIPYARD_SIZE": "1"})

    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "0 1 0 1 True ['a'] b ['c']"


def test_several_ranks_without_a_coordinator_address_name_the_launcher(monkeypatch):
    import shipyard.core

    monkeypatch.setenv("SHIPYARD_SIZE", "2")
    monkeypatch.setenv("SHIPYARD_RANK", "1")
    with pytest.raises(InvalidRequest, match="SHIPYARD_DIST_ADDR is not set.*launcher"):
        shipyard.core.init()


CHIEF_DECIDES = """
import json, os
import shipyard.core

with shipyard.core.init() as ctx:
    d = ctx.distributed
    out = {"target": ctx.searcher.target}
    out["lengths"] = [op.length for op in ctx.searcher.operations()]
    out["preempt"] = ctx.preempt.should_preempt()
    out["stop"] = ctx.searcher.should_stop()
    ctx.train.report_training_metrics(1, {"loss": 0.5 + d.rank})  # printed by the chief only

    with ctx.checkpoint.store_path({"steps_completed": 7}, shard=True) as (path, uuid):
        (path / f"rank{d.rank}.txt").write_text(str(d.rank))
    out["sharded"] = uuid
    out["latest_after_sharded"] = ctx.info.latest_checkpoint

    with ctx.checkpoint.store_path({"steps_completed": 8}) as (path, uuid):
        if path:
            (path / "model.txt").write_text("chief")
        else:
            try:
                open(path / "x", "w")
            except Exception as exc:
                out["misuse"] = f"{type(exc).__name__}: {exc}"
    out["whole"] = uuid
    with ctx.checkpoint.restore_path(out["sharded"]) as restored:
        out["restored"] = sorted(p.name for p in restored.iterdir())
    out["latest"] = ctx.info.latest_checkpoint
    print("RESULT " + json.dumps(out))
"""


def test_chief_decides_in_local_mode(tmp_path):
    storage = tmp_path / "ckpt"
    env = {
        "SHIPYARD_CHECKPOINT_STORAGE": json.dumps({"type": "shared_fs", "base_path": str(storage)})
    }
    # Each rank reads its own environment; the chief's answers are the ones every rank gets.
    rank_env = {
        0: {"SHIPYARD_SEARCHER_MAX_LENGTH": "30"},
        1: {"SHIPYARD_SEARCHER_MAX_LENGTH": "99"},
    }

    ranks = run_ranks(tmp_path, CHIEF_DECIDES, size=2, env=env, rank_env=rank_env)

    for rank in ranks:
        assert rank.returncode == 0, rank.stderr
    chief, worker = (rank.result() for rank in ranks)
    for out in (chief, worker):
        assert out["target"] == 30
        assert out["lengths"] == [30]
        assert out["preempt"] is False and out["stop"] is False
        assert out["latest_after_sharded"] == out["sharded"]
        assert out["latest"] == out["whole"]
        assert out["restored"] == ["metadata.json", "rank0.txt", "rank1.txt"]
    assert chief["sharded"] == worker["sharded"] and chief["whole"] == worker["whole"]
    assert "[shipyard] training steps=1 loss=0.5" in ranks[0].stdout
    assert "[shipyard] training" not in ranks[1].stdout
    assert "misuse" not in chief
    assert worker["misuse"].startswith(
        f"InvalidRequest: rank 1 has no directory for checkpoint {worker['whole']}"
    )

    sharded = json.loads((storage / chief["sharded"] / "metadata.json").read_text())
    assert sharded["resources"] == {"rank0.txt": 1, "rank1.txt": 1}
    assert sharded["steps_completed"] == 7
    whole = json.loads((storage / chief["whole"] / "metadata.json").read_text())
    assert whole["resources"] == {"model.txt": 5}
    assert sorted(p.name for p in storage.iterdir()) == sorted([chief["sharded"], chief["whole"]])


FAILS_WHILE_WRITING = """
import shipyard.core

with shipyard.core.init() as ctx:
    try:
        with ctx.checkpoint.store_path(shard=True) as (path, uuid):
            (path / f"rank{ctx.distributed.rank}.txt").write_text("x")
            if ctx.distributed.rank == 1:
                raise ValueError("rank 1 broke")
    except Exception as exc:
        print(f"RAISED {type(exc).__name__}: {exc}")
    print("LATEST", ctx.info.latest_checkpoint)
"""


def test_a_rank_failing_in_a_sharded_checkpoint_fails_it_everywhere(tmp_path):
    storage = tmp_path / "ckpt"
    env = {
        "SHIPYARD_CHECKPOINT_STORAGE": json.dumps({"type": "shared_fs", "base_path": str(storage)})
    }

    chief, worker = run_ranks(tmp_path, FAILS_WHILE_WRITING, size=2, env=env)

    assert chief.returncode == worker.returncode == 0, chief.stderr + worker.stderr
    assert "RAISED ValueError: rank 1 broke" in worker.stdout
    assert "RAISED CheckpointWriteError: checkpoint " in chief.stdout
    assert "was not stored: rank 1: ValueError: rank 1 broke" in chief.stdout
    assert "LATEST None" in chief.stdout and "LATEST None" in worker.stdout
    assert [p for p in storage.iterdir() if not p.name.startswith(".")] == []


def test_the_several_ranks_example_in_the_docs_runs_with_two_ranks(tmp_path):
    doc = (Path(__file__).resolve().parents[2] / "docs" / "core-api.md").read_text()
    section = doc[doc.index("### Several ranks: the chief decides") :]
    source = section.split("```python\n", 1)[1].split("```", 1)[0]

    chief, worker = run_ranks(tmp_path, source, size=2)

    assert chief.returncode == worker.returncode == 0, chief.stderr + worker.stderr
    assert "[shipyard] training steps=1 loss=0.75" in chief.stdout.splitlines()
    assert "[shipyard] training" not in worker.stdout
    checkpoints = [json.loads(p.read_text()) for p in tmp_path.glob("checkpoints/*/metadata.json")]
    assert sorted(m["steps_completed"] for m in checkpoints) == [50, 100]
    assert all(sorted(m["resources"]) == ["rank0.txt", "rank1.txt"] for m in checkpoints)


WRITES_SHARDS = """
import os
import shipyard.core

with shipyard.core.init() as ctx:
    with ctx.checkpoint.store_path(steps_completed=5, shard=True) as (path, uuid):
        (path / f"rank{ctx.distributed.rank}.txt").write_text(str(ctx.distributed.rank))
    print("UUID", uuid)
"""

RESTORES_SHARDS = """
import os
import shipyard.core

with shipyard.core.init() as ctx:
    rank, uuid = ctx.distributed.rank, os.environ["UUID"]
    try:
        with ctx.checkpoint.restore_path(uuid) as path:
            print("READ", (path / f"rank{rank}.txt").read_text())
    except Exception as exc:
        print(f"RAISED {type(exc).__name__}: {exc}")
    with ctx.checkpoint.restore_path(uuid, reshard=True) as path:
        print("RESHARD", sorted(p.name for p in path.glob("rank*.txt")))
"""


def test_a_sharded_checkpoint_restores_only_with_the_world_size_that_wrote_it(tmp_path):
    storage = json.dumps({"type": "shared_fs", "base_path": str(tmp_path / "ckpt")})
    env = {"SHIPYARD_CHECKPOINT_STORAGE": storage}
    writers = run_ranks(tmp_path, WRITES_SHARDS, size=2, env=env)
    assert [w.returncode for w in writers] == [0, 0], writers[0].stderr + writers[1].stderr
    (uuid,) = {w.stdout.split("UUID ")[1].split()[0] for w in writers}
    env["UUID"] = uuid

    same = run_ranks(tmp_path, RESTORES_SHARDS, size=2, env=env)
    for rank, result in enumerate(same):
        assert result.returncode == 0, result.stderr
        assert f"READ {rank}" in result.stdout and "RAISED" not in result.stdout

    for size in (3, 1):
        for result in run_ranks(tmp_path, RESTORES_SHARDS, size=size, env=env):
            assert result.returncode == 0, result.stderr
            assert "READ" not in result.stdout
            assert (
                f"RAISED InvalidRequest: checkpoint {uuid} was written in shards by 2 ranks "
                f"(store_path(shard=True)) and this trial has {size}"
            ) in result.stdout
            assert "resources.slots_per_trial: 2" in result.stdout
            # reshard=True: the caller reads every rank's part itself
            assert "RESHARD ['rank0.txt', 'rank1.txt']" in result.stdout
