"""Recovery: from a master restart to every running trial reporting again.
Target: under 3 s for 50 running trials (issue 4).

One master with 50 CPU slots runs a grid of 50 light trials (bench/recovery_trial/train.py:
a training metric every 0.2 s, no framework). Once all report, the master is killed with
SIGKILL and started again on the same home and port, CYCLES times, then stopped with SIGTERM
and started again, CYCLES times. The trial processes live on; their metric sender retries
while the master is down. For each restart, timed from the moment the new master process is
spawned:

- restart_to_http_s: GET /api/v1/health answers;
- restart_to_all_running_s: all trials are RUNNING (GET /experiments/{id}/trials);
- restart_to_all_reporting_s: every trial has a metric at a step beyond the last one the
  database held when the old master died (read from the SQLite file, read-only, between
  the old master's exit and the new one's spawn), seen in the same trial listing
  (`steps_completed` is the trial's highest stored step: one request covers all trials).

Checked on the way and reported, not asserted: no trial was relaunched (same run_id, no
restart counted, and the very processes started at the beginning are alive at the end),
and each trial's training steps are contiguous from 1 (nothing reported while the master
was down was lost). Prints one JSON object; never asserts an absolute time.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import yaml
from _master import REPO, Master
from _poll import poll
from _stats import summary

from shipyard.client import Shipyard

TRIALS = 50
CYCLES = 3  # of each kind of restart
TARGET_S = 3.0
REPORT_INTERVAL_S = 0.2  # the trials' step time
POLL_S = 0.05  # trial listing while waiting for recovery
HTTP_POLL_S = 0.01  # GET /health until the new master answers (refused connections: cheap)
START_TIMEOUT_S = 180.0  # 50 launches on two cores
RECOVERY_TIMEOUT_S = 90.0  # longer than the trials' retry window (60 s)
SETTLE_S = 2.0  # after a recovery, before the next kill: back to the steady state
TRIAL_MAX_RUNTIME_S = 1800  # the trials end by themselves even if cleanup fails
TRIAL_CODE = REPO / "bench" / "recovery_trial"
LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}) \S+ alembic")


class RestartableMaster(Master):
    """The master on a fixed home and port, killed and started again; with what the
    figures need from its process and log."""

    def __init__(self, home: Path, slots: int, command: list[str] | None = None) -> None:
        super().__init__(slots, home=home, command=command)

    def cpu_s(self) -> float | None:
        """CPU seconds (user + system) the running master has used so far."""
        if self.process is None:
            return None
        try:
            stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        except OSError:
            return None
        fields = stat.rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def migration_started_wall(self) -> float | None:
        """time.time() of the last start's first alembic log line (the database step
        begins: imports and the app factory are done), None if it is not there."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self.log_offset)
                text = log.read().decode(errors="replace")
        except OSError:
            return None
        for line in text.splitlines():
            match = LOG_TIME.match(line)
            if match:
                stamp = datetime.strptime(match.group(1), "%Y-%m-%d %H:%M:%S,%f")
                return stamp.timestamp()  # logging writes local time, as is parsed here
        return None


def experiment_config(directory: Path, trials: int, stop_file: Path) -> Path:
    path = directory / "recovery.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "bench-recovery",
                "entrypoint": "python3 train.py",
                "hyperparameters": {
                    "index": {"type": "int", "minval": 1, "maxval": trials},
                    "stop_file": str(stop_file),
                    "interval_s": REPORT_INTERVAL_S,
                    "max_runtime_s": TRIAL_MAX_RUNTIME_S,
                },
                "searcher": {
                    "name": "grid",
                    "metric": "loss",
                    "max_concurrent_trials": trials,
                },
                "max_restarts": 0,
            }
        )
    )
    return path


