"""A deterministic training script for the chaos suite: a small NumPy MLP fitted by SGD with
momentum on a seeded synthetic regression task, which resumes bit-identically from any of its
checkpoints.

Everything a step depends on is either derived from (seed, step) or stored in the checkpoint:

- the data set and the initial weights come from `seed`;
- the batch order of each epoch is a permutation drawn from a generator seeded with
  (seed, epoch), so it needs no state;
- the input noise (a stand-in for data augmentation) comes from one stateful generator whose
  state is saved with the checkpoint, so a restart draws exactly what the first run would have;
- the weights and the momentum buffers are saved bit-exactly (`.npy` files).

So a trial killed at any moment and resumed from its latest checkpoint reports, for every step,
the value the undisturbed run reported, to the last bit.

hparams (the math): seed, lr, momentum, hidden, steps (used when the searcher sets no
max_length), ckpt_every (K).
hparams (timing only; they change nothing in the numbers):
  step_sleep   seconds to sleep after every step, so faults land mid-run;
  ckpt_sleep   seconds to sleep inside the checkpoint block, after the files are written
               and before the checkpoint is finalized;
  slow_ckpt_steps  the steps at which a checkpoint sleeps (empty or absent: every one).

Every step: report_training_metrics. Every K steps: checkpoint, then
report_validation_metrics. Every step: should_preempt() (checkpoint if the last one is older
than this step, then leave) and should_stop().
"""

from __future__ import annotations

import json
import os
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # one thread: exact and cheap on 2 cores
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import shipyard.core  # noqa: E402

N_TRAIN, N_VAL, N_IN, BATCH = 512, 128, 8, 32
PARAMS = ("w1", "b1", "w2", "b2")


def make_data(seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng([seed, 0])
    x = rng.standard_normal((N_TRAIN + N_VAL, N_IN))
    teacher = rng.standard_normal((N_IN, 4))
    y = np.tanh(x @ teacher).sum(axis=1, keepdims=True) + 0.1 * rng.standard_normal(
        (N_TRAIN + N_VAL, 1)
    )
    return x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:]


