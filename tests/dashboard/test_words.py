"""Refused deliveries in words a merchant can act on (edge.dashboard.words)."""

from __future__ import annotations

from edge.dashboard.words import refused_in_words


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