def db_rows(db_path: Path, experiment_id: int) -> dict[int, dict[str, Any]]:
    """The experiment's trial rows, read from the SQLite file without writing to it."""
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=10)
    try:
        rows = conn.execute(
            "SELECT id, state, run_id, restarts, steps_completed, handle FROM trials "
            "WHERE experiment_id = ?",
            (experiment_id,),
        ).fetchall()
    finally:
        conn.close()
    return {
        tid: {
            "state": state,
            "run_id": run_id,
            "restarts": restarts,
            "steps": steps,
            "handle": json.loads(handle) if handle else None,
        }
        for tid, state, run_id, restarts, steps, handle in rows
    }


def list_trials(client: httpx.Client, experiment_id: int) -> list[dict[str, Any]]:
    return client.get(f"/experiments/{experiment_id}/trials").raise_for_status().json()


def wait_all_reporting(
    client: httpx.Client, experiment_id: int, trials: int, min_step: int
) -> list[dict[str, Any]]:
    def reporting() -> list[dict[str, Any]] | None:
        rows = list_trials(client, experiment_id)
        ended = [t for t in rows if t["state"] not in ("QUEUED", "STARTING", "RUNNING")]
        if ended:
            raise RuntimeError(f"trials ended before the benchmark began: {ended}")
        if len(rows) == trials and all(
            t["state"] == "RUNNING" and t["steps_completed"] >= min_step for t in rows
        ):
            return rows
        return None

    return poll(
        reporting,
        f"the {trials} trials running past step {min_step}",
        timeout_s=START_TIMEOUT_S,
        every_s=0.5,
    )


def measure_recovery(
    master: RestartableMaster,
    client: httpx.Client,
    experiment_id: int,
    baseline: dict[int, int],
    spawned: float,
) -> dict[str, Any]:
    """Poll the restarted master until every trial reports past its baseline step."""
    http_at = master.wait_until_answering(RECOVERY_TIMEOUT_S, HTTP_POLL_S)
    cpu_at_http = master.cpu_s()
    running_at: float | None = None
    first_new: dict[int, float] = {}
    run_ids: dict[int, int] = {}
    restarts: dict[int, int] = {}
    deadline = time.monotonic() + RECOVERY_TIMEOUT_S
    while time.monotonic() < deadline:
        rows = list_trials(client, experiment_id)
        seen = time.perf_counter()  # the answer's arrival: an upper bound for each event
        for t in rows:
            run_ids[t["id"]] = t["run_id"]
            restarts[t["id"]] = t["restarts"]
            if t["id"] not in first_new and t["steps_completed"] > baseline.get(t["id"], 0):
                first_new[t["id"]] = seen - spawned
        if running_at is None and rows and all(t["state"] == "RUNNING" for t in rows):
            running_at = seen
        if running_at is not None and len(first_new) == len(baseline):
            break
        time.sleep(POLL_S)
    cpu_at_end = master.cpu_s()
    migration_wall = master.migration_started_wall()
    per_trial = sorted(first_new.values())
    return {
        "to_http_s": http_at - spawned,
        "to_all_running_s": None if running_at is None else running_at - spawned,
        "to_all_reporting_s": per_trial[-1] if len(per_trial) == len(baseline) else None,
        "first_trial_s": per_trial[0] if per_trial else None,
        "median_trial_s": statistics.median(per_trial) if per_trial else None,
        "not_reporting": sorted(set(baseline) - set(first_new)),
        "to_migration_start_s": (
            None if migration_wall is None else migration_wall - master.spawned_wall
        ),
        "master_cpu_to_http_s": cpu_at_http,
        "master_cpu_http_to_end_s": (
            None if cpu_at_http is None or cpu_at_end is None else cpu_at_end - cpu_at_http
        ),
        "run_ids": run_ids,
        "restarts": restarts,
    }


def restart_cycle(
    master: RestartableMaster,
    client: httpx.Client,
    experiment_id: int,
    sig: int,
) -> dict[str, Any]:
    stop_s = master.stop(sig)
    # The old master is gone: what the database holds now is what it had stored.
    rows = db_rows(master.home / "shipyard.db", experiment_id)
    baseline = {tid: row["steps"] for tid, row in rows.items()}
    spawned = master.spawn()
    cycle = measure_recovery(master, client, experiment_id, baseline, spawned)
    cycle["stop_s"] = stop_s
    cycle["db_rows"] = rows
    time.sleep(SETTLE_S)
    return cycle


