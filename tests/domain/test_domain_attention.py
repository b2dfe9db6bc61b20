"""Flags in words (edge.domain.attention): every code says what happened and what to do, with
the money concerned in the currency's own decimals."""

from __future__ import annotations

import pytest

from edge.domain.attention import CODES, in_words, money


@pytest.mark.parametrize("code", CODES)
def test_every_code_is_a_sentence_naming_the_money(code):
    flag = {
        "code": code,
        "amount": 1999,
        "currency": "EUR",
        "expectedAmount": 2500,
        "expectedCurrency": "EUR",
    }
    said = in_words(flag, "Stripe")
    assert said.endswith(".") and said[0].isupper()
    no_amount = ("contradicted", "capture_refused", "not_at_provider", "still_open")
    if code not in (*no_amount, "still_processing"):
        assert "19.99 EUR" in said


def test_without_an_amount_still_a_sentence():
    assert in_words({"code": "dispute_warning"}, "Paddle") == (
        "Paddle warned that the buyer's bank may take back money: a chargeback may follow."
        " Refunding now avoids a dispute fee."
    )
    assert "unknown_code" in in_words({"code": "unknown_code"}, "Stripe")


def test_money_in_the_currencys_own_decimals():
    assert money(150000, "JPY") == "150,000 JPY"
    assert money(1234567, "BHD") == "1,234.567 BHD"
    assert money(1999, "EUR") == "19.99 EUR"


def test_an_amount_mismatch_names_both_amounts():
    flag = {
        "code": "amount_mismatch",
        "amount": 100,
        "currency": "EUR",
        "expectedAmount": 9999999999,
        "expectedCurrency": "EUR",
    }
    assert in_words(flag, "Paddle") == (
        "Paddle reported 1.00 EUR paid for this checkout of 99,999,999.99 EUR. It did not"
        " complete the checkout: refund that payment in Paddle, or ask the buyer to pay the rest."
    )


def test_an_amount_the_node_cannot_read_is_shown_as_the_provider_wrote_it():
    flag = {
        "code": "amount_mismatch",
        "providerAmount": "12345 kwd",
        "expectedAmount": 1500,
        "expectedCurrency": "JPY",
    }
    assert in_words(flag, "Stripe") == (
        "Stripe reported an amount the node cannot read (12345 kwd) paid for this checkout of"
        " 1,500 JPY. It did not complete the checkout: refund that payment in Stripe, or ask"
        " the buyer to pay the rest."
    )


def test_a_capture_paypal_refused_for_good():
    said = in_words({"code": "capture_refused"}, "PayPal")
    assert said.startswith("PayPal refused to take the approved payment")
    assert "The buyer was not charged" in said
