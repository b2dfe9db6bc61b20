"""Stripe API objects as Stripe's API, version ``API_VERSION``, returns them.

Each builder returns a plain dict with the shape of that API version: every key is a field
the version has, every required field is there, every enum holds one of the version's values
(tests/conformance checks this against the stripe-python release that pins the version). The
fields the node and the hosted pages use carry real values, the rest the neutral values of a
fresh test-mode object. Since 2025-03-31 (basil) billing periods are on subscription items and
an invoice names its subscription only under ``parent.subscription_details``; since
2026-03-25 (dahlia) a hosted session's ``ui_mode`` is ``hosted_page``.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Mapping
from typing import Any

from edge.domain.money import EXPONENTS

API_VERSION = "2026-10-28.endive"  # stripe-python 16.1.0 pins it
_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
# https://docs.stripe.com/currencies: zero-decimal currencies (amounts in whole units) and the
# three-decimal ones (amounts in thousandths, the last digit 0)
ZERO_DECIMAL = frozenset(
    {"bif", "clp", "djf", "gnf", "jpy", "kmf", "krw", "mga"}
    | {"pyg", "rwf", "ugx", "vnd", "vuv", "xaf", "xof", "xpf"}
)
THREE_DECIMAL = frozenset({"bhd", "jod", "kwd", "omr", "tnd"})


def stripe_amount(minor: int, currency: str) -> int | None:
    """Stripe's amount for ``minor`` ISO minor units of ``currency`` (upper-case): whole units
    for zero-decimal currencies, thousandths for three-decimal ones, hundredths for the rest
    (ISK too: "an ISK amount of 100 will continue to represent 1 krona",
    support.stripe.com/questions/deprecation-of-fractional-isk-charges-and-refunds); None when
    it has a fraction Stripe's unit cannot carry."""
    code = currency.lower()
    places = 0 if code in ZERO_DECIMAL else 3 if code in THREE_DECIMAL else 2
    shift = places - EXPONENTS[currency]
    if shift >= 0:
        return minor * 10**shift
    whole, rest = divmod(minor, 10**-shift)
    return None if rest else whole


_INTERVAL_S = {"day": 86_400, "week": 7 * 86_400, "month": 30 * 86_400, "year": 365 * 86_400}
# A dispute's evidence fields, all empty until the merchant submits some.
_EVIDENCE_FIELDS = (
    "access_activity_log", "billing_address", "cancellation_policy",
    "cancellation_policy_disclosure", "cancellation_rebuttal", "customer_communication",
    "customer_email_address", "customer_name", "customer_purchase_ip", "customer_signature",
    "duplicate_charge_documentation", "duplicate_charge_explanation", "duplicate_charge_id",
    "product_description", "receipt", "refund_policy", "refund_policy_disclosure",
    "refund_refusal_explanation", "service_date", "service_documentation", "shipping_address",
    "shipping_carrier", "shipping_date", "shipping_documentation", "shipping_tracking_number",
    "uncategorized_file", "uncategorized_text",
)  # fmt: skip
_EMPTY_ADDRESS = {
    "city": None, "country": None, "line1": None, "line2": None, "postal_code": None, "state": None,
}  # fmt: skip


def new_id(prefix: str, livemode: bool | None = None) -> str:
    """A Stripe-looking id: ``cs_test_a1b2...`` for checkout sessions, ``pi_3Nx...`` otherwise."""
    body = "".join(secrets.choice(_ALPHABET) for _ in range(24))
    if livemode is None:
        return f"{prefix}_{body}"
    return f"{prefix}_{'live' if livemode else 'test'}_{body}"


def derived_id(prefix: str, source: str) -> str:
    """The id of the ``prefix`` object that belongs to ``source`` (a session's payment intent,
    that intent's charge, the subscription a session starts): the same every time, so the
    simulator and ``edge trigger`` name the same objects. Stripe's own ids are opaque; these
    look like them."""
    digest = hashlib.sha256(f"{prefix}:{source}".encode()).digest()
    return f"{prefix}_" + "".join(_ALPHABET[b % len(_ALPHABET)] for b in digest[:24])


