"""The Stripe simulator over real HTTP: the adapter's calls against it, its hosted page, and
the signed webhooks it sends to a receiver on port 0."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from support.asgi import serve_asgi
from support.waits import bound, until

from edge.domain.convergence import Refund
from edge.domain.events import EventType as E
from edge.errors import Conflict, ContractError, ProviderError
from edge.providers.base import CheckoutRequest, PortalRequest
from edge.providers.stripe import STRIPE
from edge.providers.stripe import form as stripe_form
from edge.providers.stripe.adapter import checkout_params
from edge.providers.stripe.signature import verify
from edge.sim.stripe import StripeSimulator

SECRET_KEY = "sk_test_simulated_0123456789"
TX = "tx_01JD0000000000000000000001"


class Receiver:
    """A bare ASGI webhook endpoint: records each delivery, answers from ``answers`` (then 200)."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.answers: list[int] = []
        self.url = ""

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        self.received.append((headers, body))
        return (self.answers.pop(0) if self.answers else 200), b"{}"

    def events(self, secret: str) -> list[dict[str, Any]]:
        """Every received body, each verified with the endpoint secret."""
        for headers, body in self.received:
            verify(headers.get("stripe-signature"), body, [secret], time.time())
            assert headers["content-type"] == "application/json"
        return [json.loads(body) for _, body in self.received]


@pytest.fixture
async def sim() -> AsyncIterator[StripeSimulator]:
    async with trio.open_nursery() as nursery:
        simulator = StripeSimulator()
        url = await nursery.start(simulator.run)
        assert url == simulator.url and url.startswith("http://127.0.0.1:")
        yield simulator
        simulator.stop()


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with trio.open_nursery() as nursery:
        app = Receiver()
        app.url = await nursery.start(serve_asgi, app) + "/webhook/stripe/prj_x"
        yield app
        nursery.cancel_scope.cancel()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=bound(10.0)) as client:
        yield client


def tx(**changes: Any) -> dict[str, Any]:
    base = {
        "id": TX, "kind": "payment", "amount": 5997, "currency": "EUR", "quantity": 3,
        "interval": None, "isTest": True, "customerRef": "user-42",
        "metadata": {"customerRef": "user-42", "order": "A-17"},
    }  # fmt: skip
    return {**base, **changes}


def checkout_request(
    sim: StripeSimulator, http: httpx.AsyncClient, **changes: Any
) -> CheckoutRequest:
    return CheckoutRequest(
        tx=tx(**changes),
        product={"name": "Pro plan"},
        credentials={"secretKey": SECRET_KEY, "publishableKey": "pk_test_x", "apiBase": sim.url},
        success_url="https://shop.example/thanks?cs={CHECKOUT_SESSION_ID}",
        cancel_url="https://shop.example/cart",
        http=http,
    )


