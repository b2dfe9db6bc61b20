"""PayPal's objects as its API and webhooks show them (Orders v2, Payments v2, Subscriptions v1,
Disputes v1, Notifications v1), shaped after the published OpenAPI documents: the conformance
tests validate what the simulator answers against them."""

from __future__ import annotations

import hashlib
import re
import secrets
import string
import time
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

_ALNUM = string.ascii_uppercase + string.digits
# The currencies PayPal takes, and those of them with no decimals ("This currency does not
# support decimals. If you pass a decimal amount, an error occurs."):
# https://developer.paypal.com/docs/api/reference/currency-codes/
CURRENCIES = frozenset(
    {
        "AUD", "BRL", "CAD", "CNY", "CZK", "DKK", "EUR", "HKD", "HUF", "ILS", "JPY", "MYR",
        "MXN", "TWD", "NZD", "NOK", "PHP", "PLN", "GBP", "SGD", "SEK", "CHF", "THB", "USD",
    }
)  # fmt: skip
NO_DECIMALS = frozenset({"HUF", "JPY", "TWD"})


def decimals(currency: str) -> int:
    return 0 if currency in NO_DECIMALS else 2


def value_of(amount: Decimal, currency: str) -> str:
    """A PayPal ``value`` for ``amount``: two decimals, none for HUF, JPY and TWD."""
    return f"{amount:.{decimals(currency)}f}"


def paypal_id(length: int = 17) -> str:
    """An id in PayPal's style (``5O190127TN364715T``)."""
    return "".join(secrets.choice(_ALNUM) for _ in range(length))


def account_id() -> str:
    """A payer or merchant id: 13 of PayPal's account-id characters (no 0, 1, I or O)."""
    return "".join(secrets.choice("23456789ABCDEFGHJKLMNPQRSTUVWXYZ") for _ in range(13))


MERCHANT_ID = "7KNGBPH2U58GQ"