def now_s() -> int:
    return int(time.time())


def period_end(start_s: int, interval: str | None) -> int:
    """When a billing period that starts at ``start_s`` ends (months as 30 days: a simulator)."""
    return start_s + _INTERVAL_S.get(interval or "month", _INTERVAL_S["month"])


def checkout_session(
    *,
    session_id: str,
    livemode: bool,
    mode: str,
    amount_total: int,
    currency: str,
    success_url: str | None,
    cancel_url: str | None,
    url: str | None,
    client_reference_id: str | None = None,
    metadata: Mapping[str, str] | None = None,
    created: int | None = None,
    expires_at: int | None = None,
) -> dict[str, Any]:
    """An open, unpaid session; the simulator fills ``payment_intent``, ``customer``,
    ``subscription`` and the statuses as the buyer acts."""
    created = created or now_s()
    return {
        "after_expiration": None,
        "allow_promotion_codes": None,
        "amount_subtotal": amount_total,
        "amount_total": amount_total,
        "automatic_tax": {"enabled": False, "liability": None, "status": None, "provider": None},
        "billing_address_collection": None,
        "cancel_url": cancel_url,
        "client_reference_id": client_reference_id,
        "client_secret": None,
        "consent": None,
        "consent_collection": None,
        "created": created,
        "currency": currency.lower(),
        "custom_fields": [],
        "custom_text": {
            "after_submit": None, "shipping_address": None, "submit": None,
            "terms_of_service_acceptance": None,
        },
        "customer": None,
        "customer_creation": "if_required" if mode == "payment" else "always",
        "customer_details": None,
        "customer_email": None,
        "expires_at": expires_at or created + 24 * 3600,
        "id": session_id,
        "invoice": None,
        "invoice_creation": None,
        "livemode": livemode,
        "locale": None,
        "metadata": dict(metadata or {}),
        "mode": mode,
        "object": "checkout.session",
        "payment_intent": None,
        "payment_link": None,
        "payment_method_collection": "if_required" if mode == "subscription" else None,
        "payment_method_configuration_details": None,
        "payment_method_options": {},
        "payment_method_types": ["card"],
        "payment_status": "unpaid",
        "phone_number_collection": {"enabled": False},
        "recovered_from": None,
        "saved_payment_method_options": None,
        "setup_intent": None,
        "shipping_address_collection": None,
        "shipping_cost": None,
        "shipping_options": [],
        "status": "open",
        "submit_type": None,
        "subscription": None,
        "success_url": success_url,
        "total_details": {"amount_discount": 0, "amount_shipping": 0, "amount_tax": 0},
        "ui_mode": "hosted_page",
        "url": url,
        "adaptive_pricing": {"enabled": False},
        "discounts": [],
        "collected_information": None,
        "permissions": None,
        "wallet_options": None,
        "origin_context": None,
        "currency_conversion": None,
        "customer_account": None,
        "integration_identifier": None,
        "managed_payments": {"enabled": False},
    }  # fmt: skip


def payment_intent(
    *,
    livemode: bool,
    amount: int,
    currency: str,
    metadata: Mapping[str, str] | None = None,
    customer: str | None = None,
    intent_id: str | None = None,
) -> dict[str, Any]:
    """A payment intent waiting for a payment method."""
    intent_id = intent_id or new_id("pi")
    return {
        "amount": amount,
        "amount_capturable": 0,
        "amount_details": {"tip": {}},
        "amount_received": 0,
        "application": None,
        "application_fee_amount": None,
        "automatic_payment_methods": None,
        "canceled_at": None,
        "cancellation_reason": None,
        "capture_method": "automatic_async",
        "client_secret": f"{intent_id}_secret_{new_id('s')[2:]}",
        "confirmation_method": "automatic",
        "created": now_s(),
        "currency": currency.lower(),
        "customer": customer,
        "description": None,
        "id": intent_id,
        "last_payment_error": None,
        "latest_charge": None,
        "livemode": livemode,
        "metadata": dict(metadata or {}),
        "next_action": None,
        "object": "payment_intent",
        "on_behalf_of": None,
        "payment_method": None,
        "payment_method_configuration_details": None,
        "payment_method_options": {},
        "payment_method_types": ["card"],
        "processing": None,
        "receipt_email": None,
        "review": None,
        "setup_future_usage": None,
        "shipping": None,
        "statement_descriptor": None,
        "statement_descriptor_suffix": None,
        "status": "requires_payment_method",
        "transfer_data": None,
        "transfer_group": None,
        "source": None,
        "excluded_payment_method_types": None,
        "customer_account": None,
        "managed_payments": {"enabled": False},
    }


