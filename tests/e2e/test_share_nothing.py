"""Trials on nodes that share nothing with the master (docs/share-nothing.md): a real master
over HTTPS with `kubernetes` pools played by Podman (`engine: podman`) whose Pods mount
nothing of the master's disk, on a Podman network of the test's own (their own network
namespace: they reach this machine only at the network's gateway address). The trial's image
has Shipyard installed (as a user's training image would: the package and boto3 copied into
the tests' Debian image); its run fetches the code and config from the master with its task
token, keeps the code in the node's cache, checkpoints into a real S3 server (SeaweedFS, on
the gateway address), and sends its output back over HTTP."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest
import yaml

from tests.e2e import master as e2e
from tests.e2e.master import CODE, Master
from tests.e2e.test_auth import self_signed
from tests.fixtures.containers import IMAGE
from tests.fixtures.node_image import NODE_IMAGE, build_node_image
from tests.fixtures.s3 import S3Server, seaweedfs_server

pytestmark = pytest.mark.containers

PREFIX = "share-nothing"


@pytest.fixture(scope="module")
def node_image(podman_env, tmp_path_factory) -> str:
    return build_node_image(podman_env, tmp_path_factory.mktemp("node-image"))


@pytest.fixture(scope="module")
def network(podman_env) -> Iterator[str]:
    """A Podman network of the test's own: its Pods have their own network namespace and
    reach this machine only at the network's gateway address."""
    env = {**os.environ, **podman_env}
    name = f"shipyard-sn-{os.getpid()}"
    subprocess.run(["podman", "network", "create", name], env=env, check=True, capture_output=True)
    inspect = ["podman", "network", "inspect", name, "--format"]
    gateway = subprocess.run(
        [*inspect, "{{range .Subnets}}{{.Gateway}}{{end}}"],
        env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    # The network's bridge (and its gateway address on this machine) exists while a
    # container is on it: one holds it for the module, so servers can listen there.
    subprocess.run(
        ["podman", "run", "-d", "--rm", "--name", f"{name}-anchor", "--network", name,
         IMAGE, "sleep", "infinity"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    yield gateway
    subprocess.run(
        ["podman", "rm", "-f", "-t", "0", f"{name}-anchor"], env=env, capture_output=True
    )
    subprocess.run(["podman", "network", "rm", "-f", name], env=env, capture_output=True)


@pytest.fixture(scope="module")
def s3(network) -> Iterator[S3Server]:
    """An S3 server the Pods reach: on the network's gateway address, not on loopback."""
    with seaweedfs_server(ip=network) as server:
        yield server


@pytest.fixture
def bucket(s3) -> str:
    return s3.new_bucket()


@pytest.fixture(scope="module")
def master(podman_env, node_image, network, tmp_path_factory) -> Iterator[Master]:
    """A master over HTTPS, listening beyond loopback (authentication is on). Pool `k8s`:
    Pods on the test's network, reaching the master at the gateway address; `k8s-split`: a
    gang of two Pods, on the host's network (Pods of a gang on a Podman network cannot
    find each other yet)."""
    cache = tmp_path_factory.mktemp("node-cache")
    tls = self_signed(tmp_path_factory.mktemp("tls"), network)
    home = tmp_path_factory.mktemp("share-nothing") / "home"
    m = Master(home, tls=tls, host="0.0.0.0")
    pod = {"type": "kubernetes", "engine": "podman", "slot_type": "cpu"}
    config = yaml.safe_dump(
        {
            "resource_pools": [
                {"pool_name": "default", "slots": 1},
                {
                    "pool_name": "k8s",
                    **pod,
                    "network": f"shipyard-sn-{os.getpid()}",
                    "master_url": f"https://{network}:{m.port}",
                    "code_cache_dir": str(cache),
                },
                {"pool_name": "k8s-split", **pod, "slots_per_pod": 1},
            ]
        }
    )
    m.config = config
    with pytest.MonkeyPatch.context() as mp:
        for key, value in podman_env.items():
            mp.setenv(key, value)
        mp.setenv("SHIPYARD_CA_CERT", str(tls[0]))  # the tests' CLI and SDK trust it
        m.start()
        m.node_cache = cache  # type: ignore[attr-defined]
        yield m
        m.stop()


def _config(storage: dict, name: str, hparams: str, searcher: str = e2e.SINGLE) -> str:
    pool = e2e.Pool("k8s", image=NODE_IMAGE, max_restarts=0)
    return pool.config(
        name, hparams, searcher, extra=yaml.safe_dump({"checkpoint_storage": storage})
    )


def _launcher_lines(master: Master, trial_id: int) -> list[str]:
    r = master.http.get(f"/trials/{trial_id}/logs", params={"limit": 1000})
    return [line["text"] for line in r.json()["lines"] if line["stream"] == "launcher"]


def test_trials_fetch_their_code_once_per_node_and_send_their_output_back(
    master, s3, bucket, podman_env
):
    storage = s3.storage(bucket, PREFIX)
    searcher = "{name: random, metric: val_loss, max_trials: 2, max_concurrent_trials: 1}"
    hparams = "{x: {type: double, minval: -1, maxval: 1}, steps: 4, ckpt_every: 2}"
    exp = master.create(_config(storage, "share-nothing", hparams, searcher), CODE)
    done = master.wait(exp["id"], timeout=180)
    assert done["state"] == "COMPLETED", done
    first, second = sorted(done["trials"], key=lambda t: t["id"])
    for trial in (first, second):
        assert [s for s, _ in master.metrics(trial["id"], "training", "loss")] == [1, 2, 3, 4]
        # Its output reached the master over HTTP: no file of the Pod's is read.
        assert "finished" in master.logs(trial["id"])
        detail = master.trial(trial["id"])
        assert detail["latest_checkpoint"]
        [run] = detail["runs"]
        assert run["environment"]["image"] == NODE_IMAGE
    # The code went to the node once: the second trial found it in the node's cache.
    [fetched] = [line for line in _launcher_lines(master, first["id"]) if line.startswith("code ")]
    assert "downloaded" in fetched
    [cached] = [line for line in _launcher_lines(master, second["id"]) if line.startswith("code ")]
    assert "from this node's cache" in cached
    assert len(list((master.node_cache / "contexts").glob("*.tar.gz"))) == 1
    # The config each trial got is on the node, without the storage's secret key.
    configs = list((master.node_cache / "trials").glob("*/config.json"))
    assert len(configs) == 2
    assert all(s3.secret_key not in c.read_text() for c in configs)
    assert all('"bucket"' in c.read_text() for c in configs)
    # Nothing was made for these trials on the master's disk: no working dir, no log file.
    assert not (master.home / "trials" / str(first["id"])).exists()
    assert not list((master.home / "logs").glob(f"trial-{first['id']}-run-*.log"))
    # The run's credentials were in a Secret of its own, deleted with its Pods.
    secrets = subprocess.run(
        ["podman", "secret", "ls", "--format", "{{.Name}}"],
        capture_output=True, text=True, check=True, env={**os.environ, **podman_env},
    )  # fmt: skip
    assert not [name for name in secrets.stdout.split() if name.startswith("shipyard-t")]
    # The checkpoints are in the bucket (one a ckpt_every, kept as the default retention).
    listed = s3.client().list_objects_v2(Bucket=bucket, Prefix=PREFIX + "/")
    manifests = [o["Key"] for o in listed.get("Contents", []) if o["Key"].endswith("metadata.json")]
    assert len(manifests) >= 2


def test_a_trial_in_its_own_network_namespace_reaches_the_master_over_tls_only(
    master, network, s3, bucket
):
    config = _config(s3.storage(bucket, PREFIX), "share-nothing-net", "{}").replace(
        "python3 steps.py", "python3 net_probe.py"
    )
    done = master.wait(master.create(config, CODE)["id"], timeout=120)
    assert done["state"] == "COMPLETED", done
    [trial] = done["trials"]
    printed = master.logs(trial["id"])
    assert f"master=https://{network}" in printed
    assert "loopback: unreachable" in printed  # not the host's network
    assert "ca=set" in printed  # the master's certificate, sent by value


def test_every_rank_of_a_two_pod_gang_sends_its_lines(master, s3, bucket):
    """Each Pod's entry numbers its own lines (its node rank is the source), so the two
    streams of one run never collide at the master."""
    config = yaml.safe_dump(
        {
            "name": "share-nothing-gang",
            "entrypoint": "python3 -m shipyard.launch.torch_distributed python3 gang_steps.py",
            "hyperparameters": {"steps": 5},
            "searcher": {"name": "single", "metric": "loss"},
            "resources": {"resource_pool": "k8s-split", "slots_per_trial": 2},
            "environment": {"image": NODE_IMAGE},
            "checkpoint_storage": s3.storage(bucket, PREFIX),
            "max_restarts": 0,
        }
    )
    done = master.wait(master.create(config, CODE)["id"], timeout=180)
    assert done["state"] == "COMPLETED", done
    [trial] = done["trials"]
    r = master.http.get(f"/trials/{trial['id']}/logs", params={"limit": 1000})
    finished = {(line["rank"], line["text"]) for line in r.json()["lines"]}
    assert {(0, "rank 0 finished"), (1, "rank 1 finished")} <= finished
    [run] = master.trial(trial["id"])["runs"]
    assert len(run["environment"]["jobs"]) == 2  # one Pod a rank


def test_a_paused_trial_resumes_from_its_s3_checkpoint_in_a_new_pod(master, s3, bucket):
    storage = s3.storage(bucket, PREFIX)
    exp = master.create(_config(storage, "share-nothing-pause", e2e.PAUSABLE), CODE)
    trials = master.wait_for(lambda: master.experiment(exp["id"])["trials"], what="the trial")
    trial_id = trials[0]["id"]
    master.wait_for(
        lambda: master.trial(trial_id)["steps_completed"] >= 8, timeout=90, what="steps"
    )
    trial = e2e.pause_then_resume(master, exp["id"], trial_id)
    assert trial["latest_checkpoint"]


def test_a_shared_fs_storage_is_refused_on_a_pool_that_shares_nothing(master):
    exp = master.create(
        e2e.Pool("k8s", image=NODE_IMAGE, max_restarts=0).config(
            "share-nothing-shared-fs", "{steps: 2}"
        ),
        CODE,
    )
    done = master.wait(exp["id"], timeout=60)
    assert done["state"] == "ERRORED"
    [trial] = done["trials"]
    [run] = master.trial(trial["id"])["runs"]
    assert "checkpoint_storage of type shared_fs" in run["ended_how"]
    assert "set shared_fs: true on the pool" in run["ended_how"]


def test_a_batch_of_output_sent_again_is_stored_once(master, s3, bucket):
    """What the run's shipper relies on: lines are numbered per (run, source), so a batch
    resent after a lost answer, or one overlapping what is stored, adds only new lines."""
    storage = s3.storage(bucket, PREFIX)
    exp = master.create(_config(storage, "share-nothing-logs", "{steps: 1}"), CODE)
    done = master.wait(exp["id"], timeout=120)
    [summary] = done["trials"]
    trial_id = summary["id"]
    task = master.task_http(trial_id, 1)
    send = lambda first, lines: task.post(  # noqa: E731
        f"/trials/{trial_id}/logs",
        json={"run_id": 1, "source": 5, "first_line": first, "lines": lines},
    )
    assert send(0, ["[rank=3] one", "two"]).json() == {"stored": 2}
    assert send(0, ["[rank=3] one", "two"]).json() == {"stored": 0}  # the same batch again
    assert send(1, ["two", "three"]).json() == {"stored": 1}  # overlapping
    gap = send(5, ["six"])
    assert gap.status_code == 400 and "skips lines" in gap.text
    other_run = task.post(
        f"/trials/{trial_id}/logs", json={"run_id": 2, "first_line": 0, "lines": ["x"]}
    )
    assert other_run.status_code == 403
    lines = master.http.get(f"/trials/{trial_id}/logs", params={"limit": 1000}).json()["lines"]
    sent = [
        (line["rank"], line["text"]) for line in lines if line["text"] in ("one", "two", "three")
    ]
    assert sent == [(3, "one"), (0, "two"), (0, "three")]
