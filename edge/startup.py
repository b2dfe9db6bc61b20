"""Why ``edge serve`` could not start, in the one line it prints: the cause and the fix, never a
traceback (CONTRACT 10). A fault this module does not recognise is a bug, and keeps its
traceback."""

from __future__ import annotations

import traceback
from pathlib import Path

import lmdb

from edge.config import ConfigError, data_dir_problem
from edge.store.engine import StoreUnavailable
from edge.store.postgres.grants import MissingGrant
from edge.store.sealcheck import WrongSealingKey

PORTS = range(0, 65536)


def port_problem(port: int) -> str | None:
    if port in PORTS:
        return None
    return f"--port {port} is not a port: give one from 1 to 65535 (0: any free port)"


def why_not_started(exc: BaseException, host: str, port: int, data_dir: Path) -> str | None:
    """The line for ``exc`` (as raised out of ``trio.run``), or None for a fault of the node's
    own."""
    leaf = _leaf(exc)
    if isinstance(leaf, ConfigError | WrongSealingKey | MissingGrant):
        return str(leaf)
    if isinstance(leaf, OSError) and _raised_in(leaf, "_listening"):
        # the node binds before it serves: name the address
        return (
            f"cannot listen on {host}:{port}: {leaf.strerror or leaf}; stop what uses it, or "
            "give another --host or --port"
        )
    if isinstance(leaf, OSError) and _inside(leaf.filename, data_dir):
        return data_dir_problem(data_dir, leaf)
    if isinstance(leaf, StoreUnavailable):
        return (
            f"the store cannot be reached or cannot write: {leaf.message} Check EDGE_STORE and"
            " that its PostgreSQL is up, or the room on the data dir's disk"
        )
    if isinstance(leaf, lmdb.Error):
        return (
            f"cannot open the store in {data_dir}: {leaf}; run the node as the user who owns "
            "the data dir, or restore it from a backup (edge restore)"
        )
    return None


def _inside(filename: object, data_dir: Path) -> bool:
    return isinstance(filename, str | Path) and Path(filename).resolve().is_relative_to(data_dir)


def _leaf(exc: BaseException) -> BaseException:
    """The one error inside nurseries' groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _raised_in(exc: BaseException, function: str) -> bool:
    return any(frame.name == function for frame in traceback.extract_tb(exc.__traceback__))
