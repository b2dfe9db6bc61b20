"""Words a merchant can act on (edge.dashboard.words): refused deliveries, and why a transaction
needs them."""

from __future__ import annotations

from edge.dashboard.words import (
    attention_in_words,
    not_offered_in_words,
    refused_grouped,
    refused_in_words,
)


def item(reason: str, detail: str = "", code: str = "signature_invalid", provider: str = "stripe"):
    return {"provider": provider, "code": code, "reason": reason, "detail": detail}


def test_a_wrong_secret_names_the_mode_and_where_to_look():
    said = refused_in_words(item("no_matching_signature"), ["test"])
    assert said.startswith(
        "Signed with a different secret than this project's test webhook secret for Stripe"
    )
    assert "Developers > Webhooks" in said
    both = refused_in_words(item("no_matching_signature", provider="paddle"), ["test", "live"])
    assert "test and live webhook secret for Paddle" in both and "Notifications" in both


def test_an_old_timestamp_says_how_old_and_to_check_the_clock():
    detail = "The signature's timestamp is 420 seconds old (at most 300 allowed)."
    said = refused_in_words(item("timestamp_out_of_tolerance", detail), ["live"])
    assert said.startswith("The signature's timestamp was 7 minutes old: check your server's clock")
    ahead = "The signature's timestamp is 30 seconds in the future (at most 20 allowed)."
    assert "30 seconds in the future" in refused_in_words(
        item("timestamp_out_of_tolerance", ahead), []
    )


def test_other_refusals():
    assert "no Stripe signature" in refused_in_words(item("missing_header"), [])
    assert "could not be read" in refused_in_words(item("malformed_header", "bad t="), [])
    body = item("malformed_payload", "The body is not JSON.", code="malformed_payload")
    assert "not an event the node can read (The body is not JSON.)" in refused_in_words(body, [])
    off = item("provider_not_enabled", "stripe is not enabled", code="provider_not_enabled")
    assert "Stripe is not turned on for this project" in refused_in_words(off, [])


def test_why_a_transaction_needs_the_merchant_is_the_apis_reason():
    tx = {
        "provider": "paddle",
        "needsAttention": True,
        "attention": [
            {"code": "contradicted", "eventId": None, "reason": "Both paid and ended."},
            {"code": "paid_late", "eventId": "evt_2", "reason": "Money came late."},
            {"code": "paid_late", "eventId": "evt_3", "reason": "Money came late."},
        ],
    }
    assert attention_in_words(tx) == ["Both paid and ended.", "Money came late."]


def test_a_flag_from_before_the_reasons_were_kept_still_says_something():
    said = attention_in_words({"provider": "btcpay", "needsAttention": True})
    assert said == ["Money arrived after this checkout ended: fulfil or refund it."]


def test_why_a_method_is_not_offered_per_mode_and_product():
    view = {
        "enabled": True,
        "test": {"secretKey": {"set": True}, "publishableKey": "pk", "webhookSecret": {}},
        "live": {"secretKey": {"set": True}, "publishableKey": "pk"},
        "availability": {
            "test": {"offered": True, "missing": []},
            "live": {"offered": False, "missing": ["webhookSecret"]},
            "products": {},
        },
    }
    assert not_offered_in_words("stripe", "card", view, {}) == [
        "Live: Stripe has no webhook secret, so live buyers are not offered card payments."
    ]
    crypto = {
        "enabled": True,
        "test": {},
        "live": {"serverUrl": "https://pay.example", "storeId": "s"},
        "availability": {
            "test": {"offered": False, "missing": ["serverUrl", "apiKey"]},
            "live": {"offered": False, "missing": ["apiKey", "webhookSecret"]},
            "products": {"pro-monthly": "BTCPay Server takes one-off payments only"},
        },
    }
    assert not_offered_in_words("btcpay", "crypto", crypto, {"pro-monthly": "Pro"}) == [
        "Test: BTCPay Server has no test credentials yet, so test buyers are not offered crypto"
        " payments.",
        "Live: BTCPay Server has no API key or webhook secret, so live buyers are not offered"
        " crypto payments.",
        "Not offered for Pro (pro-monthly): BTCPay Server takes one-off payments only.",
    ]
    assert not_offered_in_words("paypal", "wallet", None, {}) == [
        "PayPal is not set up: buyers are not offered PayPal."
    ]
    assert not_offered_in_words("paypal", "wallet", {**view, "enabled": False}, {}) == [
        "PayPal is off: buyers are not offered PayPal."
    ]


def test_refused_deliveries_of_one_mistake_read_as_one_line():
    wrong = {"provider": "stripe", "code": "signature_invalid", "reason": "no_matching_signature"}
    items = [
        {**wrong, "at": "2026-11-28T10:05:00.000Z"},
        {"provider": "stripe", "code": "signature_invalid", "reason": "missing_header",
         "at": "2026-11-28T10:04:00.000Z"},
        {**wrong, "at": "2026-11-28T10:03:00.000Z"},
        {**wrong, "at": "2026-11-28T10:01:00.000Z"},
    ]  # fmt: skip
    grouped = refused_grouped(items, {"stripe": ["test"]})
    assert [(g["count"], g["last"], g["first"]) for g in grouped] == [
        (3, "2026-11-28T10:05:00.000Z", "2026-11-28T10:01:00.000Z"),
        (1, "2026-11-28T10:04:00.000Z", "2026-11-28T10:04:00.000Z"),
    ]
    assert (
        "different secret" in grouped[0]["words"] and "no Stripe signature" in grouped[1]["words"]
    )
