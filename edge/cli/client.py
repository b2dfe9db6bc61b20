"""The management client every command shares: where the running node is and the operator's
token, the one HTTP call to its management API, a failure as one line, and the output (JSON
with ``--json``, else a line for people with others' text made safe for the terminal)."""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx

from edge.config import NODE_FILE, read_admin_token
from edge.domain.terminal import escaped

DEFAULT_DATA = "./edge-data"


def options() -> argparse.ArgumentParser:
    """The options of every command but ``serve``: the data dir (where the node's address and
    the operator's token are found), another address, and JSON output."""
    parser = argparse.ArgumentParser(add_help=False)
    parser.add_argument(
        "--data",
        default=os.environ.get("EDGE_DATA", DEFAULT_DATA),
        help="data dir (default ./edge-data)",
    )
    parser.add_argument(
        "--node",
        "--url",
        dest="url",
        metavar="URL",
        help="the node's address, with the operator's token in EDGE_ADMIN_TOKEN (default: the"
        " address and token in the data dir)",
    )
    parser.add_argument("--json", action="store_true", help="print JSON")
    return parser


class CliError(Exception):
    """A failure of a command, said in one line: ``main`` prints ``edge: <line>`` and exits 1."""


def node_url(args: argparse.Namespace) -> str:
    """``--node`` (or ``--url``), else ``EDGE_URL``, else the address the running node wrote
    into its data dir."""
    if args.url:
        return args.url.rstrip("/")
    if os.environ.get("EDGE_URL"):
        return os.environ["EDGE_URL"].rstrip("/")
    node_file = Path(args.data) / NODE_FILE
    try:
        return json.loads(node_file.read_text())["url"]
    except (OSError, ValueError, KeyError):
        raise CliError(
            f"no running node found for data dir {args.data} (start one with `edge serve`)"
        ) from None


def call(
    args: argparse.Namespace,
    method: str,
    path: str,
    body: Any = None,
    params: Any = None,
    *,
    raw: bool = False,
) -> Any:
    """The node's JSON answer, with the operator's token (``EDGE_ADMIN_TOKEN``, else the data
    dir's ``admin-token``). For people (no ``--json``), every string in it is made
    ``printable``: names, references and addresses are others' text, shown on the operator's
    terminal. ``raw``: as the node sent it, for what is passed on rather than shown."""
    url = node_url(args)
    try:
        token = read_admin_token(Path(args.data))
    except OSError:
        raise CliError(
            f"no admin token in {args.data} (is this the node's data dir? with --node, set"
            " EDGE_ADMIN_TOKEN)"
        ) from None
    try:
        response = httpx.request(
            method,
            url + path,
            json=body,
            params=params,
            headers={"Authorization": f"Bearer {token}"},
            timeout=30.0,
        )
    except httpx.TransportError:
        raise CliError(f"the node at {url} is not running or not reachable") from None
    try:
        payload = response.json()
    except ValueError:
        raise CliError(f"{response.status_code} from {url}: not a JSON answer") from None
    if response.status_code >= 400:
        error = payload.get("error", {}) if isinstance(payload, dict) else {}
        field = f" (field {error['field']})" if error.get("field") else ""
        raise CliError(
            f"{response.status_code} {error.get('code', 'error')}: "
            f"{error.get('message', '')}{field}"
        )
    return payload if raw or args.json else escaped(payload)


def show(args: argparse.Namespace, payload: Any, human: str) -> None:
    """The result: ``payload`` as JSON with ``--json``, else ``human``."""
    print(json.dumps(payload, indent=2) if args.json else human)


def show_items(
    args: argparse.Namespace,
    page: dict[str, Any],
    line: Callable[[dict[str, Any]], str],
    none: str,
) -> None:
    """A list (``page["items"]``): as JSON with ``--json``, else ``line`` of each item, or
    ``none`` when it is empty."""
    show(args, page, "\n".join(line(item) for item in page["items"]) or none)


def money(value: float, currency: str) -> str:
    """``19.99 EUR``, ``1500 JPY``: an amount with its currency's own decimals."""
    from edge.domain.money import exponent

    return f"{value:.{exponent(currency)}f} {currency}"


def amount(text: str) -> float:
    """An amount given on the command line, for the node's JSON. A float's repr is the shortest
    string that reads back as it, so any amount of up to 15 significant digits reaches the node
    (which parses Decimal) with exactly the digits given."""
    try:
        value = Decimal(text)
    except ArithmeticError:
        raise CliError(f"not a number: {text}") from None
    if not value.is_finite() or len(value.as_tuple().digits) > 15:
        raise CliError(f"not an amount: {text}")
    return float(value)
