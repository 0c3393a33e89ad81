"""Shipyard's `determined` shim in local mode (no master), in a process of its own as a
trial imports it: what Shipyard lacks raises when used (never on import), a hand-built
DistributedContext must match the launcher's ranks, and op.report_completed gives the
searcher its metric when the script reported none. With two real rank processes: the
chief-only calls and sharded checkpoints of Determined's semantics."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from shipyard.common.config import load_config
from shipyard.common.determined_shim import shim_dir
from tests.core.test_distributed import run_ranks
from tests.doc_blocks import block_with

DOC = Path(__file__).resolve().parents[2] / "docs" / "determined.md"

SCRIPT = textwrap.dedent(
    """
    import determined as det
    import determined.keras, determined.experimental  # importing what is missing works
    from determined import core

    def refused(call):
        try:
            call()
        except NotImplementedError as exc:
            return str(exc)
        raise AssertionError("not refused")

    print("shim", det.__shipyard_shim__, det.get_cluster_info())
    print("keras:", refused(lambda: det.keras.TFKerasTrial))
    print("storage:", refused(lambda: core.init(checkpoint_storage="/tmp/x")))
    try:
        core.DistributedContext(rank=1, size=2, local_rank=1, local_size=2, cross_rank=0,
                                cross_size=1)
    except ValueError as exc:
        print("mismatch:", exc)
    with core.init() as ctx:
        print("profiler:", refused(ctx.profiler.on))
        for op in ctx.searcher.operations():
            op.report_progress(op.length / 2)
            op.report_completed(0.25)
    """
)


def run_local(
    script: str, cwd: Path, extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess:
    """``script`` as a trial's process imports `determined`, without a master: a searcher
    of max_length 4 on val_loss."""
    env = dict(os.environ, PYTHONPATH=shim_dir(), SHIPYARD_SEARCHER_MAX_LENGTH="4")
    env.update(extra or {})
    env["SHIPYARD_SEARCHER_METRIC"] = "val_loss"
    for name in ("SHIPYARD_MASTER", "SHIPYARD_TRIAL_ID", "SHIPYARD_SIZE", "SHIPYARD_RANK"):
        env.pop(name, None)
    return subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_local_mode_refuses_what_is_missing_and_completes_operations(tmp_path):
    done = run_local(SCRIPT, tmp_path)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "shim True None" in out
    assert "keras: determined.keras.TFKerasTrial is not supported yet" in out
    assert "storage: det.core.init(checkpoint_storage=...) is not supported yet" in out
    assert "mismatch: DistributedContext(rank=1, size=2) does not match" in out
    assert "profiler: core_context.profiler.on() is not supported yet" in out
    assert "[shipyard] progress 50.0%" in out
    assert "[shipyard] validation steps=4 val_loss=0.25" in out  # from report_completed


def test_the_docs_example_runs_and_its_config_is_valid(tmp_path):
    config = load_config(block_with(DOC, "determined.launch.torch_distributed"))
    assert config.resources.slots_per_trial == 2
    done = run_local(block_with(DOC, "core.init(distributed=distributed)", "python"), tmp_path)
    assert done.returncode == 0, done.stderr
    assert "[shipyard] validation steps=4 val_loss=0.0025" in done.stdout
    assert "[shipyard] checkpoint" in done.stdout


UNITS = """
from determined import core

with core.init() as ctx:
    print("unit:", ctx.searcher.get_configured_units())
"""


def test_get_configured_units_reads_the_stored_configs_unit(tmp_path):
    searcher = "searcher: {name: single, metric: val_loss, max_length: %s}\nentrypoint: x.py\n"
    for length, unit in (
        ("{epochs: 2}", "Unit.EPOCHS"),
        ("{records: 64}", "Unit.RECORDS"),
        ("{batches: 9}", "Unit.BATCHES"),
        ("9", "None"),
    ):
        stored = tmp_path / "config.json"  # as the master writes it for a trial
        stored.write_text(json.dumps(load_config(searcher % length).to_json_dict()))
        done = run_local(UNITS, tmp_path, {"SHIPYARD_EXPERIMENT_CONFIG": str(stored)})
        assert done.returncode == 0, done.stderr
        assert f"unit: {unit}" in done.stdout, length


INVALID_HP = """
import determined as det
from determined import core

