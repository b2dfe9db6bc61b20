"""Everything the Stripe simulator emits, and everything the adapter sends, has the shapes of the
API version the simulator declares, as the stripe-python release that pins that version types
them (tests/conformance/stripe_sdk.py; the release is the ``stripe`` pin of the test extra).

Covered: each object builder, each event ``edge trigger`` can send, each object and event the
running simulator answers or delivers in its flows (payment, decline, expiry, refunds, dispute,
subscription, failed renewal, portal cancel, webhook endpoints, idempotent replay), the
project's example objects in tests/fixtures/stripe, and the adapter's checkout and portal
requests (parameters, and their form encoding against stripe-python's own encoder).
"""

from __future__ import annotations

import json
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx
import pytest
import stripe
from stripe._encode import _api_encode
from stripe.params import PaymentLinkCreateParams, PriceCreateParams, WebhookEndpointCreateParams
from stripe.params.billing_portal import SessionCreateParams as PortalSessionCreateParams
from stripe.params.checkout import SessionCreateParams as CheckoutSessionCreateParams
from support.stripe_events import FIXTURES
from support.waits import bound

from conformance.stripe_built import BUILT, TX
from conformance.stripe_sdk import API_VERSION, field_types, object_issues, param_issues
from edge.providers.base import CheckoutRequest, PortalRequest
from edge.providers.stripe import STRIPE
from edge.providers.stripe import form as stripe_form
from edge.providers.stripe.adapter import checkout_params
from edge.providers.stripe.events import HANDLED_EVENT_TYPES
from edge.sim.stripe import SUPPORTED_TRIGGERS, StripeSimulator, event_for_trigger
from edge.sim.stripe import objects as o

SECRET_KEY = "sk_test_conformance_0123456789"
# Every event type the simulator's flows send (server.py); triggers add async_payment_failed.
SIMULATOR_EVENT_TYPES = {
    "checkout.session.completed", "checkout.session.expired", "payment_intent.payment_failed",
    "charge.refunded", "refund.created", "charge.dispute.created", "charge.dispute.closed",
    "customer.subscription.created", "customer.subscription.updated",
    "customer.subscription.deleted", "invoice.paid", "invoice.payment_failed",
}  # fmt: skip


def test_the_declared_version_is_the_sdks() -> None:
    assert o.API_VERSION == API_VERSION, (
        f"the simulator declares {o.API_VERSION}; stripe {stripe.VERSION} pins {API_VERSION}:"
        " pin the stripe release of the declared version in the test extra"
    )


# --- the builders -----------------------------------------------------------------------


@pytest.mark.parametrize("name", BUILT)
def test_every_built_object_has_the_sdks_shape(name: str) -> None:
    assert object_issues(BUILT[name], name) == []


# --- the trigger events -----------------------------------------------------------------

TRIGGER_TX = {
    "id": TX, "amount": 1999, "currency": "EUR", "isTest": True,
    "metadata": {"customerRef": "user-7"}, "customerRef": "user-7", "providerRef": None,
    "kind": "payment", "interval": None, "subscriptionRef": None, "providerCustomer": None,
}  # fmt: skip
SUBSCRIPTION_TX = {
    **TRIGGER_TX, "kind": "subscription", "interval": "month", "providerRef": "cs_test_abc",
    "subscriptionRef": "sub_123", "providerCustomer": "cus_123", "isTest": False,
}  # fmt: skip


@pytest.mark.parametrize("normalized_type", SUPPORTED_TRIGGERS)
@pytest.mark.parametrize("tx", [TRIGGER_TX, SUBSCRIPTION_TX], ids=["payment", "subscription"])
def test_every_trigger_event_has_the_sdks_shape(normalized_type: str, tx: dict[str, Any]) -> None:
    event = event_for_trigger(normalized_type, tx)
    assert object_issues(event, normalized_type) == []


# --- the running simulator ----------------------------------------------------------------


def http_headers(idempotency_key: str | None = None) -> dict[str, str]:
    headers = {
        "Authorization": f"Bearer {SECRET_KEY}",
        "Content-Type": "application/x-www-form-urlencoded",
    }
    if idempotency_key:
        headers["Idempotency-Key"] = idempotency_key
    return headers


def session_params(http: httpx.AsyncClient, **tx: Any) -> dict[str, Any]:
    request = CheckoutRequest(
        tx={"id": TX, "kind": "payment", "amount": 5997, "currency": "EUR", "quantity": 3,
            "customerRef": "user-42", "metadata": {"order": "A-17"}, **tx},
        product={"name": "Pro plan"}, credentials={}, success_url="https://shop/thanks",
        cancel_url="https://shop/cart", http=http,
    )  # fmt: skip
    return checkout_params(request)


