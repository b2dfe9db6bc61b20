"""The ``edge`` command line: argument parsing only. ``serve`` runs the node; every other
command calls the running node's management API through one client (``client.py``), prints
JSON with ``--json``, and on failure prints one line and exits non-zero. One module a command
group; each adds its commands to the parser here."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from edge.cli import (
    account,
    backup,
    button,
    cluster,
    deliveries,
    endpoint,
    events,
    key,
    listen,
    logs,
    product,
    project,
    provider,
    reconcile,
    serve,
    trigger,
    tx,
)
from edge.cli.client import CliError
from edge.config import ConfigError
from edge.domain.terminal import printable

# in the order `edge --help` lists them
_GROUPS = (
    serve,
    backup,
    button,
    account,
    project,
    product,
    provider,
    key,
    endpoint,
    listen,
    tx,
    reconcile,
    deliveries,
    trigger,
    logs,
    events,
    cluster,
)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except (CliError, ConfigError) as exc:
        print(f"edge: {printable(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


class _OneLine(argparse.ArgumentParser):
    """A bad argument is one line naming the cause (CONTRACT 10), not argparse's usage block
    and traceback-like error: ``edge tx list: argument --limit: invalid int value: 'abc'``.
    Every command's parser is one of these (argparse makes subparsers of its parent's class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # no abbreviations: --no would be --note today and ambiguous once another --no... comes
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {printable(message)} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _OneLine(prog="edge", description="A self-contained payment integration node.")
    parser.add_argument("--version", action="version", version=f"edge {_version()}")
    commands = parser.add_subparsers(metavar="COMMAND")
    for group in _GROUPS:
        group.add_commands(commands)
    return parser


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("edge")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"
