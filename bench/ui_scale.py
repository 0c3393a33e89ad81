"""The web UI at scale (issue 7): a database of 10,000 finished trials × 1,000 validation points
(10 experiments of 1,000 trials), then the time of what the UI asks for:

- how long a master started on that database takes to store every ended trial's curve in
  the background, as the experiment page asks for it (workers/curve_keeper.py): a master
  does this as trials end; one started on trials that ended before it does it at start;
- the experiments list API (what `/` loads), the experiment API (1,000 trials) and the
  learning-curves API of one experiment (every trial's curve, downsampled on the server),
  each as p50/p95 over repeated requests;
- the experiment page in Chromium: first contentful paint, and the time until its
  learning-curve chart has drawn every trial's line, as median and max over several views:
  the first view of 5 experiments once their curves are stored, the first view on a master
  just started (3 starts), and repeated views. One browser runs for the whole measurement
  (Debian's headless shell, as in the UI tests), as a user's browser runs before they open a
  page; each view is in a fresh context (no cache), logged in with the local user's session
  cookie (a login ticket, as `shipyard up` gives).

Targets from the issue: API p95 under 100 ms, the page under 1.5 s (each kind of view's
median). Prints one JSON object (progress goes to stderr).

`--database postgres` (issue 20) does the same on PostgreSQL: a throwaway cluster (initdb in
a temp dir, removed at the end; bench/_postgres.py), seeded with COPY under settings for
loading, then started again with PostgreSQL's defaults to be measured. Its size in issue 20:
`--database postgres --experiments 100` (100,000 trials, 100 M points); the pages still show
an experiment of 1,000 trials. With `--curves-timeout` shorter than the background storing
takes, the APIs and the page are measured on an experiment whose curves are stored.

The experiments are created through the API (so their rows are what the master writes) and
killed at once; their trials and points are then written straight into the database with
the master's own ORM models, and the master is started again on it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from _master import Master
from _stats import percentile

from shipyard.server.services.metric_series import chart_points

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the tests' browser settings

from tests.fixtures.chromium import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

CHART = "#curves-chart[data-series-count]"  # the experiment page's learning curves, drawn
# The master's answers to the page's API requests, when each was sent and fully received
# (ms from navigation start): the chart's time less the last of them is the browser's own.
API_REQUESTS = """Object.fromEntries(performance.getEntriesByType("resource")
  .filter((e) => e.name.includes("/api/v1/"))
  .map((e) => [new URL(e.name).pathname.slice(7) + new URL(e.name).search,
               [Math.round(e.startTime), Math.round(e.responseEnd)]]))"""


def experiment_yaml(index: int, trials: int) -> str:
    return f"""
name: ui-scale-{index}
entrypoint: sleep 60
hyperparameters:
  lr: {{type: log, minval: -4, maxval: -1, base: 10}}
  width: {{type: int, minval: 16, maxval: 512}}