def init_params(seed: int, hidden: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng([seed, 1])
    return {
        "w1": rng.standard_normal((N_IN, hidden)) / np.sqrt(N_IN),
        "b1": np.zeros(hidden),
        "w2": rng.standard_normal((hidden, 1)) / np.sqrt(hidden),
        "b2": np.zeros(1),
    }


def forward(p: dict[str, np.ndarray], x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = np.tanh(x @ p["w1"] + p["b1"])
    return h, h @ p["w2"] + p["b2"]


def mse(p: dict[str, np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
    return float(np.mean((forward(p, x)[1] - y) ** 2))


def batch_indices(seed: int, step: int) -> np.ndarray:
    """The examples of `step` (1-based): epoch e's order is a permutation from (seed, e)."""
    per_epoch = N_TRAIN // BATCH
    epoch, i = divmod(step - 1, per_epoch)
    order = np.random.default_rng([seed, 2, epoch]).permutation(N_TRAIN)
    return order[i * BATCH : (i + 1) * BATCH]


def sgd_step(p, velocity, x, y, lr: float, momentum: float) -> float:
    h, out = forward(p, x)
    err = out - y
    loss = float(np.mean(err**2))
    d_out = 2.0 * err / len(x)
    d_h = (d_out @ p["w2"].T) * (1.0 - h**2)
    grads = {"w2": h.T @ d_out, "b2": d_out.sum(axis=0), "w1": x.T @ d_h, "b1": d_h.sum(axis=0)}
    for name in PARAMS:
        velocity[name] = momentum * velocity[name] + grads[name]
        p[name] = p[name] - lr * velocity[name]
    return loss


class Trainer:
    def __init__(self, ctx: shipyard.core.Context) -> None:
        hp = ctx.info.hparams
        self.ctx = ctx
        self.seed = int(hp["seed"])
        self.lr = float(hp["lr"])
        self.momentum = float(hp.get("momentum", 0.9))
        self.ckpt_every = int(hp.get("ckpt_every", 10))
        self.step_sleep = float(hp.get("step_sleep", 0.0))
        self.ckpt_sleep = float(hp.get("ckpt_sleep", 0.0))
        self.slow_steps = set(hp.get("slow_ckpt_steps") or [])
        self.max_steps = int(ctx.searcher.max_length or hp.get("steps", 100))
        self.x, self.y, self.x_val, self.y_val = make_data(self.seed)
        self.params = init_params(self.seed, int(hp.get("hidden", 16)))
        self.velocity = {k: np.zeros_like(v) for k, v in self.params.items()}
        self.noise = np.random.default_rng([self.seed, 3])  # stateful: saved in checkpoints
        self.step = 0
        self.saved_step = 0

    # -- checkpoints ----------------------------------------------------------------------

    def save(self) -> None:
        with self.ctx.checkpoint.store_path({"steps_completed": self.step}) as (path, _uuid):
            for name in PARAMS:
                np.save(path / f"{name}.npy", self.params[name])
                np.save(path / f"velocity_{name}.npy", self.velocity[name])
            state = {"step": self.step, "noise_rng": self.noise.bit_generator.state}
            (path / "state.json").write_text(json.dumps(state))
            if self.ckpt_sleep and (not self.slow_steps or self.step in self.slow_steps):
                print(f"writing checkpoint at step {self.step} slowly", flush=True)
                time.sleep(self.ckpt_sleep)  # the checkpoint is not finalized yet
        self.saved_step = self.step

    def restore(self, uuid: str) -> None:
        with self.ctx.checkpoint.restore_path(uuid) as path:
            for name in PARAMS:
                self.params[name] = np.load(path / f"{name}.npy")
                self.velocity[name] = np.load(path / f"velocity_{name}.npy")
            state = json.loads((path / "state.json").read_text())
        self.noise.bit_generator.state = state["noise_rng"]
        self.step = self.saved_step = int(state["step"])
        print(f"resumed from step {self.step} in run {self.ctx.info.run_id}", flush=True)

    # -- training -------------------------------------------------------------------------

    def validate(self) -> None:
        loss = mse(self.params, self.x_val, self.y_val)
        self.ctx.train.report_validation_metrics(
            self.step, {"validation_loss": loss, "batches": self.step}
        )

    def train_one_step(self) -> None:
        self.step += 1
        idx = batch_indices(self.seed, self.step)
        x = self.x[idx] + 0.05 * self.noise.standard_normal((len(idx), N_IN))
        loss = sgd_step(self.params, self.velocity, x, self.y[idx], self.lr, self.momentum)
        self.ctx.train.report_training_metrics(self.step, {"loss": loss})

    def run(self) -> None:
        # The first call starts the master's signal long-poll, whose first answer comes a
        # round trip later: started now, a pause asked during the first step (or a slow first
        # checkpoint) is seen at the end of that step rather than one step late.
        self.ctx.preempt.should_preempt()
        if self.ctx.info.latest_checkpoint:
            self.restore(self.ctx.info.latest_checkpoint)
            if self.step and (self.step % self.ckpt_every == 0 or self.step == self.max_steps):
                # The checkpoint comes before its validation: a run killed between the two
                # reports it here (the same value: the weights are the same).
                self.validate()
        while self.step < self.max_steps:
            self.train_one_step()
            if self.step % self.ckpt_every == 0 or self.step == self.max_steps:
                self.save()
                self.validate()
            if self.ctx.preempt.should_preempt():
                if self.saved_step != self.step:
                    self.save()
                print(f"preempted at step {self.step}", flush=True)
                return
            if self.ctx.searcher.should_stop():
                print(f"stopped by the searcher at step {self.step}", flush=True)
                return
            if self.step_sleep:
                time.sleep(self.step_sleep)
        print(f"finished at step {self.step}", flush=True)


def main() -> None:
    with shipyard.core.init(hparams={"seed": 1, "lr": 0.05, "steps": 60}) as ctx:
        Trainer(ctx).run()


if __name__ == "__main__":
    main()
