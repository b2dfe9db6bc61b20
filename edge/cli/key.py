"""``edge key``: a project's API keys (the key itself is shown once, when it is made)."""

from __future__ import annotations

import argparse
from typing import Any

from edge.cli.client import call, show, show_items
from edge.cli.parsing import Subcommands, add_command, add_group


def add_commands(commands: Subcommands) -> None:
    key = add_group(commands, "key", "project API keys")
    create = add_command(key, "create", _create, "create a key (shown once)", "project")
    create.add_argument("--mode", choices=("test", "live"), required=True)
    create.add_argument("--name", default="default")
    add_command(key, "revoke", _revoke, "revoke a key at once", "project", "key_id")
    add_command(key, "list", _list, "the project's keys (never the keys)", "project")


def _create(args: argparse.Namespace) -> int:
    key = call(
        args,
        "POST",
        f"/api/manage/projects/{args.project}/keys",
        {"mode": args.mode, "name": args.name},
    )
    show(
        args, key, f"{key['key']}\n(key id {key['keyId']}; shown only now: store it on your server)"
    )
    return 0


def _revoke(args: argparse.Namespace) -> int:
    result = call(args, "DELETE", f"/api/manage/projects/{args.project}/keys/{args.key_id}")
    show(args, result, f"revoked {args.key_id}")
    return 0


def _list(args: argparse.Namespace) -> int:
    page = call(args, "GET", f"/api/manage/projects/{args.project}/keys")
    show_items(args, page, _line, "no keys")
    return 0


def _line(k: dict[str, Any]) -> str:
    return f"{k['keyId']}  {k['mode']:<4}  ...{k['last4']}  {k['name']}"