def process_start_time(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else int(fields[19])


def step_gaps(client: httpx.Client, trial_ids: list[int]) -> dict[str, Any]:
    """Each trial's stored training steps should be exactly 1..last."""
    gaps: dict[int, int] = {}
    checked = 0
    for tid in trial_ids:
        series = (
            client.get(f"/trials/{tid}/metrics", params={"group": "training", "name": "loss"})
            .raise_for_status()
            .json()
        )
        steps = [p["steps_completed"] for s in series for p in s["points"]]
        checked += len(steps)
        missing = (max(steps) if steps else 0) - len(set(steps))
        if missing or len(steps) != len(set(steps)) or (steps and min(steps) != 1):
            gaps[tid] = missing
    return {"steps_checked": checked, "trials_with_step_gaps": len(gaps), "gaps": gaps}


def median(values: list[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def figures(cycles: list[dict[str, Any]]) -> dict[str, Any]:
    def of(key: str) -> dict[str, object] | None:
        values = [c[key] for c in cycles if c[key] is not None]
        return summary(values) if values else None

    def after_http(key: str) -> float | None:
        return median([c[key] - c["to_http_s"] for c in cycles if c[key] is not None])

    return {
        "restart_to_all_reporting_s": of("to_all_reporting_s"),
        "restart_to_http_s": of("to_http_s"),
        "restart_to_all_running_s": of("to_all_running_s"),
        # Where the time goes (medians over the cycles): spawn -> first alembic log line
        # (interpreter, imports, app factory); -> HTTP answers (migration check,
        # supervisor.recover(), uvicorn bind); -> the trials' reports (their retry backoff).
        "breakdown_median_s": {
            "spawn_to_migration_start": median(
                [c["to_migration_start_s"] for c in cycles if c["to_migration_start_s"]]
            ),
            "spawn_to_http": median([c["to_http_s"] for c in cycles]),
            "http_to_first_trial_reporting": after_http("first_trial_s"),
            "http_to_median_trial_reporting": after_http("median_trial_s"),
            "http_to_all_reporting": after_http("to_all_reporting_s"),
            # CPU seconds of the new master: near the wall time means it was CPU-bound.
            "master_cpu_spawn_to_http": median(
                [c["master_cpu_to_http_s"] for c in cycles if c["master_cpu_to_http_s"]]
            ),
            "master_cpu_http_to_all_reporting": median(
                [c["master_cpu_http_to_end_s"] for c in cycles if c["master_cpu_http_to_end_s"]]
            ),
        },
        "trials_not_reporting": sum(len(c["not_reporting"]) for c in cycles),
    }


def kill_leftovers(home: Path) -> int:
    """SIGKILL every process (trial or its wrapper shell) whose working directory is inside
    this run's home: the trials of this run and nothing else."""
    killed = 0
    root = str(home.resolve()) + os.sep
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        if (cwd + os.sep).startswith(root):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(entry.name), signal.SIGKILL)
                killed += 1
    return killed


def cleanup(
    master: RestartableMaster, client: httpx.Client, experiment_id: int | None, stop_file: Path
) -> int:
    stop_file.touch()  # the trials leave their loop by themselves
    if experiment_id is not None and master.process is not None:
        with contextlib.suppress(Exception):
            if master.process.poll() is None:
                client.post(f"/experiments/{experiment_id}/kill")
                poll(
                    lambda: (
                        client.get(f"/experiments/{experiment_id}").json()["state"]
                        in ("CANCELED", "COMPLETED", "ERRORED")
                    ),
                    "the killed experiment's end",
                    timeout_s=20,
                    every_s=0.2,
                )
    master.stop(signal.SIGTERM)
    return kill_leftovers(master.home)


def run(
    trials: int,
    cycles: int,
    trial_code: Path = TRIAL_CODE,
    master_command: list[str] | None = None,
) -> dict[str, Any]:
    """The whole benchmark; trial_code and master_command let a profiling script swap in
    an instrumented trial or master."""
    home = Path(tempfile.mkdtemp(prefix="shipyard-bench-recovery-"))
    master = RestartableMaster(home, slots=trials, command=master_command)
    stop_file = home / "STOP-TRIALS"
    experiment_id: int | None = None
    client = master.api()  # the token is read once the master answers, and kept
    try:
        master.spawn()
        master.wait_until_answering()
        config = experiment_config(home, trials, stop_file)
        sy = Shipyard(master.url, token=master.token)
        experiment_id = sy.create_experiment(str(config), str(trial_code)).id
        first = wait_all_reporting(client, experiment_id, trials, min_step=3)
        cpu_before = master.cpu_s()
        time.sleep(SETTLE_S)
        cpu_after = master.cpu_s()
        steady_cpu = (
            None if cpu_before is None or cpu_after is None else (cpu_after - cpu_before) / SETTLE_S
        )
        initial = db_rows(home / "shipyard.db", experiment_id)
        processes = {
            tid: (row["handle"]["pid"], row["handle"].get("start_time"))
            for tid, row in initial.items()
        }
        runs = {t["id"]: t["run_id"] for t in first}
        kills = [
            restart_cycle(master, client, experiment_id, signal.SIGKILL) for _ in range(cycles)
        ]
        terms = [
            restart_cycle(master, client, experiment_id, signal.SIGTERM) for _ in range(cycles)
        ]
        every = kills + terms
        gaps = step_gaps(client, sorted(runs))
        relaunched = set()
        for cycle in every:
            for tid, run_id in runs.items():
                row = cycle["db_rows"].get(tid, {})
                if (
                    cycle["run_ids"].get(tid, run_id) != run_id
                    or cycle["restarts"].get(tid, 0)
                    or row.get("run_id") != run_id
                    or (row.get("handle") or {}).get("pid") != processes[tid][0]
                ):
                    relaunched.add(tid)
        gone = {tid for tid, (pid, start) in processes.items() if process_start_time(pid) != start}
        result: dict[str, Any] = {
            "benchmark": "recovery",
            "unit": "s",
            "what": "new master process spawned -> every trial has a metric newer than the "
            "last one stored before the restart",
            "trials": trials,
            "cycles": cycles,
            "report_interval_s": REPORT_INTERVAL_S,
            "poll_s": POLL_S,
            "target_s": TARGET_S,
            # The master's CPU share (of one core) with every trial reporting, no restart.
            "master_cpu_share_steady": None if steady_cpu is None else round(steady_cpu, 3),
            "sigkill": figures(kills),
            "sigterm": {**figures(terms), "stop_s": summary([c["stop_s"] for c in terms])},
            "relaunched_trials": len(relaunched),
            "original_processes_gone": len(gone),
            "steps_checked": gaps["steps_checked"],
            "trials_with_step_gaps": gaps["trials_with_step_gaps"],
        }
        if gaps["gaps"]:
            result["step_gaps"] = gaps["gaps"]
        worst = result["sigkill"]["restart_to_all_reporting_s"]
        result["meets_target"] = worst is not None and worst["max"] < TARGET_S
        return result
    finally:
        leftovers = cleanup(master, client, experiment_id, stop_file)
        client.close()
        if leftovers:
            print(f"killed {leftovers} leftover trial processes", file=sys.stderr)
        shutil.rmtree(home, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=TRIALS)
    parser.add_argument("--cycles", type=int, default=CYCLES, help="restarts of each kind")
    args = parser.parse_args()
    # A SIGTERM (a CI timeout) unwinds through run()'s cleanup like Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    print(json.dumps(run(args.trials, args.cycles)))


if __name__ == "__main__":
    main()
