"""Money after the payment, and asking Stripe, in the SDK's shapes (tests/conformance/
stripe_sdk.py: the stripe-python release that pins the simulator's API version).

Covered: every object and list the running simulator answers or sends about refunds (pending,
settled, failed), disputes (a partial one, lost), early fraud warnings (made, then no longer
actionable), renewals, the session retrieved with ``expand[]`` and the event list; and the
adapter's new requests (a refund, the lists it reads, the expanded session, the event list):
their parameters against the SDK's ``...Params`` TypedDicts, their encoding against
stripe-python's own encoder (``stripe._encode._api_encode``).
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qsl, urlencode

import httpx
import pytest
from stripe._encode import _api_encode
from stripe.params import (
    DisputeListParams,
    EventListParams,
    RefundCreateParams,
    RefundListParams,
)
from stripe.params.checkout import SessionRetrieveParams
from stripe.params.radar import EarlyFraudWarningListParams
from support.waits import bound

from conformance.stripe_built import TX
from conformance.stripe_sdk import list_issues, object_issues, param_issues
from edge.providers.base import (
    CheckoutRequest,
    EventsRequest,
    FollowUp,
    FollowUpRequest,
    SyncRequest,
)
from edge.providers.stripe import STRIPE
from edge.providers.stripe import form as stripe_form
from edge.providers.stripe.adapter import checkout_params
from edge.sim.stripe import StripeSimulator
from edge.sim.stripe import objects as o

SECRET_KEY = "sk_test_conformance_money_after_01"
CREDENTIALS = {"secretKey": SECRET_KEY, "apiBase": "https://api.stripe.test"}
# what the flow below makes the simulator send, beside the payment's own events
MONEY_AFTER_TYPES = {
    "charge.refunded", "refund.created", "refund.updated", "refund.failed",
    "charge.refund.updated", "charge.dispute.created", "charge.dispute.closed",
    "radar.early_fraud_warning.created", "radar.early_fraud_warning.updated",
    "invoice.paid", "invoice.payment_failed", "customer.subscription.updated",
}  # fmt: skip


def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {SECRET_KEY}"}


async def session_of(sim: StripeSimulator, http: httpx.AsyncClient, kind: str) -> str:
    """A paid session of the adapter's own parameters."""
    tx = {
        "id": TX, "kind": kind, "amount": 1999, "currency": "EUR", "quantity": 1,
        "interval": "month" if kind == "subscription" else None, "metadata": {},
    }  # fmt: skip
    request = CheckoutRequest(
        tx=tx, product={"name": "Pro"}, credentials={}, success_url="https://s",
        cancel_url="https://c", http=http,
    )  # fmt: skip
    made = await http.post(
        "/v1/checkout/sessions",
        content=stripe_form.encode(checkout_params(request)),
        headers={**auth(), "Content-Type": "application/x-www-form-urlencoded"},
    )
    session_id: str = made.json()["id"]
    await sim.complete(session_id)
    return session_id


