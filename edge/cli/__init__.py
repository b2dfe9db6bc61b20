"""The ``edge`` command line: argument parsing only. ``serve`` runs the node; every other
command calls the running node's management API with the admin token from the data dir, prints
JSON with ``--json``, and on failure prints one line and exits non-zero."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx

from edge.cli.client import DEFAULT_DATA, CliError, call, node_url, options, show
from edge.config import NODE_FILE, ConfigError, Settings
from edge.domain.terminal import printable

# the demo's own data dir, apart from a real node's, unless --data or EDGE_DATA says otherwise
DEMO_DATA = "./edge-demo-data"


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        return int(args.run(args) or 0)
    except (CliError, ConfigError) as exc:
        print(f"edge: {printable(str(exc))}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130


# -- serve and backup: local ---------------------------------------------------------------


def _serve(args: argparse.Namespace) -> int:
    import trio

    from edge.logs import configure
    from edge.node import run_node
    from edge.startup import port_problem, why_not_started

    bad_port = port_problem(args.port)
    if bad_port:
        raise CliError(bad_port)
    configure(args.log_format)
    data = args.data or os.environ.get("EDGE_DATA") or (DEMO_DATA if args.demo else DEFAULT_DATA)
    try:
        settings = Settings.load(data, host=args.host, port=args.port)
        if args.demo:
            from edge.demo import run_demo

            trio.run(run_demo, settings)
        else:
            trio.run(lambda: run_node(settings, handle_signals=True))
    except (Exception, BaseExceptionGroup) as exc:
        line = why_not_started(exc, args.host, args.port, Path(data).resolve())
        if line is None:
            raise
        raise CliError(line) from None
    return 0


def _backup(args: argparse.Namespace) -> int:
    from edge.node import STORE_DIR
    from edge.store.backup import backup_data_dir

    data = Path(args.data).resolve()
    if not (data / STORE_DIR / "data.mdb").exists():
        raise CliError(f"no store at {data / STORE_DIR}")
    if sys.stderr.isatty():  # a person waits: say something is happening
        print("copying the store ...", file=sys.stderr, flush=True)
    try:
        dest = backup_data_dir(data, Path(args.dest), Settings.load(data))
    except OSError as exc:
        raise CliError(f"backup failed: {exc}") from None
    show(args, {"backup": str(dest.resolve())}, f"backup written to {dest}")
    return 0


def _restore(args: argparse.Namespace) -> int:
    from edge.store.backup import restore_data_dir

    if sys.stderr.isatty():
        print("restoring ...", file=sys.stderr, flush=True)
    try:
        data = restore_data_dir(Path(args.source), Path(args.data))
    except OSError as exc:
        raise CliError(f"restore failed: {exc}") from None
    show(
        args,
        {"data": str(data.resolve())},
        f"data dir {data} made; start it: edge serve --data {data}",
    )
    return 0


def _button(args: argparse.Namespace) -> int:
    """The snippet for a project's product, with the integrity hash of the script the node
    serves. Given a project, it is checked on the running node first: a snippet for a project
    or product that does not exist would only fail in the buyer's browser."""
    from edge.http.button import current, snippet
    from edge.signing import SIGNING_KEY_FILE, Signer

    data = Path(args.data)
    if not (data / SIGNING_KEY_FILE).is_file():
        # the script's hash depends on the node's own key: never make a new one here
        raise CliError(f"no signing key in {data} (is this the node's data dir?)")
    signer = Signer.load(data)  # the node's own key: its public half is built into the script
    script = current(signer)
    if args.project:
        products = call(args, "GET", f"/api/manage/projects/{args.project}")["products"]
        if args.product and args.product not in {p["id"] for p in products}:
            raise CliError(f"{args.project} has no product {args.product}")
    base = os.environ.get("EDGE_PUBLIC_URL") or _public_url(args)
    html = snippet(
        signer,
        base.rstrip("/"),
        args.project or "prj_...",
        args.product or "your-product",
        mode=args.mode,
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


def _project_create(args: argparse.Namespace) -> int:
    body = {
        "name": args.name,
        "successUrl": args.success_url,
        "cancelUrl": args.cancel_url,
        "allowedOrigins": args.allowed_origin or [],
    }
    if args.tier:
        body["tier"] = args.tier
    project = call(args, "POST", "/api/manage/projects", body)
    show(args, project, project["id"])
    return 0


def _product_set(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {
        "name": args.name,
        "kind": args.kind,
        "amount": _number(args.amount),
        "currency": args.currency,
    }
    if args.interval:
        body["interval"] = args.interval
    product = call(
        args, "PUT", f"/api/manage/projects/{args.project}/products/{args.product}", body
    )
    show(args, product, f"{product['id']}: {product['amount']} {product['currency']}")
    return 0


def _number(text: str) -> float:
    # A float's repr is the shortest string that reads back as it, so any amount of up to 15
    # significant digits reaches the node (which parses Decimal) with exactly the digits given.
    try:
        value = Decimal(text)
    except ArithmeticError:
        raise CliError(f"not a number: {text}") from None
    if not value.is_finite() or len(value.as_tuple().digits) > 15:
        raise CliError(f"not an amount: {text}")
    return float(value)


def _provider_set(args: argparse.Namespace) -> int:
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


def _key_create(args: argparse.Namespace) -> int:
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


def _key_revoke(args: argparse.Namespace) -> int:
    result = call(args, "DELETE", f"/api/manage/projects/{args.project}/keys/{args.key_id}")
    show(args, result, f"revoked {args.key_id}")
    return 0


def _tx_list(args: argparse.Namespace) -> int:
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
    lines = [
        f"{tx['id']}  {tx['status']:<18} {tx['amount']} {tx['currency']}  {tx['provider']:<7} "
        f"{tx.get('reference') or ''} {tx.get('customerRef') or ''}".rstrip()
        for tx in page["items"]
    ]
    show(args, page, "\n".join(lines) or "no transactions")
    return 0


def _tx_mark_paid(args: argparse.Namespace) -> int:
    return _tx_action(args, "mark-paid", {"note": args.note} if args.note else {})


def _tx_cancel(args: argparse.Namespace) -> int:
    return _tx_action(args, "cancel", None)


def _tx_action(args: argparse.Namespace, action: str, body: Any) -> int:
    tx = call(args, "POST", f"/api/projects/{args.project}/transactions/{args.tx}/{action}", body)
    show(args, tx, f"{tx['id']} {tx['status']} (version {tx['version']})")
    return 0


def _tx_show(args: argparse.Namespace) -> int:
    tx = call(args, "GET", f"/api/projects/{args.project}/transactions/{args.tx}")
    lines = [f"{tx['id']} {tx['status']} (version {tx['version']}) {tx['amount']} {tx['currency']}"]
    lines += [f"  {e['receivedAt']}  {e['type']}" for e in tx.get("events", [])]
    show(args, tx, "\n".join(lines))
    return 0


def _account_create(args: argparse.Namespace) -> int:
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
    show(args, account, _account_line(account))
    return 0


def _account_line(account: dict[str, Any]) -> str:
    role = ", operator: every project" if account.get("operator") else ""
    return f"{account['accountId']}  {account['email']}  ({account['tier']}{role})"


def _account_list(args: argparse.Namespace) -> int:
    page = call(args, "GET", "/api/manage/accounts")
    lines = [f"{_account_line(a)}  {a['projects']} projects" for a in page["items"]]
    show(args, page, "\n".join(lines) or "no accounts")
    return 0


def _account_operator(args: argparse.Namespace) -> int:
    """Make an account the node's operator in the dashboard (it sees and manages every project,
    those made with the command line too), or no longer (``--off``)."""
    found = call(args, "GET", "/api/manage/accounts", params={"email": args.email})["items"]
    if not found:
        raise CliError(f"no account with the e-mail {args.email}")
    body = {"operator": not args.off}
    account = call(args, "PATCH", f"/api/manage/accounts/{found[0]['accountId']}", body)
    show(args, account, _account_line(account))
    return 0


def _account_id(args: argparse.Namespace) -> str:
    """The id of the account with ``args.email``."""
    found = call(args, "GET", "/api/manage/accounts", params={"email": args.email})["items"]
    if not found:
        raise CliError(f"no account has the e-mail {args.email}")
    return quote(str(found[0]["accountId"]), safe="")


def _account_reset_link(args: argparse.Namespace) -> int:
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


def _account_2fa_remove(args: argparse.Namespace) -> int:
    account = call(args, "DELETE", f"/api/manage/accounts/{_account_id(args)}/two-factor")
    show(args, account, f"two-factor login is off for {account['email']}")
    return 0


def _project_list(args: argparse.Namespace) -> int:
    """Every project on the node, page after page: the id is found again by its name."""
    projects: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        params = {"limit": "100", **({"after": after} if after else {})}
        page = call(args, "GET", "/api/manage/projects", params=params)
        projects += page["items"]
        after = page["next"]
        if not after:
            break
    lines = [
        f"{p['id']}  {p['tier']:<8} {p['name']}  "
        + (", ".join(v["provider"] for v in p["providers"] if v["enabled"]) or "no providers")
        for p in projects
    ]
    show(args, {"items": projects}, "\n".join(lines) or "no projects")
    return 0


def _project_show(args: argparse.Namespace) -> int:
    project = call(args, "GET", f"/api/manage/projects/{args.project}")
    show(args, project, json.dumps(project, indent=2))
    return 0


def _product_list(args: argparse.Namespace) -> int:
    from edge.domain.money import exponent

    products = call(args, "GET", f"/api/manage/projects/{args.project}")["products"]
    lines = [
        f"{p['id']}  {p['amount']:.{exponent(p['currency'])}f} {p['currency']}"
        + (f" / {p['interval']}" if p.get("interval") else "")
        + f"  {p['kind']}  {p['name']}"
        for p in products
    ]
    show(args, {"items": products}, "\n".join(lines) or "no products")
    return 0


def _provider_show(args: argparse.Namespace) -> int:
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


def _key_list(args: argparse.Namespace) -> int:
    page = call(args, "GET", f"/api/manage/projects/{args.project}/keys")
    lines = [f"{k['keyId']}  {k['mode']:<4}  ...{k['last4']}  {k['name']}" for k in page["items"]]
    show(args, page, "\n".join(lines) or "no keys")
    return 0


def _deliveries(args: argparse.Namespace) -> int:
    page = call(args, "GET", f"/api/manage/projects/{args.project}/deliveries")
    lines = [f"{d['at']}  {d['provider']:<7} {d['code']}: {d['reason']}" for d in page["items"]]
    show(args, page, "\n".join(lines) or "no refused deliveries")
    return 0


def _trigger(args: argparse.Namespace) -> int:
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


def _events(args: argparse.Namespace) -> int:
    params = {k: v for k, v in {"after": args.after, "limit": args.limit}.items() if v}
    if args.follow:
        return _follow(args, params)
    page = call(args, "GET", f"/api/projects/{args.project}/events", params=params)
    lines = [_event_line(e) for e in page["items"]]
    show(args, page, "\n".join(lines) or "no events")
    return 0


def _follow(args: argparse.Namespace, params: dict[str, Any]) -> int:
    """The feed from ``--after`` (or its start), then each new event as it is stored, one line
    each (one JSON object a line with ``--json``), until Ctrl-C."""
    path = f"/api/projects/{args.project}/events"
    try:
        while True:
            page = call(args, "GET", path, params={"wait": 25, "limit": 100, **params})
            for event in page["items"]:
                print(json.dumps(event) if args.json else _event_line(event), flush=True)
            if page["next"]:
                params["after"] = page["next"]
    except KeyboardInterrupt:
        return 0


def _event_line(e: dict[str, Any]) -> str:
    return (
        f"{e['id']}  {e['type']:<28} {e.get('txId') or '-'}  {e.get('customerRef') or ''}".rstrip()
    )


def _logs(args: argparse.Namespace) -> int:
    """The node's recent requests and notification attempts (it keeps the last 2,000 in
    memory); with ``--follow`` (``edge tail``), then each new one as it happens, until Ctrl-C.
    Filtered by project and status (404, 4xx, error)."""
    params: dict[str, Any] = {"limit": 500}
    if args.project:
        params["projectId"] = args.project
    if args.status:
        params["status"] = args.status
    follow = args.follow or args.run_name == "tail"
    try:
        while True:
            page = call(
                args,
                "GET",
                "/api/manage/logs",
                params={**params, "wait": 25 if follow and "after" in params else 0},
            )
            for line in page["items"]:
                print(json.dumps(line) if args.json else _log_line(line), flush=True)
            params["after"] = page["next"]
            if not follow:
                if not page["items"] and not args.json:
                    print("nothing yet", file=sys.stderr)
                return 0
    except KeyboardInterrupt:
        return 0


def _log_line(line: dict[str, Any]) -> str:
    status = line["status"] if line["status"] is not None else "-"
    took = f"{line['durationMs']} ms"
    if line["kind"] == "notification":
        said = f"  {line['error']}" if line.get("error") else ""
        return (
            f"{line['at']}  notify  {line['endpointId']} {line['eventId']} #{line['attempt']}"
            f"  {status} {line['outcome']}  {took}{said}"
        )
    return (
        f"{line['at']}  {line['method']:<6} {line['path']}  {status}  {took}  {line['requestId']}"
    )


def _endpoint_add(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"url": args.address, "mode": args.mode, "types": args.type or []}
    if args.description:
        body["description"] = args.description
    made = call(args, "POST", f"/api/manage/projects/{args.project}/endpoints", body)
    show(
        args,
        made,
        f"{made['endpointId']}  {made['secret']}\n(the signing secret is shown only now)",
    )
    return 0


def _endpoint_list(args: argparse.Namespace) -> int:
    page = call(args, "GET", f"/api/manage/projects/{args.project}/endpoints")
    lines = [
        f"{e['endpointId']}  {e['mode']:<4}  {'on ' if e['enabled'] else 'off'}  {e['url']}"
        + (f"  ({e['disabledReason']})" if e["disabledReason"] else "")
        for e in page["items"]
    ]
    show(args, page, "\n".join(lines) or "no endpoints")
    return 0


def _endpoint_remove(args: argparse.Namespace) -> int:
    path = f"/api/manage/projects/{args.project}/endpoints/{args.endpoint}"
    show(args, call(args, "DELETE", path), f"removed {args.endpoint}")
    return 0


def _endpoint_replay(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"eventIds": args.event} if args.event else {}
    if args.since:
        body["since"] = args.since
    path = f"/api/manage/projects/{args.project}/endpoints/{args.endpoint}/replay"
    result = call(args, "POST", path, body)
    more = " (more left: replay again --since " + str(result["last"]) + ")"
    show(args, result, f"{result['queued']} queued" + (more if result["hasMore"] else ""))
    return 0


def _endpoint_attempts(args: argparse.Namespace) -> int:
    path = f"/api/manage/projects/{args.project}/endpoints/{args.endpoint}/attempts"
    page = call(args, "GET", path)
    lines = [
        f"{a['at']}  {a['eventId']}  #{a['attempt']}  {a['status'] or '-'}  {a['outcome']}"
        + (f"  {a['error']}" if a["error"] else "")
        for a in page["items"]
    ]
    show(args, page, "\n".join(lines) or "no attempts yet")
    return 0


def _listen(args: argparse.Namespace) -> int:
    """Follow the project's feed and post each new event to a local address, signed as the
    node signs notifications (Standard Webhooks), like ``stripe listen``."""
    from edge.domain import standard_webhooks

    secret = args.secret or standard_webhooks.new_secret()
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


# ``edge listen`` finds the feed's end by paging from this long before the node's clock (event
# ids are ULIDs: one made at a moment is a cursor past everything before it), not from the start.
FEED_END_LOOKBACK_S = 60


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


# -- the parser ------------------------------------------------------------------------------


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("edge")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _path_part(text: str) -> str:
    """An id given on the command line, as it goes into the node's API paths: encoded, so that
    whatever it holds (a ``?``, a ``/``, a control character) stays that one part and reaches
    the node, which refuses what is not an id of its kind."""
    return quote(text, safe="")


def _parser() -> argparse.ArgumentParser:
    common = options()

    parser = argparse.ArgumentParser(
        prog="edge", description="A self-contained payment integration node."
    )
    parser.add_argument("--version", action="version", version=f"edge {_version()}")
    commands = parser.add_subparsers(metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the node")
    serve.add_argument(
        "--data",
        help="data dir (default $EDGE_DATA, else ./edge-data; ./edge-demo-data with --demo)",
    )
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8080)
    serve.add_argument(
        "--demo",
        action="store_true",
        help="also run the provider simulators and a demo shop, wired to a test project",
    )
    serve.add_argument(
        "--log-format",
        choices=("text", "json"),
        default="text",
        help="json: one object a line, with the access log's fields as keys",
    )
    serve.set_defaults(run=_serve)

    backup = commands.add_parser(
        "backup", parents=[common], help="consistent copy of the store, live"
    )
    backup.add_argument("dest")
    backup.set_defaults(run=_backup)

    restore = commands.add_parser(
        "restore", parents=[common], help="make a data dir (--data, new or empty) from a backup"
    )
    restore.add_argument("source")
    restore.set_defaults(run=_restore)

    button = commands.add_parser(
        "button", parents=[common], help="the <cm-button> snippet with its SRI hash"
    )
    button.add_argument("--project", type=_path_part)
    button.add_argument("--product", type=_path_part)
    button.add_argument("--mode", choices=("live", "test"), default="live")
    button.set_defaults(run=_button)

    account = commands.add_parser("account", help="dashboard accounts").add_subparsers(
        metavar="ACTION"
    )
    acreate = account.add_parser(
        "create", parents=[common], help="create an account (the password is read from stdin)"
    )
    acreate.add_argument("--email", required=True)
    acreate.add_argument(
        "--operator", action="store_true", help="it sees and manages every project"
    )
    acreate.set_defaults(run=_account_create)
    aoperator = account.add_parser(
        "operator",
        parents=[common],
        help="make an account the operator in the dashboard (every project), or --off",
    )
    aoperator.add_argument("email")
    aoperator.add_argument("--off", action="store_true", help="no longer the operator")
    aoperator.set_defaults(run=_account_operator)
    alist = account.add_parser("list", parents=[common], help="the node's accounts")
    alist.set_defaults(run=_account_list)
    areset = account.add_parser(
        "reset-link", parents=[common], help="a one-time link to set a new password (1 hour)"
    )
    areset.add_argument("email")
    areset.set_defaults(run=_account_reset_link)
    a2fa = account.add_parser(
        "2fa-remove", parents=[common], help="turn off an account's two-factor login"
    )
    a2fa.add_argument("email")
    a2fa.set_defaults(run=_account_2fa_remove)

    project = commands.add_parser("project", help="projects").add_subparsers(metavar="ACTION")
    create = project.add_parser("create", parents=[common], help="create a project")
    create.add_argument("--name", required=True)
    create.add_argument("--success-url", required=True)
    create.add_argument("--cancel-url", required=True)
    create.add_argument("--allowed-origin", action="append")
    create.add_argument("--tier")
    create.set_defaults(run=_project_create)
    plist_all = project.add_parser("list", parents=[common], help="every project on the node")
    plist_all.set_defaults(run=_project_list)
    pshow = project.add_parser("show", parents=[common], help="one project, secrets hidden")
    pshow.add_argument("project", type=_path_part)
    pshow.set_defaults(run=_project_show)

    product = commands.add_parser("product", help="products").add_subparsers(metavar="ACTION")
    pset = product.add_parser("set", parents=[common], help="create or replace a product")
    pset.add_argument("project", type=_path_part)
    pset.add_argument("product", type=_path_part)
    pset.add_argument("--name", required=True)
    pset.add_argument("--kind", choices=("payment", "subscription"), default="payment")
    pset.add_argument("--amount", required=True)
    pset.add_argument("--currency", required=True)
    pset.add_argument("--interval", choices=("day", "week", "month", "year"))
    pset.set_defaults(run=_product_set)
    plist = product.add_parser("list", parents=[common], help="the project's products")
    plist.add_argument("project", type=_path_part)
    plist.set_defaults(run=_product_list)

    provider = commands.add_parser("provider", help="payment providers").add_subparsers(
        metavar="ACTION"
    )
    vset = provider.add_parser("set", parents=[common], help="enable and configure a provider")
    vset.add_argument("project", type=_path_part)
    vset.add_argument("provider", type=_path_part)
    vset.add_argument("--mode", choices=("test", "live", "both"), default="both")
    vset.add_argument("--disabled", action="store_true")
    vset.add_argument("--label")
    vset.add_argument("--order", type=int)
    vset.add_argument("--set", action="append", metavar="FIELD=VALUE", help="a credential field")
    vset.add_argument("--address-name")
    vset.add_argument("--address-line", action="append")
    vset.add_argument("--address-country")
    vset.set_defaults(run=_provider_set)
    vshow = provider.add_parser("show", parents=[common], help="settings, secrets hidden")
    vshow.add_argument("project", type=_path_part)
    vshow.add_argument("provider", nargs="?", type=_path_part)
    vshow.set_defaults(run=_provider_show)

    key = commands.add_parser("key", help="project API keys").add_subparsers(metavar="ACTION")
    kcreate = key.add_parser("create", parents=[common], help="create a key (shown once)")
    kcreate.add_argument("project", type=_path_part)
    kcreate.add_argument("--mode", choices=("test", "live"), required=True)
    kcreate.add_argument("--name", default="default")
    kcreate.set_defaults(run=_key_create)
    krevoke = key.add_parser("revoke", parents=[common], help="revoke a key at once")
    krevoke.add_argument("project", type=_path_part)
    krevoke.add_argument("key_id", type=_path_part)
    krevoke.set_defaults(run=_key_revoke)
    klist = key.add_parser("list", parents=[common], help="the project's keys (never the keys)")
    klist.add_argument("project", type=_path_part)
    klist.set_defaults(run=_key_list)

    endpoint = commands.add_parser(
        "endpoint", help="notification endpoints (your server, told of every event)"
    ).add_subparsers(metavar="ACTION")
    eadd = endpoint.add_parser("add", parents=[common], help="add one (its secret shown once)")
    eadd.add_argument("project", type=_path_part)
    eadd.add_argument("address", help="the https (or http://localhost) address to notify")
    eadd.add_argument("--mode", choices=("test", "live"), default="live")
    eadd.add_argument("--type", action="append", help="only this event type (repeatable)")
    eadd.add_argument("--description")
    eadd.set_defaults(run=_endpoint_add)
    elist = endpoint.add_parser("list", parents=[common], help="the project's endpoints")
    elist.add_argument("project", type=_path_part)
    elist.set_defaults(run=_endpoint_list)
    eremove = endpoint.add_parser("remove", parents=[common], help="delete one")
    eremove.add_argument("project", type=_path_part)
    eremove.add_argument("endpoint", type=_path_part)
    eremove.set_defaults(run=_endpoint_remove)
    ereplay = endpoint.add_parser("replay", parents=[common], help="send events again")
    ereplay.add_argument("project", type=_path_part)
    ereplay.add_argument("endpoint", type=_path_part)
    ereplay.add_argument("--since", help="every event after this evt_ id")
    ereplay.add_argument("--event", action="append", help="this evt_ id (repeatable)")
    ereplay.set_defaults(run=_endpoint_replay)
    eattempts = endpoint.add_parser("attempts", parents=[common], help="its attempt log")
    eattempts.add_argument("project", type=_path_part)
    eattempts.add_argument("endpoint", type=_path_part)
    eattempts.set_defaults(run=_endpoint_attempts)

    listen = commands.add_parser(
        "listen",
        parents=[common],
        help="forward the project's new events to a local address, signed",
    )
    listen.add_argument("project", type=_path_part)
    listen.add_argument("--forward-to", required=True, metavar="URL")
    listen.add_argument("--secret", help="a whsec_ secret to sign with (default: a new one)")
    listen.add_argument("--since", help="start after this evt_ id (default: from now on)")
    listen.add_argument("--once", action="store_true", help="stop after the first events")
    listen.set_defaults(run=_listen)

    tx = commands.add_parser("tx", help="transactions").add_subparsers(metavar="ACTION")
    tlist = tx.add_parser("list", parents=[common], help="newest first")
    tlist.add_argument("project", type=_path_part)
    tlist.add_argument("--status")
    tlist.add_argument("--reference")
    tlist.add_argument("--limit", type=int)
    tlist.set_defaults(run=_tx_list)
    tpaid = tx.add_parser("mark-paid", parents=[common], help="a mailed payment arrived")
    tpaid.add_argument("project", type=_path_part)
    tpaid.add_argument("tx", type=_path_part)
    tpaid.add_argument("--note")
    tpaid.set_defaults(run=_tx_mark_paid)
    tshow = tx.add_parser("show", parents=[common], help="one transaction with its history")
    tshow.add_argument("project", type=_path_part)
    tshow.add_argument("tx", type=_path_part)
    tshow.set_defaults(run=_tx_show)
    tcancel = tx.add_parser("cancel", parents=[common], help="abandon a pending transaction")
    tcancel.add_argument("project", type=_path_part)
    tcancel.add_argument("tx", type=_path_part)
    tcancel.set_defaults(run=_tx_cancel)

    deliveries = commands.add_parser(
        "deliveries", parents=[common], help="refused webhook deliveries, with the reason"
    )
    deliveries.add_argument("project", type=_path_part)
    deliveries.set_defaults(run=_deliveries)

    trigger = commands.add_parser(
        "trigger", parents=[common], help="send a signed simulated webhook for a test transaction"
    )
    trigger.add_argument("provider", type=_path_part)
    trigger.add_argument("type", help="a normalized event type, e.g. payment.succeeded")
    trigger.add_argument("--tx", help="a test transaction (default: start a new test checkout)")
    trigger.add_argument(
        "--project", type=_path_part, help="without --tx: the project to start a checkout in"
    )
    trigger.add_argument("--product", help="without --tx: its product (default: the first)")
    trigger.set_defaults(run=_trigger)

    for name, helped in (
        ("logs", "the node's recent requests and notification attempts (--follow: live)"),
        ("tail", "the node's requests and notification attempts as they happen"),
    ):
        logs = commands.add_parser(name, parents=[common], help=helped)
        logs.add_argument("--project", help="only this project's")
        logs.add_argument("--status", help="only these: 404, 4xx, error, or several: 4xx,5xx")
        logs.add_argument(
            "--follow", action="store_true", help="then print each new one as it happens"
        )
        logs.set_defaults(run=_logs, run_name=name)

    events = commands.add_parser("events", parents=[common], help="the event feed, oldest first")
    events.add_argument("project", type=_path_part)
    events.add_argument("--after")
    events.add_argument("--limit", type=int)
    events.add_argument(
        "--follow", action="store_true", help="then wait for new events and print each one"
    )
    events.set_defaults(run=_events)
    return parser
