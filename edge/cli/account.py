"""``edge account``: the dashboard's accounts, by the operator."""

from __future__ import annotations

import argparse
import sys
from typing import Any
from urllib.parse import quote

from edge.cli.client import CliError, call, show, show_items
from edge.cli.parsing import Subcommands, add_command, add_group


def add_commands(commands: Subcommands) -> None:
    account = add_group(commands, "account", "dashboard accounts")
    create = add_command(
        account, "create", _create, "create an account (the password is read from stdin)"
    )
    create.add_argument("--email", required=True)
    create.add_argument("--operator", action="store_true", help="it sees and manages every project")
    operator = add_command(
        account,
        "operator",
        _operator,
        "make an account the operator in the dashboard (every project), or --off",
    )
    operator.add_argument("email")
    operator.add_argument("--off", action="store_true", help="no longer the operator")
    add_command(account, "list", _list, "the node's accounts")
    add_command(
        account, "reset-link", _reset_link, "a one-time link to set a new password (1 hour)"
    ).add_argument("email")
    add_command(
        account, "2fa-remove", _two_factor_remove, "turn off an account's two-factor login"
    ).add_argument("email")


def _create(args: argparse.Namespace) -> int:
    """An account for someone, by the operator (also when self sign-up is closed). The password
    comes from standard input, never from the command line, where ``ps`` would show it."""
    import getpass

    if sys.stdin.isatty():
        password = getpass.getpass("password (10 characters or more): ")
    else:
        password = sys.stdin.readline().rstrip("\n")
    body: dict[str, Any] = {"email": args.email, "password": password}
    if args.operator:
        body["operator"] = True
    account = call(args, "POST", "/api/accounts", body)
    show(args, account, _line(account))
    return 0


def _line(account: dict[str, Any]) -> str:
    role = ", operator: every project" if account.get("operator") else ""
    return f"{account['accountId']}  {account['email']}  ({account['tier']}{role})"


def _list(args: argparse.Namespace) -> int:
    page = call(args, "GET", "/api/manage/accounts")
    show_items(args, page, lambda a: f"{_line(a)}  {a['projects']} projects", "no accounts")
    return 0


def _operator(args: argparse.Namespace) -> int:
    """Make an account the node's operator in the dashboard (it sees and manages every project,
    those made with the command line too), or no longer (``--off``)."""
    found = call(args, "GET", "/api/manage/accounts", params={"email": args.email})["items"]
    if not found:
        raise CliError(f"no account with the e-mail {args.email}")
    body = {"operator": not args.off}
    account = call(args, "PATCH", f"/api/manage/accounts/{found[0]['accountId']}", body)
    show(args, account, _line(account))
    return 0


def _account_id(args: argparse.Namespace) -> str:
    """The id of the account with ``args.email``."""
    found = call(args, "GET", "/api/manage/accounts", params={"email": args.email})["items"]
    if not found:
        raise CliError(f"no account has the e-mail {args.email}")
    return quote(str(found[0]["accountId"]), safe="")


def _reset_link(args: argparse.Namespace) -> int:
    """A one-time link to set a new password, for the operator to hand to the account's owner
    (it is printed, never stored: the node keeps only its hash)."""
    link = call(args, "POST", f"/api/manage/accounts/{_account_id(args)}/reset-link")
    show(
        args,
        link,
        f"{link['url']}\n(for {link['email']}; works once, until {link['expiresAt']}; "
        "using it logs the account out everywhere)",
    )
    return 0


def _two_factor_remove(args: argparse.Namespace) -> int:
    account = call(args, "DELETE", f"/api/manage/accounts/{_account_id(args)}/two-factor")
    show(args, account, f"two-factor login is off for {account['email']}")
    return 0
