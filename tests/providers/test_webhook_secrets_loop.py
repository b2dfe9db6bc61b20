"""The one loop over a project's test and live secrets (edge/providers/signing.py)."""

from __future__ import annotations

import pytest

from edge.providers.base import SignatureInvalid
from edge.providers.signing import signing_mode

FIELDS = ("webhookSecret", "previousWebhookSecret")


def _signed_with(key: str):
    return lambda secrets: key in secrets


def test_the_mode_is_the_one_whose_secret_signed() -> None:
    credentials = {"test": {"webhookSecret": "t1"}, "live": {"webhookSecret": "l1"}}
    assert signing_mode(credentials, FIELDS, _signed_with("l1")) == "live"
    assert signing_mode(credentials, FIELDS, _signed_with("t1")) == "test"


def test_a_previous_secret_during_a_rotation_still_names_its_mode() -> None:
    credentials = {"live": {"webhookSecret": "new", "previousWebhookSecret": "old"}}
    assert signing_mode(credentials, FIELDS, _signed_with("old")) == "live"
    # a provider with one secret field never tries the other
    with pytest.raises(SignatureInvalid):
        signing_mode(credentials, ("webhookSecret",), _signed_with("old"))


def test_a_mode_without_a_secret_is_never_asked_so_an_empty_key_cannot_match() -> None:
    asked: list[list[str]] = []

    def anything(secrets: list[str]) -> bool:
        asked.append(secrets)
        return True

    credentials = {"test": {"webhookSecret": ""}, "live": {"publishableKey": "pk"}}
    with pytest.raises(SignatureInvalid) as refused:
        signing_mode(credentials, FIELDS, anything)
    assert refused.value.reason == "no_matching_signature"
    assert asked == []
