"""Metric ingest: Shipyard's master against an MLflow tracking server (`mlflow server`, from
PyPI) on this machine and the same kind of database (SQLite files by default; `--database
postgres`: one throwaway PostgreSQL cluster, a database for each), in this one run: the
same WRITERS concurrent writers each storing the same POINTS points (the same metric names,
steps and values) on each side. Target: Shipyard's points/s >= 20x MLflow's.

Shipyard's writers are real trials, not threads holding task tokens: what runs beside the
reports in a trial (its sender thread, heartbeat, signal poller, TensorBoard writer) is
part of the cost a trial puts on the machine. One grid search of WRITERS trials on a master
with WRITERS slots, each running a script (written into the experiment's context) that reports
POINTS points through `shipyard.core` (ctx.train.report_training_metrics at every step,
two metrics a step: loss and acc) as fast as it can, flushes, and exits. The trials' start
(process, `import shipyard.core`, init() and its environment capture) is kept out of the
window by a barrier: inside its init() block each trial writes a ready file into a
directory of this script and waits for a go file, which this script writes once every
trial is ready and has its environment record stored. Each trial notes time.time() before
its first report and after its flush returned (the master acknowledged every point) and
writes them into a done file. Window = the last flush's end - the first report (one
machine, one clock). What is measured is the trials' own path: MasterTrain's sender thread
batching up to 10,000 points (5,000 reports here) a POST as the loop outruns it, each POST
carrying the run's task token, POST /api/v1/trials/{id}/metrics storing them, and, after
each POST, the same reports written as TensorBoard scalars, as in any experiment
(--no-tensorboard: SHIPYARD_TENSORBOARD=0 in the trials). The trials import numpy before
the barrier, as a training script has it (torch imports it), so the scalars take the numpy
path from the first point; without numpy they would take the pure-Python one for 10,000
points (core/_tensorboard.py).
The trials' heartbeat and signal long-poll run beside it, as they always do.

MLflow's writers are WRITERS processes (forked by this script before the window and
released by the same kind of barrier), each with a run of its own created beforehand,
sending the same points with POST /api/2.0/mlflow/runs/log-batch, MLflow's fastest way in:
1000 metrics a request (the server's limit), each request sent once the last was answered,
as MLflow's own client does. They speak plain JSON over http.client, lighter on the CPU than
the mlflow package's client (protobuf messages, requests), which would take cores from the
server; each request's JSON is built inside the window, as the trials' are. A 5xx answer
or a broken connection is retried with Shipyard's trial-side policy (0.1 s doubling to
0.25 s), gentler than the mlflow client's (2 s doubling); the retries are counted. Window =
the last writer's last answer - the first writer's first request. The server runs as
`mlflow server` starts it: its default number of workers unless --mlflow-workers says
otherwise, the backend store a SQLite file (its default kind) or the PostgreSQL database.
It comes from a venv of its own (BENCH_VENV: made once with `python3 -m venv` and `pip
install mlflow==3.*`, psycopg added for --database postgres; reused by later runs).

What still differs, each side as it ships: a Shipyard POST carries up to 10,000 points
(5,000 reports of two metrics, sent as columns: the steps in one list, each metric's values in
another), a log-batch at most 1000 (an object a metric); Shipyard's SQLite runs in WAL mode,
MLflow's in SQLite's default rollback journal (both synchronous=FULL); Shipyard's master is
one process, `mlflow server` starts 4 workers by default (on 2 cores, more CPU for MLflow).

Each side runs alone: the other's server is not running while one is measured. Afterwards
each side must have stored every one of the WRITERS x POINTS points with the value sent
(Shipyard: GET /api/v1/trials/{id}/metrics; MLflow: metrics/get-history), or the benchmark
fails (an exception, exit status 1, no figures). Also reported, to judge a run on a shared
machine: the CPU seconds the server (MLflow's: with its workers) and the writers used in
the window, points per server CPU second, and the load average around each side.

Prints one JSON object. About 2.5 minutes on an idle 2-core machine (the venv made before),
most of it MLflow's window and its server's start.
"""

from __future__ import annotations

import argparse
import functools
import http.client
import json
import multiprocessing
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import psutil
import yaml
from _master import REPO, Master, free_port
from _poll import poll

from shipyard.client import Shipyard
from shipyard.core._retry import MAX_RETRY_DELAY_S, RETRY_WINDOW_S