def now_iso(at: float | None = None) -> str:
    """PayPal's times: RFC 3339 in UTC, whole seconds, ``Z``."""
    moment = datetime.fromtimestamp(time.time() if at is None else at, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def money(currency: str, value: str) -> dict[str, str]:
    return {"currency_code": currency, "value": value}


def zero(currency: str) -> dict[str, str]:
    return money(currency, "0" if decimals(currency) == 0 else "0.00")


def link(href: str, rel: str, method: str = "GET") -> dict[str, str]:
    return {"href": href, "rel": rel, "method": method}


def order(base: str, body: Mapping[str, Any], with_payment_source: bool) -> dict[str, Any]:
    order_id = paypal_id()
    unit = dict(body["purchase_units"][0])
    unit.setdefault("reference_id", "default")
    unit["payee"] = {"merchant_id": MERCHANT_ID, "email_address": "merchant@example.com"}
    answer: dict[str, Any] = {
        "id": order_id,
        "intent": body["intent"],
        "status": "PAYER_ACTION_REQUIRED" if with_payment_source else "CREATED",
        "purchase_units": [unit],
        "create_time": now_iso(),
        "links": [
            link(f"{base}/v2/checkout/orders/{order_id}", "self"),
            link(
                f"{base}/checkoutnow?token={order_id}",
                "payer-action" if with_payment_source else "approve",
            ),
        ],
    }
    if with_payment_source:
        answer["payment_source"] = {"paypal": {}}
    return answer


def payer() -> dict[str, Any]:
    return {
        "payer_id": account_id(),
        "name": {"given_name": "Sim", "surname": "Buyer"},
        "email_address": "buyer@example.com",
    }


def capture_id_of(order_id: str) -> str:
    """The id of an order's capture (one per ``intent: CAPTURE`` order): the same every time,
    so the simulator and ``edge trigger`` name the same capture. PayPal's ids are opaque; this
    one looks like them."""
    digest = hashlib.sha256(f"capture:{order_id}".encode()).digest()
    return "".join(_ALNUM[b % len(_ALNUM)] for b in digest[:17])


def capture(base: str, order: Mapping[str, Any], status: str) -> dict[str, Any]:
    unit = order["purchase_units"][0]
    capture_id = capture_id_of(order["id"])
    amount = dict(unit["amount"])
    answer: dict[str, Any] = {
        "id": capture_id,
        "status": status,
        "amount": amount,
        "final_capture": True,
        "seller_protection": {"status": "ELIGIBLE", "dispute_categories": ["ITEM_NOT_RECEIVED"]},
        "seller_receivable_breakdown": {
            "gross_amount": amount,
            "paypal_fee": zero(amount["currency_code"]),
            "net_amount": amount,
        },
        "supplementary_data": {"related_ids": {"order_id": order["id"]}},
        "create_time": now_iso(),
        "update_time": now_iso(),
        "links": [
            link(f"{base}/v2/payments/captures/{capture_id}", "self"),
            link(f"{base}/v2/payments/captures/{capture_id}/refund", "refund", "POST"),
            link(f"{base}/v2/checkout/orders/{order['id']}", "up"),
        ],
    }
    for key in ("invoice_id", "custom_id"):
        if unit.get(key):
            answer[key] = unit[key]
    if status == "PENDING":
        answer["status_details"] = {"reason": "PENDING_REVIEW"}
    return answer


def refund(
    base: str,
    capture: Mapping[str, Any],
    amount: Mapping[str, str],
    total: Mapping[str, str],
    *,
    custom_id: str | None = None,
    note: str | None = None,
    status: str = "COMPLETED",
) -> dict[str, Any]:
    """A refund of ``capture`` (payments_payment_v2.json ``refund``): ``custom_id`` the caller's
    (else the capture's, as a refund made without one shows it), ``note_to_payer`` the note, and
    its status (``COMPLETED``, ``PENDING``, ``CANCELLED``, ``FAILED``; a pending or failed one
    says why, ``status_details.reason``, whose only documented value is ``ECHECK``)."""
    refund_id = paypal_id()
    answer: dict[str, Any] = {
        "id": refund_id,
        "status": status,
        "amount": dict(amount),
        "seller_payable_breakdown": {
            "gross_amount": dict(amount),
            "paypal_fee": zero(amount["currency_code"]),
            "net_amount": dict(amount),
            "total_refunded_amount": dict(total),
        },
        "create_time": now_iso(),
        "update_time": now_iso(),
        "links": [
            link(f"{base}/v2/payments/refunds/{refund_id}", "self"),
            link(f"{base}/v2/payments/captures/{capture['id']}", "up"),
        ],
    }
    if capture.get("invoice_id"):
        answer["invoice_id"] = capture["invoice_id"]
    if custom_id or capture.get("custom_id"):
        answer["custom_id"] = custom_id or capture["custom_id"]
    if note:
        answer["note_to_payer"] = note
    if status in ("PENDING", "FAILED"):
        answer["status_details"] = {"reason": "ECHECK"}
    return answer


def refund_in_order(refund: Mapping[str, Any]) -> dict[str, Any]:
    """A refund as its order shows it (``purchase_units[].payments.refunds``). Which fields
    PayPal copies there is not documented (the Orders ``refund`` schema allows them all): the
    simulator shows the fewest, without ``custom_id`` and ``note_to_payer``, so a reader that
    needs the tag reads the refund itself."""
    keep = ("id", "status", "status_details", "amount", "create_time", "update_time", "links")
    return {key: refund[key] for key in keep if key in refund}


def product(base: str, body: Mapping[str, Any]) -> dict[str, Any]:
    product_id = "PROD-" + paypal_id(17)
    return {
        "id": product_id,
        "name": body["name"],
        "type": body.get("type", "SERVICE"),
        "create_time": now_iso(),
        "links": [link(f"{base}/v1/catalogs/products/{product_id}", "self")],
    }


def plan(base: str, body: Mapping[str, Any]) -> dict[str, Any]:
    plan_id = "P-" + paypal_id(24)
    return {
        "id": plan_id,
        "product_id": body["product_id"],
        "name": body["name"],
        "status": body.get("status", "ACTIVE"),
        "billing_cycles": body["billing_cycles"],
        "payment_preferences": body.get("payment_preferences", {}),
        "create_time": now_iso(),
        "links": [link(f"{base}/v1/billing/plans/{plan_id}", "self")],
    }


def subscription(
    base: str, plan: Mapping[str, Any], body: Mapping[str, Any]
) -> tuple[dict[str, Any], str]:
    """A new subscription awaiting approval, and its approval token."""
    subscription_id = "I-" + paypal_id(12)
    token = "BA-" + paypal_id(17)
    answer: dict[str, Any] = {
        "id": subscription_id,
        "plan_id": plan["id"],
        "status": "APPROVAL_PENDING",
        "status_update_time": now_iso(),
        "quantity": str(body.get("quantity") or "1"),
        "create_time": now_iso(),
        "links": [
            link(f"{base}/webapps/billing/subscriptions?ba_token={token}", "approve"),
            link(f"{base}/v1/billing/subscriptions/{subscription_id}", "edit", "PATCH"),
            link(f"{base}/v1/billing/subscriptions/{subscription_id}", "self"),
        ],
    }
    if body.get("custom_id"):
        answer["custom_id"] = body["custom_id"]
    return answer, token


def sale(base: str, subscription: Mapping[str, Any], price: Mapping[str, str]) -> dict[str, Any]:
    """A v1 sale: what each subscription payment is (``PAYMENT.SALE.COMPLETED``)."""
    sale_id = paypal_id()
    answer: dict[str, Any] = {
        "id": sale_id,
        "state": "completed",
        "amount": {
            "total": price["value"],
            "currency": price["currency_code"],
            "details": {"subtotal": price["value"]},
        },
        "payment_mode": "INSTANT_TRANSFER",
        "protection_eligibility": "ELIGIBLE",
        "transaction_fee": {
            "value": zero(price["currency_code"])["value"],
            "currency": price["currency_code"],
        },
        "billing_agreement_id": subscription["id"],
        "create_time": now_iso(),
        "update_time": now_iso(),
        "links": [
            link(f"{base}/v1/payments/sale/{sale_id}", "self"),
            link(f"{base}/v1/payments/sale/{sale_id}/refund", "refund", "POST"),
        ],
    }
    if subscription.get("custom_id"):
        answer["custom"] = subscription["custom_id"]
    return answer


def dispute(
    base: str,
    capture: Mapping[str, Any],
    amount: Mapping[str, str] | None = None,
    stage: str = "INQUIRY",
) -> dict[str, Any]:
    """A dispute of ``capture`` (customer_disputes_v1.json ``dispute``), for all of it or for
    ``amount`` ("customers can sometimes dispute only part of the payment"), opened at
    ``stage``: ``INQUIRY``, or ``CHARGEBACK`` for a merchant who opted out of inquiries ("all
    disputes are created directly in the claim stage", developer.paypal.com/api/disputes)."""
    transaction: dict[str, Any] = {
        "seller_transaction_id": capture["id"],
        "create_time": capture.get("create_time", now_iso()),
        "transaction_status": "COMPLETED",
        "gross_amount": capture["amount"],
    }
    if capture.get("custom_id"):
        transaction["custom"] = capture["custom_id"]
    # the disputes API documents invoice numbers without "_": a tx_ id is not shown there
    if capture.get("invoice_id") and re.fullmatch(r"[A-Za-z0-9:\-|]+", capture["invoice_id"]):
        transaction["invoice_number"] = capture["invoice_id"]
    dispute_id = "PP-D-" + str(10000 + secrets.randbelow(90000))
    return {
        "dispute_id": dispute_id,
        "create_time": now_iso(),
        "update_time": now_iso(),
        "disputed_transactions": [transaction],
        "reason": "MERCHANDISE_OR_SERVICE_NOT_RECEIVED",
        "status": "OPEN" if stage == "INQUIRY" else "WAITING_FOR_SELLER_RESPONSE",
        "dispute_amount": dict(amount or capture["amount"]),
        "dispute_life_cycle_stage": stage,
        "dispute_channel": "INTERNAL",
        "links": [link(f"{base}/v1/customer/disputes/{dispute_id}", "self")],
    }


def dispute_summary(dispute: Mapping[str, Any]) -> dict[str, Any]:
    """A dispute as the list shows it: "Default is a summary set of details, which shows the
    dispute_id, reason, status, dispute_amount, create_time, and update_time fields for each
    dispute" (customer_disputes_v1.json, ``GET /v1/customer/disputes`` 200)."""
    keep = ("dispute_id", "reason", "status", "dispute_amount", "create_time", "update_time")
    return {key: dispute[key] for key in keep if key in dispute} | {"links": dispute["links"]}


def subscription_transaction(sale: Mapping[str, Any]) -> dict[str, Any]:
    """A subscription's sale as ``GET /v1/billing/subscriptions/{id}/transactions`` lists it
    (billing_subscriptions_v1.json ``transaction``), under the sale's id (**not verified**
    that PayPal shows the sale's id there: both are "the PayPal-generated transaction ID")."""
    gross = money(sale["amount"]["currency"], sale["amount"]["total"])
    return {
        "id": sale["id"],
        "status": "COMPLETED",
        "amount_with_breakdown": {
            "gross_amount": gross,
            "fee_amount": zero(gross["currency_code"]),
            "net_amount": gross,
        },
        "time": sale["create_time"],
    }


# the resource_type and resource_version PayPal sends with each family of events
RESOURCE_KINDS: tuple[tuple[str, str, str], ...] = (
    ("CHECKOUT.", "checkout-order", "2.0"),
    ("PAYMENT.CAPTURE.REFUNDED", "refund", "2.0"),
    ("PAYMENT.CAPTURE.REVERSED", "refund", "2.0"),
    ("PAYMENT.CAPTURE.", "capture", "2.0"),
    ("PAYMENT.SALE.", "sale", "1.0"),
    ("BILLING.SUBSCRIPTION.", "subscription", "2.0"),
    ("CUSTOMER.DISPUTE.", "dispute", "1.0"),
)


def envelope(base: str, event_type: str, resource: Mapping[str, Any]) -> dict[str, Any]:
    """A webhook event as PayPal delivers it."""
    kind, version = next(
        ((k, v) for prefix, k, v in RESOURCE_KINDS if event_type.startswith(prefix)),
        ("unknown", "1.0"),
    )
    event_id = "WH-" + paypal_id(17) + "-" + paypal_id(17)
    return {
        "id": event_id,
        "event_version": "1.0",
        "create_time": now_iso(),
        "resource_type": kind,
        "resource_version": version,
        "event_type": event_type,
        "summary": event_type.replace(".", " ").capitalize(),
        "resource": dict(resource),
        "links": [
            link(f"{base}/v1/notifications/webhooks-events/{event_id}", "self"),
            link(f"{base}/v1/notifications/webhooks-events/{event_id}/resend", "resend", "POST"),
        ],
    }


def transmission() -> tuple[str, str]:
    """A delivery's transmission id and time."""
    return str(uuid.uuid4()), now_iso()
