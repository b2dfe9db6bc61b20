"""``edge deliveries``: the provider webhook deliveries the node refused, with the reason in
words (what a merchant checks when payments do not arrive)."""

from __future__ import annotations

import argparse
from typing import Any

from edge.cli.client import call, show_items
from edge.cli.parsing import Subcommands, add_command


def add_commands(commands: Subcommands) -> None:
    add_command(
        commands,
        "deliveries",
        _deliveries,
        "refused webhook deliveries, with the reason",
        "project",
    )


def _deliveries(args: argparse.Namespace) -> int:
    page = call(args, "GET", f"/api/manage/projects/{args.project}/deliveries")
    show_items(args, page, _line, "no refused deliveries")
    return 0


def _line(d: dict[str, Any]) -> str:
    # a refusal whose reason is its code (a provider not turned on) says it in its detail
    said = (d.get("detail") or d["reason"]) if d["reason"] == d["code"] else d["reason"]
    return f"{d['at']}  {d['provider']:<7} {d['code']}: {said}"