WRITERS = 8
POINTS = 24_000  # per writer: Shipyard's side then takes about 5 s, MLflow's about 100
METRICS = ("loss", "acc")  # each step's points: POINTS / len(METRICS) steps a writer
TARGET_RATIO = 20.0
MLFLOW_SPEC = "mlflow==3.*"
PSYCOPG_SPEC = "psycopg[binary]==3.*"  # MLflow's driver for --database postgres
BENCH_VENV = REPO / ".bench-venvs" / "mlflow"
MLFLOW_BATCH = 1000  # metrics per log-batch request: MLflow's MAX_METRICS_PER_BATCH
START_TIMEOUT_S = 300.0  # on a loaded 2-core machine mlflow server once took 100 s to answer
RUN_TIMEOUT_S = 600.0
CHECKERS = 4  # MLflow's get-history calls at a time, after the window


def value(metric: str, writer: int, step: int) -> float:
    """The value every writer sends for ``metric`` at ``step``: the same on both sides."""
    if metric == "loss":
        return 1.0 / (step + writer + 1)
    return 1.0 - 1.0 / (step + writer + 2)


# -- Shipyard: WRITERS real trials --------------------------------------------------------------

# The trial's script; ``value`` is repeated in it (a trial cannot import this file).
WRITER_SCRIPT = """
import json
import os
import time
from pathlib import Path

import numpy  # noqa: F401 - loaded, as in a training script (torch imports it)

import shipyard.core


def value(metric, writer, step):
    if metric == "loss":
        return 1.0 / (step + writer + 1)
    return 1.0 - 1.0 / (step + writer + 2)


def publish(path, text):
    hidden = path.with_name("." + path.name)
    hidden.write_text(text)
    os.replace(hidden, path)  # whole, or not there


with shipyard.core.init() as ctx:
    hp = ctx.info.hparams
    sync = Path(hp["sync_dir"])
    writer, steps = int(hp["writer"]), int(hp["steps"])
    publish(sync / f"ready-{writer}", str(ctx.info.trial_id))
    waiting_until = time.monotonic() + 600  # the bench gave up, or its directory is gone
    while not (sync / "go").exists():
        if time.monotonic() > waiting_until or not sync.is_dir():
            raise SystemExit("no go from the benchmark")
        time.sleep(0.002)
    report = ctx.train.report_training_metrics
    cpu = time.process_time()
    started = time.time()
    for step in range(1, steps + 1):
        report(step, {"loss": value("loss", writer, step), "acc": value("acc", writer, step)})
    ctx.train.flush()
    ended = time.time()
    done = {"started": started, "ended": ended, "cpu_s": time.process_time() - cpu}
    publish(sync / f"done-{writer}.json", json.dumps(done))
"""


def experiment_config(writers: int, steps: int, sync_dir: Path, tensorboard: bool) -> str:
    variables = {} if tensorboard else {"SHIPYARD_TENSORBOARD": "0"}
    return yaml.safe_dump(
        {
            "name": "bench-metric-ingest",
            "entrypoint": "python3 writer.py",
            "environment": {"environment_variables": variables},
            "hyperparameters": {
                "writer": {"type": "categorical", "vals": list(range(writers))},
                "steps": steps,
                "sync_dir": str(sync_dir),
            },
            "searcher": {
                "name": "grid",
                "metric": "loss",
                "max_concurrent_trials": writers,
                "max_length": {"batches": steps},
            },
            "resources": {"slots_per_trial": 1},
            "max_restarts": 0,
        }
    )


def wait_for_trials(
    sync_dir: Path, pattern: str, count: int, alive: Callable[[], bool], timeout_s: float
) -> list[Path]:
    """The ``count`` files of ``pattern`` the trials write; fails early if the experiment
    ended first (a trial failed)."""
    deadline = time.monotonic() + timeout_s
    checked = time.monotonic()
    while True:
        found = sorted(sync_dir.glob(pattern))
        if len(found) >= count:
            return found
        now = time.monotonic()
        if now > deadline:
            raise RuntimeError(f"{len(found)} of {count} trials wrote {pattern} in {timeout_s} s")
        if now - checked > 1.0:
            checked = now
            if not alive():
                raise RuntimeError(f"the experiment ended with {len(found)} of {count} {pattern}")
        time.sleep(0.005)


def environment_stored(api: httpx.Client, trial_id: int) -> bool:
    """Whether the trial's environment capture (a thread of init(), sent once) is stored."""
    return bool(api.get(f"/trials/{trial_id}/environment").raise_for_status().json()["ranks"])


