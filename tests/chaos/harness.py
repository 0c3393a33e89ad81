"""The chaos harness: run an experiment of deterministic trials undisturbed once, run it again
under a fault, and compare everything the master recorded.

The promise under test: a trial can be killed, preempted or lose its master at any moment, and
the experiment still finishes with every metric and checkpoint it had, none counted twice.

A scenario is one small test function:

    def test_something(chaos, reference):
        run = chaos.start(timing={"step_sleep": 0.02})   # a master and the experiment
        ...inject faults, counting them in run.counts...
        chaos.finish(run, reference)                     # wait, record, compare, report

`finish` fails with a readable diff (per trial, per metric series, per checkpoint) when the
run differs from the reference, and writes the scenario's counts to
<pytest tmp dir>/chaos/<scenario>.json (also printed as one JSON line).

The trial code (trial_code/train.py) reproduces every value exactly from (hparams, step), so
the comparison is exact: same steps, same values to the last bit, same kept checkpoints.
"""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.master import TERMINAL, Master
from tests.fixtures import procs
from tests.fixtures.poll import PollTimeout, poll

CODE = Path(__file__).parent / "trial_code"

# hparams that only change timing, never a number the trial reports: trials of two runs are
# matched on the other hparams.
TIMING_KEYS = frozenset({"step_sleep", "ckpt_sleep", "slow_ckpt_steps"})

MAX_STEPS = 120
CKPT_EVERY = 10
SEEDS = (11, 12, 13)
LRS = (0.03, 0.1)  # a grid of 3 x 2 = 6 trials
SLOTS = 2
RETENTION = {"save_trial_latest": 1, "save_trial_best": 1, "save_experiment_best": 2}
TRIAL_STATES_LIVE = {"QUEUED", "STARTING", "RUNNING", "PAUSED"}


def experiment_config(store: Path, timing: dict[str, Any] | None = None, max_restarts=30) -> str:
    hparams = {
        "seed": {"type": "categorical", "vals": list(SEEDS)},
        "lr": {"type": "categorical", "vals": list(LRS)},
        "momentum": 0.9,
        "hidden": 16,
        "ckpt_every": CKPT_EVERY,
    }
    for name, value in (timing or {}).items():
        assert name in TIMING_KEYS, name
        hparams[name] = {"type": "const", "val": value}
    config = {
        "name": "chaos",
        "entrypoint": "python3 train.py",
        "hyperparameters": hparams,
        "searcher": {
            "name": "grid",
            "metric": "validation_loss",
            "smaller_is_better": True,
            "max_length": {"batches": MAX_STEPS},
            "max_concurrent_trials": SLOTS,
        },
        "resources": {"slots_per_trial": 1},
        "max_restarts": max_restarts,
        "reproducibility": {"experiment_seed": 7},
        "environment": {"environment_variables": ["OPENBLAS_NUM_THREADS=1", "OMP_NUM_THREADS=1"]},
        "checkpoint_storage": {"type": "shared_fs", "host_path": str(store), **RETENTION},
    }
    return json.dumps(config)  # JSON is YAML


def chaos_seed(default: int) -> int:
    """The seed of a scenario's faults: its default, or CHAOS_SEED to explore others."""
    return int(os.environ.get("CHAOS_SEED", default))


def math_key(hparams: dict[str, Any]) -> str:
    return json.dumps({k: v for k, v in hparams.items() if k not in TIMING_KEYS}, sort_keys=True)


# -- what a run recorded -------------------------------------------------------------------


@dataclass
class TrialRecord:
    trial_id: int
    hparams: dict[str, Any]
    state: str
    restarts: int
    run_id: int
    latest_validation: float | None
    best_validation: float | None
    series: dict[str, list[tuple[int, float | None]]]  # "group/name" -> points, by step
    summaries: dict[str, dict[str, Any]]  # "group/name" -> count, last, min, max
    kept: list[int]  # steps_completed of the checkpoints kept, sorted
    exit_reason: str | None = None


@dataclass
class RunRecord:
    experiment_id: int
    state: str
    best_validation: float | None
    trials: dict[str, TrialRecord]  # by math_key
    orphan_dirs: list[str]  # checkpoint directories with no kept checkpoint ("uuid (why)")
    missing_dirs: list[str]  # kept checkpoints whose files are gone