searcher: {{name: random, metric: val_loss, max_trials: {trials}, max_length: 1000}}
"""


def create_experiments(master: Master, count: int, trials: int) -> list[int]:
    ids = []
    with master.api() as api:
        for index in range(count):
            answer = api.post("/experiments", json={"config_yaml": experiment_yaml(index, trials)})
            exp_id = answer.raise_for_status().json()["id"]
            api.post(f"/experiments/{exp_id}/kill").raise_for_status()
            ids.append(exp_id)
    return ids


def log(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def ended_at(now: datetime, number: int, total: int) -> datetime:
    """When seeded trial ``number`` of ``total`` ended: one a second, the last just now.
    (Not all at once: the curve keeper looks again, every few seconds, at the trials that
    ended within a minute of the latest end, and so would read every experiment's stored
    curves for as long as the master runs, which no real history makes it do.)"""
    return now - timedelta(seconds=total - number)


def seed(db_path: Path, experiment_ids: list[int], trials: int, points: int) -> dict[str, Any]:
    """Replace each experiment's trials with ``trials`` COMPLETED ones of ``points``
    validation points each (a noisy decaying loss), their summaries and a finished state.
    The trials end one a second (ended_at), the last one now."""
    from sqlalchemy import create_engine, delete, insert, select, update

    from shipyard.server import orm

    started = time.monotonic()
    total = len(experiment_ids) * trials
    engine = create_engine(f"sqlite:///{db_path}")
    rng = random.Random(0)
    now = orm.utcnow()
    with engine.begin() as conn:
        workspace = conn.execute(select(orm.Workspace.id)).scalar_one()
        key_id = conn.execute(
            insert(orm.MetricKey).values(name="val_loss", group="validation")
        ).inserted_primary_key[0]
        for index, exp_id in enumerate(experiment_ids):
            conn.execute(delete(orm.Trial).where(orm.Trial.experiment_id == exp_id))
            conn.execute(
                update(orm.Experiment)
                .where(orm.Experiment.id == exp_id)
                .values(state="COMPLETED", progress=1.0, searcher_done=True, ended_at=now)
            )
            first = index * trials
            rows = [
                {
                    "experiment_id": exp_id,
                    "workspace_id": workspace,
                    "request_id": f"seed-{exp_id}-{n}",
                    "hparams": {"lr": 10 ** rng.uniform(-4, -1), "width": rng.randint(16, 512)},
                    "seed": n,
                    "state": "COMPLETED",
                    "run_id": 1,
                    "steps_completed": points,
                    "started_at": ended_at(now, first + n, total),
                    "ended_at": ended_at(now, first + n, total),
                }
                for n in range(trials)
            ]
            conn.execute(insert(orm.Trial), rows)
    with sqlite3.connect(db_path) as raw:
        trial_ids = [r[0] for r in raw.execute("SELECT id FROM trials ORDER BY id")]
        summaries = []
        for trial_id in trial_ids:
            floor, rate = rng.uniform(0.05, 0.5), rng.uniform(0.002, 0.02)
            values = [
                floor + math.exp(-rate * step) + rng.gauss(0, 0.01) for step in range(1, points + 1)
            ]
            raw.executemany(
                "INSERT INTO metric_points (trial_id, key_id, steps_completed, value, run_id) "
                "VALUES (?, ?, ?, ?, 1)",
                ((trial_id, key_id, step, value) for step, value in enumerate(values, 1)),
            )
            low = min(range(points), key=values.__getitem__)
            high = max(range(points), key=values.__getitem__)
            summaries.append(
                (trial_id, key_id, points, values[-1], points)
                + (values[low], low + 1, values[high], high + 1)
            )
        raw.executemany(
            "INSERT INTO metric_summaries (trial_id, key_id, count, last, last_step, min, "
            "min_step, max, max_step) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            summaries,
        )
    return {
        "trials": len(trial_ids),
        "points": len(trial_ids) * points,
        "seconds": round(time.monotonic() - started, 1),
        "db_mb": round(sum(f.stat().st_size for f in db_path.parent.glob("shipyard.db*")) / 1e6),
    }


def timed(api: httpx.Client, path: str, params: dict[str, Any], repeat: int) -> dict[str, Any]:
    """The first GET's time in ms (on a master just started: nothing cached yet), then
    p50/p95/max of ``repeat`` more, and the answer's size."""
    started = time.perf_counter()
    api.get(path, params=params).raise_for_status()
    first = (time.perf_counter() - started) * 1000
    times, size = [], 0
    for _ in range(repeat):
        started = time.perf_counter()
        answer = api.get(path, params=params)
        times.append((time.perf_counter() - started) * 1000)
        size = len(answer.raise_for_status().content)
    return {
        "first_ms": round(first, 1),
        "p50_ms": round(statistics.median(times), 1),
        "p95_ms": round(percentile(times, 0.95), 1),
        "max_ms": round(max(times), 1),
        "bytes": size,
    }


