"""``edge endpoint``: a project's notification endpoints (the merchant's server, told of every
event), their attempt logs, and events sent again."""

from __future__ import annotations

import argparse
from typing import Any

from edge.cli.client import call, show, show_items
from edge.cli.parsing import Subcommands, add_command, add_group


def add_commands(commands: Subcommands) -> None:
    endpoint = add_group(
        commands, "endpoint", "notification endpoints (your server, told of every event)"
    )
    add = add_command(endpoint, "add", _add, "add one (its secret shown once)", "project")
    add.add_argument("address", help="the https (or http://localhost) address to notify")
    add.add_argument("--mode", choices=("test", "live"), default="live")
    add.add_argument("--type", action="append", help="only this event type (repeatable)")
    add.add_argument("--description")
    add_command(endpoint, "list", _list, "the project's endpoints", "project")
    add_command(endpoint, "remove", _remove, "delete one", "project", "endpoint")
    replay = add_command(endpoint, "replay", _replay, "send events again", "project", "endpoint")
    replay.add_argument("--since", help="every event after this evt_ id")
    replay.add_argument("--event", action="append", help="this evt_ id (repeatable)")
    add_command(endpoint, "attempts", _attempts, "its attempt log", "project", "endpoint")


def _add(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"url": args.address, "mode": args.mode, "types": args.type or []}
    if args.description:
        body["description"] = args.description
    made = call(args, "POST", f"/api/manage/projects/{args.project}/endpoints", body)
    show(
        args,
        made,
        f"{made['endpointId']}  {made['secret']}\n(the signing secret is shown only now)",
    )
    return 0


def _list(args: argparse.Namespace) -> int:
    page = call(args, "GET", f"/api/manage/projects/{args.project}/endpoints")
    show_items(args, page, _endpoint_line, "no endpoints")
    return 0


def _endpoint_line(e: dict[str, Any]) -> str:
    state = "on " if e["enabled"] else "off"
    why_off = f"  ({e['disabledReason']})" if e["disabledReason"] else ""
    return f"{e['endpointId']}  {e['mode']:<4}  {state}  {e['url']}{why_off}"


def _remove(args: argparse.Namespace) -> int:
    path = f"/api/manage/projects/{args.project}/endpoints/{args.endpoint}"
    show(args, call(args, "DELETE", path), f"removed {args.endpoint}")
    return 0


def _replay(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"eventIds": args.event} if args.event else {}
    if args.since:
        body["since"] = args.since
    path = f"/api/manage/projects/{args.project}/endpoints/{args.endpoint}/replay"
    result = call(args, "POST", path, body)
    more = " (more left: replay again --since " + str(result["last"]) + ")"
    show(args, result, f"{result['queued']} queued" + (more if result["hasMore"] else ""))
    return 0


def _attempts(args: argparse.Namespace) -> int:
    path = f"/api/manage/projects/{args.project}/endpoints/{args.endpoint}/attempts"
    show_items(args, call(args, "GET", path), _attempt_line, "no attempts yet")
    return 0


def _attempt_line(a: dict[str, Any]) -> str:
    error = f"  {a['error']}" if a["error"] else ""
    return (
        f"{a['at']}  {a['eventId']}  #{a['attempt']}  {a['status'] or '-'}  {a['outcome']}{error}"
    )