@dataclass
class ChaosRun:
    """One experiment under test, with the master it runs on and the counts of a scenario."""

    master: Master
    experiment_id: int
    store: Path
    counts: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.monotonic)

    def experiment(self) -> dict:
        return self.master.experiment(self.experiment_id)

    def trials(self) -> list[dict]:
        return self.experiment()["trials"]

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n


def record(master: Master, exp_id: int, store: Path) -> RunRecord:
    exp = master.experiment(exp_id)
    kept_rows = master.http.get(f"/experiments/{exp_id}/checkpoints").json()
    trials: dict[str, TrialRecord] = {}
    for summary in exp["trials"]:
        detail = master.trial(summary["id"])
        series_rows = master.http.get(f"/trials/{summary['id']}/metrics").json()
        series = {
            f"{s['group']}/{s['name']}": [(p["steps_completed"], p["value"]) for p in s["points"]]
            for s in series_rows
        }
        summaries = {
            f"{m['group']}/{m['name']}": {k: m[k] for k in ("count", "last", "min", "max")}
            for m in detail["metrics"]
        }
        key = math_key(summary["hparams"])
        assert key not in trials, f"two trials with the same hparams {key}"
        trials[key] = TrialRecord(
            trial_id=summary["id"],
            hparams=summary["hparams"],
            state=summary["state"],
            restarts=detail["restarts"],
            run_id=detail["run_id"],
            latest_validation=summary["latest_validation"],
            best_validation=summary["best_validation"],
            series=series,
            summaries=summaries,
            kept=sorted(c["steps_completed"] for c in kept_rows if c["trial_id"] == summary["id"]),
            exit_reason=detail.get("exit_reason"),
        )
    kept_uuids = {c["uuid"] for c in kept_rows}
    on_disk = (  # checkpoints: not the trials' TensorBoard files beside them
        {p.name for p in store.iterdir() if p.name[0] != "." and p.name != "tensorboard"}
        if store.exists()
        else set()
    )
    missing = sorted(
        u for u in kept_uuids if not (store / u / "metadata.json").exists()
    )  # a kept checkpoint must be restorable
    return RunRecord(
        experiment_id=exp_id,
        state=exp["state"],
        best_validation=exp["best_validation"],
        trials=trials,
        orphan_dirs=[_describe_orphan(store / name) for name in sorted(on_disk - kept_uuids)],
        missing_dirs=missing,
    )


def _describe_orphan(path: Path) -> str:
    """A directory in the checkpoint store that no kept checkpoint owns: left by a trial
    killed while writing it (no metadata.json) or between finalizing and registering it."""
    if (path / "metadata.json").exists():
        return f"{path.name} (finalized, not registered or not deleted)"
    return f"{path.name} (partial: no metadata.json)"


# -- comparing two runs --------------------------------------------------------------------


@dataclass
class Comparison:
    lines: list[str] = field(default_factory=list)
    metrics_compared: int = 0
    metrics_lost: int = 0  # a (trial, series, step) of the reference that the run lacks
    metrics_extra: int = 0  # a point the reference does not have
    metrics_wrong: int = 0  # a point whose value differs
    metrics_duplicated: int = 0  # the same step twice in one series

    @property
    def ok(self) -> bool:
        return not self.lines

    def counts(self) -> dict[str, int]:
        return {
            "metrics_compared": self.metrics_compared,
            "metrics_lost": self.metrics_lost,
            "metrics_extra": self.metrics_extra,
            "metrics_wrong": self.metrics_wrong,
            "metrics_duplicated": self.metrics_duplicated,
        }


def _short(points: list[Any], limit: int = 8) -> str:
    text = ", ".join(repr(p) for p in points[:limit])
    return text + (f", ... ({len(points)} in all)" if len(points) > limit else "")


