"""``edge serve``: run the node in this process (``--demo``: with the provider simulators and a
demo shop wired to a test project)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from edge.cli.client import DEFAULT_DATA, CliError
from edge.cli.parsing import Subcommands
from edge.config import Settings

# the demo's own data dir, apart from a real node's, unless --data or EDGE_DATA says otherwise
DEMO_DATA = "./edge-demo-data"


def add_commands(commands: Subcommands) -> None:
    # not a management command: none of the client's options, a --data of its own
    serve = commands.add_parser("serve", help="run the node")
    serve.add_argument(
        "--data",
        help="data dir (default $EDGE_DATA, else ./edge-data; ./edge-demo-data with --demo)",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument(
        "--demo",
        action="store_true",
        help="also run the provider simulators and a demo shop, wired to a test project",
    )
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="json: one object a line, with the access log's fields as keys",
    )
    serve.set_defaults(run=_serve)


def _serve(args: argparse.Namespace) -> int:
    import trio

    from edge.logs import configure
    from edge.node import run_node
    from edge.startup import port_problem, why_not_started

    bad_port = port_problem(args.port)
    if bad_port:
        raise CliError(bad_port)
    configure(args.log_format)
    data = args.data or os.environ.get("EDGE_DATA") or (DEMO_DATA if args.demo else DEFAULT_DATA)
    try:
        settings = Settings.load(data, host=args.host, port=args.port)
        if args.demo:
            from edge.demo import run_demo

            trio.run(run_demo, settings)
        else:
            trio.run(lambda: run_node(settings, handle_signals=True))
    except (Exception, BaseExceptionGroup) as exc:
        line = why_not_started(exc, args.host, args.port, Path(data).resolve())
        if line is None:
            raise
        raise CliError(line) from None
    return 0
