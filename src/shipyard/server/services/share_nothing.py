"""What a trial cannot have on a pool whose nodes share nothing with the master
(docs/share-nothing.md): anything that lives only on the master's disk. Checked at submit,
so the user hears it at once with the field's path, and again at each launch, since a
pool's settings may change (a master restarted with another config) while a trial waits."""

from __future__ import annotations

import posixpath

from shipyard.common.config import ExperimentConfig


def refusals(cfg: ExperimentConfig, checkpoint_base: str) -> list[dict]:
    """Each part of the config such a pool cannot run, as {path, message, line, column};
    ``checkpoint_base``: where the experiment's checkpoints go (a path: shared_fs)."""
    found = []

    def refuse(where: tuple, message: str) -> None:
        path = ".".join(f"[{p}]" if isinstance(p, int) else p for p in where).replace(".[", "[")
        line, column = cfg.position(where)
        found.append({"path": path, "message": message, "line": line, "column": column})

    if checkpoint_base.startswith("/"):
        what = "the master's default " if cfg.uses_default_storage() else ""
        refuse(
            ("checkpoint_storage",),
            f"{what}checkpoint_storage of type shared_fs ({checkpoint_base}) is on the "
            "master's disk, which this pool's nodes do not share: use checkpoint_storage of "
            "type s3, or set shared_fs: true on the pool if its nodes mount that path",
        )
    for i, mount in enumerate(cfg.bind_mounts):
        if not posixpath.isabs(mount.container_path):
            refuse(
                ("bind_mounts", i, "container_path"),
                f"{mount.container_path!r} is relative to the trial's working directory, "
                "which is made on the node: give an absolute path",
            )
    return found