def card_declined_error(charge_id: str | None = None) -> dict[str, Any]:
    """``last_payment_error`` of a payment intent after a generic decline."""
    return {
        "charge": charge_id,
        "code": "card_declined",
        "decline_code": "generic_decline",
        "doc_url": "https://stripe.com/docs/error-codes/card-declined",
        "message": "Your card was declined.",
        "type": "card_error",
    }


def charge(
    *,
    livemode: bool,
    amount: int,
    currency: str,
    payment_intent_id: str | None,
    metadata: Mapping[str, str] | None = None,
    customer: str | None = None,
    charge_id: str | None = None,
) -> dict[str, Any]:
    """A captured, successful card charge (Stripe copies the intent's metadata onto it)."""
    charge_id = charge_id or new_id("ch")
    return {
        "amount": amount,
        "amount_captured": amount,
        "amount_refunded": 0,
        "application": None,
        "application_fee": None,
        "application_fee_amount": None,
        "balance_transaction": new_id("txn"),
        "billing_details": {"address": dict(_EMPTY_ADDRESS), "email": None, "name": None,
                            "phone": None, "tax_id": None},
        "calculated_statement_descriptor": "EDGE SIMULATOR",
        "captured": True,
        "created": now_s(),
        "currency": currency.lower(),
        "customer": customer,
        "description": None,
        "disputed": False,
        "failure_balance_transaction": None,
        "failure_code": None,
        "failure_message": None,
        "fraud_details": {},
        "id": charge_id,
        "livemode": livemode,
        "metadata": dict(metadata or {}),
        "object": "charge",
        "on_behalf_of": None,
        "outcome": {"network_status": "approved_by_network", "reason": None,
                    "seller_message": "Payment complete.", "type": "authorized",
                    "advice_code": None, "network_advice_code": None,
                    "network_decline_code": None},
        "paid": True,
        "payment_intent": payment_intent_id,
        "payment_method": new_id("pm"),
        "payment_method_details": {"card": {"brand": "visa", "last4": "4242", "exp_month": 12,
                                            "exp_year": 2034, "funding": "credit"},
                                   "type": "card"},
        "receipt_email": None,
        "receipt_number": None,
        "receipt_url": None,
        "refunded": False,
        "refunds": {"data": [], "has_more": False, "object": "list",
                    "url": f"/v1/charges/{charge_id}/refunds"},
        "review": None,
        "shipping": None,
        "source_transfer": None,
        "statement_descriptor": None,
        "statement_descriptor_suffix": None,
        "status": "succeeded",
        "transfer_data": None,
        "transfer_group": None,
        "source": None,
    }  # fmt: skip


def refund(
    *,
    charge_obj: Mapping[str, Any],
    amount: int,
    metadata: Mapping[str, str] | None = None,
    status: str = "succeeded",
) -> dict[str, Any]:
    """A refund of ``amount`` of the charge, ``status`` succeeded or pending (a card refund
    Stripe holds while the balance cannot cover it: ``pending_reason`` insufficient_funds,
    stripe-python 16.1.0 ``_refund.py``). ``refund_failed`` turns one into a failed one."""
    made = {
        "amount": amount,
        "balance_transaction": new_id("txn"),
        "charge": charge_obj["id"],
        "created": now_s(),
        "currency": charge_obj["currency"],
        "destination_details": {"card": {"type": "refund"}, "type": "card"},
        "id": new_id("re"),
        "metadata": dict(metadata or {}),
        "object": "refund",
        "payment_intent": charge_obj["payment_intent"],
        "reason": "requested_by_customer",
        "receipt_number": None,
        "source_transfer_reversal": None,
        "status": status,
        "transfer_reversal": None,
        "customer": charge_obj["customer"],
        "customer_account": None,
        "payment_method": charge_obj["payment_method"],
    }
    if status == "pending":
        made["pending_reason"] = "insufficient_funds"
    return made


