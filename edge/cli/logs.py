"""``edge logs`` and ``edge tail``: the node's recent requests and notification attempts (it
keeps the last 2,000 in memory); ``tail`` is ``logs --follow``."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from edge.cli.client import call
from edge.cli.parsing import Subcommands, add_command


def add_commands(commands: Subcommands) -> None:
    for name, helped in (
        ("logs", "the node's recent requests and notification attempts (--follow: live)"),
        ("tail", "the node's requests and notification attempts as they happen"),
    ):
        logs = add_command(commands, name, _logs, helped)
        logs.add_argument("--project", help="only this project's")
        logs.add_argument("--status", help="only these: 404, 4xx, error, or several: 4xx,5xx")
        logs.add_argument(
            "--follow", action="store_true", help="then print each new one as it happens"
        )
        logs.set_defaults(run_name=name)


def _logs(args: argparse.Namespace) -> int:
    """The log, filtered by project and status (404, 4xx, error); with ``--follow`` (``edge
    tail``), then each new line as it happens, until Ctrl-C."""
    params: dict[str, Any] = {"limit": 500}
    if args.project:
        params["projectId"] = args.project
    if args.status:
        params["status"] = args.status
    follow = args.follow or args.run_name == "tail"
    try:
        while True:
            page = call(
                args,
                "GET",
                "/api/manage/logs",
                params={**params, "wait": 25 if follow and "after" in params else 0},
            )
            for line in page["items"]:
                print(json.dumps(line) if args.json else _line(line), flush=True)
            params["after"] = page["next"]
            if not follow:
                if not page["items"] and not args.json:
                    print("nothing yet", file=sys.stderr)
                return 0
    except KeyboardInterrupt:
        return 0


def _line(line: dict[str, Any]) -> str:
    status = line["status"] if line["status"] is not None else "-"
    took = f"{line['durationMs']} ms"
    if line["kind"] == "notification":
        said = f"  {line['error']}" if line.get("error") else ""
        return (
            f"{line['at']}  notify  {line['endpointId']} {line['eventId']} #{line['attempt']}"
            f"  {status} {line['outcome']}  {took}{said}"
        )
    return (
        f"{line['at']}  {line['method']:<6} {line['path']}  {status}  {took}  {line['requestId']}"
    )
