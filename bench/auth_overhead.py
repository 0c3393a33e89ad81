"""Authentication overhead: the same master build with authentication on (the default) and
off (`--no-auth`), both running in this one benchmark, measured in alternating rounds.

- Metric ingest: each master runs a parked trial (a `sleep`: it holds a slot and never
  reports). This script posts training reports to POST /trials/{id}/metrics with the
  trials' own client (shipyard.core._http.JsonHttp), carrying the trial's task token when
  authentication is on; each request is sent once the last one answered, as a trial's
  metric sender does. A round sends POSTS[batch] requests to each master, alternating
  between the two request by request (on, off, off, on, ...), so both meet the same
  moment's load on a shared machine; per mode, reports/s = its reports / the seconds its
  requests took. Two batch sizes: BATCH reports per POST (a loop reporting every step,
  gathered by the sender for 0.2 s) and 1 (where the token check's share of a request is
  largest). Target: ratio on/off of the medians over rounds >= 0.95 at both sizes (the
  top-level "ratio" is the lower of the two). A second --no-auth master takes part in the
  same rounds: its ratio to the first ("a_a_ratio", ideally 1) is how far two masters of
  the same kind differ here, the noise the on/off ratio is to be judged against.
- Launch latency: bench/launch_latency.py's measurement (create_experiment returned ->
  the trial's first training metric stored) on each master in turn, alternating which goes
  first. With authentication on, the master mints the run's task token and checks it on
  each of the trial's requests. The medians' ratio on/off (above 1: slower with it), and
  each side's min and max to judge it against the run-to-run noise.

Prints one JSON object; compares within this run only, never an absolute time.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from _master import Master
from _poll import poll
from _stats import summary
from launch_latency import first_training_metric_latency

from shipyard.client import Shipyard
from shipyard.core._http import JsonHttp

MODES = ("on", "off")  # authentication on (the default) and --no-auth
SIDES = (*MODES, "off_again")  # the ingest rounds' masters: the last one for the A/A ratio
INGEST_ROUNDS = 20  # per batch size
BATCH = 20
POSTS = {BATCH: 40, 1: 60}  # per mode and round: about a second a round
LAUNCHES = 10  # per mode
TARGET_RATIO = 0.95
# The parked trial: sleeps (no report, no CPU) until it is killed at the end; the cap
# only matters if this script dies before that.
PARKED = """
name: bench-auth-overhead-parked
entrypoint: sleep 900
searcher: {name: single, metric: loss}
max_restarts: 0
"""


@dataclass
class Sender:
    """A trial's metric path to one master: its client, trial, run and next step."""

    http: JsonHttp
    trial_id: int
    run_id: int
    step: int = 0

    def body(self, batch: int) -> dict[str, Any]:
        reports = []
        for _ in range(batch):
            self.step += 1
            metrics = {"loss": 1.0 / self.step, "lr": 0.01}
            reports.append({"group": "training", "steps_completed": self.step, "metrics": metrics})
        return {"run_id": self.run_id, "reports": reports}

    def post(self, body: dict[str, Any]) -> None:
        self.http.request("POST", f"/api/v1/trials/{self.trial_id}/metrics", body)


def park_trial(master: Master) -> tuple[int, int, int]:
    """Start the parked trial; returns its experiment, trial and run ids once it runs."""
    with master.api() as api:
        experiment = api.post("/experiments", json={"config_yaml": PARKED})
        experiment_id = experiment.raise_for_status().json()["id"]

        def running() -> dict[str, Any] | None:
            trials = api.get(f"/experiments/{experiment_id}/trials").raise_for_status().json()
            return trials[0] if trials and trials[0]["state"] == "RUNNING" else None

        trial = poll(running, "the parked trial running", timeout_s=60, every_s=0.05)
    return experiment_id, trial["id"], trial["run_id"]


def kill_parked(master: Master, experiment_id: int) -> None:
    """The sleeping trial would outlive its master: end it first."""
    with master.api() as api:
        api.post(f"/experiments/{experiment_id}/kill").raise_for_status()
        poll(
            lambda: api.get(f"/experiments/{experiment_id}").json()["state"] != "ACTIVE",
            "the parked experiment's end",
            timeout_s=30,
            every_s=0.1,
        )


def in_turn(index: int, sides: tuple[str, ...]) -> tuple[str, ...]:
    """The sides rotated by index (on, off, then off, on): none always goes first."""
    shift = index % len(sides)
    return sides[shift:] + sides[:shift]