def refund_failed(refund_obj: Mapping[str, Any], reason: str) -> dict[str, Any]:
    """The refund after it failed: ``status`` failed, Stripe's ``failure_reason`` (one of
    lost_or_stolen_card, expired_or_canceled_card, charge_for_pending_refund_disputed,
    insufficient_funds, declined, merchant_request, unknown: stripe-python 16.1.0
    ``_refund.py``) and the balance transaction that gives its amount back to the merchant
    (``failure_balance_transaction``)."""
    failed = {k: v for k, v in refund_obj.items() if k != "pending_reason"}
    failed.update(status="failed", failure_reason=reason, failure_balance_transaction=new_id("txn"))
    return failed


def dispute(
    *,
    charge_obj: Mapping[str, Any],
    status: str = "needs_response",
    metadata: Mapping[str, str] | None = None,
    amount: int | None = None,
) -> dict[str, Any]:
    """A dispute of the charge, of all of it or of ``amount`` ("Disputed amount. Usually the
    amount of the charge, but it can differ (... because only part of the order is
    disputed)", stripe-python 16.1.0 ``_dispute.py``)."""
    return {
        "amount": charge_obj["amount"] if amount is None else amount,
        "balance_transactions": [],
        "charge": charge_obj["id"],
        "created": now_s(),
        "currency": charge_obj["currency"],
        "evidence": {**dict.fromkeys(_EVIDENCE_FIELDS), "enhanced_evidence": {}},
        "evidence_details": {"due_by": now_s() + 14 * 86_400, "has_evidence": False,
                             "past_due": False, "submission_count": 0,
                             "enhanced_eligibility": {}, "submission_method": "not_submitted"},
        "id": new_id("dp"),
        "is_charge_refundable": False,
        "livemode": charge_obj["livemode"],
        "metadata": dict(metadata or {}),
        "object": "dispute",
        "payment_intent": charge_obj["payment_intent"],
        "payment_method_details": {"card": {"brand": "visa", "case_type": "chargeback",
                                            "network_reason_code": "10.4", "network": "visa"},
                                   "type": "card"},
        "reason": "fraudulent",
        "status": status,
        "enhanced_eligibility_types": [],
    }  # fmt: skip


def early_fraud_warning(
    *, charge_obj: Mapping[str, Any], fraud_type: str = "misc", actionable: bool = True
) -> dict[str, Any]:
    """An early fraud warning about the charge (stripe-python 16.1.0
    ``radar/_early_fraud_warning.py``; ``issfr_`` ids as in stripe/openapi fixtures3.json
    ``radar.early_fraud_warning``). It names the charge and its payment intent, no amount."""
    return {
        "actionable": actionable,
        "charge": charge_obj["id"],
        "created": now_s(),
        "fraud_type": fraud_type,
        "id": new_id("issfr"),
        "livemode": charge_obj["livemode"],
        "object": "radar.early_fraud_warning",
        "payment_intent": charge_obj["payment_intent"],
    }


def price_object(
    *,
    livemode: bool,
    amount: int,
    currency: str,
    nickname: str | None,
    interval: str | None = None,
    product: str | None = None,
    metadata: Mapping[str, str] | None = None,
    created: int | None = None,
) -> dict[str, Any]:
    """A per-unit price: one-time, or recurring every ``interval``."""
    recurring = (
        {"interval": interval, "interval_count": 1, "meter": None, "usage_type": "licensed",
         "trial_period_days": None}
        if interval else None
    )  # fmt: skip
    return {
        "active": True, "billing_scheme": "per_unit", "created": created or now_s(),
        "currency": currency.lower(), "id": new_id("price"), "livemode": livemode,
        "lookup_key": None, "metadata": dict(metadata or {}), "nickname": nickname,
        "object": "price", "product": product or new_id("prod"), "recurring": recurring,
        "tax_behavior": "unspecified", "tiers_mode": None, "transform_quantity": None,
        "type": "recurring" if interval else "one_time", "unit_amount": amount,
        "unit_amount_decimal": str(amount), "custom_unit_amount": None,
    }  # fmt: skip


