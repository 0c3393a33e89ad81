"""Random-number state and the checkpoint's files.

A checkpoint directory holds files that load with plain ``torch.load`` (weights_only):
model.pt (the model's state_dict), optimizer.pt, lr_scheduler.pt and grad_scaler.pt when
there are ones, and trainer_state.pt (position in the data, random states). A manual trial's
second model is model_1.pt, and so on; its other stateful objects are state.pt, state_1.pt...
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import torch

try:
    import numpy as np
except ImportError:  # numpy is optional for torch
    np = None  # type: ignore[assignment]

FORMAT = 1
MODEL_FILE = "model.pt"
OPTIMIZER_FILE = "optimizer.pt"
SCHEDULER_FILE = "lr_scheduler.pt"
SCALER_FILE = "grad_scaler.pt"
STATE_FILE = "trainer_state.pt"
EXTRA_FILE = "state.pt"  # a manual trial's other objects with a state_dict


def capture_rng(generators: list[torch.Generator], *, full: bool = True) -> dict[str, Any]:
    """Python's, numpy's, torch's (CPU and every CUDA device) and ``generators``' states, in
    types ``torch.load(weights_only=True)`` reads back. ``full=False``: torch's CPU state and
    the generators only (what decides a DataLoader's shuffle), 20 times cheaper."""
    state: dict[str, Any] = {
        "python": None,
        "torch": torch.get_rng_state(),
        "cuda": [],
        "generators": [g.get_state() for g in generators],
        "numpy": None,
    }
    if not full:
        return state
    version, internal, gauss = random.getstate()
    state["python"] = [version, list(internal), gauss]
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    if np is not None:
        legacy = np.random.get_state(legacy=False)
        inner = legacy["state"]
        state["numpy"] = {
            "key": torch.from_numpy(inner["key"].astype(np.int64)),
            "pos": int(inner["pos"]),
            "has_gauss": int(legacy["has_gauss"]),
            "gauss": float(legacy["gauss"]),
        }
    return state


def restore_rng(state: dict[str, Any], generators: list[torch.Generator]) -> None:
    if state["python"] is not None:
        version, internal, gauss = state["python"]
        random.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(state["torch"])
    if state["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])
    for gen, saved in zip(generators, state["generators"], strict=False):
        gen.set_state(saved)
    saved_np = state["numpy"]
    if np is not None and saved_np is not None:
        np.random.set_state(
            {
                "bit_generator": "MT19937",
                "state": {
                    "key": saved_np["key"].numpy().astype(np.uint32),
                    "pos": saved_np["pos"],
                },
                "has_gauss": saved_np["has_gauss"],
                "gauss": saved_np["gauss"],
            }
        )


def _file(name: str, index: int) -> str:
    """The first object keeps the plain name (model.pt); the others are numbered (model_1.pt)."""
    if index == 0:
        return name
    stem, dot, ext = name.partition(".")
    return f"{stem}_{index}{dot}{ext}"


def _objects(**groups: Any) -> list[tuple[str, Any]]:
    """(file name, object) for each object of each group (a group: one object, None or a
    list of them), in the order the trial registered them."""
    files = {
        "models": MODEL_FILE,
        "optimizers": OPTIMIZER_FILE,
        "schedulers": SCHEDULER_FILE,
        "scalers": SCALER_FILE,
        "extras": EXTRA_FILE,
    }
    out: list[tuple[str, Any]] = []
    for group, objs in groups.items():
        if objs is None:
            continue
        if not isinstance(objs, list):
            objs = [objs]
        out.extend((_file(files[group], i), obj) for i, obj in enumerate(objs))
    return out


def write_checkpoint(
    path: Path,
    *,
    models: Any,
    optimizers: Any,
    schedulers: Any = None,
    scalers: Any = None,
    extras: Any = None,
    trainer_state: dict[str, Any],
) -> None:
    """Each group: one object, None, or a list (several models and optimizers)."""
    for name, obj in _objects(
        models=models, optimizers=optimizers, schedulers=schedulers, scalers=scalers, extras=extras
    ):
        torch.save(obj.state_dict(), path / name)
    torch.save({"format": FORMAT, **trainer_state}, path / STATE_FILE)


def read_checkpoint(
    path: Path,
    uuid: str,
    *,
    device: torch.device,
    models: Any,
    optimizers: Any,
    schedulers: Any = None,
    scalers: Any = None,
    extras: Any = None,
) -> dict[str, Any]:
    """Load the checkpoint's states into the objects; return its trainer state."""
    if not (path / STATE_FILE).is_file():
        raise ValueError(
            f"checkpoint {uuid} was not written by shipyard.integrations.torch.Trainer (it "
            f"has no {STATE_FILE}): the Trainer cannot resume from it"
        )
    state: dict[str, Any] = torch.load(path / STATE_FILE, weights_only=True)
    if state.get("format") != FORMAT:
        raise ValueError(
            f"checkpoint {uuid}: {STATE_FILE} has format {state.get('format')!r}, this "
            f"Trainer reads format {FORMAT}"
        )
    for name, obj in _objects(
        models=models, optimizers=optimizers, schedulers=schedulers, scalers=scalers, extras=extras
    ):
        if not (path / name).is_file():
            raise ValueError(
                f"checkpoint {uuid} has no {name}, but this trial has a "
                f"{type(obj).__name__} to restore"
            )
        obj.load_state_dict(torch.load(path / name, map_location=device, weights_only=True))
    return state