def check_shipyard_points(api: httpx.Client, trial_id: int, writer: int, steps: int) -> int:
    """The number of training points the trial stored; raises if one is missing or differs."""
    answer = api.get(f"/trials/{trial_id}/metrics", params={"group": "training"})
    stored = {series["name"]: series["points"] for series in answer.raise_for_status().json()}
    count = 0
    for metric in METRICS:
        got = {p["steps_completed"]: p["value"] for p in stored.get(metric, [])}
        count += len(got)
        check_points("Shipyard", f"trial {trial_id}", metric, writer, steps, got)
    return count


def check_points(
    side: str, whose: str, metric: str, writer: int, steps: int, got: dict[int, float]
) -> None:
    want = {step: value(metric, writer, step) for step in range(1, steps + 1)}
    if got != want:
        missing = len(want.keys() - got.keys())
        wrong = sum(1 for step, v in got.items() if want.get(step) != v)
        raise RuntimeError(
            f"{side} {whose} stored {len(got)} {metric} points of {steps}: "
            f"{missing} missing, {wrong} not as sent"
        )


def shipyard_figures(
    writers: int, points: int, tensorboard: bool, db_url: str | None
) -> dict[str, Any]:
    steps = points // len(METRICS)
    if db_url:
        os.environ["SHIPYARD_DB_URL"] = db_url  # the master's Settings read it
    with (
        Master(slots=writers) as master,
        tempfile.TemporaryDirectory(prefix="shipyard-ingest-") as scratch,
        master.api(timeout_s=120) as api,
    ):
        sync_dir, context = Path(scratch, "sync"), Path(scratch, "context")
        sync_dir.mkdir()
        context.mkdir()
        (context / "writer.py").write_text(WRITER_SCRIPT)
        config = Path(scratch, "config.yaml")
        config.write_text(experiment_config(writers, steps, sync_dir, tensorboard))
        sy = Shipyard(master.url, token=master.token)
        experiment = sy.create_experiment(str(config), str(context))

        def alive() -> bool:
            return api.get(f"/experiments/{experiment.id}").json()["state"] == "ACTIVE"

        try:
            measured = measure_trials(
                api, sy, experiment.id, alive, master, sync_dir, writers, steps
            )
        finally:
            if alive():  # trials outlive their master (they wait for it to come back)
                api.post(f"/experiments/{experiment.id}/kill")
                poll(lambda: not alive(), "the experiment killed", timeout_s=60, every_s=0.1)
    return {**measured, "tensorboard_scalars": tensorboard}


def measure_trials(
    api: httpx.Client,
    sy: Shipyard,
    experiment_id: int,
    alive: Callable[[], bool],
    master: Master,
    sync_dir: Path,
    writers: int,
    steps: int,
) -> dict[str, Any]:
    """Release the trials once all are ready, time them, and check what they stored."""
    ready = wait_for_trials(sync_dir, "ready-*", writers, alive, START_TIMEOUT_S)
    trial_of = {int(p.name.split("-")[1]): int(p.read_text()) for p in ready}
    for trial_id in trial_of.values():
        stored = functools.partial(environment_stored, api, trial_id)
        poll(stored, f"trial {trial_id}'s environment", timeout_s=START_TIMEOUT_S)
    assert master.process is not None
    load = os.getloadavg()[0]
    cpu_before = cpu_s(master.process.pid, tree=False)  # its children are the trials
    (sync_dir / "go").touch()
    finished = wait_for_trials(sync_dir, "done-*.json", writers, alive, RUN_TIMEOUT_S)
    server_cpu_s = cpu_s(master.process.pid, tree=False) - cpu_before
    load_after = os.getloadavg()[0]
    done = [json.loads(p.read_text()) for p in finished]
    count = sum(
        check_shipyard_points(api, trial_id, writer, steps) for writer, trial_id in trial_of.items()
    )
    return {
        **figures(writers * steps * len(METRICS), done, server_cpu_s, load, load_after),
        "stored_points": count,
        "experiment_state": str(sy.wait(experiment_id, 120).state),
    }


def figures(
    points: int, done: list[dict[str, Any]], server_cpu_s: float, load: float, load_after: float
) -> dict[str, Any]:
    window_s = max(d["ended"] for d in done) - min(d["started"] for d in done)
    starts = sorted(d["started"] for d in done)
    return {
        "points_per_s": round(points / window_s, 1),
        "window_s": round(window_s, 3),
        "start_spread_s": round(starts[-1] - starts[0], 3),
        "server_cpu_s": round(server_cpu_s, 2),
        "points_per_server_cpu_s": round(points / server_cpu_s, 1) if server_cpu_s else None,
        "writers_cpu_s": round(sum(d["cpu_s"] for d in done), 2),
        "load_average": [round(load, 1), round(load_after, 1)],
    }


