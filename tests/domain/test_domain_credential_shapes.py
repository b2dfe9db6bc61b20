"""Credentials checked by the shape their provider documents (edge.domain.credential_shapes)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from edge.domain.credential_shapes import KINDS, FieldShape, kind_of, problem

SECRET_KEY = FieldShape("secretKey", True, ("stripe_secret_key", "stripe_restricted_key"), True)
PUBLISHABLE = FieldShape("publishableKey", False, ("stripe_publishable_key",), True)
WEBHOOK = FieldShape("webhookSecret", True, ("webhook_signing_secret",), True)
STRIPE = (SECRET_KEY, PUBLISHABLE, WEBHOOK)
PADDLE_KEY = FieldShape("apiKey", True, ("paddle_api_key",))
CLIENT_TOKEN = FieldShape("clientToken", False, ("paddle_client_token",), True)
PADDLE = (
    PADDLE_KEY,
    CLIENT_TOKEN,
    FieldShape("webhookSecret", True, ("paddle_notification_secret",)),
)
CLIENT_ID = FieldShape("clientId", False)  # PayPal: no documented shape
CLIENT_SECRET = FieldShape("clientSecret", True)
PAYPAL = (CLIENT_ID, CLIENT_SECRET)

# one example of each kind, in test mode where it has one
EXAMPLES = {
    "stripe_secret_key": "sk_test_51Habc",
    "stripe_restricted_key": "rk_test_51Habc",
    "stripe_publishable_key": "pk_test_51Habc",
    "webhook_signing_secret": "whsec_abc123",
    "paddle_api_key": "pdl_sdbx_apikey_01gtgztp8f4kek3yd4g1wrksa3_q6TGTJ",
    "paddle_notification_secret": "pdl_ntfset_01gkpjp8bkm3tm53kdgkx6sms7_6h3qd3u",
    "paddle_client_token": "test_7d279f61a3499fed520f7cd8c08",
    "edge_project_key": "cmk_test_" + "a" * 32,
    "private_key": "-----BEGIN PRIVATE KEY-----\nMIIE...",
}


def test_every_kind_has_an_example_that_is_recognised_as_it():
    assert set(EXAMPLES) == set(KINDS)
    for name, value in EXAMPLES.items():
        assert kind_of(value) == name, name


@pytest.mark.parametrize(
    "value,shape,fields,words",
    [
        ("sk_test_51Habc", PUBLISHABLE, STRIPE, ["secret", "belongs in secretKey"]),
        ("rk_live_51Habc", PUBLISHABLE, STRIPE, ["restricted key", "belongs in secretKey"]),
        ("whsec_abc123", PUBLISHABLE, STRIPE, ["signing secret", "belongs in webhookSecret"]),
        ("pk_test_51Habc", SECRET_KEY, STRIPE, ["publishable key", "belongs in publishableKey"]),
        ("pk_test_51Habc", WEBHOOK, STRIPE, ["publishable key"]),
        ("acct_1Habc", SECRET_KEY, STRIPE, ["must be a Stripe secret key"]),
        ("pdl_sdbx_apikey_01gt_x", CLIENT_TOKEN, PADDLE, ["secret", "belongs in apiKey"]),
        ("test_7d279f61a3499f", PADDLE_KEY, PADDLE, ["client-side token", "clientToken"]),
        ("ctkn_01gt", CLIENT_TOKEN, PADDLE, ["must be a Paddle client-side token"]),
        ("sk_live_51Habc", CLIENT_ID, PAYPAL, ["secret", "not a credential of this field"]),
        ("cmk_test_" + "a" * 32, CLIENT_ID, PAYPAL, ["project key of this node"]),
        ("pk_test_51Habc", CLIENT_SECRET, PAYPAL, ["publishable key"]),
    ],
)
def test_a_value_of_another_kind_is_refused_saying_what_it_looks_like(value, shape, fields, words):
    said = problem(value, shape, "test", fields)
    assert said is not None
    for word in words:
        assert word in said, (word, said)


def test_the_mode_a_key_says_must_be_the_credentials_mode():
    assert problem("sk_test_51Habc", SECRET_KEY, "test", STRIPE) is None
    assert "test key, in the live credentials" in problem(
        "sk_test_51Habc", SECRET_KEY, "live", STRIPE
    )
    assert "live key, in the test credentials" in problem("pk_live_1", PUBLISHABLE, "test", STRIPE)
    assert problem("pdl_live_apikey_01gt_x", PADDLE_KEY, "live", PADDLE) is None
    assert "live key, in the test" in problem("pdl_live_apikey_01gt_x", PADDLE_KEY, "test", PADDLE)
    assert "test key, in the live" in problem("test_7d279f61", CLIENT_TOKEN, "live", PADDLE)
    assert problem("whsec_abc123", WEBHOOK, "live", STRIPE) is None  # says no mode


def test_values_of_no_known_kind_pass_where_no_shape_is_documented():
    assert (
        problem("AZDxjDScFpQtjWTOUtWKbyN_bDt4OgqaF4eYXlewfBP4", CLIENT_ID, "live", PAYPAL) is None
    )
    assert problem("EGnHDxD_qRPdaLdZz8iCr8N7_MzF", CLIENT_SECRET, "live", PAYPAL) is None
    legacy = "a" * 50  # a Paddle API key made before May 2025
    assert problem(legacy, PADDLE_KEY, "live", PADDLE) is None


@given(st.sampled_from(sorted(KINDS)), st.text(alphabet="abcXYZ0189_", min_size=1, max_size=20))
def test_no_field_that_is_not_secret_ever_takes_a_secret(name, tail):
    value = EXAMPLES[name] + tail
    if not KINDS[name].secret:
        return
    for shape, fields in ((PUBLISHABLE, STRIPE), (CLIENT_TOKEN, PADDLE), (CLIENT_ID, PAYPAL)):
        for mode in ("test", "live"):
            assert problem(value, shape, mode, fields) is not None, (value, shape.name)


@given(st.text(max_size=60), st.sampled_from(["test", "live"]))
def test_a_strict_field_takes_only_its_own_kinds(value, mode):
    for shape, fields in ((SECRET_KEY, STRIPE), (PUBLISHABLE, STRIPE), (CLIENT_TOKEN, PADDLE)):
        if problem(value, shape, mode, fields) is None:
            assert kind_of(value) in shape.kinds


@pytest.mark.parametrize(
    "value", ["sk_test_...", "pk_test_…", "whsec_...", "<your secret key>", "https://..."]
)
def test_a_placeholder_from_the_docs_is_refused_in_every_field(value):
    for shape, fields in ((SECRET_KEY, STRIPE), (PUBLISHABLE, STRIPE), (CLIENT_ID, PAYPAL)):
        said = problem(value, shape, "test", fields)
        assert said is not None and "placeholder" in said, (value, shape.name)