def payment_link(
    *,
    livemode: bool,
    currency: str,
    url: str,
    metadata: Mapping[str, str] | None = None,
    payment_intent_metadata: Mapping[str, str] | None = None,
    after_completion: Mapping[str, Any] | None = None,
    link_id: str | None = None,
) -> dict[str, Any]:
    """An active payment link, as ``POST /v1/payment_links`` answers it (its line items are
    not included unless expanded, as at Stripe)."""
    return {
        "active": True,
        "after_completion": dict(after_completion or {
            "hosted_confirmation": {"custom_message": None}, "type": "hosted_confirmation",
        }),
        "allow_promotion_codes": False,
        "application": None,
        "application_fee_amount": None,
        "application_fee_percent": None,
        "automatic_tax": {"enabled": False, "liability": None},
        "billing_address_collection": "auto",
        "consent_collection": None,
        "currency": currency.lower(),
        "custom_fields": [],
        "custom_text": {
            "after_submit": None, "shipping_address": None, "submit": None,
            "terms_of_service_acceptance": None,
        },
        "customer_creation": "if_required",
        "id": link_id or new_id("plink"),
        "inactive_message": None,
        "invoice_creation": None,
        "livemode": livemode,
        "metadata": dict(metadata or {}),
        "object": "payment_link",
        "on_behalf_of": None,
        "payment_intent_data": {
            "capture_method": None, "description": None,
            "metadata": dict(payment_intent_metadata or {}), "setup_future_usage": None,
            "statement_descriptor": None, "statement_descriptor_suffix": None,
            "transfer_group": None,
        } if payment_intent_metadata else None,
        "payment_method_collection": "always",
        "payment_method_types": None,
        "phone_number_collection": {"enabled": False},
        "restrictions": None,
        "shipping_address_collection": None,
        "shipping_options": [],
        "submit_type": "auto",
        "subscription_data": None,
        "tax_id_collection": {"enabled": False, "required": "never"},
        "transfer_data": None,
        "url": url,
    }  # fmt: skip


def customer(
    *, livemode: bool, email: str | None = None, customer_id: str | None = None
) -> dict[str, Any]:
    customer_id = customer_id or new_id("cus")
    return {
        "address": None,
        "balance": 0,
        "created": now_s(),
        "currency": None,
        "default_source": None,
        "delinquent": False,
        "description": None,
        "discount": None,
        "email": email,
        "id": customer_id,
        "invoice_prefix": customer_id[4:12].upper(),
        "invoice_settings": {"custom_fields": None, "default_payment_method": None,
                             "footer": None, "rendering_options": None},
        "livemode": livemode,
        "metadata": {},
        "name": None,
        "next_invoice_sequence": 1,
        "object": "customer",
        "phone": None,
        "preferred_locales": [],
        "shipping": None,
        "tax_exempt": "none",
        "test_clock": None,
    }  # fmt: skip


