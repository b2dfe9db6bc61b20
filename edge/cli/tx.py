"""``edge tx``: a project's transactions; a mailed payment marked paid, a pending one
cancelled."""

from __future__ import annotations

import argparse
from typing import Any

from edge.cli.client import call, show, show_items
from edge.cli.parsing import Subcommands, add_command, add_group


def add_commands(commands: Subcommands) -> None:
    tx = add_group(commands, "tx", "transactions")
    list_ = add_command(tx, "list", _list, "newest first", "project")
    list_.add_argument("--status")
    list_.add_argument("--reference")
    list_.add_argument("--limit", type=int)
    add_command(
        tx, "mark-paid", _mark_paid, "a mailed payment arrived", "project", "tx"
    ).add_argument("--note")
    add_command(tx, "show", _show, "one transaction with its history", "project", "tx")
    add_command(tx, "cancel", _cancel, "abandon a pending transaction", "project", "tx")


def _list(args: argparse.Namespace) -> int:
    params = {
        k: v
        for k, v in {
            "status": args.status,
            "limit": args.limit,
            "reference": args.reference,
        }.items()
        if v
    }
    page = call(args, "GET", f"/api/projects/{args.project}/transactions", params=params)
    show_items(args, page, _line, "no transactions")
    return 0


def _line(tx: dict[str, Any]) -> str:
    return (
        f"{tx['id']}  {tx['status']:<18} {tx['amount']} {tx['currency']}  {tx['provider']:<7} "
        f"{tx.get('reference') or ''} {tx.get('customerRef') or ''}".rstrip()
    )


def _mark_paid(args: argparse.Namespace) -> int:
    return _act(args, "mark-paid", {"note": args.note} if args.note else {})


def _cancel(args: argparse.Namespace) -> int:
    return _act(args, "cancel", None)


def _act(args: argparse.Namespace, action: str, body: Any) -> int:
    tx = call(args, "POST", f"/api/projects/{args.project}/transactions/{args.tx}/{action}", body)
    show(args, tx, f"{tx['id']} {tx['status']} (version {tx['version']})")
    return 0


def _show(args: argparse.Namespace) -> int:
    tx = call(args, "GET", f"/api/projects/{args.project}/transactions/{args.tx}")
    lines = [f"{tx['id']} {tx['status']} (version {tx['version']}) {tx['amount']} {tx['currency']}"]
    lines += [f"  {e['receivedAt']}  {e['type']}" for e in tx.get("events", [])]
    show(args, tx, "\n".join(lines))
    return 0
