"""``edge tx``: a project's transactions; a mailed payment marked paid, a pending one
cancelled, a paid one refunded, one's provider asked what became of it (``sync``), and what
one needed you for marked handled (``resolve``)."""

from __future__ import annotations

import argparse
from typing import Any

from edge.cli.client import amount, call, money, show, show_items
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
    refund = add_command(tx, "refund", _refund, "give money back", "project", "tx")
    refund.add_argument("--amount", help="in major units (all that is left when absent)")
    refund.add_argument("--reason")
    add_command(
        tx, "sync", _sync, "ask the provider what became of it, and apply it", "project", "tx"
    )
    add_command(
        tx, "resolve", _resolve, "mark what it needed you for handled", "project", "tx"
    ).add_argument("--note")


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
    price = money(tx["amount"], tx["currency"])
    return (
        f"{tx['id']}  {tx['status']:<18} {price}  {tx['provider']:<7} "
        f"{tx.get('reference') or ''} {tx.get('customerRef') or ''}".rstrip()
    )


def _mark_paid(args: argparse.Namespace) -> int:
    return _act(args, "mark-paid", {"note": args.note} if args.note else {})


def _cancel(args: argparse.Namespace) -> int:
    return _act(args, "cancel", None)


def _refund(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"reason": args.reason} if args.reason else {}
    if args.amount is not None:
        body["amount"] = amount(args.amount)
    refund = call(args, "POST", f"/api/projects/{args.project}/transactions/{args.tx}/refund", body)
    show(
        args,
        refund,
        f"{refund['id']} {refund['state']} {money(refund['amount'], refund['currency'])}",
    )
    return 0


def _sync(args: argparse.Namespace) -> int:
    tx = call(args, "POST", f"/api/projects/{args.project}/transactions/{args.tx}/sync", None)
    sync = tx["sync"]
    said = "learned nothing new" if not sync["learned"] else f"learned {sync['learned']} change(s)"
    if not sync["found"]:
        said = "the provider does not know this checkout"
    show(args, tx, f"{tx['id']} {tx['status']} (version {tx['version']}): {said}")
    return 0


def _resolve(args: argparse.Namespace) -> int:
    return _act(args, "resolve", {"note": args.note} if args.note else {})


def _act(args: argparse.Namespace, action: str, body: Any) -> int:
    tx = call(args, "POST", f"/api/projects/{args.project}/transactions/{args.tx}/{action}", body)
    price = money(tx["amount"], tx["currency"])
    show(args, tx, f"{tx['id']} {tx['status']} (version {tx['version']}) {price}")
    return 0


def _show(args: argparse.Namespace) -> int:
    tx = call(args, "GET", f"/api/projects/{args.project}/transactions/{args.tx}")
    lines = [
        f"{tx['id']} {tx['status']} (version {tx['version']}) {money(tx['amount'], tx['currency'])}"
    ]
    lines += [f"  {e['receivedAt']}  {e['type']}" for e in tx.get("events", [])]
    show(args, tx, "\n".join(lines))
    return 0