def cpu_s(pid: int, *, tree: bool) -> float:
    """User + system CPU seconds of a process so far, with its live descendants' if
    ``tree`` (MLflow's workers; not the master's, which are the trials)."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        for process in [root, *(root.children(recursive=True) if tree else [])]:
            try:
                times = process.cpu_times()
                total += times.user + times.system
            except psutil.NoSuchProcess:
                pass
    except psutil.NoSuchProcess:
        pass
    return total


# -- MLflow: its own venv, `mlflow server`, WRITERS log-batch writers ---------------------------


def mlflow_venv(venv: Path, postgres: bool) -> str:
    """mlflow's version in the venv; the venv is made (mlflow installed, and psycopg for
    PostgreSQL) if it has none that imports."""
    python = venv / "bin" / "python"
    modules = "mlflow, psycopg" if postgres else "mlflow"
    probe = [str(python), "-c", f"import {modules}; print(mlflow.__version__)"]
    found = subprocess.run(probe, capture_output=True, text=True) if python.exists() else None
    if found is None or found.returncode != 0:
        if not python.exists():
            subprocess.run(["python3", "-m", "venv", str(venv)], check=True)
        packages = [MLFLOW_SPEC, PSYCOPG_SPEC] if postgres else [MLFLOW_SPEC]
        print(f"metric_ingest: installing {' '.join(packages)} into {venv}", file=sys.stderr)
        install = [str(python), "-m", "pip", "install", "--quiet", *packages]
        subprocess.run(install, check=True, stdout=sys.stderr)
        found = subprocess.run(probe, capture_output=True, text=True, check=True)
    return found.stdout.strip()


class MlflowServer:
    """`mlflow server` on ``store`` (a SQLite file in its temp dir when None), until the
    block ends."""

    def __init__(self, venv: Path, workers: int | None, store: str | None) -> None:
        self.venv = venv
        self.workers = workers
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.home = Path(tempfile.mkdtemp(prefix="mlflow-bench-"))
        self.store = store or f"sqlite:///{self.home / 'mlflow.db'}"
        self.process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> MlflowServer:
        argv = [str(self.venv / "bin" / "mlflow"), "server", "--backend-store-uri", self.store]
        argv += ["--default-artifact-root", str(self.home / "artifacts")]
        argv += ["--host", "127.0.0.1", "--port", str(self.port)]
        if self.workers is not None:
            argv += ["--workers", str(self.workers)]
        with open(self.home / "server.log", "ab") as log:
            # A session of its own: the CLI, uvicorn and its workers end together.
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.home, start_new_session=True
            )
        try:
            poll(self._answers, "mlflow server answering", timeout_s=START_TIMEOUT_S, every_s=0.2)
        except BaseException:
            self.__exit__()
            raise
        return self

    def _answers(self) -> bool:
        assert self.process is not None
        if self.process.poll() is not None:
            raise RuntimeError(f"mlflow server exited:\n{self.log()}")
        try:
            return httpx.get(f"{self.url}/health", timeout=2).status_code == 200
        except httpx.TransportError:
            return False

    def log(self) -> str:
        try:
            return "\n".join((self.home / "server.log").read_text().splitlines()[-40:])
        except OSError:
            return "(no log)"

    def __exit__(self, *_: object) -> None:
        process = self.process
        if process is not None and process.poll() is None:
            os.killpg(process.pid, 15)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                process.wait()
        shutil.rmtree(self.home, ignore_errors=True)

    def call(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        """One REST call, retried as the writers' requests are (a worker may be restarting)."""
        deadline = time.monotonic() + RETRY_WINDOW_S
        delay = 0.1
        while True:
            try:
                answer = httpx.request(
                    method, f"{self.url}/api/2.0/mlflow/{path}", timeout=120, **kwargs
                )
                if answer.status_code == 200:
                    return answer.json()
                problem = f"{answer.status_code} {answer.text[:500]}"
                retry = answer.status_code >= 500
            except httpx.TransportError as exc:
                problem, retry = repr(exc), True
            if not retry or time.monotonic() > deadline:
                raise RuntimeError(f"mlflow {path}: {problem}\nserver log:\n{self.log()}")
            time.sleep(delay)
            delay = min(delay * 2, MAX_RETRY_DELAY_S)


