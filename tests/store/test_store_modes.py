"""The data dir and the store are the node's user's alone (CONTRACT 4.6): 0700 and 0600."""

from __future__ import annotations

import stat
from pathlib import Path

from edge.node import store_path
from edge.store.backup import backup
from edge.store.lmdb.store import open_store


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_running_node_keeps_its_files_to_its_user(node, tmp_path):
    data = node.ctx.settings.data_dir
    assert mode(data) == 0o700
    assert mode(store_path(node.ctx.settings)) == 0o700
    for stored in store_path(node.ctx.settings).iterdir():
        assert mode(stored) == 0o600, stored
    for secret in ("secret.key", "signing-key.pem", "admin-token"):
        if (data / secret).exists():
            assert mode(data / secret) == 0o600, secret


async def test_a_backup_is_its_users_alone(tmp_path):
    with open_store(tmp_path / "store", 2**26):
        pass
    copy = backup(tmp_path / "store", tmp_path / "copy", 2**26)
    assert mode(copy) == 0o700
    assert all(mode(copied) == 0o600 for copied in copy.iterdir())