def subscription(
    *,
    livemode: bool,
    customer_id: str,
    amount: int,
    currency: str,
    interval: str,
    product_name: str,
    metadata: Mapping[str, str] | None = None,
    status: str = "active",
    subscription_id: str | None = None,
) -> dict[str, Any]:
    """An active subscription of one item, its first period starting now."""
    start = now_s()
    subscription_id = subscription_id or new_id("sub")
    price = price_object(
        livemode=livemode, amount=amount, currency=currency, nickname=product_name,
        interval=interval, created=start,
    )  # fmt: skip
    # Stripe still shows a recurring price as a legacy plan object of the same id.
    plan = {
        "active": True, "amount": amount, "amount_decimal": str(amount),
        "billing_scheme": "per_unit", "created": start, "currency": price["currency"],
        "id": price["id"], "interval": interval, "interval_count": 1, "livemode": livemode,
        "metadata": {}, "meter": None, "nickname": product_name, "object": "plan",
        "product": price["product"], "tiers_mode": None, "transform_usage": None,
        "trial_period_days": None, "usage_type": "licensed",
    }  # fmt: skip
    item = {
        "created": start,
        "discounts": [],
        "id": new_id("si"),
        "metadata": {},
        "object": "subscription_item",
        "price": price,
        "quantity": 1,
        "subscription": subscription_id,
        "tax_rates": [],
        "plan": plan,
        "current_period_end": period_end(start, interval),
        "current_period_start": start,
        "billing_thresholds": None,
    }
    return {
        "application": None,
        "application_fee_percent": None,
        "automatic_tax": {"enabled": False, "liability": None, "disabled_reason": None},
        "billing_cycle_anchor": start,
        "billing_cycle_anchor_config": None,
        "cancel_at": None,
        "canceled_at": None,
        "cancellation_details": {"comment": None, "feedback": None, "reason": None},
        "collection_method": "charge_automatically",
        "created": start,
        "currency": currency.lower(),
        "customer": customer_id,
        "days_until_due": None,
        "default_payment_method": None,
        "default_source": None,
        "default_tax_rates": [],
        "description": None,
        "discounts": [],
        "ended_at": None,
        "id": subscription_id,
        "invoice_settings": {"account_tax_ids": None, "issuer": {"type": "self"}},
        "items": {"data": [item], "has_more": False, "object": "list",
                  "url": f"/v1/subscription_items?subscription={subscription_id}"},
        "latest_invoice": None,
        "livemode": livemode,
        "metadata": dict(metadata or {}),
        "next_pending_invoice_item_invoice": None,
        "object": "subscription",
        "on_behalf_of": None,
        "pause_collection": None,
        "payment_settings": {"payment_method_options": None, "payment_method_types": None,
                             "save_default_payment_method": "off"},
        "pending_invoice_item_interval": None,
        "pending_setup_intent": None,
        "pending_update": None,
        "schedule": None,
        "start_date": start,
        "status": status,
        "test_clock": None,
        "transfer_data": None,
        "trial_end": None,
        "trial_settings": {"end_behavior": {"missing_payment_method": "create_invoice"}},
        "trial_start": None,
        "cancel_at_period_end": False,
        "billing_thresholds": None,
        "billing_mode": {"type": "classic"},
        "customer_account": None,
        "managed_payments": {"enabled": False},
        "billing_schedules": [],
    }  # fmt: skip