def mlflow_writer(port: int, run_id: str, writer: int, steps: int, go: Any, results: Any) -> None:
    """One writer process: after ``go``, every point in log-batch requests of MLFLOW_BATCH,
    each sent once the last was answered."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/json"}
    retries = 0

    def send(batch: list[dict[str, Any]]) -> None:
        nonlocal retries
        body = json.dumps({"run_id": run_id, "metrics": batch})
        deadline = time.monotonic() + RETRY_WINDOW_S
        delay = 0.1
        while True:
            try:
                conn.request("POST", "/api/2.0/mlflow/runs/log-batch", body, headers)
                answer = conn.getresponse()
                status, text = answer.status, answer.read()
            except (OSError, http.client.HTTPException) as exc:
                conn.close()  # the next request connects again
                status, text = 0, repr(exc).encode()
            if status == 200:
                return
            if 0 < status < 500 or time.monotonic() > deadline:
                raise RuntimeError(f"log-batch: {status or 'no answer'}: {text[:300]!r}")
            retries += 1
            time.sleep(delay)
            delay = min(delay * 2, MAX_RETRY_DELAY_S)

    go.wait()
    cpu = time.process_time()
    started = time.time()
    batch: list[dict[str, Any]] = []
    for step in range(1, steps + 1):
        now_ms = int(time.time() * 1000)  # as the mlflow client stamps a metric
        for metric in METRICS:
            point = value(metric, writer, step)
            batch.append({"key": metric, "value": point, "timestamp": now_ms, "step": step})
        if len(batch) >= MLFLOW_BATCH:
            send(batch)
            batch = []
    if batch:
        send(batch)
    ended = time.time()
    conn.close()
    cpu_used = time.process_time() - cpu
    results.put({"started": started, "ended": ended, "cpu_s": cpu_used, "retries": retries})


def check_mlflow_points(server: MlflowServer, run_id: str, writer: int, steps: int) -> int:
    """The number of points the run stored; raises if one is missing or differs."""
    count = 0
    for metric in METRICS:
        got: dict[int, float] = {}
        params = {"run_id": run_id, "metric_key": metric}
        while True:
            page = server.call("GET", "metrics/get-history", params=params)
            for point in page.get("metrics", []):
                got[int(point["step"])] = float(point["value"])
            if not page.get("next_page_token"):
                break
            params["page_token"] = page["next_page_token"]
        count += len(got)
        check_points("MLflow", f"run {run_id}", metric, writer, steps, got)
    return count


def mlflow_figures(
    venv: Path, writers: int, points: int, workers: int | None, store: str | None
) -> dict[str, Any]:
    steps = points // len(METRICS)
    forked = multiprocessing.get_context("fork")
    started = time.perf_counter()
    with MlflowServer(venv, workers, store) as server:
        start_s = time.perf_counter() - started
        created = server.call("POST", "experiments/create", json={"name": "bench-metric-ingest"})
        run = {"experiment_id": created["experiment_id"], "start_time": int(time.time() * 1000)}
        run_ids = [
            server.call("POST", "runs/create", json=run)["run"]["info"]["run_id"]
            for _ in range(writers)
        ]
        go = forked.Event()
        results = forked.Queue()
        processes = [
            forked.Process(
                target=mlflow_writer, args=(server.port, run_ids[w], w, steps, go, results)
            )
            for w in range(writers)
        ]
        for process in processes:
            process.start()
        try:
            done, server_cpu_s, load, load_after = run_writers(server, processes, go, results)
        finally:
            for process in processes:  # a writer left waiting or sending when this failed
                if process.is_alive():
                    process.terminate()
                process.join()
        checked = time.perf_counter()
        with ThreadPoolExecutor(CHECKERS) as pool:  # get-history is slow: 4 at a time
            check = functools.partial(check_mlflow_points, server)
            count = sum(pool.map(check, run_ids, range(writers), [steps] * writers))
        check_s = time.perf_counter() - checked
    return {
        **figures(writers * steps * len(METRICS), done, server_cpu_s, load, load_after),
        "stored_points": count,
        "retries": sum(d["retries"] for d in done),
        "workers": workers if workers is not None else "mlflow server's default",
        "server_start_s": round(start_s, 1),
        "check_s": round(check_s, 1),
    }


def run_writers(
    server: MlflowServer, processes: list[Any], go: Any, results: Any
) -> tuple[list[dict[str, Any]], float, float, float]:
    """Release the started writers at once; their figures, the server's CPU seconds and
    the load average before and after."""
    time.sleep(0.5)  # every writer forked and waiting
    assert server.process is not None
    load = os.getloadavg()[0]
    cpu_before = cpu_s(server.process.pid, tree=True)
    go.set()
    done: list[dict[str, Any]] = []
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while len(done) < len(processes):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{len(done)} of {len(processes)} MLflow writers ended in time")
        try:
            done.append(results.get(timeout=0.05))
        except queue.Empty:
            if any(p.exitcode not in (None, 0) for p in processes):
                raise RuntimeError(f"an MLflow writer failed:\n{server.log()}") from None
    server_cpu_s = cpu_s(server.process.pid, tree=True) - cpu_before
    return done, server_cpu_s, load, os.getloadavg()[0]


# -- The database ---------------------------------------------------------------------------------


@contextmanager
def databases(kind: str) -> Iterator[tuple[str | None, str | None]]:
    """(Shipyard's, MLflow's) database URLs: None for each side's own SQLite file, or two
    databases of one throwaway PostgreSQL cluster (bench/_postgres.py) with its defaults."""
    if kind == "sqlite":
        yield None, None
        return
    import _postgres  # psycopg and the tests' cluster: only for PostgreSQL

    cluster = _postgres.Cluster()
    try:
        cluster.create(cluster.binaries["initdb"])
        cluster.serve(_postgres.MEASURE_SETTINGS)
        cluster.create_database(cluster.binaries["createdb"])
        with cluster.connect() as conn:
            conn.execute("CREATE DATABASE mlflow")
        shipyard_url = cluster.url
        yield shipyard_url, shipyard_url.rsplit("/", 1)[0] + "/mlflow"
    finally:
        if cluster.running:
            cluster.halt("immediate")
        shutil.rmtree(cluster.root, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writers", type=int, default=WRITERS)
    parser.add_argument("--points", type=int, default=POINTS, help="per writer")
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--venv", type=Path, default=BENCH_VENV, help="mlflow's venv")
    parser.add_argument("--mlflow-workers", type=int, help="mlflow server --workers")
    parser.add_argument(
        "--no-tensorboard",
        dest="tensorboard",
        action="store_false",
        help="trials with SHIPYARD_TENSORBOARD=0: no TensorBoard scalars (on by default)",
    )
    parser.add_argument("--only", choices=("shipyard", "mlflow"), help="measure one side only")
    args = parser.parse_args()
    if args.points % len(METRICS):
        parser.error(f"--points must be a multiple of {len(METRICS)}")
    began = time.perf_counter()
    version = mlflow_venv(args.venv, postgres=args.database == "postgres")
    result: dict[str, Any] = {
        "benchmark": "metric_ingest",
        "unit": "points/s",
        "what": "points stored by concurrent writers: first sent -> last acknowledged",
        "writers": args.writers,
        "points_per_writer": args.points,
        "metrics": list(METRICS),
        "database": args.database,
        "mlflow_version": version,
        "cores": len(os.sched_getaffinity(0)),
    }
    with databases(args.database) as (shipyard_db, mlflow_db):
        if args.only != "mlflow":
            started = time.perf_counter()
            result["shipyard"] = shipyard_figures(
                args.writers, args.points, args.tensorboard, shipyard_db
            )
            result["shipyard"]["side_s"] = round(time.perf_counter() - started, 1)
        if args.only != "shipyard":
            started = time.perf_counter()
            result["mlflow"] = mlflow_figures(
                args.venv, args.writers, args.points, args.mlflow_workers, mlflow_db
            )
            result["mlflow"]["side_s"] = round(time.perf_counter() - started, 1)
    ours = result.get("shipyard", {}).get("points_per_s")
    theirs = result.get("mlflow", {}).get("points_per_s")
    ratio = ours / theirs if ours and theirs else None
    result["ratio"] = round(ratio, 2) if ratio else None
    ours = result.get("shipyard", {}).get("points_per_server_cpu_s")
    theirs = result.get("mlflow", {}).get("points_per_server_cpu_s")
    result["server_cpu_ratio"] = round(ours / theirs, 2) if ours and theirs else None
    result["target"] = f"shipyard >= {TARGET_RATIO:.0f}x mlflow"
    result["passed"] = ratio is not None and ratio >= TARGET_RATIO
    result["elapsed_s"] = round(time.perf_counter() - began, 1)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
