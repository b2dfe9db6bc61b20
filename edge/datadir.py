"""The data dir belongs to one node, and to the node's user only (CONTRACT 4.6).

One node at a time: two nodes on one store would each think their writer the only one and each
cache what the other changes. ``locked`` takes an exclusive ``flock`` on ``node.lock`` for the
node's life; the kernel drops it when the process ends, however it ends, so a killed node never
leaves a stale lock. The file holds the holder's pid, which a refused second node names.

Every file the node writes there is 0600 (``write_private``), in directories that are 0700.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from edge.config import ConfigError

LOCK_FILE = "node.lock"


class DataDirInUse(ConfigError):
    """Another node holds the data dir."""


@contextmanager
def locked(data_dir: Path) -> Iterator[None]:
    """Hold ``data_dir`` for this node until the block ends; ``DataDirInUse`` if another
    process holds it."""
    fd = _open_private(data_dir / LOCK_FILE, os.O_RDWR)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 20, 0).decode("ascii", "replace").strip() or "unknown"
            raise DataDirInUse(
                f"another node (pid {holder}) is running on the data dir {data_dir}: "
                "stop it first, or give this one another --data"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def write_private(path: Path, text: str) -> None:
    """``path`` holds ``text``, mode 0600 whatever the umask, also when it existed before
    with another mode. Whole or not at all: the text goes to a file beside it, made durable,
    then takes the name, so a reader (another process waiting for it, the node after a crash)
    never sees it empty or cut short."""
    staged = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = _open_private(staged, os.O_WRONLY | os.O_TRUNC)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(staged, path)
    except BaseException:
        staged.unlink(missing_ok=True)
        raise


def _open_private(path: Path, flags: int) -> int:
    fd = os.open(path, flags | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)
    return fd