def invoice(
    *,
    subscription_obj: Mapping[str, Any],
    billing_reason: str,
    paid: bool,
) -> dict[str, Any]:
    """The invoice of the subscription's current period, paid or with a failed attempt."""
    item = subscription_obj["items"]["data"][0]
    amount = item["price"]["unit_amount"] * item["quantity"]
    start, end = item["current_period_start"], item["current_period_end"]
    invoice_id, created = new_id("in"), now_s()
    metadata = dict(subscription_obj["metadata"])
    line = {
        "amount": amount, "currency": subscription_obj["currency"],
        "description": f"1 × {item['price']['nickname']}", "discount_amounts": [],
        "discountable": True, "discounts": [], "id": new_id("il"), "invoice": invoice_id,
        "livemode": subscription_obj["livemode"], "metadata": metadata, "object": "line_item",
        "period": {"end": end, "start": start}, "quantity": item["quantity"],
        "subscription": None, "pretax_credit_amounts": [], "taxes": [],
        "parent": {"invoice_item_details": None,
                   "subscription_item_details": {"invoice_item": None, "proration": False,
                                                 "proration_details": {"credited_items": None},
                                                 "subscription": subscription_obj["id"],
                                                 "subscription_item": item["id"]},
                   "type": "subscription_item_details"},
        "pricing": {"price_details": {"price": item["price"]["id"],
                                      "product": item["price"]["product"]},
                    "type": "price_details", "unit_amount_decimal": str(amount)},
        "subtotal": amount, "quantity_decimal": str(item["quantity"]),
    }  # fmt: skip
    return {
        "account_country": "US",
        "account_name": "Edge simulator",
        "account_tax_ids": None,
        "amount_due": amount,
        "amount_paid": amount if paid else 0,
        "amount_remaining": 0 if paid else amount,
        "amount_shipping": 0,
        "application": None,
        "attempt_count": 1,
        "attempted": True,
        "auto_advance": not paid,
        "automatic_tax": {"enabled": False, "liability": None, "status": None,
                          "disabled_reason": None, "provider": None},
        "billing_reason": billing_reason,
        "collection_method": "charge_automatically",
        "created": created,
        "currency": subscription_obj["currency"],
        "custom_fields": None,
        "customer": subscription_obj["customer"],
        "customer_address": None,
        "customer_email": None,
        "customer_name": None,
        "customer_phone": None,
        "customer_shipping": None,
        "customer_tax_exempt": "none",
        "customer_tax_ids": [],
        "default_payment_method": None,
        "default_source": None,
        "default_tax_rates": [],
        "description": None,
        "discounts": [],
        "due_date": None,
        "effective_at": created,
        "ending_balance": 0,
        "footer": None,
        "from_invoice": None,
        "hosted_invoice_url": None,
        "id": invoice_id,
        "invoice_pdf": None,
        "issuer": {"type": "self"},
        "last_finalization_error": None,
        "latest_revision": None,
        "lines": {"data": [line], "has_more": False, "object": "list",
                  "url": f"/v1/invoices/{invoice_id}/lines"},
        "livemode": subscription_obj["livemode"],
        "metadata": {},
        "next_payment_attempt": None if paid else created + 3 * 86_400,
        "number": f"SIM-{invoice_id[-6:].upper()}",
        "object": "invoice",
        "on_behalf_of": None,
        "payment_settings": {"default_mandate": None, "payment_method_options": None,
                             "payment_method_types": None},
        "period_end": end,
        "period_start": start,
        "post_payment_credit_notes_amount": 0,
        "pre_payment_credit_notes_amount": 0,
        "receipt_number": None,
        "rendering": None,
        "shipping_cost": None,
        "shipping_details": None,
        "starting_balance": 0,
        "statement_descriptor": None,
        "status": "paid" if paid else "open",
        "status_transitions": {"finalized_at": created, "marked_uncollectible_at": None,
                               "paid_at": created if paid else None, "voided_at": None},
        "subtotal": amount,
        "subtotal_excluding_tax": amount,
        "test_clock": None,
        "total": amount,
        "total_discount_amounts": [],
        "total_excluding_tax": amount,
        "webhooks_delivered_at": created,
        "automatically_finalizes_at": None,
        "total_pretax_credit_amounts": [],
        "total_taxes": [],
        "amount_overpaid": 0,
        "parent": {"quote_details": None,
                   "subscription_details": {"metadata": metadata,
                                            "subscription": subscription_obj["id"]},
                   "type": "subscription_details"},
        "customer_account": None,
    }  # fmt: skip


def billing_portal_session(
    *, livemode: bool, customer_id: str, return_url: str | None, url_base: str
) -> dict[str, Any]:
    session_id = new_id("bps")
    return {
        "configuration": new_id("bpc"),
        "created": now_s(),
        "customer": customer_id,
        "flow": None,
        "id": session_id,
        "livemode": livemode,
        "locale": None,
        "object": "billing_portal.session",
        "on_behalf_of": None,
        "return_url": return_url,
        "url": f"{url_base}/p/session/{session_id}",
        "customer_account": None,
    }


def webhook_endpoint(
    *, livemode: bool, url: str, enabled_events: list[str], secret: str
) -> dict[str, Any]:
    """As returned on creation: the only answer that shows ``secret``."""
    return {
        "api_version": API_VERSION,
        "application": None,
        "created": now_s(),
        "description": None,
        "enabled_events": list(enabled_events),
        "id": new_id("we"),
        "livemode": livemode,
        "metadata": {},
        "object": "webhook_endpoint",
        "status": "enabled",
        "url": url,
        "secret": secret,
    }