def login_cookies(master: Master) -> list[dict[str, str]]:
    """The web UI's session cookies for the local user: a login ticket redeemed at /login,
    as the browser does with the link `shipyard up` prints."""
    with master.api() as api:
        ticket = api.post("/auth/tickets").raise_for_status().json()["ticket"]
    answer = httpx.get(f"{master.url}/login", params={"ticket": ticket}, follow_redirects=False)
    if not answer.cookies:
        raise RuntimeError(f"/login?ticket= set no cookie: HTTP {answer.status_code}")
    return [
        {"name": name, "value": value, "url": master.url} for name, value in answer.cookies.items()
    ]


FIRST_VIEWS = 5  # experiments viewed for the first time, each once
COLD_STARTS = 3  # masters started again, each viewed once


class Browser:
    """One Chromium for the whole run, as a user's browser is running before they open a page;
    each view is in a fresh context (no cache, no state), logged in."""

    def __init__(self, executable: Path) -> None:
        self.executable = executable

    def __enter__(self) -> Browser:
        from playwright.sync_api import sync_playwright

        self._playwright = sync_playwright().start()
        self._browser = self._playwright.chromium.launch(
            executable_path=str(self.executable), args=CHROMIUM_ARGS
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self._browser.close()
        self._playwright.stop()

    def view(self, url: str, cookies: list[dict[str, str]]) -> dict[str, Any]:
        """First contentful paint and the time until the curves chart has drawn (ms from
        navigation start), the lines drawn and the page's API requests."""
        context = self._browser.new_context()
        try:
            context.add_cookies(cookies)  # type: ignore[arg-type]
            page = context.new_page()
            page.goto(url)
            chart = page.wait_for_selector(CHART, timeout=60_000)
            assert chart is not None
            return {
                "chart_ms": page.evaluate("performance.now()"),
                "paint_ms": page.evaluate(
                    "performance.getEntriesByName('first-contentful-paint')[0].startTime"
                ),
                "lines": int(chart.get_attribute("data-series-count") or 0),
                "requests": page.evaluate(API_REQUESTS),
            }
        finally:
            context.close()


def page_times(views: list[dict[str, Any]]) -> dict[str, Any]:
    charts = [v["chart_ms"] for v in views]
    return {
        "views": len(views),
        "first_contentful_paint_ms": round(statistics.median(v["paint_ms"] for v in views)),
        "chart_drawn_ms": round(statistics.median(charts)),
        "chart_drawn_max_ms": round(max(charts)),
        "chart_drawn_each_ms": [round(c) for c in charts],
        "lines_drawn": min(v["lines"] for v in views),
        "api_requests_ms": views[-1]["requests"],  # the last view's: [sent, answered]
    }


class SQLiteStore:
    """The master's default database: shipyard.db in its home."""

    kind = "sqlite"

    def __init__(self, home: Path) -> None:
        self.path = home / "shipyard.db"

    def seed(self, experiment_ids: list[int], trials: int, points: int) -> dict[str, Any]:
        return seed(self.path, experiment_ids, trials, points)

    def ready_to_measure(self) -> dict[str, Any]:
        return {}

    def stored_curves(self, max_points: int) -> dict[int, int]:
        with sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, timeout=30) as db:
            rows = db.execute(
                "SELECT t.experiment_id, count(*) FROM stored_curves c "
                "JOIN metric_keys k ON k.id = c.key_id JOIN trials t ON t.id = c.trial_id "
                "WHERE k.name = 'val_loss' AND c.max_points = ? GROUP BY t.experiment_id",
                (max_points,),
            ).fetchall()
        return dict(rows)

    def size_bytes(self) -> int:
        return sum(f.stat().st_size for f in self.path.parent.glob("shipyard.db*"))


