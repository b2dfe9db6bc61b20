"""Where a provider is offered (edge.providers.offers): a mode with every required credential,
and a product it can take: a subscription only where it sells subscriptions."""

from __future__ import annotations

from edge.providers.offers import availability, missing_fields, product_problem
from edge.providers.registry import PROVIDERS

BOOK = {"id": "book", "name": "A book", "kind": "payment", "amount": 1999, "currency": "EUR"}
MONTHLY = {
    "id": "pro-monthly",
    "name": "Pro",
    "kind": "subscription",
    "interval": "month",
    "amount": 900,
    "currency": "EUR",
}
STRIPE_LIVE = {"secretKey": {"set": True}, "publishableKey": "pk_live_1", "apiBase": "x"}


def test_a_mode_lacking_a_required_field_names_it_and_optional_ones_do_not_count():
    stripe = PROVIDERS["stripe"]
    assert missing_fields(stripe, STRIPE_LIVE) == ["webhookSecret"]
    assert missing_fields(stripe, {}) == ["secretKey", "publishableKey", "webhookSecret"]
    assert missing_fields(stripe, {**STRIPE_LIVE, "webhookSecret": {"set": True}}) == []


def test_crypto_and_pay_by_mail_are_not_offered_for_a_subscription():
    for name in ("btcpay", "manual"):
        said = product_problem(PROVIDERS[name], MONTHLY)
        assert said is not None and "one-off payments only" in said
        assert product_problem(PROVIDERS[name], BOOK) is None
    for name in ("stripe", "paypal", "paddle"):
        assert product_problem(PROVIDERS[name], MONTHLY) is None


def test_a_price_rule_is_a_reason_too():
    dinar = {**BOOK, "id": "dinar", "amount": 10_505, "currency": "BHD"}
    assert product_problem(PROVIDERS["stripe"], dinar) == (
        "Stripe charges BHD in steps of 0.010: the last of three decimals must be 0"
    )


def test_availability_per_mode_and_per_product():
    config = {"enabled": True, "test": {**STRIPE_LIVE, "webhookSecret": {}}, "live": STRIPE_LIVE}
    seen = availability(PROVIDERS["stripe"], config, [BOOK, MONTHLY])
    assert seen["test"] == {"offered": True, "missing": []}
    assert seen["live"] == {"offered": False, "missing": ["webhookSecret"]}
    assert seen["products"] == {}
    crypto = availability(PROVIDERS["btcpay"], {"enabled": False}, [BOOK, MONTHLY])
    assert crypto["test"]["offered"] is False and crypto["live"]["offered"] is False
    assert list(crypto["products"]) == ["pro-monthly"]
