"""``edge trigger``: a correctly signed simulated provider webhook, sent through the node's real
pipeline for a test transaction (without ``--tx``, a new test checkout first, as ``stripe
trigger`` does)."""

from __future__ import annotations

import argparse
import sys

from edge.cli.client import CliError, call, show
from edge.cli.parsing import Subcommands, add_command, path_part


def add_commands(commands: Subcommands) -> None:
    trigger = add_command(
        commands,
        "trigger",
        _trigger,
        "send a signed simulated webhook for a test transaction",
        "provider",
    )
    trigger.add_argument(
        "type",
        help="a normalized event type the provider's simulator sends, e.g. payment.succeeded"
        " (a wrong one is refused before any checkout starts, with the list)",
    )
    trigger.add_argument(
        "--tx", help="a test transaction to send it for (default: start a new test checkout)"
    )
    trigger.add_argument(
        "--project", type=path_part, help="without --tx: the project to start a checkout in"
    )
    trigger.add_argument("--product", help="without --tx: its product (default: the first)")


def _trigger(args: argparse.Namespace) -> int:
    _check_type(args.provider, args.type)  # before a checkout is started for nothing
    tx_id = args.tx or _test_checkout(args)
    body = {"provider": args.provider, "type": args.type, "txId": tx_id}
    sent = call(args, "POST", "/api/manage/trigger", body)
    answer = sent["answer"]
    outcome = (
        f"stored as {answer['eventId']}" + (" (duplicate)" if answer.get("duplicate") else "")
        if sent["status"] == 200
        else f"refused: {answer.get('error', {}).get('code')}"
    )
    show(
        args,
        sent,
        f"{sent['providerType']} {sent['providerEventId']} -> {sent['status']} {outcome}",
    )
    return 0 if sent["status"] == 200 else 1


def _check_type(provider: str, event_type: str) -> None:
    """A provider this node can simulate, and an event type its simulator sends."""
    from edge.sim.registry import REGISTRATIONS

    registration = REGISTRATIONS.get(provider)
    if registration is None or registration.trigger is None:
        simulated = ", ".join(name for name, r in REGISTRATIONS.items() if r.trigger)
        raise CliError(f"there is no simulated {provider}: one of {simulated}")
    if event_type not in registration.trigger.events:
        known = ", ".join(registration.trigger.events)
        raise CliError(f"{provider} sends no simulated {event_type}: one of {known}")


def _test_checkout(args: argparse.Namespace) -> str:
    """Without ``--tx``: a new test checkout of ``--product`` (else the project's first one-off
    product) with the provider, as ``stripe trigger`` makes its own objects first."""
    if not args.project:
        raise CliError("give --tx, or --project to start a test checkout first")
    product = args.product
    if not product:
        products = call(args, "GET", f"/api/manage/projects/{args.project}")["products"]
        payments = [p["id"] for p in products if p["kind"] == "payment"] or [
            p["id"] for p in products
        ]
        if not payments:
            raise CliError(
                f"{args.project} has no product to check out: add one with edge product set"
            )
        product = payments[0]
    checkout = call(
        args,
        "POST",
        f"/api/checkout/{args.provider}/{args.project}",
        {"productId": product, "mode": "test"},
    )
    if not args.json:
        print(f"started {checkout['txId']} ({product}, test mode)", file=sys.stderr)
    return str(checkout["txId"])
