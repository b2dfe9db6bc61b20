"""Standard Webhooks signatures: the spec's own test vector, the official package agreeing on
any message, and secrets of the spec's shape."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from standardwebhooks import Webhook
from support.standard_webhooks_vector import VECTOR

from edge.domain import standard_webhooks as sw


def test_the_spec_vector_signs_the_same():
    v = VECTOR
    assert sw.signature(v["secret"], v["id"], v["timestamp"], v["payload"]) == v["signature"]


@given(st.text(max_size=300), st.integers(min_value=1_600_000_000, max_value=2_000_000_000))
def test_the_official_package_signs_any_message_as_the_node_does(text, timestamp):
    secret = sw.new_secret()
    headers = sw.headers([secret], "evt_01JD0000000000000000000001", timestamp, text.encode())
    at = datetime.fromtimestamp(timestamp, UTC)
    theirs = Webhook(secret).sign("evt_01JD0000000000000000000001", at, text)
    assert headers["webhook-signature"] == theirs
    assert headers["webhook-timestamp"] == str(timestamp)


def test_a_rotated_pair_signs_with_both_and_either_verifies():
    old, new = sw.new_secret(), sw.new_secret()
    headers = sw.headers([new, old], "evt_1", 1_700_000_000, b"{}")
    first, second = headers["webhook-signature"].split(" ")
    assert first == sw.signature(new, "evt_1", 1_700_000_000, b"{}")
    assert second == sw.signature(old, "evt_1", 1_700_000_000, b"{}")


def test_secrets_have_the_spec_shape():
    secret = sw.new_secret()
    assert secret.startswith("whsec_") and 24 <= len(sw.secret_bytes(secret)) <= 64
    for bad in ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_", "whsec_not*base64"]:
        with pytest.raises(ValueError):
            sw.secret_bytes(bad)
