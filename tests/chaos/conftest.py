"""Fixtures of the chaos suite: the undisturbed reference run (once per session) and `chaos`,
which starts masters for a scenario, compares its run with the reference and cleans up."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.chaos import harness
from tests.chaos.harness import ChaosRun, Comparison, RunRecord
from tests.e2e.master import Master

REFERENCE_TIMEOUT_S = 120


def _cleanup(master: Master) -> None:
    """Stop the master and whatever trial processes of it are left (a master stopped with
    SIGTERM leaves its trials running, to re-attach them later)."""
    master.stop()
    for proc in harness.trial_processes(master).values():
        harness.kill9(proc.pid)


@pytest.fixture(scope="session")
def chaos_counts_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.getbasetemp() / "chaos"


@pytest.fixture(scope="session")
def reference(tmp_path_factory, chaos_counts_dir) -> RunRecord:
    """The experiment run once with no fault and no sleeps: what every scenario must equal."""
    started = time.monotonic()
    master = harness.start_master(tmp_path_factory.mktemp("reference") / "home")
    try:
        run = harness.create(master)
        harness.wait_terminal(run, REFERENCE_TIMEOUT_S)
        ref = harness.wait_retention(run, settle_s=7.0, expect=None)
    finally:
        _cleanup(master)
    steps = list(range(1, harness.MAX_STEPS + 1))
    validations = list(range(harness.CKPT_EVERY, harness.MAX_STEPS + 1, harness.CKPT_EVERY))
    assert ref.state == "COMPLETED"
    assert len(ref.trials) == len(harness.SEEDS) * len(harness.LRS)
    for trial in ref.trials.values():
        assert trial.state == "COMPLETED" and trial.restarts == 0, trial
        assert [s for s, _ in trial.series["training/loss"]] == steps
        assert [s for s, _ in trial.series["validation/validation_loss"]] == validations
        assert harness.MAX_STEPS in trial.kept  # the latest is always kept
    harness.write_counts(
        chaos_counts_dir,
        "reference",
        {
            "trials": len(ref.trials),
            "metric_points": sum(len(p) for t in ref.trials.values() for p in t.series.values()),
            "kept_checkpoints": {str(t.trial_id): t.kept for t in ref.trials.values()},
            "orphan_checkpoint_dirs": ref.orphan_dirs,
            "seconds": round(time.monotonic() - started, 1),
        },
    )
    return ref


class Chaos:
    """What a scenario test uses: start a master and the experiment, then finish (compare
    with the reference, write the counts, fail with the diff)."""

    def __init__(self, tmp_path: Path, counts_dir: Path, scenario: str) -> None:
        self.tmp_path = tmp_path
        self.counts_dir = counts_dir
        self.scenario = scenario
        self.masters: list[Master] = []

    def start(
        self,
        timing: dict[str, Any] | None = None,
        slots: int = harness.SLOTS,
        master_config: str | None = None,
        store: Path | None = None,
    ) -> ChaosRun:
        """`master_config`: the master's config file (resource pools); `store`: where the
        checkpoints go (default: in the master's home)."""
        master = harness.start_master(self.tmp_path / "home", slots=slots, config=master_config)
        self.masters.append(master)
        return harness.create(master, timing, store)

    def finish(self, run: ChaosRun, reference: RunRecord, timeout: float = 120) -> Comparison:
        harness.wait_terminal(run, timeout)
        ended = time.monotonic()
        record = harness.wait_retention(run, settle_s=15.0, expect=reference)
        result = harness.compare(reference, record)
        faulted = run.counts.pop("faulted_trial_ids", set())
        recovered = [
            tid
            for tid in sorted(faulted)
            if not any(line.startswith(f"trial {tid} ") for line in result.lines)
            and any(t.trial_id == tid and t.state == "COMPLETED" for t in record.trials.values())
        ]
        counts = {
            **run.counts,
            **result.counts(),
            "trials": len(record.trials),
            "trials_faulted": len(faulted),
            "trials_recovered": len(recovered),
            "restarts": sum(t.restarts for t in record.trials.values()),
            "orphan_checkpoint_dirs": record.orphan_dirs,
            "identical_to_reference": result.ok,
            "seconds_to_end": round(ended - run.started, 1),
            "seconds": round(time.monotonic() - run.started, 1),
        }
        harness.write_counts(self.counts_dir, self.scenario, counts)
        if not result.ok:
            suspicious = harness.master_log_lines(
                run.master, "ERROR", "WARNING", "Traceback", "Error"
            )
            raise AssertionError(
                f"{self.scenario}: the run differs from the undisturbed reference "
                f"({len(result.lines)} differences)\n  "
                + "\n  ".join(result.lines[:60])
                + "\nmaster log lines:\n  "
                + "\n  ".join(suspicious[-30:])
                + f"\ncounts: {counts}"
            )
        return result

    def close(self) -> None:
        for master in self.masters:
            _cleanup(master)


@pytest.fixture
def chaos(tmp_path, chaos_counts_dir, request):
    c = Chaos(tmp_path, chaos_counts_dir, request.node.name.removeprefix("test_"))
    yield c
    c.close()
