"""A consistent copy of a live store.

LMDB copies from inside one read transaction, so the copy is a snapshot even while the node
keeps writing in another process; readers never block the writer.
"""

from __future__ import annotations

from pathlib import Path

from edge.store.env import open_environment, private_dir


def backup(store_path: Path, dest: Path, map_size: int) -> Path:
    private_dir(dest)
    if any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    env = open_environment(store_path, map_size)
    try:
        env.copy(str(dest), compact=True)
    finally:
        env.close()
    for copied in dest.iterdir():
        copied.chmod(0o600)
    return dest
