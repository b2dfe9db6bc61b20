"""How a command module declares its commands: each takes the client's options (``--data``,
``--url``, ``--json``), the ids it puts into the node's API paths, and the function that runs
it."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TypeAlias
from urllib.parse import quote

from edge.cli.client import options

Run: TypeAlias = Callable[[argparse.Namespace], int]
Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


def path_part(text: str) -> str:
    """An id given on the command line, as it goes into the node's API paths: encoded, so that
    whatever it holds (a ``?``, a ``/``, a control character) stays that one part and reaches
    the node, which refuses what is not an id of its kind."""
    return quote(text, safe="")


def add_group(commands: Subcommands, name: str, help: str) -> Subcommands:
    """``edge NAME ACTION``: a group of commands (``edge tx list``, ``edge tx show`` ...)."""
    return commands.add_parser(name, help=help).add_subparsers(metavar="ACTION", required=True)


def add_command(
    commands: Subcommands, name: str, run: Run, help: str, *ids: str
) -> argparse.ArgumentParser:
    """A command with the client's options, then ``ids`` as positional arguments made path
    parts; the caller adds the rest of its arguments."""
    parser = commands.add_parser(name, parents=[options()], help=help)
    for id_name in ids:
        parser.add_argument(id_name, type=path_part)
    parser.set_defaults(run=run)
    return parser
