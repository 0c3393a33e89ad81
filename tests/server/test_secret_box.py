"""Secrets at rest (server/auth/secret_box.py): AES-GCM under a keyring outside the
database; a value opens only in its own row; rotation keeps every row readable at each
step; a key given in SHIPYARD_SECRETS_KEY is never rotated by the master."""

from __future__ import annotations

import base64
import json
import os
import stat

import pytest

from shipyard.common.errors import Conflict, ShipyardError
from shipyard.server.auth.secret_box import KEY_FILE, SecretBox, SecretUnreadable
from shipyard.server.services.secrets import identity

VALUE = "wandb-0123456789abcdef"


def test_the_keyring_is_made_on_first_use_private_and_outside_the_database(tmp_path):
    box = SecretBox.of_home(tmp_path)
    path = tmp_path / KEY_FILE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    data = json.loads(path.read_text())
    assert data["current"] == box.current and list(data["keys"]) == [box.current]
    assert len(base64.b64decode(data["keys"][box.current])) == 32
    again = SecretBox.of_home(tmp_path)  # the same keyring, not a new one
    assert again.current == box.current
    sealed = box.seal(VALUE, identity(1, "WANDB", 1))
    assert again.open(sealed, identity(1, "WANDB", 1)) == VALUE


def test_a_value_opens_only_in_its_own_row(tmp_path):
    box = SecretBox.of_home(tmp_path)
    sealed = box.seal(VALUE, identity(1, "WANDB", 1))
    assert VALUE.encode() not in sealed.ciphertext
    assert box.seal(VALUE, identity(1, "WANDB", 1)).nonce != sealed.nonce  # a nonce a seal
    for other in (identity(2, "WANDB", 1), identity(1, "OTHER", 1), identity(1, "WANDB", 2)):
        with pytest.raises(SecretUnreadable, match="copied from another"):
            box.open(sealed, other)


def test_rotation_keeps_every_row_readable_at_each_step(tmp_path):
    old = SecretBox.of_home(tmp_path)
    row = identity(1, "WANDB", 3)
    sealed_old = old.seal(VALUE, row)
    # Step 1 (a crash after it leaves both keys): old rows still open, new ones use the new key.
    both = old.with_new_key(tmp_path)
    assert both.current != old.current and set(both.key_ids) == {old.current, both.current}
    reread = SecretBox.of_home(tmp_path)
    assert reread.open(sealed_old, row) == VALUE
    sealed_new = reread.seal(VALUE, row)
    assert sealed_new.key_id == both.current
    # Step 3, after the rows were sealed anew: the old key is gone.
    both.without_old_keys(tmp_path)
    last = SecretBox.of_home(tmp_path)
    assert last.key_ids == [both.current]
    assert last.open(sealed_new, row) == VALUE
    with pytest.raises(SecretUnreadable, match="not in the master's secrets keyring"):
        last.open(sealed_old, row)


def test_a_key_from_the_environment_is_used_and_never_rotated(tmp_path):
    key = base64.b64encode(os.urandom(32)).decode()
    box = SecretBox.of_home(tmp_path, key)
    assert not (tmp_path / KEY_FILE).exists()
    assert box.current.startswith("env-") and key not in box.current
    row = identity(4, "HF_TOKEN", 1)
    assert SecretBox.of_home(tmp_path, key).open(box.seal(VALUE, row), row) == VALUE
    with pytest.raises(Conflict, match="SHIPYARD_SECRETS_KEY"):
        box.with_new_key(tmp_path)
    for bad in ("not base64!", base64.b64encode(b"short").decode()):
        with pytest.raises(ShipyardError, match="SHIPYARD_SECRETS_KEY"):
            SecretBox.of_home(tmp_path, bad)
