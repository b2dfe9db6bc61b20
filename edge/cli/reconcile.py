"""``edge reconcile``: after an outage or a fixed webhook secret, walk the providers' own lists
of events since a time and apply what the node missed (CONTRACT 4.3a)."""

from __future__ import annotations

import argparse
from typing import Any

from edge.cli.client import call, show
from edge.cli.parsing import Subcommands, add_command, path_part


def add_commands(commands: Subcommands) -> None:
    reconcile = add_command(
        commands, "reconcile", _reconcile, "apply what the providers hold that the node missed"
    )
    reconcile.add_argument("--project", required=True, type=path_part)
    reconcile.add_argument(
        "--since", required=True, help="an ISO 8601 time, e.g. 2026-11-21T00:00:00Z"
    )
    reconcile.add_argument("--provider", help="one provider (all that keep a list, when absent)")
    reconcile.add_argument("--mode", choices=("live", "test"), help="live unless told")


def _reconcile(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"since": args.since}
    if args.provider:
        body["provider"] = args.provider
    if args.mode:
        body["mode"] = args.mode
    answer = call(args, "POST", f"/api/projects/{args.project}/reconcile", body)
    lines = [_line(p) for p in answer["providers"]] or ["no provider keeps a list to walk"]
    show(args, answer, "\n".join(lines))
    return 0


def _line(p: dict[str, Any]) -> str:
    return (
        f"{p['provider']} ({p['mode']}): {p['seen']} event(s) seen, {p['learned']} change(s)"
        f" learned, {p['asked']} checkout(s) asked about"
    )