def compare(ref: RunRecord, run: RunRecord) -> Comparison:
    out = Comparison()
    add = out.lines.append
    if run.state != ref.state:
        add(f"experiment state: {run.state!r}, reference {ref.state!r}")
    if run.best_validation != ref.best_validation:
        add(f"experiment best_validation: {run.best_validation!r}, ref {ref.best_validation!r}")
    for key in sorted(set(ref.trials) - set(run.trials)):
        add(f"trial {key}: missing from the run")
    for key in sorted(set(run.trials) - set(ref.trials)):
        add(f"trial {key}: not in the reference")
    for key in sorted(set(ref.trials) & set(run.trials)):
        r, t = ref.trials[key], run.trials[key]
        where = f"trial {t.trial_id} (reference {r.trial_id}) {key}"
        if t.state != r.state:
            add(f"{where}: state {t.state!r}, reference {r.state!r} ({t.exit_reason})")
        for attr in ("latest_validation", "best_validation"):
            if getattr(t, attr) != getattr(r, attr):
                add(f"{where}: {attr} {getattr(t, attr)!r}, reference {getattr(r, attr)!r}")
        if t.kept != r.kept:
            add(f"{where}: kept checkpoints at steps {t.kept}, reference {r.kept}")
        for name in sorted(set(r.series) | set(t.series)):
            ref_points, points = r.series.get(name, []), t.series.get(name, [])
            steps = [s for s, _ in points]
            dups = sorted({s for s in steps if steps.count(s) > 1})
            ref_map, run_map = dict(ref_points), dict(points)
            lost = sorted(set(ref_map) - set(run_map))
            extra = sorted(set(run_map) - set(ref_map))
            wrong = [
                (s, run_map[s], ref_map[s])
                for s in sorted(set(ref_map) & set(run_map))
                if run_map[s] != ref_map[s]
            ]
            out.metrics_compared += len(ref_map)
            out.metrics_lost += len(lost)
            out.metrics_extra += len(extra)
            out.metrics_wrong += len(wrong)
            out.metrics_duplicated += len(dups)
            if lost:
                add(f"{where} {name}: {len(lost)} steps lost: {_short(lost)}")
            if extra:
                add(f"{where} {name}: {len(extra)} steps not in the reference: {_short(extra)}")
            if dups:
                add(f"{where} {name}: steps stored more than once: {_short(dups)}")
            if wrong:
                shown = [f"step {s}: {v!r} != reference {w!r}" for s, v, w in wrong]
                add(f"{where} {name}: {len(wrong)} values differ: {_short(shown, 4)}")
        for name in sorted(set(r.summaries) | set(t.summaries)):
            rs, ts = r.summaries.get(name), t.summaries.get(name)
            if rs != ts:
                add(f"{where} summary of {name}: {ts}, reference {rs}")
    if run.missing_dirs:
        add(f"kept checkpoints whose files are gone: {run.missing_dirs}")
    return out


# -- running ---------------------------------------------------------------------------------


def start_master(home: Path, slots: int = SLOTS, config: str | None = None) -> Master:
    return Master(home, slots=slots, config=config).start()


def create(
    master: Master, timing: dict[str, Any] | None = None, store: Path | None = None
) -> ChaosRun:
    store = store or master.home / "store"
    exp = master.create(experiment_config(store, timing), CODE)
    return ChaosRun(master=master, experiment_id=exp["id"], store=store)


def wait_terminal(run: ChaosRun, timeout: float) -> dict:
    """The experiment and every trial terminal within `timeout`, or an error naming the stuck."""

    def ended(exp: dict) -> bool:
        stuck = [t for t in exp["trials"] if t["state"] in TRIAL_STATES_LIVE]
        return exp["state"] in TERMINAL and not stuck

    try:
        return poll(
            run.experiment,
            "the experiment's end",
            until=ended,
            timeout_s=timeout,
            every_s=0.1,
            slow_to_s=0.3,
        )
    except PollTimeout as stuck:
        exp = stuck.last
        described = [
            f"trial {t['id']} {t['state']} at step {t['steps_completed']} ({t.get('end_reason')})"
            for t in exp["trials"]
        ]
        raise AssertionError(
            f"experiment {run.experiment_id} still {exp['state']} after {timeout:.0f} s; "
            f"trials: {described}\n{master_log_tail(run.master)}"
        ) from None


