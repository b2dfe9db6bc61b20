"""``edge button``: the ``<cm-button>`` snippet for a project's product, with the integrity
hash of the script the node serves."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from edge.cli.client import CliError, call, node_url, show
from edge.cli.parsing import Subcommands, add_command, path_part
from edge.config import NODE_FILE


def add_commands(commands: Subcommands) -> None:
    button = add_command(commands, "button", _button, "the <cm-button> snippet with its SRI hash")
    button.add_argument("--project", type=path_part)
    button.add_argument("--product", type=path_part)
    button.add_argument("--mode", choices=("live", "test"), default="live")


def _button(args: argparse.Namespace) -> int:
    """Given a project, it is checked on the running node first: a snippet for a project or
    product that does not exist would only fail in the buyer's browser."""
    from edge.http.button import current, snippet
    from edge.signing import SIGNING_KEY_FILE, Signer

    data = Path(args.data)
    pem = os.environ.get("EDGE_SIGNING_KEY", "").strip() or None  # as the node reads it
    if pem is None and not (data / SIGNING_KEY_FILE).is_file():
        # the script's hash depends on the node's own key: never make a new one here
        raise CliError(
            f"no signing key in {data} (is this the node's data dir?) and no EDGE_SIGNING_KEY"
        )
    # the node's own key: its public half is built into the script
    signer = Signer.load(data, pem)
    script = current(signer)
    offered: list[str] = []
    if args.project:
        project = call(args, "GET", f"/api/manage/projects/{args.project}")
        if args.product and args.product not in {p["id"] for p in project["products"]}:
            raise CliError(f"{args.project} has no product {args.product}")
        offered = [
            p["provider"]
            for p in project["providers"]
            if ((p.get("availability") or {}).get(args.mode) or {}).get("offered")
        ]
        if not offered:
            other = "test" if args.mode == "live" else "live"
            print(
                f"edge: warning: {args.project} offers no payment method in {args.mode} mode:"
                f" buyers would see nothing to pay with (set one up, or --mode {other})",
                file=sys.stderr,
            )
    base = os.environ.get("EDGE_PUBLIC_URL") or _public_url(args)
    html = snippet(
        signer,
        base.rstrip("/"),
        args.project or "prj_...",
        args.product or "your-product",
        mode=args.mode,
        card_form="paddle" in offered,
    )
    show(
        args,
        {"integrity": script.integrity, "path": script.path, "snippet": html},
        f"{html}\n\nintegrity: {script.integrity}",
    )
    return 0


def _public_url(args: argparse.Namespace) -> str:
    """Where buyers reach the node: ``--url``, else the running node's public address, else
    the address ``make run`` serves on."""
    if args.url:
        return str(args.url)
    try:
        node = json.loads((Path(args.data) / NODE_FILE).read_text())
        return str(node.get("publicUrl") or node["url"])
    except (OSError, ValueError, KeyError):
        pass
    try:
        return node_url(args)
    except CliError:
        return "http://127.0.0.1:8080"
