"""``edge backup`` and ``edge restore``: the data dir on this machine, no running node needed
(a backup is taken while the node runs)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from edge.cli.client import CliError, show
from edge.cli.parsing import Subcommands, add_command
from edge.config import Settings


def add_commands(commands: Subcommands) -> None:
    add_command(commands, "backup", _backup, "consistent copy of the store, live").add_argument(
        "dest", help="a new directory for the copy: the store, its sealing and signing keys"
    )
    add_command(
        commands, "restore", _restore, "make a data dir (--data, new or empty) from a backup"
    ).add_argument(
        "source",
        help="a directory edge backup made; the data dir (--data) must be new or empty, and"
        " nothing is written there unless the whole restore succeeds",
    )


PG_DUMP = 'pg_dump --format=custom --file=edge.dump "$EDGE_STORE"'


def _backup(args: argparse.Namespace) -> int:
    from edge.node import STORE_DIR
    from edge.store.backup import backup_data_dir

    data = Path(args.data).resolve()
    if os.environ.get("EDGE_STORE"):
        # the shared store is PostgreSQL's to copy consistently; never its URL in the line
        raise CliError(
            f"EDGE_STORE is set: this node's store is in PostgreSQL (cluster mode), which edge "
            f"backup does not copy; back it up with {PG_DUMP} and keep the keys beside it "
            "(docs/cluster.md, Backup and restore)"
        )
    if not (data / STORE_DIR / "data.mdb").exists():
        raise CliError(
            f"no store at {data / STORE_DIR} (a cluster node's store is in PostgreSQL: back it "
            f"up with {PG_DUMP})"
        )
    if sys.stderr.isatty():  # a person waits: say something is happening
        print("copying the store ...", file=sys.stderr, flush=True)
    try:
        dest = backup_data_dir(data, Path(args.dest), Settings.load(data))
    except OSError as exc:
        raise CliError(f"backup failed: {exc}") from None
    show(args, {"backup": str(dest.resolve())}, f"backup written to {dest}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    from edge.store.backup import restore_data_dir

    if sys.stderr.isatty():
        print("restoring ...", file=sys.stderr, flush=True)
    try:
        data = restore_data_dir(Path(args.source), Path(args.data))
    except OSError as exc:
        raise CliError(f"restore failed: {exc}") from None
    show(
        args,
        {"data": str(data.resolve())},
        f"data dir {data} made; start it: edge serve --data {data}",
    )
    return 0
