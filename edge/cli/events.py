"""``edge events``: a project's event feed, oldest first; with ``--follow``, then each new event
as it is stored."""

from __future__ import annotations

import argparse
import json
from typing import Any

from edge.cli.client import call, show_items
from edge.cli.parsing import Subcommands, add_command


def add_commands(commands: Subcommands) -> None:
    events = add_command(commands, "events", _events, "the event feed, oldest first", "project")
    events.add_argument("--after")
    events.add_argument("--limit", type=int)
    events.add_argument(
        "--follow", action="store_true", help="then wait for new events and print each one"
    )


def _events(args: argparse.Namespace) -> int:
    params = {k: v for k, v in {"after": args.after, "limit": args.limit}.items() if v}
    if args.follow:
        return _follow(args, params)
    page = call(args, "GET", f"/api/projects/{args.project}/events", params=params)
    show_items(args, page, _line, "no events")
    return 0


def _follow(args: argparse.Namespace, params: dict[str, Any]) -> int:
    """The feed from ``--after`` (or its start), then each new event as it is stored, one line
    each (one JSON object a line with ``--json``), until Ctrl-C."""
    path = f"/api/projects/{args.project}/events"
    try:
        while True:
            page = call(args, "GET", path, params={"wait": 25, "limit": 100, **params})
            for event in page["items"]:
                print(json.dumps(event) if args.json else _line(event), flush=True)
            if page["next"]:
                params["after"] = page["next"]
    except KeyboardInterrupt:
        return 0


def _line(e: dict[str, Any]) -> str:
    return (
        f"{e['id']}  {e['type']:<28} {e.get('txId') or '-'}  {e.get('customerRef') or ''}".rstrip()
    )
