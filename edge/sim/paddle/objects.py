"""Paddle Billing's entities as its API and webhooks show them (transactions, subscriptions,
adjustments, customer portal sessions, the event envelope), shaped after the published
OpenAPI document and the SDK's fixtures: the conformance tests validate them against both.

The simulator charges no tax and takes no fee, so a transaction's totals are its prices. It
keeps no exchange rates: payouts are shown in the transaction's currency when Paddle pays out
in it (``PAYOUT_CURRENCIES``, spec ``currency_code-payout``), and as null otherwise."""

from __future__ import annotations

import json
import secrets
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

_ID_CHARS = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford's base 32, as Paddle's ids show it
PAYOUT_CURRENCIES = frozenset(
    {"AUD", "CAD", "CHF", "CNY", "CZK", "DKK", "EUR", "GBP", "HUF", "PLN", "SEK", "USD", "ZAR"}
)
_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}


def paddle_id(prefix: str) -> str:
    """An id in Paddle's form: ``txn_`` and 26 characters of ``[a-z0-9]`` (a ULID)."""
    stamp, now = "", int(time.time() * 1000)
    for _ in range(10):
        now, digit = divmod(now, 32)
        stamp = _ID_CHARS[digit] + stamp
    return f"{prefix}_{stamp}" + "".join(secrets.choice(_ID_CHARS) for _ in range(16))


