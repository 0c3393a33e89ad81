"""Trial start on a node that shares nothing with the master: cold code cache vs warm, against
the same pool's start with the master's disk mounted (today's launch), in the same run.

One master, two `kubernetes` pools played by Podman on this machine (`engine: podman`), the
same image (Shipyard installed, tests/fixtures/node_image.py) and the same S3 checkpoint
storage (SeaweedFS): `shared_fs: true` (the Pod mounts the trial's files from the master's
disk) and `shared_fs: false` (the Pod's shipyard.launch.entry downloads the code snapshot and
config from the master, or finds the code in the node's cache). The code is
examples/quadratic plus a BLOB_MB file of random bytes, so a download costs something.
Each round starts, one after the other: a shared-disk trial, a trial with the node's cache
emptied first (cold), a trial with it filled (warm). Latency: create_experiment returned ->
the trial's first training metric stored. Prints one JSON object.

Target: the warm start within noise of the shared-disk start: its median at most the
shared-disk median plus the larger of their spreads (p90 - min).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml
from _master import REPO, Master, has_training_point
from _poll import poll
from _stats import summary

sys.path.insert(0, str(REPO))  # the tests' fixtures start Podman's root, the image and S3
from tests.fixtures.containers import (  # noqa: E402
    PodmanRoot,
    build_image_tarball,
    cache_dir,
    import_image,
)
from tests.fixtures.node_image import build_node_image  # noqa: E402
from tests.fixtures.s3 import seaweedfs_server  # noqa: E402

from shipyard.client import Shipyard  # noqa: E402

ROUNDS = 5
BLOB_MB = 20
TIMEOUT_S = 120.0
EXAMPLE = REPO / "examples" / "quadratic"


def code_dir(root: Path) -> Path:
    code = root / "code"
    shutil.copytree(EXAMPLE, code, ignore=shutil.ignore_patterns("__pycache__"))
    (code / "blob.bin").write_bytes(os.urandom(BLOB_MB * 2**20))
    return code


def experiment(pool: str, image: str, storage: dict) -> str:
    config = yaml.safe_load((EXAMPLE / "const.yaml").read_text())
    config["resources"] = {"resource_pool": pool, "slots_per_trial": 1}
    config["environment"] = {"image": image}
    config["checkpoint_storage"] = storage
    config["max_restarts"] = 0
    return yaml.safe_dump(config)


def start_latency(sy: Shipyard, api: httpx.Client, config_file: Path, code: Path) -> float:
    exp = sy.create_experiment(str(config_file), str(code))
    created = time.perf_counter()

    def trial_id() -> int | None:
        trials = api.get(f"/experiments/{exp.id}/trials").raise_for_status().json()
        return trials[0]["id"] if trials else None

    trial = poll(trial_id, "trial", timeout_s=TIMEOUT_S)
    poll(lambda: has_training_point(api, trial), "training metric", timeout_s=TIMEOUT_S)
    latency = time.perf_counter() - created
    done = sy.wait(exp.id, TIMEOUT_S)
    if done.state != "COMPLETED":
        raise RuntimeError(f"experiment {exp.id} ended {done.state}")
    return latency


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="shipyard-bench-share-nothing-"))
    (root / "podman").mkdir()
    podman = PodmanRoot(root / "podman").setup()
    try:
        import_image("podman", build_image_tarball(cache_dir() / "images"), podman.env)
        engine_env = {k: podman.env[k] for k in ("CONTAINERS_CONF", "CONTAINERS_STORAGE_CONF")}
        (root / "image").mkdir()
        image = build_node_image(engine_env, root / "image")
        os.environ.update(engine_env)  # the master's podman uses the same root
        node_cache = root / "node-cache"
        pools = {
            "resource_pools": [
                {"pool_name": "default", "slots": 1},
                {"pool_name": "shared", "type": "kubernetes", "engine": "podman",
                 "slot_type": "cpu", "shared_fs": True},
                {"pool_name": "nothing", "type": "kubernetes", "engine": "podman",
                 "slot_type": "cpu", "code_cache_dir": str(node_cache)},
            ]
        }  # fmt: skip
        code = code_dir(root)
        with seaweedfs_server() as s3, Master(config=yaml.safe_dump(pools)) as master:
            storage = s3.storage(s3.new_bucket(), "bench")
            configs = {}
            for pool in ("shared", "nothing"):
                configs[pool] = root / f"{pool}.yaml"
                configs[pool].write_text(experiment(pool, image, storage))
            sy = Shipyard(master.url, token=master.token)
            samples: dict[str, list[float]] = {"shared": [], "cold": [], "warm": []}
            with master.api(timeout_s=10) as api:
                for _ in range(ROUNDS):
                    samples["shared"].append(start_latency(sy, api, configs["shared"], code))
                    shutil.rmtree(node_cache, ignore_errors=True)
                    samples["cold"].append(start_latency(sy, api, configs["nothing"], code))
                    samples["warm"].append(start_latency(sy, api, configs["nothing"], code))
    finally:
        podman.reset()
        shutil.rmtree(root, ignore_errors=True)
    figures = {name: summary(values) for name, values in samples.items()}
    spread = max(f["p90"] - f["min"] for f in (figures["shared"], figures["warm"]))
    result = {
        "benchmark": "share_nothing_start",
        "unit": "s",
        "what": "create_experiment returned -> first training metric stored, kubernetes pool "
        f"on Podman, code of {BLOB_MB} MiB",
        "rounds": ROUNDS,
        "shared_fs": figures["shared"],
        "cold_cache": figures["cold"],
        "warm_cache": figures["warm"],
        "warm_minus_shared_median": round(
            figures["warm"]["median"] - figures["shared"]["median"], 4
        ),
        "cold_minus_warm_median": round(figures["cold"]["median"] - figures["warm"]["median"], 4),
        "noise": round(spread, 4),
        "meets_target": figures["warm"]["median"] <= figures["shared"]["median"] + spread,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