def ingest_round(senders: dict[str, Sender], batch: int) -> dict[str, float]:
    """Reports/s of each side over one round of requests alternating between the masters."""
    spent = dict.fromkeys(senders, 0.0)
    for index in range(POSTS[batch]):
        for side in in_turn(index, tuple(senders)):
            body = senders[side].body(batch)  # built off the clock
            started = time.perf_counter()
            senders[side].post(body)
            spent[side] += time.perf_counter() - started
    return {side: POSTS[batch] * batch / seconds for side, seconds in spent.items()}


def ingest_samples(senders: dict[str, Sender], batch: int) -> dict[str, list[float]]:
    ingest_round(senders, batch)  # warm-up: connections, metric keys, caches
    rounds = [ingest_round(senders, batch) for _ in range(INGEST_ROUNDS)]
    return {side: [r[side] for r in rounds] for side in senders}


def interleaved(measure: Callable[[str], float], rounds: int) -> dict[str, list[float]]:
    """`rounds` samples of each mode after one warm-up each, alternating the order."""
    for mode in MODES:
        measure(mode)
    samples: dict[str, list[float]] = {mode: [] for mode in MODES}
    for index in range(rounds):
        for mode in in_turn(index, MODES):
            samples[mode].append(measure(mode))
    return samples


def compared(samples: dict[str, list[float]], digits: int) -> dict[str, Any]:
    """Each mode's summary, the ratio on/off of the medians, and each round's own ratio
    (its median: a second estimate, less moved by a drift of the load across rounds)."""
    on, off = samples["on"], samples["off"]
    paired = [a / b for a, b in zip(on, off, strict=True)]
    return {
        "auth_on": summary(on, digits),
        "auth_off": summary(off, digits),
        "ratio_on_off": round(statistics.median(on) / statistics.median(off), 4),
        "paired_ratio_median": round(statistics.median(paired), 4),
        "paired_ratios": [round(ratio, 4) for ratio in paired],
    }


def ingest_figures(senders: dict[str, Sender]) -> dict[str, Any]:
    return {f"batch_{batch}": batch_figures(senders, batch) for batch in POSTS}


def batch_figures(senders: dict[str, Sender], batch: int) -> dict[str, Any]:
    samples = ingest_samples(senders, batch)
    result = compared(samples, digits=1)
    result["ratio_ok"] = result["ratio_on_off"] >= TARGET_RATIO
    again, off = (statistics.median(samples[side]) for side in ("off_again", "off"))
    result["a_a_ratio"] = round(again / off, 4)
    return {"reports_per_post": batch, "posts": POSTS[batch], **result}


def launch_figures(masters: dict[str, Master]) -> dict[str, Any]:
    clients = {mode: (Shipyard(m.url, token=m.token), m.api(10)) for mode, m in masters.items()}
    try:
        samples = interleaved(lambda mode: first_training_metric_latency(*clients[mode]), LAUNCHES)
    finally:
        for sy, api in clients.values():
            sy.close()
            api.close()
    result = compared(samples, digits=4)
    on, off = result["auth_on"], result["auth_off"]
    # Within the noise: auth-on's median lies inside the range of the auth-off rounds.
    result["median_within_off_range"] = off["min"] <= on["median"] <= off["max"]
    return result


def main() -> None:
    with ExitStack() as stack:
        masters = {side: stack.enter_context(Master(slots=2, auth=side == "on")) for side in SIDES}
        senders = {}
        for side, master in masters.items():
            experiment_id, trial_id, run_id = park_trial(master)
            stack.callback(kill_parked, master, experiment_id)
            http = JsonHttp(master.url, token=master.task_token(trial_id, run_id))
            stack.callback(http.close)
            senders[side] = Sender(http, trial_id, run_id)
        ingest = ingest_figures(senders)
        launch = launch_figures({mode: masters[mode] for mode in MODES})
    ratio = min(figures["ratio_on_off"] for figures in ingest.values())
    print(
        json.dumps(
            {
                "benchmark": "auth_overhead",
                "what": "the same master with authentication on vs --no-auth, interleaved",
                "ingest_unit": "reports/s",
                "ingest_rounds": INGEST_ROUNDS,
                "ingest": ingest,
                "launch_unit": "s",
                "launch_what": "create_experiment returned -> first training metric stored",
                "launch_rounds": LAUNCHES,
                "launch_latency": launch,
                "ratio": ratio,
                "target_ratio": TARGET_RATIO,
                "ratio_ok": ratio >= TARGET_RATIO,
            }
        )
    )


if __name__ == "__main__":
    main()
