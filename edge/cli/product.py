"""``edge product``: a project's products (what a button sells, at what price)."""

from __future__ import annotations

import argparse
from typing import Any

from edge.cli.client import amount, call, money, show, show_items
from edge.cli.parsing import Subcommands, add_command, add_group
from edge.domain.money import exponent


def add_commands(commands: Subcommands) -> None:
    product = add_group(commands, "product", "products")
    set_ = add_command(product, "set", _set, "create or replace a product", "project", "product")
    set_.add_argument("--name", required=True)
    set_.add_argument("--kind", choices=("payment", "subscription"), default="payment")
    set_.add_argument("--amount", required=True)
    set_.add_argument("--currency", required=True)
    set_.add_argument("--interval", choices=("day", "week", "month", "year"))
    add_command(product, "list", _list, "the project's products", "project")


def _set(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {
        "name": args.name,
        "kind": args.kind,
        "amount": amount(args.amount),
        "currency": args.currency,
    }
    if args.interval:
        body["interval"] = args.interval
    product = call(
        args, "PUT", f"/api/manage/projects/{args.project}/products/{args.product}", body
    )
    show(args, product, f"{product['id']}: {money(product['amount'], product['currency'])}")
    return 0


def _list(args: argparse.Namespace) -> int:
    products = call(args, "GET", f"/api/manage/projects/{args.project}")["products"]
    show_items(args, {"items": products}, _line, "no products")
    return 0


def _line(p: dict[str, Any]) -> str:
    every = f" / {p['interval']}" if p.get("interval") else ""
    amount = f"{p['amount']:.{exponent(p['currency'])}f}"
    return f"{p['id']}  {amount} {p['currency']}{every}  {p['kind']}  {p['name']}"
