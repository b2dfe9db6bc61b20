"""One of each object the Stripe simulator's builders make, in each of its variants, by name."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from edge.sim.stripe import build_event
from edge.sim.stripe import objects as o

TX = "tx_01JD0000000000000000000003"


def built_objects() -> Iterator[tuple[str, dict[str, Any]]]:
    for mode in ("payment", "subscription"):
        yield f"checkout.session ({mode})", o.checkout_session(
            session_id=o.new_id("cs", True), livemode=True, mode=mode, amount_total=1999,
            currency="EUR", success_url="https://s/{CHECKOUT_SESSION_ID}",
            cancel_url="https://c", url="http://sim/c/pay/x", client_reference_id=TX,
            metadata={"txId": TX},
        )  # fmt: skip
    intent = o.payment_intent(livemode=False, amount=1999, currency="eur", customer="cus_1")
    yield "payment_intent", intent
    yield "payment_intent (declined)", {**intent, "last_payment_error": o.card_declined_error()}
    charge = o.charge(
        livemode=False, amount=1999, currency="eur", payment_intent_id=intent["id"],
        metadata={"txId": TX}, customer="cus_1",
    )  # fmt: skip
    yield "charge", charge
    refund = o.refund(charge_obj=charge, amount=999)
    yield "refund", refund
    yield "charge (refunded)", {
        **charge, "amount_refunded": 999, "refunds": {**charge["refunds"], "data": [refund]},
    }  # fmt: skip
    pending = o.refund(
        charge_obj=charge, amount=500, metadata={"refundId": "rf_1"}, status="pending"
    )
    yield "refund (pending)", pending
    yield "refund (failed)", o.refund_failed(pending, "expired_or_canceled_card")
    for status in ("needs_response", "won", "lost", "warning_closed"):
        yield f"dispute ({status})", o.dispute(charge_obj=charge, status=status)
    yield "dispute (partial)", o.dispute(charge_obj=charge, amount=700)
    yield "radar.early_fraud_warning", o.early_fraud_warning(charge_obj=charge)
    yield (
        "radar.early_fraud_warning (not actionable)",
        o.early_fraud_warning(
            charge_obj=charge, fraud_type="made_with_stolen_card", actionable=False
        ),
    )
    yield "customer", o.customer(livemode=False, email="buyer@example.com")
    for interval in ("day", "week", "month", "year"):
        sub = o.subscription(
            livemode=False, customer_id="cus_1", amount=900, currency="eur", interval=interval,
            product_name="Pro", metadata={"txId": TX},
        )  # fmt: skip
        yield f"subscription ({interval})", sub
    for reason, paid in (("subscription_create", True), ("subscription_cycle", False)):
        yield (
            f"invoice ({reason})",
            o.invoice(subscription_obj=sub, billing_reason=reason, paid=paid),
        )
    yield (
        "billing_portal.session",
        o.billing_portal_session(
            livemode=False, customer_id="cus_1", return_url="https://r", url_base="http://sim"
        ),
    )
    yield (
        "webhook_endpoint",
        o.webhook_endpoint(livemode=False, url="https://h", enabled_events=["*"], secret="whsec_1"),
    )
    yield "event", build_event("charge.refunded", charge, livemode=False)
    yield (
        "price (one-time)",
        o.price_object(livemode=False, amount=100, currency="eur", nickname=None),
    )
    yield (
        "price (recurring)",
        o.price_object(livemode=True, amount=900, currency="eur", nickname="Pro", interval="month"),
    )
    yield (
        "payment_link",
        o.payment_link(
            livemode=False, currency="eur", url="http://sim/b/plink_1", metadata={"a": "b"}
        ),
    )
    yield "payment_link (redirect, intent metadata)", o.payment_link(
        livemode=False, currency="eur", url="http://sim/b/plink_1",
        payment_intent_metadata={"till": "3"},
        after_completion={"redirect": {"url": "https://shop/thanks"}, "type": "redirect"},
    )  # fmt: skip


BUILT: dict[str, dict[str, Any]] = dict(built_objects())
