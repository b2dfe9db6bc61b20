"""``edge project``: create, list and show the node's projects."""

from __future__ import annotations

import argparse
import json
from typing import Any

from edge.cli.client import call, show, show_items
from edge.cli.parsing import Subcommands, add_command, add_group


def add_commands(commands: Subcommands) -> None:
    project = add_group(commands, "project", "projects")
    create = add_command(project, "create", _create, "create a project")
    create.add_argument("--name", required=True)
    create.add_argument("--success-url", required=True)
    create.add_argument("--cancel-url", required=True)
    create.add_argument("--allowed-origin", action="append")
    create.add_argument("--tier", help="its tier (default: free)")
    add_command(project, "list", _list, "every project on the node")
    add_command(project, "show", _show, "one project, secrets hidden", "project")
    tier = add_command(
        project, "tier", _tier, "move a project to another tier (its quota and limits)", "project"
    )
    tier.add_argument(
        "tier", help="a tier of the node's configuration: free, pro, or one of EDGE_CONFIG's"
    )


def _create(args: argparse.Namespace) -> int:
    body = {
        "name": args.name,
        "successUrl": args.success_url,
        "cancelUrl": args.cancel_url,
        "allowedOrigins": args.allowed_origin or [],
    }
    if args.tier:
        body["tier"] = args.tier
    project = call(args, "POST", "/api/manage/projects", body)
    show(args, project, project["id"])
    return 0


def _list(args: argparse.Namespace) -> int:
    """Every project on the node, page after page: the id is found again by its name."""
    projects: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        params = {"limit": "100", **({"after": after} if after else {})}
        page = call(args, "GET", "/api/manage/projects", params=params)
        projects += page["items"]
        after = page["next"]
        if not after:
            break
    show_items(args, {"items": projects}, _line, "no projects")
    return 0


def _line(p: dict[str, Any]) -> str:
    enabled = ", ".join(v["provider"] for v in p["providers"] if v["enabled"]) or "no providers"
    return f"{p['id']}  {p['tier']:<8} {p['name']}  {enabled}"


def _show(args: argparse.Namespace) -> int:
    project = call(args, "GET", f"/api/manage/projects/{args.project}")
    show(args, project, json.dumps(project, indent=2))
    return 0


def _tier(args: argparse.Namespace) -> int:
    """The operator's move of a project to another tier: the quota counted from now on."""
    project = call(args, "PATCH", f"/api/manage/projects/{args.project}", {"tier": args.tier})
    show(args, project, f"{project['id']} is on the {project['tier']} tier")
    return 0
