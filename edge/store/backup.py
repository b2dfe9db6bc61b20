"""A consistent copy of a live store, with what opens it, and a data dir made from one.

LMDB copies from inside one read transaction, so the copy is a snapshot even while the node
keeps writing in another process; readers never block the writer. A store alone cannot be used:
its provider secrets are sealed with the data dir's sealing key, and the button script carries
the public half of its signing key. So a backup holds the store and both keys (and the
operator's token), every file 0600 in a 0700 directory; ``restore_data_dir`` lays them out as a
data dir.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from edge.config import ADMIN_TOKEN_FILE, SECRET_KEY_FILE, Settings
from edge.datadir import write_private
from edge.signing import SIGNING_KEY_FILE, Signer
from edge.store.lmdb.store import STORE_DIR, open_environment, private_dir


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


def backup_data_dir(data: Path, dest: Path, settings: Settings) -> Path:
    """``dest`` (new or empty): the store of ``data`` and the keys that open it."""
    private_dir(dest)
    if any(dest.iterdir()):
        raise FileExistsError(f"{dest} is not empty")
    backup(data / STORE_DIR, dest / STORE_DIR, settings.map_size)
    # the keys in use, which may come from EDGE_SECRET_KEY / EDGE_SIGNING_KEY rather than files
    write_private(dest / SECRET_KEY_FILE, settings.secret_key.hex() + "\n")
    if settings.signing_key is not None:
        write_private(dest / SIGNING_KEY_FILE, Signer.load(data, settings.signing_key).pem())
    for name in (SIGNING_KEY_FILE, ADMIN_TOKEN_FILE):
        if (data / name).exists() and not (dest / name).exists():
            write_private(dest / name, (data / name).read_text())
    return dest


def restore_data_dir(source: Path, data: Path) -> Path:
    """A data dir at ``data`` (new or empty) from a backup made by ``backup_data_dir``. Built
    beside it and renamed into place at the end: a refusal or a failure half-way writes
    nothing at ``data`` (an empty dir given stays as it was)."""
    if not (source / STORE_DIR / "data.mdb").exists() or not (source / SECRET_KEY_FILE).exists():
        raise FileNotFoundError(f"{source} is not an edge backup (no store or no sealing key)")
    if data.exists() and (not data.is_dir() or any(data.iterdir())):
        raise FileExistsError(f"{data} is not empty")
    data.parent.mkdir(parents=True, exist_ok=True)
    staging = data.parent / f".{data.name}.restoring-{os.getpid()}"
    try:
        private_dir(staging)
        private_dir(staging / STORE_DIR)
        for copied in (source / STORE_DIR).iterdir():
            shutil.copyfile(copied, staging / STORE_DIR / copied.name)
            (staging / STORE_DIR / copied.name).chmod(0o600)
        for name in (SECRET_KEY_FILE, SIGNING_KEY_FILE, ADMIN_TOKEN_FILE):
            if (source / name).exists():
                write_private(staging / name, (source / name).read_text())
        if data.exists():
            data.rmdir()  # empty, as checked
        staging.rename(data)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return data
