"""``edge listen``: follow a project's feed and post each new event to a local address, signed
as the node signs notifications (Standard Webhooks), like ``stripe listen``."""

from __future__ import annotations

import argparse
import contextlib
import json
import time
from pathlib import Path
from typing import Any

import httpx

from edge.cli.client import call, node_url
from edge.cli.parsing import Subcommands, add_command
from edge.domain.terminal import printable

# ``edge listen`` finds the feed's end by paging from this long before the node's clock (event
# ids are ULIDs: one made at a moment is a cursor past everything before it), not from the start.
FEED_END_LOOKBACK_S = 60


def add_commands(commands: Subcommands) -> None:
    listen = add_command(
        commands,
        "listen",
        _listen,
        "forward the project's new events to a local address, signed",
        "project",
    )
    listen.add_argument("--forward-to", required=True, metavar="URL")
    listen.add_argument(
        "--secret",
        help="a whsec_ secret to sign with (default: the one kept in the data dir's"
        " listen-secret, made at the first run, so your local server keeps working across runs)",
    )
    listen.add_argument(
        "--new-secret", action="store_true", help="make a new kept secret and sign with it"
    )
    listen.add_argument("--since", help="start after this evt_ id (default: from now on)")
    listen.add_argument("--once", action="store_true", help="stop after the first events")


def _listen(args: argparse.Namespace) -> int:
    secret = args.secret or _kept_secret(Path(args.data), args.new_secret)
    path = f"/api/projects/{args.project}/events"
    cursor = args.since if args.since is not None else _feed_end(args, path)
    print(
        f"Ready. Signing with {secret}; forwarding to {args.forward_to} (Ctrl-C stops)", flush=True
    )
    try:
        while True:
            params = {"wait": 25, "limit": 100, **({"after": cursor} if cursor else {})}
            page = call(args, "GET", path, params=params, raw=True)
            for event in page["items"]:
                print(printable(_forward(args.forward_to, secret, event)), flush=True)
            cursor = page["next"] or cursor
            if args.once and page["items"]:
                return 0
    except KeyboardInterrupt:
        return 0


LISTEN_SECRET_FILE = "listen-secret"


def _kept_secret(data: Path, renew: bool) -> str:
    """The secret ``edge listen`` signs with, kept in the data dir (0600) between runs."""
    from edge.datadir import write_private
    from edge.domain import standard_webhooks

    kept = data / LISTEN_SECRET_FILE
    if not renew:
        try:
            secret = kept.read_text().strip()
        except OSError:
            secret = ""
        if secret.startswith("whsec_"):
            return secret
    secret = standard_webhooks.new_secret()
    with contextlib.suppress(OSError):  # a data dir this user cannot write: this run's only
        write_private(kept, secret + "\n")
    return secret


def _feed_end(args: argparse.Namespace, path: str) -> str | None:
    """The last event of the feed at ``path`` (None when the feed is empty): paged from a
    minute before the node's own clock (its ``Date`` header), or from the start without one."""
    from email.utils import parsedate_to_datetime

    from edge.domain import ids

    cursor = None
    try:
        answer = httpx.get(node_url(args) + "/healthz", timeout=30.0)
        node_ms = int(parsedate_to_datetime(answer.headers["date"]).timestamp() * 1000)
        cursor = "evt_" + ids.ulid_floor(max(0, node_ms - FEED_END_LOOKBACK_S * 1000))
    except (httpx.HTTPError, KeyError, ValueError, TypeError):
        pass
    while True:
        params = {"limit": 500, **({"after": cursor} if cursor else {})}
        page = call(args, "GET", path, params=params)
        cursor = page["next"] or cursor
        if not page["hasMore"]:
            return cursor


def _forward(url: str, secret: str, event: dict[str, Any]) -> str:
    from edge.domain import standard_webhooks

    body = json.dumps(event, separators=(",", ":")).encode()
    headers = {
        "Content-Type": "application/json",
        **standard_webhooks.headers([secret], event["id"], int(time.time()), body),
    }
    try:
        answer = httpx.post(
            url, content=body, headers=headers, timeout=15.0, follow_redirects=False
        )
        outcome = str(answer.status_code)
    except httpx.HTTPError as exc:
        outcome = f"failed ({type(exc).__name__})"
    return f"{event['id']}  {event['type']:<28} -> {outcome}"