def wait_retention(run: ChaosRun, settle_s: float, expect: RunRecord | None) -> RunRecord:
    """Checkpoint retention is housekeeping (every 5 s, after the experiment ends). With a
    reference, wait until the kept checkpoints match it (or `settle_s` passes); without one,
    wait `settle_s` after the end and until two reads a second apart agree."""

    def kept(run_record: RunRecord) -> dict:
        return {k: t.kept for k, t in run_record.trials.items()}

    def current() -> RunRecord:
        return record(run.master, run.experiment_id, run.store)

    if expect is not None:
        try:
            return poll(
                current,
                "the reference's kept checkpoints",
                until=lambda now: kept(now) == kept(expect),
                timeout_s=settle_s,
                every_s=1.0,
            )
        except PollTimeout as differs:
            return differs.last  # the comparison shows the difference
    # No signal says that retention has run: the kept checkpoints must stop changing.
    settled_at = time.monotonic() + settle_s
    reads: list[RunRecord] = []

    def settled() -> RunRecord | None:
        reads.append(current())
        if time.monotonic() > settled_at and len(reads) > 1 and kept(reads[-1]) == kept(reads[-2]):
            return reads[-1]
        return None

    return poll(settled, "the kept checkpoints to settle", timeout_s=settle_s + 60, every_s=1.0)


def master_log_tail(master: Master, lines: int = 40) -> str:
    path = master.home / "master-test.log"
    if not path.exists():
        return "(no master log)"
    tail = path.read_text(errors="replace").splitlines()[-lines:]
    return "master log (last lines):\n  " + "\n  ".join(tail)


def master_log_lines(master: Master, *needles: str) -> list[str]:
    path = master.home / "master-test.log"
    if not path.exists():
        return []
    text = path.read_text(errors="replace").splitlines()
    return [line for line in text if any(n in line for n in needles)]


def write_counts(directory: Path, scenario: str, counts: dict[str, Any]) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{scenario}.json"
    path.write_text(json.dumps(counts, indent=2, sort_keys=True) + "\n")
    print(json.dumps({"scenario": scenario, **counts}, sort_keys=True))
    print(f"counts written to {path}")
    return path


# -- trial processes -------------------------------------------------------------------------


@dataclass(frozen=True)
class TrialProcess:
    pid: int
    trial_id: int
    run_id: int


def trial_processes(master: Master) -> dict[int, TrialProcess]:
    """The Python process of each running trial of this master, found through /proc by the
    environment the master gives it (the process group leader is the /bin/sh wrapper, which
    has the same environment; the trial is the child that runs python)."""

    def trial_of(proc: Path) -> tuple[int, int] | None:
        env = procs.environ(proc)
        if env.get("SHIPYARD_MASTER") != master.url or not procs.running(proc):
            return None
        argv = procs.argv(proc)
        if not argv or "python" not in os.path.basename(argv[0]):
            return None  # the sh wrapper
        return int(env["SHIPYARD_TRIAL_ID"]), int(env["SHIPYARD_RUN_ID"])

    return {
        trial_id: TrialProcess(pid, trial_id, run_id)
        for pid, (trial_id, run_id) in procs.collect(trial_of).items()
    }


def kill9(pid: int) -> bool:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def run_exit_code(master: Master, trial_id: int, run_id: int, timeout: float = 10) -> int:
    """The exit code of one run of a trial, from the file the local backend's wrapper writes
    when the trial's process ends (-9: killed by SIGKILL, as the master reports it)."""
    path = master.home / "logs" / f"trial-{trial_id}-run-{run_id}.exit"
    return poll(
        lambda: int(path.read_text().strip()),
        f"{path} to be written after the kill",
        until=lambda _: True,
        timeout_s=timeout,
        every_s=0.01,
        ignore=(OSError, ValueError),
    )


def checkpoint_in_progress(store: Path) -> list[tuple[Path, int]]:
    """Checkpoint directories being written (state.json there, metadata.json not yet), with
    the step of each."""
    out = []
    if not store.exists():
        return out
    for path in store.iterdir():
        if path.name[0] == "." or (path / "metadata.json").exists():  # .writing: the storage's
            continue
        try:
            step = json.loads((path / "state.json").read_text())["step"]
        except (OSError, ValueError, KeyError):
            continue
        out.append((path, int(step)))
    return out