def now_iso(at: float | None = None) -> str:
    """Paddle's times: RFC 3339 in UTC with microseconds (``2024-04-12T10:18:49.621022Z``)."""
    moment = datetime.fromtimestamp(time.time() if at is None else at, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def later(start: str, cycle: Mapping[str, Any]) -> str:
    """One billing cycle after ``start`` (a month is 30 days here; Paddle counts calendar
    months)."""
    moment = datetime.fromisoformat(start.replace("Z", "+00:00"))
    days = _DAYS.get(str(cycle.get("interval")), 30) * int(cycle.get("frequency") or 1)
    return now_iso((moment + timedelta(days=days)).timestamp())


def meta() -> dict[str, str]:
    return {"request_id": str(uuid.uuid4())}


def envelope(event_type: str, data: Mapping[str, Any]) -> dict[str, Any]:
    """A notification as Paddle delivers it, keys in Paddle's order; ``notification_id`` is
    made afresh for each delivery (``redelivered``)."""
    return {
        "data": dict(data),
        "event_id": paddle_id("evt"),
        "event_type": event_type,
        "occurred_at": now_iso(),
        "notification_id": paddle_id("ntf"),
    }


def redelivered(event: Mapping[str, Any]) -> dict[str, Any]:
    """The same event as a new notification: same ``event_id``, new ``notification_id``."""
    return {**event, "notification_id": paddle_id("ntf")}


def body_of(event: Mapping[str, Any]) -> bytes:
    """The bytes Paddle sends: compact JSON, non-ASCII escaped (the SDK's signed fixtures
    ``standard_payload.json`` and ``special_chars_payload.json`` are written so)."""
    return json.dumps(event, separators=(",", ":"), ensure_ascii=True).encode()


def error(
    status: int, code: str, detail: str, errors: list[dict[str, str]] | None = None
) -> tuple[dict[str, Any], int]:
    """An API refusal in Paddle's shape (spec ``error``; developer.paddle.com/errors): its
    ``documentation_url`` under the error's group, and for a validation error the ``errors``
    list of ``{field, message}``. ``type`` is ``api_error`` for 5xx and for 429
    (developer.paddle.com/errors/shared/too_many_requests), else ``request_error``."""
    group = code.partition("_")[0] if code.startswith(("transaction_", "adjustment_")) else ""
    group = {"transaction": "transactions", "adjustment": "adjustments"}.get(group, "shared")
    body: dict[str, Any] = {
        "type": "api_error" if status >= 500 or status == 429 else "request_error",
        "code": code,
        "detail": detail,
        "documentation_url": f"https://developer.paddle.com/errors/{group}/{code}",
    }
    if errors:
        body["errors"] = errors
    return {"error": body, "meta": meta()}, status


# --- catalog: a non-catalog price and product, made for one transaction ---------------------


def product(given: Mapping[str, Any], at: str, kind: str = "custom") -> dict[str, Any]:
    """A product: ``custom`` when made with a transaction (non-catalog), ``standard`` in the
    merchant's catalog."""
    return {
        "id": paddle_id("pro"),
        "name": str(given["name"]),
        "type": kind,
        "tax_category": str(given.get("tax_category") or "standard"),
        "description": given.get("description"),
        "image_url": given.get("image_url"),
        "custom_data": given.get("custom_data"),
        "status": "active",
        "import_meta": None,
        "created_at": at,
        "updated_at": at,
    }


def price(
    given: Mapping[str, Any], product_id: str, at: str, kind: str = "custom"
) -> dict[str, Any]:
    """A price: ``custom`` (non-catalog) or ``standard`` (the merchant's catalog)."""
    return {
        "id": paddle_id("pri"),
        "product_id": product_id,
        "name": given.get("name"),
        "type": kind,
        "description": str(given["description"]),
        "status": "active",
        "quantity": dict(given.get("quantity") or {"minimum": 1, "maximum": 100}),
        "tax_mode": str(given.get("tax_mode") or "account_setting"),
        "unit_price": dict(given["unit_price"]),
        "custom_data": given.get("custom_data"),
        "trial_period": None,
        "billing_cycle": given.get("billing_cycle"),
        "unit_price_overrides": [],
        "import_meta": None,
        "created_at": at,
        "updated_at": at,
    }


# --- transactions ---------------------------------------------------------------------------


def _totals(subtotal: int) -> dict[str, str]:
    s = str(subtotal)
    return {"subtotal": s, "discount": "0", "tax": "0", "total": s}


def transaction(
    base: str,
    lines: list[tuple[dict[str, Any], dict[str, Any], int]],
    currency: str,
    custom_data: Any,
    origin: str = "api",
) -> dict[str, Any]:
    """A new transaction of ``lines`` (price, product, quantity), as ``POST /transactions``
    answers it: ``draft`` until a customer pays, with its checkout address."""
    at = now_iso()
    txn = paddle_id("txn")
    line_items = []
    subtotal = 0
    for item_price, item_product, quantity in lines:
        unit = int(item_price["unit_price"]["amount"])
        subtotal += unit * quantity
        line_items.append(
            {
                "id": paddle_id("txnitm"),
                "price_id": item_price["id"],
                "quantity": quantity,
                "proration": None,
                "tax_rate": "0",
                "unit_totals": _totals(unit),
                "totals": _totals(unit * quantity),
                "product": item_product,
            }
        )
    totals = _totals(subtotal)
    return {
        "id": txn,
        "status": "draft",
        "customer_id": None,
        "address_id": None,
        "business_id": None,
        "custom_data": custom_data,
        "origin": origin,
        "collection_mode": "automatic",
        "subscription_id": None,
        "invoice_id": None,
        "invoice_number": None,
        "billing_details": None,
        "billing_period": None,
        "currency_code": currency,
        "discount_id": None,
        "created_at": at,
        "updated_at": at,
        "billed_at": None,
        "revised_at": None,
        "items": [{"price": p, "quantity": q, "proration": None} for p, _, q in lines],
        "details": {
            "tax_rates_used": [{"tax_rate": "0", "totals": totals}],
            "totals": {
                **totals,
                "currency_code": currency,
                "credit": "0",
                "balance": str(subtotal),
                "grand_total": str(subtotal),
                "fee": None,
                "earnings": None,
                "credit_to_balance": "0",
                "grand_total_tax": "0",
            },
            "adjusted_totals": {
                "subtotal": str(subtotal),
                "tax": "0",
                "total": str(subtotal),
                "grand_total": str(subtotal),
                "fee": "0",
                "earnings": "0",
                "currency_code": currency,
                "retained_fee": "0",
                "grand_total_tax": "0",
            },
            "payout_totals": None,
            "adjusted_payout_totals": None,
            "line_items": line_items,
        },
        "payments": [],
        "checkout": {"url": f"{base}/pay?_ptxn={txn}"},
    }


def total_of(txn: Mapping[str, Any]) -> int:
    return int(txn["details"]["totals"]["grand_total"])


def apply_credit(txn: dict[str, Any], credit: int) -> None:
    """The customer's credit balance pays ``credit`` of the transaction: ``credit`` grows,
    ``grand_total`` ("after credits but before any payments") and ``balance`` shrink; the
    items and ``total`` stay what they were (openapi.yaml ``transaction_totals``)."""
    totals = txn["details"]["totals"]
    credit = min(credit, int(totals["grand_total"]))
    due = int(totals["grand_total"]) - credit
    totals.update(
        credit=str(int(totals["credit"]) + credit), grand_total=str(due), balance=str(due)
    )
    txn["details"]["adjusted_totals"]["grand_total"] = str(due)


def payment_attempt(txn: Mapping[str, Any], declined: bool) -> dict[str, Any]:
    at = now_iso()
    return {
        "payment_attempt_id": str(uuid.uuid4()),
        "stored_payment_method_id": str(uuid.uuid4()),
        "payment_method_id": paddle_id("paymtd"),
        "amount": str(total_of(txn)),
        "status": "error" if declined else "captured",
        "error_code": "declined" if declined else None,
        "method_details": {
            "type": "card",
            "card": {
                "type": "visa",
                "last4": "0002" if declined else "4242",
                "expiry_month": 12,
                "expiry_year": datetime.now(UTC).year + 3,
                "cardholder_name": "Sim Buyer",
            },
        },
        "created_at": at,
        "captured_at": None if declined else at,
    }


def settle(txn: dict[str, Any], status: str) -> None:
    """The transaction after its payment went through: ``paid`` or ``completed``, billed, with
    a fee-free payout."""
    at = now_iso()
    totals = txn["details"]["totals"]
    totals.update(balance="0", fee="0", earnings=totals["grand_total"])
    txn["details"]["adjusted_totals"].update(earnings=totals["grand_total"])
    if totals["currency_code"] in PAYOUT_CURRENCIES:
        txn["details"]["payout_totals"] = {
            **{k: totals[k] for k in ("subtotal", "discount", "tax", "total", "credit")},
            "balance": "0",
            "grand_total": totals["grand_total"],
            "fee": "0",
            "earnings": totals["grand_total"],
            "currency_code": totals["currency_code"],
            "credit_to_balance": "0",
            "exchange_rate": "1",
            "fee_rate": "0",
            "grand_total_tax": "0",
        }
    txn["status"] = status
    txn["billed_at"] = txn["billed_at"] or at
    txn["updated_at"] = at
    if txn.get("invoice_number") is None:
        txn["invoice_id"] = paddle_id("inv")
        txn["invoice_number"] = f"{secrets.randbelow(900) + 100}-{secrets.randbelow(90000) + 10000}"


def renewal(base: str, sub: Mapping[str, Any]) -> dict[str, Any]:
    """The transaction Paddle makes for a subscription's next cycle: its items, its
    ``custom_data`` (Paddle copies it), origin ``subscription_recurring``."""
    lines = [(dict(i["price"]), dict(i["product"]), int(i["quantity"])) for i in sub["items"]]
    txn = transaction(
        base, lines, sub["currency_code"], sub["custom_data"], "subscription_recurring"
    )
    start = sub["current_billing_period"]["ends_at"] if sub["current_billing_period"] else now_iso()
    txn.update(
        status="billed",
        customer_id=sub["customer_id"],
        address_id=sub["address_id"],
        subscription_id=sub["id"],
        billing_period={"starts_at": start, "ends_at": later(start, sub["billing_cycle"])},
        checkout=None,
    )
    return txn


# --- subscriptions -----------------------------------------------------------------------


def subscription(txn: Mapping[str, Any]) -> dict[str, Any]:
    """The subscription a paid transaction with a recurring price starts."""
    at = now_iso()
    cycle = next(i["price"]["billing_cycle"] for i in txn["items"] if i["price"]["billing_cycle"])
    period = {"starts_at": at, "ends_at": later(at, cycle)}
    products = {line["price_id"]: line["product"] for line in txn["details"]["line_items"]}
    return {
        "id": paddle_id("sub"),
        "transaction_id": txn["id"],
        "status": "active",
        "customer_id": txn["customer_id"],
        "address_id": txn["address_id"],
        "business_id": None,
        "currency_code": txn["currency_code"],
        "created_at": at,
        "updated_at": at,
        "started_at": at,
        "first_billed_at": at,
        "next_billed_at": period["ends_at"],
        "paused_at": None,
        "canceled_at": None,
        "discount": None,
        "collection_mode": "automatic",
        "billing_details": None,
        "current_billing_period": period,
        "billing_cycle": dict(cycle),
        "scheduled_change": None,
        "items": [
            {
                "status": "active",
                "quantity": item["quantity"],
                "recurring": item["price"]["billing_cycle"] is not None,
                "created_at": at,
                "updated_at": at,
                "previously_billed_at": at,
                "next_billed_at": period["ends_at"],
                "trial_dates": None,
                "price": item["price"],
                "product": products[item["price"]["id"]],
            }
            for item in txn["items"]
        ],
        "custom_data": txn["custom_data"],
        "import_meta": None,
    }


def move_period(sub: dict[str, Any]) -> None:
    """The subscription after a paid renewal: its next cycle."""
    start = sub["current_billing_period"]["ends_at"]
    end = later(start, sub["billing_cycle"])
    sub.update(current_billing_period={"starts_at": start, "ends_at": end}, next_billed_at=end)
    sub["updated_at"] = now_iso()
    for item in sub["items"]:
        item.update(previously_billed_at=start, next_billed_at=end)


# --- adjustments and portal sessions -------------------------------------------------------


def adjustment(
    txn: Mapping[str, Any], action: str, amount: int | None, reason: str, status: str
) -> dict[str, Any]:
    """An adjustment of ``txn``: all of it (``amount`` None, type full, every line in full) or
    part of its first line (type partial)."""
    lines = txn["details"]["line_items"]
    if amount is None:
        items = [(line["id"], "full", int(line["totals"]["total"])) for line in lines]
        return adjustment_of(txn, action, items, "full", reason, status)
    return adjustment_of(
        txn, action, [(lines[0]["id"], "partial", amount)], "partial", reason, status
    )


def adjustment_of(
    txn: Mapping[str, Any],
    action: str,
    items: list[tuple[str, str, int]],
    adjustment_type: str | None,
    reason: str,
    status: str,
) -> dict[str, Any]:
    """An adjustment of ``txn`` by ``items`` (transaction item id, item type full or partial,
    amount): ``totals.total`` is their sum ("Total after tax"; no tax here). ``type`` is
    ``full``, ``partial``, or None as Paddle's own SDK notification fixtures show it
    (PaddleHQ/paddle-python-sdk@48c8cc04
    tests/Unit/Entities/_fixtures/notification/entity/adjustment.created.json: the server
    shows it so in notifications only)."""
    at = now_iso()
    currency = txn["currency_code"]
    total = sum(amount for _, _, amount in items)

    def money(amount: int) -> dict[str, str]:
        return {"subtotal": str(amount), "tax": "0", "total": str(amount)}

    return {
        "id": paddle_id("adj"),
        "action": action,
        "type": adjustment_type,
        "transaction_id": txn["id"],
        "subscription_id": txn["subscription_id"],
        "customer_id": txn["customer_id"],
        "reason": reason,
        "credit_applied_to_balance": None,
        "currency_code": currency,
        "status": status,
        "items": [
            {
                "id": paddle_id("adjitm"),
                "item_id": item_id,
                "type": item_type,
                "amount": str(amount),
                "proration": None,
                "totals": money(amount),
            }
            for item_id, item_type, amount in items
        ],
        # ``retained_fee``: the official SDK's API entities require it
        # (paddle_billing/Entities/Shared/AdjustmentTotals.py, PayoutTotalsAdjustment.py)
        "totals": {
            **money(total),
            "fee": "0",
            "earnings": str(total),
            "currency_code": currency,
            "retained_fee": "0",
        },
        "payout_totals": {
            **money(total),
            "fee": "0",
            "earnings": str(total),
            "currency_code": currency,
            "retained_fee": "0",
        }
        if currency in PAYOUT_CURRENCIES
        else None,
        "tax_rates_used": [],
        "created_at": at,
        "updated_at": at,
    }


def portal_session(base: str, customer_id: str, subscription_ids: list[str]) -> dict[str, Any]:
    session = paddle_id("cpls")
    token = "pga_" + secrets.token_urlsafe(24)
    url = f"{base}/portal/{session}?token={token}"
    return {
        "id": session,
        "customer_id": customer_id,
        "urls": {
            "general": {"overview": f"{url}&action=overview"},
            "subscriptions": [
                {
                    "id": sub,
                    "cancel_subscription": (
                        f"{url}&action=cancel_subscription&subscription_id={sub}"
                    ),
                    "update_subscription_payment_method": (
                        f"{url}&action=update_subscription_payment_method&subscription_id={sub}"
                    ),
                }
                for sub in subscription_ids
            ],
        },
        "created_at": now_iso(),
    }
