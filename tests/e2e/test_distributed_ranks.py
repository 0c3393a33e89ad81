"""Two ranks of one trial under a real master, started by hand the way a launcher starts them
(the trial's entrypoint starts a coordinator and two rank processes with the env contract):
the chief's preemption signal stops both ranks at the same step, and both write into one
registered checkpoint."""

from __future__ import annotations

import re

LAUNCH = """
import os, subprocess, sys
from shipyard.launch._coordinator import serve

addr, stop = serve(size=2)
procs = []
for rank in range(2):
    env = dict(os.environ, SHIPYARD_RANK=str(rank), SHIPYARD_SIZE="2",
               SHIPYARD_LOCAL_RANK=str(rank), SHIPYARD_LOCAL_SIZE="2", SHIPYARD_DIST_ADDR=addr)
    procs.append(subprocess.Popen([sys.executable, "rank.py"], env=env))
codes = [proc.wait() for proc in procs]
stop()
sys.exit(max(codes))
"""

RANK = """
import sys, time
import shipyard.core

with shipyard.core.init() as ctx:
    rank = ctx.distributed.rank
    step = 0
    while step < 3000:
        step += 1
        time.sleep(0.01)
        ctx.train.report_training_metrics(step, {"loss": 1.0 + rank})  # the chief's only
        if ctx.preempt.should_preempt():
            with ctx.checkpoint.store_path({"steps_completed": step}, shard=True) as (path, uuid):
                (path / f"rank{rank}.txt").write_text(str(step))
            # One write: both ranks share the trial's stdout (no launcher relays their lines),
            # and print() writes the text and the newline apart when unbuffered.
            sys.stdout.write(f"rank {rank} preempted at step {step} checkpoint {uuid}\\n")
            break
"""

CONFIG = """
name: two-ranks
entrypoint: python3 launch.py
searcher:
  name: single
  metric: loss
  max_length: 3000
"""


def test_pause_stops_both_ranks_at_the_same_step_with_one_sharded_checkpoint(master, tmp_path):
    code = tmp_path / "code"
    code.mkdir()
    (code / "launch.py").write_text(LAUNCH)
    (code / "rank.py").write_text(RANK)
    exp = master.create(CONFIG, code)
    trial_id = exp["trials"][0]["id"]
    master.wait_for(lambda: master.trial(trial_id)["steps_completed"] > 3, what="progress")

    master.http.post(f"/experiments/{exp['id']}/pause").raise_for_status()
    master.wait_for(lambda: master.trial(trial_id)["state"] == "PAUSED", what="trial paused")

    stopped = {}
    for line in master.logs(trial_id):
        found = re.search(r"rank (\d) preempted at step (\d+) checkpoint (\S+)", line)
        if found:
            stopped[int(found[1])] = (int(found[2]), found[3])
    assert set(stopped) == {0, 1}
    assert stopped[0] == stopped[1]  # the same step and the same checkpoint
    step, uuid = stopped[0]
    assert master.trial(trial_id)["latest_checkpoint"] == uuid
    info = master.http.get(f"/checkpoints/{uuid}").json()
    assert info["resources"] == {"rank0.txt": len(str(step)), "rank1.txt": len(str(step))}
    assert info["steps_completed"] == step
    losses = master.metrics(trial_id, "training", "loss")
    assert losses and {value for _, value in losses} == {1.0}  # rank 1's 2.0 was dropped
    master.http.post(f"/experiments/{exp['id']}/kill")
