"""The environment variables, in three kinds: those that change what a framework does
(CUDA_, NCCL_, OMP_, ...) are kept as they are; a secret is only named; any other is a
hash of its value, so two runs can be told apart without their values being stored.
Those that differ between runs by nature (host, rank, addresses, Shipyard's own) go to the
record's volatile part, which a diff of two runs never reads."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from typing import Any

from shipyard.common.masking import MIN_FORM, masked_names

KEPT_PREFIXES = (
    "CUDA_",
    "NCCL_",
    "OMP_",
    "TORCH_",
    "MKL_",
    "CUBLAS_",
    "CUDNN_",
    "PYTORCH_",
    "TF_",
    "XLA_",
    "HOROVOD_",
    "PYTHONHASHSEED",
    "KMP_",
    "OPENBLAS_",
    "NVIDIA_",
)
# A name is secret when one of its parts (split on "_" and other non-alphanumerics) is or
# ends with one of these, also in the plural: DB_PASSWORD, GITHUBTOKEN, API_KEYS. Not
# KEYBOARD_LAYOUT or AUTHOR: a part that merely starts with a word is not matched.
SECRET_WORDS = (
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASS",
    "KEY",
    "CREDENTIAL",
    "AUTH",
    "PRIVATE",
    "SESSION",
    "COOKIE",
)
VOLATILE_NAMES = frozenset(
    {
        "HOSTNAME",
        "PWD",
        "OLDPWD",
        "SHLVL",
        "_",
        "MASTER_ADDR",
        "MASTER_PORT",
        "RANK",
        "LOCAL_RANK",
        "WORLD_SIZE",
        "GROUP_RANK",
        "LOCAL_WORLD_SIZE",
        "TF_CONFIG",
    }
)
VOLATILE_PREFIXES = ("TERM", "SSH_", "SHIPYARD_")

_PARTS = re.compile(r"[^A-Z0-9]+")


def looks_secret(name: str) -> bool:
    return any(
        part.endswith(word) or part.endswith(word + "S")
        for part in _PARTS.split(name.upper())
        if part
        for word in SECRET_WORDS
    )


def is_volatile(name: str) -> bool:
    return name in VOLATILE_NAMES or name.startswith(VOLATILE_PREFIXES)


def value_hash(value: str) -> str:
    return "sha256:" + hashlib.sha256(value.encode("utf-8", errors="surrogateescape")).hexdigest()


def env_sections(
    environ: Mapping[str, str], secret_values: Iterable[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the section, the volatile part), each {"kept": {}, "hashed": {}, "redacted": []}."""
    masked = masked_names(environ)
    # The masked variables' own values count as secrets wherever else they turn up.
    given = [*secret_values, *(environ[n] for n in masked if n in environ)]
    secrets = {v for value in given for v in (value, value.strip()) if v}
    section: dict[str, Any] = {"kept": {}, "hashed": {}, "redacted": []}
    volatile: dict[str, Any] = {"kept": {}, "hashed": {}, "redacted": []}
    for name, value in environ.items():
        into = volatile if is_volatile(name) else section
        if name in masked or looks_secret(name) or _holds_secret(value, secrets):
            into["redacted"].append(name)
        elif name.startswith(KEPT_PREFIXES):
            into["kept"][name] = value
        else:
            into["hashed"][name] = value_hash(value)
    section["redacted"].sort()
    volatile["redacted"].sort()
    return section, volatile


def _holds_secret(value: str, secrets: set[str]) -> bool:
    # A short secret inside a longer value is left: it would match ordinary text.
    stripped = value.strip()
    return any(s == value or s == stripped or (len(s) >= MIN_FORM and s in value) for s in secrets)
