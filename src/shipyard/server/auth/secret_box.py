"""Workspace secrets at rest: AES-256-GCM under a keyring kept outside the database, so a
database dump or backup alone reveals no value.

The keyring is $SHIPYARD_HOME/secrets.key (mode 0600, made on first use), JSON
`{"current": key_id, "keys": {key_id: base64 key}}`: values are sealed under the current
key, and opened under the key their row names. Or the operator gives one key in
SHIPYARD_SECRETS_KEY (base64 of 32 bytes), kept in their own secret store; then there is no
file and no rotation through the master (they change the variable and re-set the secrets).

Each seal takes a fresh random 12-byte nonce and the caller's associated data (the row's
identity), so a ciphertext copied into another row does not open.

Rotation is crash-safe in three steps (services/secrets.rotate): the new key is added and
made current (the file replaced atomically), every row is re-sealed in one transaction,
then the old keys are dropped. A crash between the steps leaves a keyring that still opens
every row. Whoever seals or opens rows reads the keyring inside a write transaction, so
the database's writer lock orders it with the re-sealing: it sees either the old rows and
a keyring holding their key, or the new rows and the new key. ROTATION_LOCK keeps two
rotations apart."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import secrets
import threading
from dataclasses import dataclass
from pathlib import Path

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from shipyard.common.errors import Conflict, ShipyardError
from shipyard.common.files import write_atomically
from shipyard.server.settings import Settings

KEY_FILE = "secrets.key"
ENV_KEY = "SHIPYARD_SECRETS_KEY"
KEY_BYTES = 32  # AES-256
NONCE_BYTES = 12
ROTATION_LOCK = threading.Lock()


class SecretUnreadable(ShipyardError):
    """A stored value does not open: its key is not in the keyring, or the row was changed
    (or copied from another row)."""


@dataclass(frozen=True)
class Sealed:
    key_id: str
    nonce: bytes
    ciphertext: bytes


class SecretBox:
    """Seals and opens values under a keyring; `fixed` when the key comes from the
    environment (no keyring file, no rotation)."""

    def __init__(self, keys: dict[str, bytes], current: str, *, fixed: bool = False) -> None:
        if current not in keys:
            raise ShipyardError(f"the secrets keyring's current key {current!r} is not in it")
        self._keys = dict(keys)
        self.current = current
        self.fixed = fixed

    @property
    def key_ids(self) -> list[str]:
        return sorted(self._keys)

    @classmethod
    def of_home(cls, home: Path, env_key: str | None = None) -> SecretBox:
        """The key of SHIPYARD_SECRETS_KEY if given, else the keyring in the home, made
        (with one new key) if there is none."""
        if env_key:
            key = _decode_key(env_key, ENV_KEY)
            return cls({_env_key_id(key): key}, _env_key_id(key), fixed=True)
        path = home / KEY_FILE
        if not path.exists():
            _create(path)
        return cls._read(path)

    @classmethod
    def of_settings(cls, settings: Settings) -> SecretBox:
        env_key = settings.secrets_key.get_secret_value() if settings.secrets_key else None
        return cls.of_home(settings.home, env_key)

    @classmethod
    def _read(cls, path: Path) -> SecretBox:
        try:
            data = json.loads(path.read_text())
            keys = {
                kid: _decode_key(text, f"{path} key {kid}") for kid, text in data["keys"].items()
            }
            return cls(keys, data["current"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ShipyardError(f"the secrets keyring {path} cannot be read: {exc}") from exc

    def seal(self, plaintext: str, identity: bytes) -> Sealed:
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = AESGCM(self._keys[self.current]).encrypt(nonce, plaintext.encode(), identity)
        return Sealed(self.current, nonce, sealed)

    def open(self, sealed: Sealed, identity: bytes) -> str:
        key = self._keys.get(sealed.key_id)
        if key is None:
            raise SecretUnreadable(
                f"it is sealed under key {sealed.key_id!r}, which is not in the master's "
                f"secrets keyring (it has {', '.join(self.key_ids)})"
            )
        try:
            plain = AESGCM(key).decrypt(sealed.nonce, sealed.ciphertext, identity)
        except InvalidTag:
            raise SecretUnreadable(
                "its stored value does not open: the row was changed or copied from another"
            ) from None
        return plain.decode()

    # -- rotation (the keyring file only) ---------------------------------------------------

    def with_new_key(self, home: Path) -> SecretBox:
        """Step 1: a new key, made current, beside the old ones, in the file."""
        self._refuse_if_fixed()
        key_id = _new_key_id()
        keys = {**self._keys, key_id: secrets.token_bytes(KEY_BYTES)}
        _write(home / KEY_FILE, keys, key_id)
        return SecretBox(keys, key_id)

    def without_old_keys(self, home: Path) -> SecretBox:
        """Step 3, once every row is sealed under the current key: only it is kept."""
        self._refuse_if_fixed()
        keys = {self.current: self._keys[self.current]}
        _write(home / KEY_FILE, keys, self.current)
        return SecretBox(keys, self.current)

    def _refuse_if_fixed(self) -> None:
        if self.fixed:
            raise Conflict(
                f"the secrets key comes from {ENV_KEY}, so the master cannot rotate it: "
                f"rotate it in your secret store, restart the master with the new {ENV_KEY} "
                "and set the workspaces' secrets again"
            )


def _text(keys: dict[str, bytes], current: str) -> str:
    encoded = {k: base64.b64encode(v).decode() for k, v in keys.items()}
    return json.dumps({"current": current, "keys": encoded})


def _write(path: Path, keys: dict[str, bytes], current: str) -> None:
    write_atomically(path, _text(keys, current), mode=0o600, durable=True)


def _create(path: Path) -> None:
    """A keyring of one new key, unless one appeared meanwhile: written aside, then linked
    into place, which fails rather than replace a keyring that values are sealed under."""
    key_id = _new_key_id()
    aside = path.with_name(f".{path.name}.{os.getpid()}.new")
    write_atomically(
        aside, _text({key_id: secrets.token_bytes(KEY_BYTES)}, key_id), mode=0o600, durable=True
    )
    try:
        os.link(aside, path)
    except FileExistsError:
        pass
    finally:
        aside.unlink(missing_ok=True)


def _decode_key(text: str, where: str) -> bytes:
    try:
        key = base64.b64decode(text.strip(), validate=True)
    except (binascii.Error, ValueError, AttributeError):
        raise ShipyardError(f"{where} is not base64") from None
    if len(key) != KEY_BYTES:
        raise ShipyardError(f"{where} must be {KEY_BYTES} bytes (base64), not {len(key)}")
    return key


def _new_key_id() -> str:
    return secrets.token_hex(4)


def _env_key_id(key: bytes) -> str:
    """Names the key without revealing it: another value of the variable, another id."""
    return "env-" + hashlib.sha256(b"shipyard-secrets-key:" + key).hexdigest()[:8]