class PostgresStore:
    """A throwaway PostgreSQL cluster (bench/_postgres.py), seeded with COPY."""

    kind = "postgresql"

    def __init__(self, cluster: Any, rebuild_indexes: bool) -> None:
        self.cluster = cluster
        self.rebuild_indexes = rebuild_indexes

    def seed(self, experiment_ids: list[int], trials: int, points: int) -> dict[str, Any]:
        import _postgres

        with self.cluster.connect() as conn:
            seeded = _postgres.seed(
                conn,
                experiment_ids,
                trials,
                points,
                rebuild_indexes=self.rebuild_indexes,
                ended_at=ended_at,
                progress=log,
            )
        seeded["db_mb"] = round(self.size_bytes() / 1e6)
        return seeded

    def ready_to_measure(self) -> dict[str, Any]:
        """Start the cluster again with the settings it is measured with; those settings."""
        import _postgres

        self.cluster.halt()
        self.cluster.serve(_postgres.MEASURE_SETTINGS)
        return self.cluster.settings()

    def stored_curves(self, max_points: int) -> dict[int, int]:
        import _postgres

        return _postgres.stored_curve_count(self.cluster, max_points)

    def size_bytes(self) -> int:
        return int(self.cluster.size_bytes())


def stored_in_background(
    store: SQLiteStore | PostgresStore, experiments: int, trials: int, timeout_s: float
) -> dict[str, Any]:
    """Seconds until every seeded trial has its val_loss curve stored at the size the page
    asks (a master just started on the database stores them in the background), or how
    many were stored in ``timeout_s``, and the experiments whose curves all are."""
    size = chart_points(trials)
    started = time.perf_counter()
    every_s = 0.5 if store.kind == "sqlite" else 5.0  # its count is 0.3 s on PostgreSQL
    reported = 0.0
    while True:
        stored = store.stored_curves(size)
        done = sum(stored.values())
        elapsed = time.perf_counter() - started
        if done >= experiments * trials or elapsed > timeout_s:
            break
        if elapsed - reported >= 60:
            log(f"curves stored in the background: {done} of {experiments * trials}")
            reported = elapsed
        time.sleep(every_s)
    return {
        "seconds": round(elapsed, 1),
        "stored": done,
        "of": experiments * trials,
        "complete": sorted(exp for exp, count in stored.items() if count >= trials),
    }


def load_average() -> list[float]:
    return [round(load, 2) for load in os.getloadavg()]


def run(args: argparse.Namespace) -> dict[str, Any]:
    home = Path(tempfile.mkdtemp(prefix="shipyard-ui-scale-"))
    sizes = (args.experiments, args.trials, args.points, args.repeat, args.curves_timeout)
    try:
        if args.database == "sqlite":
            return measure(Master(slots=1, home=home), SQLiteStore(home), *sizes, args.browser)
        import _postgres

        with _postgres.throwaway_cluster() as cluster:
            store = PostgresStore(cluster, rebuild_indexes=args.pg_indexes == "rebuild")
            os.environ["SHIPYARD_DB_URL"] = cluster.url  # the bench's masters' database
            try:
                return measure(Master(slots=1, home=home), store, *sizes, args.browser)
            finally:
                os.environ.pop("SHIPYARD_DB_URL", None)
    finally:
        shutil.rmtree(home, ignore_errors=True)