async def test_every_object_the_simulator_answers_or_sends_has_the_sdks_shape(
    sim: StripeSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[dict[str, Any]] = []

    async def record(secret_key: str, event: dict[str, Any]) -> list[int]:
        events.append(json.loads(json.dumps(event)))  # as it would travel
        return [200]

    monkeypatch.setattr(sim, "send", record)
    answers: list[tuple[str, Any]] = []
    async with httpx.AsyncClient(base_url=sim.url, timeout=bound(10.0)) as http:

        async def post(
            label: str, path: str, params: dict[str, Any], key: str | None = None
        ) -> Any:
            response = await http.post(
                path, content=stripe_form.encode(params), headers=http_headers(key)
            )
            assert response.status_code == 200, response.text
            answers.append((label, response.json()))
            return response.json()

        async def get_session(label: str, session_id: str) -> None:
            response = await http.get(f"/v1/checkout/sessions/{session_id}", headers=http_headers())
            answers.append((label, response.json()))

        pay = await post("session", "/v1/checkout/sessions", session_params(http), "k1")
        await sim.decline(pay["id"])
        await sim.complete(pay["id"])
        await get_session("session (complete)", pay["id"])
        await post("session (replayed)", "/v1/checkout/sessions", session_params(http), "k1")
        await sim.refund(pay["id"], 1000)
        await sim.refund(pay["id"])
        await sim.dispute(pay["id"])
        await sim.close_dispute(pay["id"], "lost")

        gone = await post("session", "/v1/checkout/sessions", session_params(http, id="tx_2"))
        await sim.expire(gone["id"])
        await get_session("session (expired)", gone["id"])

        sub_params = session_params(http, kind="subscription", interval="week", quantity=1)
        sub_session = await post("session (subscription)", "/v1/checkout/sessions", sub_params)
        await sim.complete(sub_session["id"])
        await get_session("session (subscription, complete)", sub_session["id"])
        customer = sim.session(sub_session["id"])["customer"]
        await sim.fail_invoice(sim.session(sub_session["id"])["subscription"])
        portal = await post(
            "billing_portal.session",
            "/v1/billing_portal/sessions",
            {"customer": customer, "return_url": "https://shop/account"},
        )
        canceled = await http.post(
            f"/p/session/{portal['id']}/cancel",
            data={"subscription": sim.session(sub_session["id"])["subscription"]},
        )
        assert canceled.status_code == 303

        await post("webhook_endpoint", "/v1/webhook_endpoints", {
            "url": "https://shop/hook", "enabled_events": ["checkout.session.completed"],
        })  # fmt: skip
        listed = await http.get("/v1/webhook_endpoints", headers=http_headers())
        answers += [("webhook_endpoint (listed)", e) for e in listed.json()["data"]]

    assert {e["type"] for e in events} == SIMULATOR_EVENT_TYPES
    issues = [i for label, obj in answers for i in object_issues(obj, label)]
    issues += [i for e in events for i in object_issues(e, e["type"])]
    assert issues == []


async def test_payment_links_and_their_sessions_have_the_sdks_shape(
    sim: StripeSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``POST /v1/prices``, ``POST /v1/payment_links`` (parameters as the SDK types them), the
    link, the session a visit opens and the events of its payment."""
    events: list[dict[str, Any]] = []

    async def record(secret_key: str, event: dict[str, Any]) -> list[int]:
        events.append(json.loads(json.dumps(event)))
        return [200]

    monkeypatch.setattr(sim, "send", record)
    price_params = {"currency": "eur", "unit_amount": 250, "product_data": {"name": "Cake"}}
    assert param_issues(price_params, PriceCreateParams) == []
    answers: list[tuple[str, Any]] = []
    async with httpx.AsyncClient(base_url=sim.url, timeout=bound(10.0)) as http:

        async def post(label: str, path: str, params: dict[str, Any]) -> Any:
            response = await http.post(
                path, content=stripe_form.encode(params), headers=http_headers()
            )
            assert response.status_code == 200, response.text
            answers.append((label, response.json()))
            return response.json()

        price = await post("price", "/v1/prices", price_params)
        inline = {
            "line_items": [{"price_data": {**price_params, "recurring": {"interval": "month"}},
                            "quantity": 1}],
            "subscription_data": {"metadata": {"plan": "cake"}},
        }  # fmt: skip
        by_price = {
            "line_items": [{"price": price["id"], "quantity": 2}],
            "metadata": {"campaign": "spring"},
            "payment_intent_data": {"metadata": {"till": "3"}},
            "after_completion": {"type": "redirect", "redirect": {"url": "https://shop/ok"}},
        }
        for label, params in (("payment_link (price)", by_price), ("payment_link", inline)):
            assert param_issues(params, PaymentLinkCreateParams) == [], label
            link = await post(label, "/v1/payment_links", params)
            opened = await http.get(link["url"], params={"client_reference_id": "ref-1"})
            session_id = opened.headers["location"].rsplit("/", 1)[-1]
            await sim.complete(session_id)
            answers.append((f"{label} session", sim.session(session_id)))
        fetched = await http.get(f"/v1/payment_links/{link['id']}", headers=http_headers())
        answers.append(("payment_link (fetched)", fetched.json()))

    assert {e["type"] for e in events} >= {"checkout.session.completed", "invoice.paid"}
    issues = [i for label, obj in answers for i in object_issues(obj, label)]
    issues += [i for e in events for i in object_issues(e, e["type"])]
    assert issues == []


# --- the project's own examples ---------------------------------------------------------


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_the_projects_example_objects_have_the_sdks_shape(path: Path) -> None:
    """Trimmed to what the tests read, so a missing required field is not an issue here."""
    example = json.loads(path.read_text("utf-8"))
    assert object_issues(example, path.stem, partial=True) == []
    if example["object"] == "event":
        assert example["api_version"] == API_VERSION


# --- the adapter's requests ---------------------------------------------------------------


class Capture:
    """An httpx transport standing in for Stripe: records each request, answers ``reply``."""

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return httpx.Response(200, json=self.reply)


def adapter_tx(kind: str) -> dict[str, Any]:
    return {
        "id": TX, "kind": kind, "amount": 1999, "currency": "EUR", "quantity": 1,
        "customerRef": "user-42", "metadata": {"order": "A-17"},
        "interval": "month" if kind == "subscription" else None,
    }  # fmt: skip


@pytest.mark.parametrize("kind", ["payment", "subscription"])
async def test_the_adapters_checkout_request_has_the_sdks_params(kind: str) -> None:
    reply = o.checkout_session(
        session_id="cs_test_1", livemode=False, mode=kind, amount_total=1999, currency="eur",
        success_url="https://s", cancel_url="https://c", url="https://checkout/cs_test_1",
    )  # fmt: skip
    capture = Capture(reply)
    async with httpx.AsyncClient(transport=httpx.MockTransport(capture)) as http:
        request = CheckoutRequest(
            tx=adapter_tx(kind), product={"name": "Pro"}, http=http,
            credentials={"secretKey": SECRET_KEY, "apiBase": "https://api.stripe.test"},
            success_url="https://shop/thanks?cs={CHECKOUT_SESSION_ID}", cancel_url="https://c",
        )  # fmt: skip
        params = checkout_params(request)
        assert param_issues(params, CheckoutSessionCreateParams) == []
        await STRIPE.create_checkout(request)
    (sent,) = capture.requests
    assert sent.url.path == "/v1/checkout/sessions"
    assert sent.content.decode() == urlencode(list(_api_encode(params)))  # as stripe-python
    wire = stripe_form.decode(parse_qsl(sent.content.decode(), keep_blank_values=True))
    assert _keys(wire) == _keys(params)


async def test_the_adapters_portal_request_has_the_sdks_params() -> None:
    capture = Capture(
        o.billing_portal_session(
            livemode=False, customer_id="cus_1", return_url="https://r", url_base="https://p"
        )
    )
    async with httpx.AsyncClient(transport=httpx.MockTransport(capture)) as http:
        await STRIPE.portal_url(
            PortalRequest(
                subscription={"providerCustomer": "cus_1"},
                credentials={"secretKey": SECRET_KEY, "apiBase": "https://api.stripe.test"},
                return_url="https://shop/account",
                http=http,
            )
        )
    (sent,) = capture.requests
    assert sent.url.path == "/v1/billing_portal/sessions"
    params = stripe_form.decode(parse_qsl(sent.content.decode(), keep_blank_values=True))
    assert params == {"customer": "cus_1", "return_url": "https://shop/account"}
    assert param_issues(params, PortalSessionCreateParams) == []


def test_the_event_types_the_adapter_maps_are_real() -> None:
    """Each type the adapter maps is an event type, and one a webhook endpoint can subscribe to
    (``enabled_events`` of WebhookEndpointCreateParams): HANDLED_EVENT_TYPES is that list."""
    known = set(typing.get_args(field_types(stripe.Event)["type"]))
    (enabled,) = typing.get_args(field_types(WebhookEndpointCreateParams)["enabled_events"])
    subscribable = set(typing.get_args(enabled))
    assert set(HANDLED_EVENT_TYPES) <= known & subscribable, set(HANDLED_EVENT_TYPES) - known
    assert SIMULATOR_EVENT_TYPES | {"checkout.session.async_payment_failed"} <= known
    assert {
        "refund.created", "refund.updated", "refund.failed", "charge.refund.updated",
        "radar.early_fraud_warning.created", "radar.early_fraud_warning.updated",
    } <= set(HANDLED_EVENT_TYPES)  # fmt: skip


def _keys(value: Any, prefix: str = "") -> set[str]:
    """Every parameter path of a nested params dict (``line_items.0.price_data.currency``)."""
    items: Iterable[tuple[str, Any]]
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = ((str(i), v) for i, v in enumerate(value))
    else:
        return {prefix}
    return {k for key, v in items for k in _keys(v, f"{prefix}.{key}" if prefix else key)}
