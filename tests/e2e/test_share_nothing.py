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
from tests.fixtures.poll import poll
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
    """A master over HTTPS, listening beyond loopback (authentication is on). Its pools'
    Pods are on the test's network and reach the master at the gateway address; `k8s-split`
    makes a gang of one Pod a slot, whose Pods find group 0 by its name."""
    cache = tmp_path_factory.mktemp("node-cache")
    tls = self_signed(tmp_path_factory.mktemp("tls"), network)
    home = tmp_path_factory.mktemp("share-nothing") / "home"
    m = Master(home, tls=tls, host="0.0.0.0")
    pod = {
        "type": "kubernetes",
        "engine": "podman",
        "slot_type": "cpu",
        "network": f"shipyard-sn-{os.getpid()}",
        "master_url": f"https://{network}:{m.port}",
        "code_cache_dir": str(cache),
    }
    config = yaml.safe_dump(
        {
            "resource_pools": [
                {"pool_name": "default", "slots": 1},
                {"pool_name": "k8s", **pod},
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


def _config(
    storage: dict, name: str, hparams: str, searcher: str = e2e.SINGLE, max_restarts: int = 0
) -> str:
    pool = e2e.Pool("k8s", image=NODE_IMAGE, max_restarts=max_restarts)
    return pool.config(
        name, hparams, searcher, extra=yaml.safe_dump({"checkpoint_storage": storage})
    )


def _launcher_lines(master: Master, trial_id: int) -> list[str]:
    r = master.http.get(f"/trials/{trial_id}/logs", params={"limit": 1000})
    return [line["text"] for line in r.json()["lines"] if line["stream"] == "launcher"]


def test_an_asha_search_fetches_its_code_once_per_node_and_sends_its_output_back(
    master, s3, bucket, podman_env
):
    """Four trials of an asynchronous successive halving search, two at a time: each trial's
    metric is its id, so the first is the best and the worse ones stop at a rung."""
    config = yaml.safe_dump(
        {
            "name": "share-nothing-asha",
            "entrypoint": "python3 rung_trial.py",
            "hyperparameters": {"length": 10, "sleep": 0.03, "checkpoint_at_end": True},
            "searcher": {
                "name": "async_halving",
                "metric": "loss",
                "time_metric": "batches",
                "max_time": 10,
                "num_rungs": 2,
                "divisor": 2,
                "max_trials": 4,
                "max_concurrent_trials": 2,
            },
            "resources": {"resource_pool": "k8s"},
            "environment": {"image": NODE_IMAGE},
            "checkpoint_storage": s3.storage(bucket, PREFIX),
            "max_restarts": 0,
        }
    )
    done = master.wait(master.create(config, CODE)["id"], timeout=240)
    assert done["state"] == "COMPLETED", done
    trials = sorted(done["trials"], key=lambda t: t["id"])
    assert len(trials) == 4
    assert trials[0]["state"] == "COMPLETED" and trials[0]["steps_completed"] == 10
    stopped = [t for t in trials if t["state"] == "STOPPED"]
    assert stopped and all("not in the top" in t["end_reason"] for t in stopped)
    assert {t["state"] for t in trials} <= {"COMPLETED", "STOPPED"}
    code_lines = []
    for trial in trials:
        # One metric a step, and its output reached the master over HTTP: no file of the
        # Pod's is read.
        steps = [s for s, _ in master.metrics(trial["id"], "validation", "loss")]
        assert steps == list(range(1, trial["steps_completed"] + 1))
        assert "finished" in master.logs(trial["id"])
        detail = master.trial(trial["id"])
        assert detail["latest_checkpoint"]  # in the bucket
        [run] = detail["runs"]
        assert run["environment"]["image"] == NODE_IMAGE
        [line] = [x for x in _launcher_lines(master, trial["id"]) if x.startswith("code ")]
        code_lines.append(line)
    # The code went to the node once (two trials that start together may both fetch it);
    # the later ones found it in the node's cache.
    assert any("downloaded" in line for line in code_lines), code_lines
    assert sum("from this node's cache" in line for line in code_lines) >= 2, code_lines
    assert len(list((master.node_cache / "contexts").glob("*.tar.gz"))) == 1
    # The config each trial got is on the node, without the storage's secret key.
    configs = list((master.node_cache / "trials").glob("*/config.json"))
    assert len(configs) >= 4
    assert all(s3.secret_key not in c.read_text() for c in configs)
    assert all('"bucket"' in c.read_text() for c in configs)
    # Nothing was made for these trials on the master's disk: no working dir, no log file.
    for trial in trials:
        assert not (master.home / "trials" / str(trial["id"])).exists()
        assert not list((master.home / "logs").glob(f"trial-{trial['id']}-run-*.log"))
    # The runs' credentials were in Secrets of their own, deleted with their Pods.
    secrets = subprocess.run(
        ["podman", "secret", "ls", "--format", "{{.Name}}"],
        capture_output=True, text=True, check=True, env={**os.environ, **podman_env},
    )  # fmt: skip
    assert not [name for name in secrets.stdout.split() if name.startswith("shipyard-t")]
    # Every trial's last checkpoint is in the bucket, its manifest written.
    listed = s3.client().list_objects_v2(Bucket=bucket, Prefix=PREFIX + "/")
    manifests = [o["Key"] for o in listed.get("Contents", []) if o["Key"].endswith("metadata.json")]
    assert len(manifests) >= 4


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


def test_a_gang_of_two_pods_on_the_network_trains_as_one_and_sends_every_ranks_lines(
    master, s3, bucket
):
    """The two Pods, each in its own network namespace, find group 0 by its Pod name and
    train as one gang; each Pod's entry numbers its own lines (its node rank is the
    source), so the two streams of one run never collide at the master."""
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
    # The chief's reports, once a step; its checkpoint, taken by both ranks, in the bucket.
    assert [s for s, _ in master.metrics(trial["id"], "training", "loss")] == [1, 2, 3, 4, 5]
    assert master.trial(trial["id"])["latest_checkpoint"]


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


def test_what_lives_on_the_masters_disk_is_refused_at_submit_naming_the_field(master):
    """The master's default shared_fs storage and a relative bind mount: a 422 naming each
    field and what to do, and nothing stored."""
    before = master.http.get("/experiments").json()
    config = e2e.Pool("k8s", image=NODE_IMAGE).config(
        "share-nothing-refused",
        "{steps: 2}",
        extra=yaml.safe_dump({"bind_mounts": [{"host_path": "/tmp", "container_path": "data"}]}),
    )
    r = master.post_experiment(config, CODE)
    assert r.status_code == 422, r.text
    details = {d["path"]: d["message"] for d in r.json()["error"]["details"]}
    assert set(details) == {"checkpoint_storage", "bind_mounts[0].container_path"}
    assert (
        "the master's default checkpoint_storage of type shared_fs" in details["checkpoint_storage"]
    )
    assert "set shared_fs: true on the pool" in details["checkpoint_storage"]
    assert "give an absolute path" in details["bind_mounts[0].container_path"]
    assert "resource pool 'k8s' shares no files with the master" in r.json()["error"]["message"]
    assert master.http.get("/experiments").json() == before


def test_a_secret_file_reaches_the_trial_by_value_and_is_masked(master, s3, bucket):
    """The master sends a secret file's content in the run's Secret; the entry writes it in
    a private directory on the node, and masks it in the output it sends back."""
    value = "sn-file-secret-8842"
    put = master.http.put("/workspaces/Uncategorized/secrets/SN_FILE", json={"value": value})
    assert put.is_success, put.text
    config = yaml.safe_dump(
        {
            "name": "share-nothing-secret-file",
            "entrypoint": "python3 secret_echo.py",
            "hyperparameters": {"env": "SN_VAR", "file": "creds/key.txt"},
            "searcher": {"name": "single", "metric": "val_loss"},
            "resources": {"resource_pool": "k8s"},
            "environment": {"image": NODE_IMAGE},
            "checkpoint_storage": s3.storage(bucket, PREFIX),
            "secrets": [
                {"name": "SN_FILE", "file": "creds/key.txt"},
                {"name": "SN_FILE", "env": "SN_VAR"},
            ],
            "max_restarts": 0,
        }
    )
    done = master.wait(master.create(config, CODE)["id"], timeout=120)
    assert done["state"] == "COMPLETED", done
    logs = master.logs(done["trials"][0]["id"])
    assert "the secret file matches the variable: True" in logs
    assert "marker-file ********" in logs
    assert value not in "\n".join(logs)


def test_an_image_without_shipyard_says_so_in_the_runs_end(master, s3, bucket):
    """The entry cannot start, so it sends nothing: the run's end quotes its Pod's log."""
    config = e2e.Pool("k8s", image=IMAGE, max_restarts=0).config(
        "share-nothing-no-shipyard",
        "{steps: 1}",
        extra=yaml.safe_dump({"checkpoint_storage": s3.storage(bucket, PREFIX)}),
    )
    done = master.wait(master.create(config, CODE)["id"], timeout=60)
    assert done["state"] == "ERRORED"
    [run] = master.trial(done["trials"][0]["id"])["runs"]
    assert run["ended_how"].startswith("exited with code 1; its last output:\n"), (
        run["ended_how"],
        _backend_lines(master),  # why the Pod's log was not quoted
    )
    assert "No module named 'shipyard'" in run["ended_how"]


def _backend_lines(master: Master) -> list[str]:
    text = (master.home / "master-test.log").read_text(errors="replace")
    return [line for line in text.splitlines() if "Kubernetes pool" in line][-10:]


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


def test_a_trial_container_killed_mid_upload_resumes_from_its_previous_checkpoint(
    master, s3, bucket, podman_env
):
    """kill -9 of the Pod's trial container while checkpoint 10's 300 MB file is uploading:
    no half checkpoint is ever visible, the new Pod resumes from checkpoint 5 in the bucket,
    each step's metric is kept once, and the master removes the killed upload's objects."""
    storage = s3.storage(bucket, PREFIX)
    hparams = f"{{steps: 10, ckpt_every: 5, ckpt_bytes: {300 * 2**20}, sleep: 0.3}}"
    config = _config(storage, "share-nothing-kill", hparams, max_restarts=1).replace(
        "python3 steps.py", "python3 checkpoint_gate.py"
    )
    exp = master.create(config, CODE)
    trial_id = exp["trials"][0]["id"]
    first = master.wait_for(
        lambda: master.trial(trial_id)["latest_checkpoint"], what="checkpoint 5 registered"
    )
    # The container's name first: only the kill is left for the upload's few seconds.
    env = {**os.environ, **podman_env}
    names = subprocess.run(
        ["podman", "ps", "--format", "{{.Names}}"], env=env, capture_output=True, text=True
    ).stdout.split()
    [container] = [n for n in names if n.startswith(f"shipyard-t{trial_id}-r1-")]
    victim = poll(
        lambda: s3.half_written(bucket, PREFIX, other_than=first),
        "checkpoint 10 half uploaded",
        timeout_s=60,
        every_s=0.02,
    )
    subprocess.run(["podman", "kill", "--signal", "KILL", container], env=env, check=True)

    done = master.wait(exp["id"], timeout=180)
    assert done["state"] == "COMPLETED", done
    trial = master.trial(trial_id)
    assert len(trial["runs"]) == 2
    assert "resumed from step 5" in master.logs(trial_id)
    assert [s for s, _ in master.metrics(trial_id, "training", "loss")] == list(range(1, 11))
    listed = master.http.get(f"/experiments/{exp['id']}/checkpoints").json()
    assert victim not in {c["uuid"] for c in listed}

    master.wait_for(
        lambda: s3.nothing_left_of(bucket, PREFIX, victim),
        timeout=60,
        what="the killed upload's objects removed",
    )