async def test_every_object_of_money_after_the_payment_has_the_sdks_shape(
    sim: StripeSimulator, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[dict[str, Any]] = []

    async def record(secret_key: str, event: dict[str, Any]) -> list[int]:
        events.append(json.loads(json.dumps(event)))
        return [200]

    monkeypatch.setattr(sim, "send", record)
    objects: list[tuple[str, Any]] = []
    lists: list[tuple[str, str, Any]] = []
    async with httpx.AsyncClient(base_url=sim.url, timeout=bound(10.0)) as http:

        async def get(path: str, **query: Any) -> Any:
            answer = await http.get(
                path, params=stripe_form.encode(query) if query else None, headers=auth()
            )
            assert answer.status_code == 200, answer.text
            return answer.json()

        paid = await session_of(sim, http, "payment")
        intent = sim.session(paid)["payment_intent"]
        warning = await sim.fraud_warning(paid)
        sim.pending_refunds = True
        made = await http.post(
            "/v1/refunds",
            content=stripe_form.encode(
                {"payment_intent": intent, "amount": 300, "metadata": {"refundId": "rf_1"}}
            ),
            headers={**auth(), "Idempotency-Key": "rf_1"},
        )
        objects.append(("refund (pending)", made.json()))
        await sim.settle_refund(made.json()["id"])
        sim.pending_refunds = False
        failing = await sim.refund(paid, 500)
        await sim.fail_refund(failing)
        dispute = await sim.dispute(paid, amount=700)
        await sim.close_dispute(paid, "lost")

        by_intent = {"payment_intent": intent}
        lists.append(("refunds", "refund", await get("/v1/refunds", **by_intent)))
        lists.append(("disputes", "dispute", await get("/v1/disputes", **by_intent)))
        lists.append(
            (
                "warnings",
                "radar.early_fraud_warning",
                await get("/v1/radar/early_fraud_warnings", **by_intent),
            )
        )
        objects.append(("refund (failed)", await get(f"/v1/refunds/{failing}")))
        objects.append(("dispute (partial, lost)", await get(f"/v1/disputes/{dispute}")))
        objects.append(("warning", await get(f"/v1/radar/early_fraud_warnings/{warning}")))
        objects.append(
            (
                "session (expanded)",
                await get(f"/v1/checkout/sessions/{paid}", expand=["payment_intent.latest_charge"]),
            )
        )

        renewing = await session_of(sim, http, "subscription")
        sub = sim.session(renewing)["subscription"]
        await sim.fail_invoice(sub)
        await sim.pay_invoice(sub)
        expanded = await get(
            f"/v1/checkout/sessions/{renewing}", expand=["subscription.latest_invoice", "invoice"]
        )
        objects.append(("session (subscription, expanded)", expanded))
        first = await get("/v1/events", limit=3)
        lists.append(("events", "event", first))
        lists.append(
            (
                "events (next)",
                "event",
                await get("/v1/events", starting_after=first["data"][-1]["id"]),
            )
        )
        objects.append(("event", await get(f"/v1/events/{first['data'][0]['id']}")))

    assert {e["type"] for e in events} >= MONEY_AFTER_TYPES
    assert expanded["subscription"]["latest_invoice"]["object"] == "invoice"
    assert expanded["invoice"]["billing_reason"] == "subscription_create"
    issues = [i for label, obj in objects for i in object_issues(obj, label)]
    issues += [i for label, kind, page in lists for i in list_issues(page, kind, label)]
    issues += [i for e in events for i in object_issues(e, e["type"])]
    assert issues == []


# --- the adapter's new requests ------------------------------------------------------------


class Stripe:
    """An httpx transport standing in for Stripe: records each request; answers a paid
    session (its payment intent ``pi_1``), a refund, and empty lists."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        charge = o.charge(livemode=False, amount=1999, currency="eur", payment_intent_id="pi_1")
        self.refund = o.refund(charge_obj=charge, amount=500, metadata={"refundId": "rf_1"})

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        path = request.url.path
        if path.startswith("/v1/checkout/sessions/"):
            session = o.checkout_session(
                session_id="cs_test_1", livemode=False, mode="payment", amount_total=1999,
                currency="eur", success_url="https://s", cancel_url=None, url=None,
            )  # fmt: skip
            return httpx.Response(200, json={**session, "payment_intent": "pi_1"})
        if request.method == "POST":
            return httpx.Response(200, json=self.refund)
        return httpx.Response(200, json={"object": "list", "data": [], "has_more": False})

    def sent(self, method: str, path: str) -> list[httpx.Request]:
        return [r for r in self.requests if (r.method, r.url.path) == (method, path)]


def typed(value: Any) -> Any:
    """Decoded form values as the SDK types them: digit strings are the integers they were."""
    if isinstance(value, dict):
        return {k: typed(v) for k, v in value.items()}
    if isinstance(value, list):
        return [typed(v) for v in value]
    return int(value) if isinstance(value, str) and value.isdigit() else value


def params_of(request: httpx.Request) -> tuple[dict[str, Any], str]:
    """A request's parameters (typed) and their encoding as it went (body or query)."""
    text = request.content.decode() if request.method == "POST" else request.url.query.decode()
    return typed(stripe_form.decode(parse_qsl(text, keep_blank_values=True))), text


def assert_as_the_sdk_sends(request: httpx.Request, typed_dict: type) -> dict[str, Any]:
    params, text = params_of(request)
    assert param_issues(params, typed_dict) == []
    assert text == urlencode(list(_api_encode(params)))  # stripe-python's own encoding
    return params


def follow_up(http: httpx.AsyncClient) -> FollowUpRequest:
    return FollowUpRequest(
        follow_up=FollowUp(
            "refund", {"refundId": "rf_1", "amount": 500, "reason": "a damaged cover"}
        ),
        tx={"id": TX, "providerRef": "cs_test_1", "currency": "EUR", "kind": "payment"},
        credentials=CREDENTIALS,
        http=http,
    )


async def test_the_adapters_refund_requests_have_the_sdks_params() -> None:
    stripe = Stripe()
    async with httpx.AsyncClient(transport=httpx.MockTransport(stripe)) as http:
        assert STRIPE.send_refund is not None and STRIPE.refunds_of is not None
        made = await STRIPE.send_refund(follow_up(http))
        await STRIPE.refunds_of(follow_up(http))
    assert (made.id, made.tag) == (stripe.refund["id"], "rf_1")
    (created,) = stripe.sent("POST", "/v1/refunds")
    assert created.headers["idempotency-key"] == "rf_1"
    params = assert_as_the_sdk_sends(created, RefundCreateParams)
    assert params["metadata"] == {"txId": TX, "refundId": "rf_1", "reason": "a damaged cover"}
    (listed,) = stripe.sent("GET", "/v1/refunds")
    assert assert_as_the_sdk_sends(listed, RefundListParams) == {
        "payment_intent": "pi_1",
        "limit": 100,
    }


async def test_the_adapters_sync_and_event_list_requests_have_the_sdks_params() -> None:
    stripe = Stripe()
    async with httpx.AsyncClient(transport=httpx.MockTransport(stripe)) as http:
        assert STRIPE.sync is not None and STRIPE.list_events is not None
        tx = {"id": TX, "providerRef": "cs_test_1", "currency": "EUR", "kind": "subscription"}
        await STRIPE.sync(SyncRequest(tx=tx, subscription=None, credentials=CREDENTIALS, http=http))
        await STRIPE.list_events(
            EventsRequest(
                credentials=CREDENTIALS,
                mode="test",
                since_ms=1_700_000_000_500,
                http=http,
                cursor="evt_9",
            )  # fmt: skip
        )
    (session,) = stripe.sent("GET", "/v1/checkout/sessions/cs_test_1")
    assert assert_as_the_sdk_sends(session, SessionRetrieveParams) == {
        "expand": ["payment_intent.latest_charge", "subscription.latest_invoice"]
    }
    for path, typed_dict in (
        ("/v1/refunds", RefundListParams),
        ("/v1/disputes", DisputeListParams),
        ("/v1/radar/early_fraud_warnings", EarlyFraudWarningListParams),
    ):
        (listed,) = stripe.sent("GET", path)
        assert assert_as_the_sdk_sends(listed, typed_dict)["payment_intent"] == "pi_1"
    (page,) = stripe.sent("GET", "/v1/events")
    assert assert_as_the_sdk_sends(page, EventListParams) == {
        "created": {"gte": 1_700_000_000},
        "limit": 100,
        "starting_after": "evt_9",
    }