def auth(key: str = SECRET_KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


# --- the adapter against the simulator --------------------------------------------------


async def test_create_checkout_round_trips_the_form(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    result = await STRIPE.create_checkout(checkout_request(sim, http))
    session_id = result.provider_ref
    assert session_id and session_id.startswith("cs_test_")
    assert result.fields == {"url": f"{sim.url}/c/pay/{session_id}"}
    assert result.expires_at_ms and abs(result.expires_at_ms / 1000 - (time.time() + 86400)) < 60

    fetched = (
        await http.get(f"{sim.url}/v1/checkout/sessions/{session_id}", headers=auth())
    ).json()
    assert fetched["object"] == "checkout.session" and fetched["mode"] == "payment"
    assert fetched["client_reference_id"] == TX
    assert fetched["metadata"] == {"customerRef": "user-42", "order": "A-17", "txId": TX}
    assert (fetched["amount_total"], fetched["currency"]) == (5997, "eur")
    assert fetched["success_url"].endswith("{CHECKOUT_SESSION_ID}")
    _, checkout = sim._checkout(session_id)
    assert (checkout.product, checkout.quantity, checkout.interval) == ("Pro plan", 3, None)
    assert checkout.object_metadata == fetched["metadata"]  # payment_intent_data[metadata]

    again = await STRIPE.create_checkout(checkout_request(sim, http))
    assert again.provider_ref == session_id  # Idempotency-Key = txId


async def test_subscription_checkout_params(sim: StripeSimulator, http: httpx.AsyncClient) -> None:
    request = checkout_request(
        sim, http, kind="subscription", interval="year", amount=9000, quantity=1
    )
    result = await STRIPE.create_checkout(request)
    assert result.provider_ref
    _, checkout = sim._checkout(result.provider_ref)
    assert checkout.session["mode"] == "subscription" and checkout.interval == "year"
    assert checkout.object_metadata["txId"] == TX  # subscription_data[metadata]


async def test_injected_failure_is_a_retryable_provider_error(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    sim.fail_next_requests = 1
    with pytest.raises(ContractError) as caught:
        await STRIPE.create_checkout(checkout_request(sim, http))
    failure = caught.value
    assert (type(failure), failure.code, failure.retryable) == (
        ProviderError,
        "provider_error",
        True,
    )
    assert "Simulated failure" in failure.message and SECRET_KEY not in failure.message
    assert (await STRIPE.create_checkout(checkout_request(sim, http))).provider_ref


async def test_rejected_key_error_never_shows_the_key(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    request = checkout_request(sim, http)
    bad = CheckoutRequest(
        **{**request.__dict__, "credentials": {"secretKey": "rk_oops_1234", "apiBase": sim.url}}
    )
    with pytest.raises(ContractError) as caught:
        await STRIPE.create_checkout(bad)
    assert caught.value.code == "provider_error" and "401" in caught.value.message
    assert "rk_oops_1234" not in caught.value.message


async def test_unreachable_stripe_is_a_provider_error(http: httpx.AsyncClient) -> None:
    with trio.socket.socket() as probe:  # a port nobody listens on
        await probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    request = CheckoutRequest(
        tx=tx(), product={"name": "Pro"}, success_url="https://s", cancel_url="https://c",
        credentials={"secretKey": SECRET_KEY, "apiBase": f"http://127.0.0.1:{port}"}, http=http,
    )  # fmt: skip
    with pytest.raises(ContractError) as caught:
        await STRIPE.create_checkout(request)
    assert isinstance(caught.value, ProviderError) and SECRET_KEY not in caught.value.message


async def test_portal_session(sim: StripeSimulator, http: httpx.AsyncClient) -> None:
    credentials = {"secretKey": SECRET_KEY, "apiBase": sim.url}
    request = PortalRequest(
        subscription={"providerCustomer": "cus_123"}, credentials=credentials,
        return_url="https://shop.example/account", http=http,
    )  # fmt: skip
    result = await STRIPE.portal_url(request)
    assert result.url.startswith(f"{sim.url}/p/session/bps_")
    page = await http.get(result.url)
    assert page.status_code == 200 and "Your subscriptions" in page.text
    assert "https://shop.example/account" in page.text

    without = PortalRequest(
        subscription={}, credentials=credentials, return_url="https://x", http=http
    )
    with pytest.raises(ContractError) as caught:
        await STRIPE.portal_url(without)
    assert isinstance(caught.value, Conflict)


# --- the API's own answers --------------------------------------------------------------


async def test_api_errors_have_stripes_shape(sim: StripeSimulator, http: httpx.AsyncClient) -> None:
    missing = await http.post(f"{sim.url}/v1/checkout/sessions", data={"mode": "payment"})
    assert missing.status_code == 401 and missing.json()["error"]["type"] == "invalid_request_error"
    bad = await http.post(f"{sim.url}/v1/checkout/sessions", data={"mode": "setup"}, headers=auth())
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "mode"
    unknown = await http.get(f"{sim.url}/v1/checkout/sessions/cs_test_nope", headers=auth())
    assert unknown.status_code == 404


async def create_session(
    sim: StripeSimulator, http: httpx.AsyncClient, params: dict[str, Any], key: str
) -> httpx.Response:
    return await http.post(
        f"{sim.url}/v1/checkout/sessions",
        content=stripe_form.encode(params),
        headers={
            **auth(), "Idempotency-Key": key,
            "Content-Type": "application/x-www-form-urlencoded",
        },
    )  # fmt: skip


async def test_an_idempotent_replay_is_the_saved_first_answer(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    params = checkout_params(checkout_request(sim, http))
    first = await create_session(sim, http, params, "order-1")
    assert first.status_code == 200 and "idempotent-replayed" not in first.headers
    session_id = first.json()["id"]
    await sim.complete(session_id)

    replay = await create_session(sim, http, params, "order-1")
    assert replay.status_code == 200 and replay.headers["idempotent-replayed"] == "true"
    assert replay.json() == first.json()  # as first answered: open, with its url
    assert replay.json()["status"] == "open" and replay.json()["url"]
    assert sim.session(session_id)["status"] == "complete"  # while the session moved on
    assert len(sim._accounts[SECRET_KEY].checkouts) == 1


async def test_an_idempotency_key_with_other_parameters_is_refused(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    params = checkout_params(checkout_request(sim, http))
    assert (await create_session(sim, http, params, "order-2")).status_code == 200
    changed = {**params, "cancel_url": "https://shop.example/elsewhere"}
    refused = await create_session(sim, http, changed, "order-2")
    assert refused.status_code == 400
    error = refused.json()["error"]
    assert error["type"] == "idempotency_error" and set(error) == {"type", "message"}
    assert (
        error["message"].startswith(
            "Keys for idempotent requests can only be used with the same parameters"
        )
        and "'order-2'" in error["message"]
    )
    assert len(sim._accounts[SECRET_KEY].checkouts) == 1


async def test_a_refused_request_saves_no_idempotent_answer(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    params = checkout_params(checkout_request(sim, http))
    invalid = await create_session(sim, http, {**params, "success_url": ""}, "order-3")
    assert invalid.status_code == 400 and invalid.json()["error"]["param"] == "success_url"
    created = await create_session(sim, http, params, "order-3")
    assert created.status_code == 200 and "idempotent-replayed" not in created.headers


async def test_a_checkout_retried_while_stripe_still_makes_it_is_asked_again(
    sim: StripeSimulator, http: httpx.AsyncClient
) -> None:
    """The node's key for a session is its txId: a second call with it while Stripe still
    makes the first session is 409 ``idempotency_key_in_use``, a retryable provider error (the
    node's ``retry_also``); once the first is done, the key answers that session."""
    sim.pause_runs()
    made: list[str | None] = []

    async def first() -> None:
        made.append((await STRIPE.create_checkout(checkout_request(sim, http))).provider_ref)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await until(lambda: TX in sim.in_progress(SECRET_KEY), what="the first call runs")
        with pytest.raises(ProviderError) as busy:
            await STRIPE.create_checkout(checkout_request(sim, http))
        assert busy.value.retryable and "409" in busy.value.message
        assert "another in-progress request" in busy.value.message
        assert sim.sessions(SECRET_KEY) == []
        sim.resume_runs()
    again = await STRIPE.create_checkout(checkout_request(sim, http))
    assert made == [again.provider_ref] and len(sim.sessions(SECRET_KEY)) == 1


async def test_webhook_endpoints_over_http_filter_events(
    sim: StripeSimulator, http: httpx.AsyncClient, receiver: Receiver
) -> None:
    created = await http.post(
        f"{sim.url}/v1/webhook_endpoints",
        content=f"url={receiver.url}&enabled_events[]=checkout.session.expired",
        headers={**auth(), "Content-Type": "application/x-www-form-urlencoded"},
    )
    endpoint = created.json()
    assert endpoint["object"] == "webhook_endpoint" and endpoint["secret"].startswith("whsec_")
    listed = (await http.get(f"{sim.url}/v1/webhook_endpoints", headers=auth())).json()
    assert [e["id"] for e in listed["data"]] == [endpoint["id"]] and "secret" not in listed["data"][
        0
    ]

    result = await STRIPE.create_checkout(checkout_request(sim, http))
    assert result.provider_ref
    await sim.decline(result.provider_ref)  # payment_intent.payment_failed: not subscribed
    await sim.expire(result.provider_ref)
    assert [e["type"] for e in receiver.events(endpoint["secret"])] == ["checkout.session.expired"]


# --- the hosted page and the webhooks it causes ----------------------------------------


async def open_checkout(
    sim: StripeSimulator, http: httpx.AsyncClient, receiver: Receiver, **changes: Any
) -> tuple[str, str]:
    secret = sim.register_endpoint(SECRET_KEY, receiver.url)
    result = await STRIPE.create_checkout(checkout_request(sim, http, **changes))
    assert result.provider_ref
    return result.provider_ref, secret


def normalized(events: list[dict[str, Any]]) -> list[tuple[E, str | None]]:
    out = []
    for event in events:
        ev = STRIPE.normalize(json.dumps(event).encode(), "test")
        out.append((ev.type, ev.tx_id))
    return out


async def test_pay_in_payment_mode(
    sim: StripeSimulator, http: httpx.AsyncClient, receiver: Receiver
) -> None:
    session_id, secret = await open_checkout(sim, http, receiver)
    page = await http.get(f"{sim.url}/c/pay/{session_id}")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "59.97 EUR" in page.text and "3 × Pro plan" in page.text and "Test mode" in page.text
    assert "<script" not in page.text

    paid = await http.post(f"{sim.url}/c/pay/{session_id}/pay")
    assert paid.status_code == 303
    assert paid.headers["location"] == f"https://shop.example/thanks?cs={session_id}"

    events = receiver.events(secret)
    assert normalized(events) == [(E.PAYMENT_SUCCEEDED, TX)]
    session = events[0]["data"]["object"]
    assert session["payment_status"] == "paid" and session["payment_intent"].startswith("pi_")
    assert (session["status"], session["url"]) == ("complete", None)  # a url only while open
    fetched = await http.get(f"{sim.url}/v1/checkout/sessions/{session_id}", headers=auth())
    assert (fetched.json()["status"], fetched.json()["url"]) == ("complete", None)
    assert events[0]["livemode"] is False and events[0]["object"] == "event"
    assert sim.delivered[0][1] == 200

    again = await http.post(f"{sim.url}/c/pay/{session_id}/pay")  # a double click
    assert again.status_code == 303 and len(receiver.received) == 1

    first = await sim.refund(session_id, 1000)
    rest = await sim.refund(session_id)
    refunds = receiver.events(secret)[1:]
    # each refund is told twice: the charge's total so far, and the refund itself
    assert [e["type"] for e in refunds] == ["charge.refunded", "refund.created"] * 2
    totals, each = refunds[0::2], refunds[1::2]
    assert normalized(totals) == [(E.PAYMENT_PARTIALLY_REFUNDED, TX), (E.PAYMENT_REFUNDED, TX)]
    assert totals[1]["data"]["object"]["payment_intent"] == session["payment_intent"]
    told = [STRIPE.normalize(json.dumps(e).encode(), "test") for e in each]
    assert [ev.refund for ev in told] == [Refund(1000, of=first), Refund(4997, of=rest)]
    assert {ev.refs[0] for ev in told} == {session["payment_intent"]}


async def test_dispute_lost(
    sim: StripeSimulator, http: httpx.AsyncClient, receiver: Receiver
) -> None:
    session_id, secret = await open_checkout(sim, http, receiver)
    await sim.complete(session_id)
    await sim.dispute(session_id)
    await sim.close_dispute(session_id, "lost")
    paid, opened, closed = (
        STRIPE.normalize(json.dumps(e).encode(), "test") for e in receiver.events(secret)
    )
    assert (opened.type, closed.type) == (E.PAYMENT_DISPUTED, E.PAYMENT_DISPUTE_CLOSED)
    assert closed.payment_status == "refunded"
    # No txId on a dispute: it matches through the payment intent the checkout linked.
    assert opened.tx_id is None and opened.refs[0] in paid.link_refs


async def test_decline_then_pay(
    sim: StripeSimulator, http: httpx.AsyncClient, receiver: Receiver
) -> None:
    session_id, secret = await open_checkout(sim, http, receiver)
    declined = await http.post(f"{sim.url}/c/pay/{session_id}/decline", follow_redirects=True)
    assert declined.status_code == 200 and "declined" in declined.text
    assert sim.session(session_id)["status"] == "open"
    await sim.complete(session_id)
    events = receiver.events(secret)
    assert normalized(events) == [(E.PAYMENT_ATTEMPT_FAILED, TX), (E.PAYMENT_SUCCEEDED, TX)]
    intent = events[0]["data"]["object"]
    assert intent["last_payment_error"]["code"] == "card_declined"
    assert events[1]["data"]["object"]["payment_intent"] == intent["id"]


async def test_expire(sim: StripeSimulator, http: httpx.AsyncClient, receiver: Receiver) -> None:
    session_id, secret = await open_checkout(sim, http, receiver)
    expired = await http.post(f"{sim.url}/c/pay/{session_id}/expire")
    assert expired.status_code == 303 and expired.headers["location"] == "https://shop.example/cart"
    events = receiver.events(secret)
    assert normalized(events) == [(E.CHECKOUT_EXPIRED, TX)]
    assert (events[0]["data"]["object"]["status"], events[0]["data"]["object"]["url"]) == (
        "expired", None,
    )  # fmt: skip
    assert (await http.post(f"{sim.url}/c/pay/{session_id}/pay")).status_code == 303
    assert len(receiver.received) == 1  # an expired session cannot be paid


async def test_pay_in_subscription_mode_then_a_failed_renewal(
    sim: StripeSimulator, http: httpx.AsyncClient, receiver: Receiver
) -> None:
    session_id, secret = await open_checkout(
        sim, http, receiver, kind="subscription", interval="month", amount=900, quantity=1
    )
    assert "9.00 EUR / month" in (await http.get(f"{sim.url}/c/pay/{session_id}")).text
    await http.post(f"{sim.url}/c/pay/{session_id}/pay")
    events = receiver.events(secret)
    assert [e["type"] for e in events] == [
        "customer.subscription.created", "invoice.paid", "checkout.session.completed",
    ]  # fmt: skip
    assert normalized(events) == [
        (E.SUBSCRIPTION_CREATED, TX),
        (E.SUBSCRIPTION_PAYMENT_SUCCEEDED, TX),
        (E.PAYMENT_SUCCEEDED, TX),
    ]
    completed = STRIPE.normalize(json.dumps(events[2]).encode(), "test")
    sub_id = events[0]["data"]["object"]["id"]
    assert completed.starts_subscription and completed.subscription_ref == sub_id
    assert completed.provider_customer and completed.provider_customer.startswith("cus_")

    await sim.fail_invoice(sub_id)
    later = receiver.events(secret)[3:]
    assert normalized(later) == [(E.SUBSCRIPTION_PAYMENT_FAILED, TX), (E.SUBSCRIPTION_PAST_DUE, TX)]


async def test_failed_deliveries_are_retried(
    sim: StripeSimulator, http: httpx.AsyncClient, receiver: Receiver
) -> None:
    session_id, secret = await open_checkout(sim, http, receiver)
    receiver.answers = [500, 503]
    await sim.expire(session_id)
    assert len(receiver.received) == 3 and sim.delivered[-1][1] == 200
    bodies = {body for _, body in receiver.received}
    assert len(bodies) == 1  # the same event, re-signed on each attempt
    receiver.events(secret)


async def test_send_reports_an_unreachable_endpoint(sim: StripeSimulator) -> None:
    sim.register_endpoint(SECRET_KEY, "http://127.0.0.1:9/nowhere")
    statuses = await sim.send(SECRET_KEY, {"id": "evt_1", "type": "x", "data": {"object": {}}})
    assert statuses == [0]
