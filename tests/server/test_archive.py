"""Archiving, as in Determined: an ended experiment can be hidden from the experiment list
(nothing is deleted) and shown again; a live one must be killed first. Through the API,
the `shipyard` command and the SDK, against a real master."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from shipyard.client import Shipyard
from shipyard.common.errors import Conflict
from tests.e2e.master import Master

CODE = Path(__file__).parents[1] / "e2e" / "trial_code"


def gated(gate: Path) -> str:
    """One trial that runs until the file `gate` exists (trial_code/gated.py)."""
    return (
        "name: to-archive\n"
        "entrypoint: python3 gated.py\n"
        f"hyperparameters:\n  gate: {json.dumps(str(gate))}\n"
        "searcher: {name: single, metric: val_loss}\n"
        "max_restarts: 0\n"
    )


@pytest.fixture(scope="module")
def master(tmp_path_factory):
    m = Master(tmp_path_factory.mktemp("archive") / "home", slots=2).start()
    yield m
    m.stop()


@pytest.fixture
def running(master, tmp_path) -> int:
    exp = master.create(gated(tmp_path / "never-created"), CODE)
    yield exp["id"]
    master.http.post(f"/experiments/{exp['id']}/kill")


def listed(master, **params) -> list[int]:
    r = master.http.get("/experiments", params=params)
    assert r.status_code == 200, r.text
    return [e["id"] for e in r.json()]


def test_only_an_ended_experiment_can_be_archived_and_archived_ones_leave_the_list(master, running):
    r = master.http.post(f"/experiments/{running}/archive")
    assert r.status_code == 409
    message = r.json()["error"]["message"]
    assert "ACTIVE" in message and "kill it first" in message

    assert master.http.post(f"/experiments/{running}/kill").status_code == 200
    r = master.http.post(f"/experiments/{running}/archive")
    assert r.status_code == 200, r.text
    assert r.json() == {"id": running, "state": "CANCELED"}
    assert master.experiment(running)["archived"] is True

    assert running not in listed(master)  # hidden by default
    assert running in listed(master, archived="true")
    assert running in listed(master, archived="all")
    summaries = master.http.get("/experiments", params={"archived": "true"}).json()
    assert all(e["archived"] for e in summaries)

    assert master.http.post(f"/experiments/{running}/archive").status_code == 200  # again: no-op
    r = master.http.post(f"/experiments/{running}/unarchive")
    assert r.status_code == 200 and r.json() == {"id": running, "state": "CANCELED"}
    assert master.experiment(running)["archived"] is False
    assert running in listed(master)
    assert running not in listed(master, archived="true")


def test_a_bad_archived_filter_is_400_naming_it(master):
    r = master.http.get("/experiments", params={"archived": "yes"})
    assert r.status_code == 400
    assert r.json()["error"]["details"][0]["path"] == "query.archived"


def test_an_unknown_experiment_is_404(master):
    for verb in ("archive", "unarchive"):
        r = master.http.post(f"/experiments/9999/{verb}")
        assert r.status_code == 404
        assert "experiment 9999 does not exist" in r.json()["error"]["message"]


def test_archive_unarchive_and_list_all_from_the_command_line(master, running):
    refused = master.cli("experiment", "archive", running)
    assert refused.returncode == 1, refused.stdout
    assert "kill it first" in refused.stderr and "Traceback" not in refused.stderr

    master.http.post(f"/experiments/{running}/kill").raise_for_status()
    done = master.cli("experiment", "archive", running)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"Experiment {running} is archived"

    def rows(*flags: str) -> dict[int, str]:
        result = master.cli("experiment", "list", *flags)
        assert result.returncode == 0, result.stderr
        cells = [line.split("│") for line in result.stdout.splitlines() if line.startswith("│")]
        # ID, Name, Owner, State, ...
        return {int(c[1]): c[4].strip() for c in cells if c[1].strip().isdigit()}

    assert running not in rows()
    assert rows("--all")[running] == "CANCELED (archived)"
    # `shipyard status` still counts the archived experiment's trials.
    status = json.loads(master.cli("status", "--json").stdout)
    killed = master.experiment(running)["trial_states"]
    assert killed and all(status["trial_states"].get(k, 0) >= n for k, n in killed.items())
    shown = master.cli("experiment", "describe", running).stdout
    assert re.search(r"^State\s+CANCELED \(archived\)\s*$", shown, re.M), shown

    back = master.cli("experiment", "unarchive", running, "--json")
    assert back.returncode == 0, back.stderr
    assert json.loads(back.stdout) == {"id": running, "state": "CANCELED"}
    assert rows()[running] == "CANCELED"


def test_archive_from_the_sdk(master, running):
    with Shipyard(master.url) as sy:
        with pytest.raises(Conflict, match="kill it first"):
            sy.archive(running)
        sy.kill(running)
        assert sy.archive(running).state == "CANCELED"
        assert running not in [e.id for e in sy.list_experiments()]
        assert [e.id for e in sy.list_experiments(archived="true")] == [running]
        assert sy.get_experiment(running).archived
        sy.unarchive(running)
        assert running in [e.id for e in sy.list_experiments()]