with core.init() as ctx:
    ctx.train.report_training_metrics(steps_completed=1, metrics={"loss": 1.0})
    raise det.InvalidHP("lr too large")
print("after the block")
"""


def test_invalid_hp_ends_the_process_with_code_0_as_determined_does(tmp_path):
    done = run_local(INVALID_HP, tmp_path)
    assert done.returncode == 0, done.stderr  # 0: the trial is not restarted
    assert "[shipyard] training steps=1 loss=1" in done.stdout  # delivered first
    assert "det.InvalidHP: lr too large; the trial ends here, without a restart" in done.stderr
    assert "after the block" not in done.stdout


TWO_RANKS = """
import json
import determined as det
from determined import core

def error(call):
    try:
        call()
    except (ValueError, RuntimeError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None

def sharded(metadata):
    with ctx.checkpoint.store_path(metadata, shard=True) as (path, sid):
        (path / f"rank{rank}.txt").write_text(str(rank))
    return sid

with core.init(preempt_mode=core.PreemptMode.ChiefOnly) as ctx:
    rank = ctx.distributed.get_rank()
    out = {}
    # Determined's metadata is optional on every rank but one; dicts merge recursively.
    out["chief_only_md"] = sharded({"steps_completed": 3} if rank == 0 else None)
    out["nested"] = sharded(
        {"steps_completed": 4, "shards": {"rank0": 0}} if rank == 0 else {"shards": {"rank1": 1}}
    )
    # A conflict, or no steps_completed in the merged metadata: every rank raises the same.
    out["conflict"] = error(lambda: sharded({"steps_completed": 5, "shards": {"n": rank}}))
    out["no_steps"] = error(lambda: sharded({"other": 1} if rank else None))
    # The chief's own contexts, with no collective the other rank is not in.
    if rank == 0:
        out["preempt"] = ctx.preempt.should_preempt()
        out["lengths"] = []
        for op in ctx.searcher.operations(searcher_mode=core.SearcherMode.ChiefOnly):
            out["lengths"].append(op.length)
            op.report_completed(0.5)
        with ctx.checkpoint.store_path({"steps_completed": 6}) as (path, sid):
            (path / "model.txt").write_text("chief")
        out["whole"] = sid
    out["after"] = ctx.distributed.broadcast(out.get("whole"))
    print("RESULT " + json.dumps(out), flush=True)
"""


def test_two_ranks_chief_only_calls_and_sharded_metadata(tmp_path):
    storage = tmp_path / "ckpt"
    env = {
        "PYTHONPATH": shim_dir(),
        "SHIPYARD_CHECKPOINT_STORAGE": json.dumps({"type": "shared_fs", "base_path": str(storage)}),
        "SHIPYARD_SEARCHER_MAX_LENGTH": "4",
        "SHIPYARD_SEARCHER_METRIC": "val_loss",
    }
    ranks = run_ranks(tmp_path, TWO_RANKS, size=2, env=env, timeout=60)
    for rank in ranks:
        assert rank.returncode == 0, rank.stderr
    chief, worker = (rank.result() for rank in ranks)
    for key in ("chief_only_md", "nested", "conflict", "no_steps"):
        assert chief[key] == worker[key], key
    assert (
        json.loads((storage / chief["chief_only_md"] / "metadata.json").read_text())[
            "steps_completed"
        ]
        == 3
    )
    nested = json.loads((storage / chief["nested"] / "metadata.json").read_text())
    assert nested["shards"] == {"rank0": 0, "rank1": 1}
    assert nested["resources"] == {"rank0.txt": 1, "rank1.txt": 1}
    assert chief["conflict"].startswith("ValueError: refusing to store a checkpoint whose")
    assert "/shards/n (ranks [0, 1])" in chief["conflict"]
    assert "merged from every rank's" in chief["no_steps"]
    assert chief["preempt"] is False and chief["lengths"] == [4]
    assert "[shipyard] validation steps=4 val_loss=0.5" in ranks[0].stdout
    assert worker["after"] == chief["whole"]
    whole = json.loads((storage / chief["whole"] / "metadata.json").read_text())
    assert whole["resources"] == {"model.txt": 5}
