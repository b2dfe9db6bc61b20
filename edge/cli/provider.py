"""``edge provider``: a project's payment providers, their credentials and whether buyers are
offered them."""

from __future__ import annotations

import argparse
from typing import Any

from edge.cli.client import CliError, call, show
from edge.cli.parsing import Subcommands, add_command, add_group, path_part


def add_commands(commands: Subcommands) -> None:
    provider = add_group(commands, "provider", "payment providers")
    set_ = add_command(
        provider, "set", _set, "enable and configure a provider", "project", "provider"
    )
    set_.add_argument(
        "--mode",
        choices=("test", "live", "both"),
        default="test",
        help="which credentials --set and the address go to (default test: live takes real"
        " money, so it is asked for by name)",
    )
    set_.add_argument(
        "--disabled", action="store_true", help="save it turned off: buyers are not offered it"
    )
    set_.add_argument("--label", help="what buyers read for it (default: the provider's own)")
    set_.add_argument("--order", type=int, help="its place in the list buyers see (1 is first)")
    set_.add_argument(
        "--set",
        action="append",
        metavar="FIELD=VALUE",
        help="a credential field, repeatable: stripe secretKey, publishableKey, webhookSecret,"
        " apiBase; paypal clientId, clientSecret, webhookId, apiBase, certHosts (comma-separated);"
        " paddle apiKey, clientToken, webhookSecret, apiBase; btcpay serverUrl, apiKey, storeId,"
        " webhookSecret. The node tries them with the provider before saving",
    )
    set_.add_argument("--address-name", help="manual: the name on the mailing address")
    set_.add_argument(
        "--address-line", action="append", help="manual: one line of the address, repeatable"
    )
    set_.add_argument("--address-country", help="manual: the country, two letters (GB)")
    show_ = add_command(provider, "show", _show, "settings, secrets hidden", "project")
    show_.add_argument("provider", nargs="?", type=path_part)


def _set(args: argparse.Namespace) -> int:
    from edge.providers.registry import PROVIDERS

    adapter = PROVIDERS.get(args.provider)
    lists = {f.name for f in adapter.credential_fields if f.shape == "hosts"} if adapter else set()
    creds: dict[str, Any] = {}
    for item in args.set or []:
        name, sep, value = item.partition("=")
        if not sep:
            raise CliError(f"--set takes name=value, got {item!r}")
        # a list of hosts (PayPal's certHosts) is given comma-separated
        creds[name] = [v.strip() for v in value.split(",") if v.strip()] if name in lists else value
    if args.address_name or args.address_line or args.address_country:
        creds["mailingAddress"] = {
            "name": args.address_name,
            "lines": args.address_line or [],
            "country": args.address_country,
        }
    body: dict[str, Any] = {"enabled": not args.disabled}
    if args.label:
        body["label"] = args.label
    if args.order:
        body["order"] = args.order
    modes = ("test", "live") if args.mode == "both" else (args.mode,)
    if creds:
        for mode in modes:
            body[mode] = creds
    result = call(
        args, "PUT", f"/api/manage/projects/{args.project}/providers/{args.provider}", body
    )
    state = "enabled" if result["enabled"] else "disabled"
    show(args, result, f"{result['provider']} {state}")
    return 0


def _show(args: argparse.Namespace) -> int:
    """A provider's settings, secrets shown only as set with their last 4 characters: what a
    merchant checks when its webhooks fail."""
    providers = call(args, "GET", f"/api/manage/projects/{args.project}")["providers"]
    shown = [p for p in providers if args.provider in (None, p["provider"])]
    if args.provider and not shown:
        raise CliError(f"{args.provider} is not configured on {args.project}")
    lines = []
    for p in shown:
        lines.append(f"{p['provider']}  {'enabled' if p['enabled'] else 'disabled'}")
        availability = p.get("availability") or {}
        for mode in ("test", "live"):
            missing = (availability.get(mode) or {}).get("missing") or []
            if p["enabled"] and missing:
                lines.append(f"  {mode}: not offered to buyers, missing {', '.join(missing)}")
        for product, rule in (availability.get("products") or {}).items():
            lines.append(f"  not offered for {product}: {rule}")
        for mode in ("test", "live"):
            for name, value in sorted(p[mode].items()):
                if isinstance(value, dict) and value.get("set"):
                    value = f"set, ...{value['last4']}"
                lines.append(f"  {mode}.{name}: {value}")
    show(args, {"items": shown}, "\n".join(lines) or "no providers")
    return 0