def measure(
    master: Master,
    store: SQLiteStore | PostgresStore,
    experiments: int,
    trials: int,
    points: int,
    repeat: int,
    curves_timeout_s: float,
    browser_path: Path,
) -> dict[str, Any]:
    with master:
        ids = create_experiments(master, experiments, trials)
    log(f"{experiments} experiments created; seeding {experiments * trials} trials")
    seeded = store.seed(ids, trials, points)
    log(f"seeded in {seeded['seconds']} s")
    settings = store.ready_to_measure()
    loads = {"curves": load_average()}
    with Browser(browser_path) as browser:
        with master:  # the curves are stored in the background first, as trials end
            backfill = stored_in_background(store, experiments, trials, curves_timeout_s)
            log(f"curves stored in the background: {backfill['stored']} in {backfill['seconds']} s")
            if not backfill["complete"]:
                raise RuntimeError(f"no experiment has all its curves stored: {backfill}")
            viewed = backfill["complete"][:FIRST_VIEWS]  # each viewed for the first time
            exp = viewed[0]
            page_url = f"{master.url}/experiments/{exp}"
            loads["page_first_view"] = load_average()
            cookies = login_cookies(master)
            first_page = page_times(
                [browser.view(f"{master.url}/experiments/{e}", cookies) for e in viewed]
            )
        cold_views = []
        for _ in range(COLD_STARTS):
            with master:  # just started: the page's curves are read back
                loads["page_cold_master"] = load_average()
                cold_views.append(browser.view(page_url, login_cookies(master)))
        cold_page = page_times(cold_views)
        with master:  # again, for the APIs' first requests; then the same, repeated
            loads["api"] = load_average()
            with master.api(timeout_s=60) as api:
                curves_query = {"name": "val_loss", "group": "validation"}  # as the page asks
                apis = {
                    "experiments_list": timed(api, "/experiments", {}, repeat),
                    "experiment": timed(api, f"/experiments/{exp}", {}, repeat),
                    "learning_curves": timed(
                        api, f"/experiments/{exp}/curves", curves_query, repeat
                    ),
                }
            loads["page"] = load_average()
            cookies = login_cookies(master)
            warm_page = page_times(
                [browser.view(page_url, cookies) for _ in range(max(3, repeat // 5))]
            )
        browser_used = str(browser.executable)
    all_stored = backfill["stored"] >= backfill["of"]
    return {
        "bench": "ui_scale",
        "database": {"kind": store.kind, "bytes": store.size_bytes(), "settings": settings},
        "seeded": seeded,
        "seeding_s": seeded["seconds"],
        "experiments": experiments,
        "experiment_trials": trials,
        "measured_experiment": exp,
        "curves_stored_in_background_s": backfill["seconds"] if all_stored else None,
        "curves_stored_in_background": {k: backfill[k] for k in ("seconds", "stored", "of")},
        "load_average_1_5_15min": loads,
        "cpus": os.cpu_count(),
        "browser": browser_used,
        "api": apis,
        "page_first_view": first_page,
        "page_cold_master": cold_page,
        "page": warm_page,
        "targets": {
            "api_p95_under_100ms": {name: f["p95_ms"] < 100 for name, f in apis.items()},
            "page_under_1500ms": warm_page["chart_drawn_ms"] < 1500,
            "page_under_1500ms_first_view": first_page["chart_drawn_ms"] < 1500,
            "page_under_1500ms_cold_master": cold_page["chart_drawn_ms"] < 1500,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgres"), default="sqlite")
    parser.add_argument("--experiments", type=int, default=10)
    parser.add_argument("--trials", type=int, default=1000, help="trials per experiment")
    parser.add_argument("--points", type=int, default=1000, help="validation points per trial")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument(
        "--curves-timeout",
        type=float,
        default=3 * 3600,
        help="seconds to wait for the curves stored in the background (then measure an "
        "experiment whose curves are)",
    )
    parser.add_argument(
        "--pg-indexes",
        choices=("keep", "rebuild"),
        default="rebuild",
        help="PostgreSQL: drop metric_points' primary key for the load and build it after "
        "(faster: 100 s against 143 s for 30 M points), or keep it during the load",
    )
    parser.add_argument(
        "--browser",
        type=Path,
        default=CHROMIUM,
        help=f"the Chromium to time the page in (default: {CHROMIUM}, the tests' browser; "
        "/usr/bin/chromium is the full browser)",
    )
    args = parser.parse_args()
    print(json.dumps(run(args)))


if __name__ == "__main__":
    main()
