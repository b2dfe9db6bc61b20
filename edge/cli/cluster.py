"""``edge cluster``: the HAProxy side of cluster mode. ``haproxy-config`` prints the
configuration that routes each project to one node; ``pins``, ``pin`` and ``unpin`` move a
project to a named node (or back to the consistent hash) live, through HAProxy's runtime API."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from edge.cli.client import CliError, show
from edge.cli.parsing import Subcommands, add_group
from edge.cluster.haproxy import Node, RuntimeApi, render
from edge.domain.terminal import printable

T = TypeVar("T")

DEFAULT_PINS = "/etc/haproxy/edge-pins.map"
DEFAULT_SOCKET = "/run/haproxy/admin.sock"


def add_commands(commands: Subcommands) -> None:
    group = add_group(commands, "cluster", "several nodes behind HAProxy: routing and pins")
    config = group.add_parser("haproxy-config", help="print the HAProxy configuration")
    config.add_argument(
        "--node",
        action="append",
        required=True,
        metavar="NAME=HOST:PORT",
        help="a node, once for each (its name is HAProxy's server name)",
    )
    config.add_argument("--bind", default="*:80", help="where HAProxy listens (default *:80)")
    _haproxy_options(config)
    config.set_defaults(run=_haproxy_config)
    pins = group.add_parser("pins", help="the projects pinned to a node")
    _haproxy_options(pins)
    pins.add_argument("--json", action="store_true", help="print JSON")
    pins.set_defaults(run=_pins)
    pin = group.add_parser("pin", help="send every request for a project to one node, now")
    pin.add_argument("project")
    pin.add_argument("node")
    _haproxy_options(pin)
    pin.add_argument("--json", action="store_true", help="print JSON")
    pin.set_defaults(run=_pin)
    unpin = group.add_parser("unpin", help="a project back to the consistent hash")
    unpin.add_argument("project")
    _haproxy_options(unpin)
    unpin.add_argument("--json", action="store_true", help="print JSON")
    unpin.set_defaults(run=_unpin)


def _haproxy_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pins-map", default=DEFAULT_PINS, help=f"default {DEFAULT_PINS}")
    parser.add_argument(
        "--haproxy-socket", default=DEFAULT_SOCKET, help=f"admin socket, default {DEFAULT_SOCKET}"
    )


def _haproxy_config(args: argparse.Namespace) -> int:
    nodes = []
    for given in args.node:
        name, sep, address = given.partition("=")
        if not sep:
            raise CliError(f"--node takes NAME=HOST:PORT, not {printable(given)}")
        try:
            nodes.append(Node(name, address))
        except ValueError as exc:
            raise CliError(printable(str(exc))) from None
    try:
        text = render(
            nodes,
            bind=args.bind,
            pins_map=Path(args.pins_map),
            admin_socket=Path(args.haproxy_socket),
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    print(text, end="")
    return 0


def _api(args: argparse.Namespace) -> RuntimeApi:
    return RuntimeApi(Path(args.haproxy_socket), Path(args.pins_map))


def _pins(args: argparse.Namespace) -> int:
    pins = _call(lambda: _api(args).pins())
    human = "\n".join(f"{p}  {n}" for p, n in sorted(pins.items())) or "no pinned projects"
    show(args, {"pins": pins}, human)
    return 0


def _pin(args: argparse.Namespace) -> int:
    _call(lambda: _api(args).pin(args.project, args.node))
    show(args, {"project": args.project, "node": args.node}, f"{args.project} -> {args.node}")
    return 0


def _unpin(args: argparse.Namespace) -> int:
    _call(lambda: _api(args).unpin(args.project))
    show(args, {"project": args.project, "node": None}, f"{args.project} -> consistent hash")
    return 0


def _call(do: Callable[[], T]) -> T:
    """``do``'s result; its failure as one line."""
    try:
        return do()
    except (ValueError, RuntimeError) as exc:
        raise CliError(printable(str(exc))) from None
    except OSError as exc:
        raise CliError(
            f"cannot reach HAProxy's admin socket: {exc.strerror or exc}; is HAProxy running "
            "with the configuration edge cluster haproxy-config prints (--haproxy-socket)?"
        ) from None
