"""The Stripe simulator after the payment, over real HTTP: refunds listed, held pending,
settled and failed later; partial disputes; early fraud warnings; the event list; the expanded
session; its rate limiter; idempotent refunds; and its webhooks dropped, held or mis-signed."""

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

from edge.domain import ids
from edge.providers.base import CheckoutRequest
from edge.providers.stripe import STRIPE
from edge.providers.stripe import form as stripe_form
from edge.providers.stripe.signature import verify
from edge.providers.timestamped import SignatureInvalid
from edge.sim.faults import WRONG_SECRET
from edge.sim.stripe import StripeSimulator
from edge.sim.stripe import objects as sim_objects

SECRET_KEY = "sk_test_after_0123456789abcdef"
TX = "tx_01JD0000000000000000000009"


class Receiver:
    """A webhook endpoint on loopback that records each delivery and answers 200."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.url = ""

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        self.received.append(({k.decode(): v.decode() for k, v in scope["headers"]}, body))
        return 200, b"{}"

    def types(self) -> list[str]:
        return [json.loads(body)["type"] for _, body in self.received]


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    async with trio.open_nursery() as nursery:
        app = Receiver()
        app.url = await nursery.start(serve_asgi, app) + "/webhook/stripe/prj_x"
        yield app
        nursery.cancel_scope.cancel()


@pytest.fixture
async def api(sim: StripeSimulator) -> AsyncIterator[httpx.AsyncClient]:
    headers = {"Authorization": f"Bearer {SECRET_KEY}"}
    async with httpx.AsyncClient(base_url=sim.url, headers=headers, timeout=bound(10.0)) as client:
        yield client


async def paid(sim: StripeSimulator, api: httpx.AsyncClient, amount: int = 1999) -> str:
    """A new session (a transaction of its own: the id is the session's idempotency key),
    paid."""
    tx = {"id": ids.new_tx_id(), "kind": "payment", "amount": amount, "currency": "EUR"}
    made = await STRIPE.create_checkout(
        CheckoutRequest(
            tx={**tx, "metadata": {}},
            product={"name": "Pro"},
            credentials={"secretKey": SECRET_KEY, "apiBase": sim.url},
            success_url="https://s",
            cancel_url="https://c",
            http=api,
        )  # fmt: skip
    )
    assert made.provider_ref is not None
    await sim.complete(made.provider_ref)
    return made.provider_ref


async def get(api: httpx.AsyncClient, path: str, status: int = 200, **query: Any) -> Any:
    answer = await api.get(path, params=stripe_form.encode(query) if query else None)
    assert answer.status_code == status, answer.text
    return answer.json()


async def charge_of(api: httpx.AsyncClient, session_id: str) -> dict[str, Any]:
    """The session's charge, as the session retrieve expands it."""
    shown = await get(
        api, f"/v1/checkout/sessions/{session_id}", expand=["payment_intent.latest_charge"]
    )
    charge: dict[str, Any] = shown["payment_intent"]["latest_charge"]
    return charge


# --- refunds -------------------------------------------------------------------------------


async def test_refunds_are_listed_by_payment_newest_first_page_by_page(
    sim: StripeSimulator, api: httpx.AsyncClient
) -> None:
    one, other = await paid(sim, api), await paid(sim, api)
    made = [await sim.refund(one, 100) for _ in range(5)]
    await sim.refund(other, 100)
    intent = sim.session(one)["payment_intent"]
    everything = await get(api, "/v1/refunds", limit=100)
    assert len(everything["data"]) == 6 and everything["url"] == "/v1/refunds"
    first = await get(api, "/v1/refunds", payment_intent=intent, limit=2)
    assert [r["id"] for r in first["data"]] == made[::-1][:2] and first["has_more"] is True
    rest = await get(
        api, "/v1/refunds", payment_intent=intent, starting_after=first["data"][-1]["id"]
    )
    assert [r["id"] for r in rest["data"]] == made[::-1][2:] and rest["has_more"] is False
    back = await get(api, "/v1/refunds", payment_intent=intent, ending_before=made[0], limit=2)
    assert [r["id"] for r in back["data"]] == [made[2], made[1]] and back["has_more"] is True
    by_charge = await get(api, "/v1/refunds", charge=rest["data"][0]["charge"])
    assert len(by_charge["data"]) == 5
    assert (await get(api, f"/v1/refunds/{made[0]}"))["amount"] == 100
    missing = await get(api, "/v1/refunds/re_nope", 404)
    assert missing["error"]["code"] == "resource_missing"
    for bad in ("0", "101", "x"):
        refused = await get(api, "/v1/refunds", 400, limit=bad)
        assert refused["error"]["param"] == "limit"
    assert (await get(api, "/v1/refunds", 400, starting_after="re_nope"))["error"]["param"] == (
        "starting_after"
    )


async def test_a_refund_fails_after_it_was_taken(
    sim: StripeSimulator, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    secret = sim.register_endpoint(SECRET_KEY, receiver.url)
    session_id = await paid(sim, api)
    refund_id = await sim.refund(session_id)  # all of it
    charge = await charge_of(api, session_id)
    assert (charge["amount_refunded"], charge["refunded"]) == (1999, True)
    await sim.fail_refund(refund_id, "lost_or_stolen_card")
    assert receiver.types()[-3:] == ["refund.failed", "charge.refund.updated", "refund.updated"]
    failed = await get(api, f"/v1/refunds/{refund_id}")
    assert (failed["status"], failed["failure_reason"]) == ("failed", "lost_or_stolen_card")
    assert failed["failure_balance_transaction"].startswith("txn_")
    charge = await charge_of(api, session_id)
    assert (charge["amount_refunded"], charge["refunded"]) == (0, False)
    for headers, body in receiver.received:
        verify(headers.get("stripe-signature"), body, [secret], time.time())
    told = [STRIPE.normalize(body, "test") for _, body in receiver.received[-3:]]
    assert {e.type for e in told} == {"payment.refund_failed"}
    with pytest.raises(ValueError, match="cannot fail now"):
        await sim.fail_refund(refund_id)
    assert await sim.refund(session_id, 500)  # its amount can be refunded again


async def test_a_refund_held_pending_then_settled(
    sim: StripeSimulator, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    sim.register_endpoint(SECRET_KEY, receiver.url)
    session_id = await paid(sim, api)
    sim.pending_refunds = True
    refund_id = await sim.refund(session_id, 700)
    waiting = await get(api, f"/v1/refunds/{refund_id}")
    assert (waiting["status"], waiting["pending_reason"]) == ("pending", "insufficient_funds")
    assert receiver.types()[-2:] == ["charge.refunded", "refund.created"]
    await sim.settle_refund(refund_id)
    settled = await get(api, f"/v1/refunds/{refund_id}")
    assert settled["status"] == "succeeded" and "pending_reason" not in settled
    assert receiver.types()[-2:] == ["refund.updated", "charge.refund.updated"]
    with pytest.raises(ValueError, match="not pending"):
        await sim.settle_refund(refund_id)


async def test_a_refunds_idempotent_replay_is_its_saved_first_answer(
    sim: StripeSimulator, api: httpx.AsyncClient
) -> None:
    """PROVIDERS.md S6: Stripe "saves the resulting status code and body of the first
    request", and compares the parameters (docs.stripe.com/idempotency)."""
    session_id = await paid(sim, api)
    params = {
        "payment_intent": sim.session(session_id)["payment_intent"],
        "amount": 400,
        "metadata": {"refundId": "rf_1"},
    }

    async def post(body: dict[str, Any], key: str = "rf_1") -> httpx.Response:
        return await api.post(
            "/v1/refunds",
            content=stripe_form.encode(body),
            headers={"Idempotency-Key": key, "Content-Type": "application/x-www-form-urlencoded"},
        )

    first = await post(params)
    assert first.status_code == 200 and "idempotent-replayed" not in first.headers
    await sim.fail_refund(first.json()["id"])
    replay = await post(params)
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json() == first.json() and replay.json()["status"] == "succeeded"
    other = await post({**params, "amount": 300})
    assert (other.status_code, other.json()["error"]["type"]) == (400, "idempotency_error")
    assert len(sim.refunds_of(session_id)) == 1
    sim.forget_idempotency_keys()
    assert (await post(params)).json()["id"] != first.json()["id"]
    assert len(sim.refunds_of(session_id)) == 2


async def post_refund(
    api: httpx.AsyncClient, sim: StripeSimulator, session_id: str, key: str, amount: int = 400
) -> httpx.Response:
    """``POST /v1/refunds`` of ``amount`` of the session's payment with ``Idempotency-Key``
    ``key``."""
    return await api.post(
        "/v1/refunds",
        content=stripe_form.encode(
            {"payment_intent": sim.session(session_id)["payment_intent"], "amount": amount}
        ),
        headers={"Idempotency-Key": key, "Content-Type": "application/x-www-form-urlencoded"},
    )


async def test_a_500_from_inside_the_api_is_saved_under_its_key(
    sim: StripeSimulator, api: httpx.AsyncClient
) -> None:
    """Stripe: "Retries with the same key return the saved response, including ``500``
    errors" (docs.stripe.com/api/idempotent_requests); a 500 answered before the API ran
    (``fail_next_requests``, Stripe down) saves nothing."""
    session_id = await paid(sim, api)
    sim.fail_next_runs()
    failed = await post_refund(api, sim, session_id, "rf_500")
    assert failed.status_code == 500 and "idempotent-replayed" not in failed.headers
    assert failed.json()["error"]["type"] == "api_error"
    again = await post_refund(api, sim, session_id, "rf_500")
    assert (again.status_code, again.headers["idempotent-replayed"]) == (500, "true")
    assert again.json() == failed.json() and sim.refunds_of(session_id) == []
    other = await post_refund(api, sim, session_id, "rf_other")
    assert other.status_code == 200  # the key is what fails, not the payment
    sim.forget_idempotency_keys()  # 24 hours on
    assert (await post_refund(api, sim, session_id, "rf_500")).status_code == 200

    sim.fail_next_requests = 1
    down = await post_refund(api, sim, session_id, "rf_down", amount=100)
    assert down.status_code == 500
    up = await post_refund(api, sim, session_id, "rf_down", amount=100)
    assert up.status_code == 200 and "idempotent-replayed" not in up.headers
    assert len(sim.refunds_of(session_id)) == 3


async def test_a_500_after_the_refund_was_made_hides_it_from_every_retry(
    sim: StripeSimulator, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    """A run that made the refund and then failed: its key answers the saved 500; the refund
    is Stripe's all the same (listed, its events sent)."""
    sim.register_endpoint(SECRET_KEY, receiver.url)
    session_id = await paid(sim, api)
    sim.fail_next_runs(acted=True)
    failed = await post_refund(api, sim, session_id, "rf_made")
    assert failed.status_code == 500
    replay = await post_refund(api, sim, session_id, "rf_made")
    assert (replay.status_code, replay.headers["idempotent-replayed"]) == (500, "true")
    (made,) = sim.refunds_of(session_id)
    intent = sim.session(session_id)["payment_intent"]
    assert [r["id"] for r in (await get(api, "/v1/refunds", payment_intent=intent))["data"]] == [
        made["id"]
    ]
    assert receiver.types()[-2:] == ["charge.refunded", "refund.created"]


async def test_a_key_in_use_is_409_until_its_first_request_is_done(
    sim: StripeSimulator, api: httpx.AsyncClient
) -> None:
    """A second request with the key while the first runs: 409 ``idempotency_key_in_use``
    (type ``invalid_request_error``, as Stripe sent it in stripe/stripe-go#647), saved nowhere;
    once the first is done, the key answers its saved answer."""
    session_id = await paid(sim, api)
    sim.pause_runs()
    answers: list[httpx.Response] = []

    async def first() -> None:
        answers.append(await post_refund(api, sim, session_id, "rf_busy"))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await until(lambda: "rf_busy" in sim.in_progress(SECRET_KEY), what="the first runs")
        busy = await post_refund(api, sim, session_id, "rf_busy")
        assert busy.status_code == 409 and "idempotent-replayed" not in busy.headers
        error = busy.json()["error"]
        assert (error["type"], error["code"]) == ("invalid_request_error", "idempotency_key_in_use")
        assert "rf_busy" in error["message"] and sim.refunds_of(session_id) == []
        sim.resume_runs()
    (made,) = answers
    assert made.status_code == 200 and sim.in_progress(SECRET_KEY) == frozenset()
    replay = await post_refund(api, sim, session_id, "rf_busy")
    assert replay.headers["idempotent-replayed"] == "true" and replay.json() == made.json()
    assert [r["id"] for r in sim.refunds_of(session_id)] == [made.json()["id"]]


# --- disputes and early fraud warnings -----------------------------------------------------


async def test_a_partial_dispute(sim: StripeSimulator, api: httpx.AsyncClient) -> None:
    session_id = await paid(sim, api)
    with pytest.raises(ValueError):
        await sim.dispute(session_id, amount=5000)
    dispute_id = await sim.dispute(session_id, amount=700)
    intent = sim.session(session_id)["payment_intent"]
    (listed,) = (await get(api, "/v1/disputes", payment_intent=intent))["data"]
    assert (listed["id"], listed["amount"], listed["status"]) == (dispute_id, 700, "needs_response")
    assert (await get(api, "/v1/disputes", payment_intent="pi_other"))["data"] == []
    await sim.close_dispute(session_id, "lost")
    assert (await get(api, f"/v1/disputes/{dispute_id}"))["status"] == "lost"
    assert (await get(api, "/v1/disputes/dp_nope", 404))["error"]["code"] == "resource_missing"


async def test_a_warning_is_actionable_until_the_charge_is_refunded_or_disputed(
    sim: StripeSimulator, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    sim.register_endpoint(SECRET_KEY, receiver.url)
    refunded, disputed = await paid(sim, api), await paid(sim, api)
    first = await sim.fraud_warning(refunded, "made_with_stolen_card")
    second = await sim.fraud_warning(disputed)
    assert receiver.types()[-1] == "radar.early_fraud_warning.created"
    warning = await get(api, f"/v1/radar/early_fraud_warnings/{first}")
    intent = sim.session(refunded)["payment_intent"]
    assert (warning["actionable"], warning["payment_intent"]) == (True, intent)
    assert warning["fraud_type"] == "made_with_stolen_card" and first.startswith("issfr_")
    await sim.refund(refunded, 100)  # in part: still actionable
    assert (await get(api, f"/v1/radar/early_fraud_warnings/{first}"))["actionable"] is True
    await sim.refund(refunded)
    assert receiver.types()[-3:] == [
        "charge.refunded", "refund.created", "radar.early_fraud_warning.updated",
    ]  # fmt: skip
    assert (await get(api, f"/v1/radar/early_fraud_warnings/{first}"))["actionable"] is False
    await sim.dispute(disputed)
    assert receiver.types()[-2:] == ["charge.dispute.created", "radar.early_fraud_warning.updated"]
    listed = await get(api, "/v1/radar/early_fraud_warnings", limit=10)
    assert {w["id"] for w in listed["data"]} == {first, second}
    assert all(w["actionable"] is False for w in listed["data"])
    late = await sim.fraud_warning(refunded)  # about a charge refunded in full already
    assert (await get(api, f"/v1/radar/early_fraud_warnings/{late}"))["actionable"] is False
    by_intent = await get(api, "/v1/radar/early_fraud_warnings", payment_intent=intent)
    assert {w["id"] for w in by_intent["data"]} == {first, late}


# --- the event list ------------------------------------------------------------------------


async def test_the_event_list_is_stripes(
    sim: StripeSimulator, api: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    session_id = await paid(sim, api)
    await sim.refund(session_id, 100)
    await sim.dispute(session_id)
    page = await get(api, "/v1/events")
    types = [e["type"] for e in page["data"]]
    assert types == [
        "charge.dispute.created", "refund.created", "charge.refunded",
        "checkout.session.completed",
    ]  # fmt: skip
    assert page["url"] == "/v1/events" and page["has_more"] is False
    two = await get(api, "/v1/events", limit=2)
    assert two["has_more"] is True
    rest = await get(api, "/v1/events", starting_after=two["data"][-1]["id"])
    assert [e["type"] for e in two["data"] + rest["data"]] == types
    refunds = await get(api, "/v1/events", types=["charge.refunded", "refund.created"])
    assert [e["type"] for e in refunds["data"]] == ["refund.created", "charge.refunded"]
    one_type = await get(api, "/v1/events", type="charge.dispute.created")
    assert [e["type"] for e in one_type["data"]] == ["charge.dispute.created"]
    created = page["data"][0]["created"]
    assert (await get(api, "/v1/events", created={"gt": created}))["data"] == []
    assert len((await get(api, "/v1/events", created={"lte": created}))["data"]) == 4
    one = await get(api, f"/v1/events/{page['data'][0]['id']}")
    assert one == page["data"][0]
    later = time.time() + 31 * 86_400  # Stripe lists 30 days
    monkeypatch.setattr(sim_objects, "now_s", lambda: int(later))
    assert (await get(api, "/v1/events"))["data"] == []
    assert (await get(api, f"/v1/events/{one['id']}", 404))["error"]["code"] == "resource_missing"


# --- the expanded session ----------------------------------------------------------------


async def test_a_session_retrieved_with_expand(
    sim: StripeSimulator, api: httpx.AsyncClient
) -> None:
    session_id = await paid(sim, api)
    plain = await get(api, f"/v1/checkout/sessions/{session_id}")
    assert isinstance(plain["payment_intent"], str)
    expanded = await get(
        api, f"/v1/checkout/sessions/{session_id}", expand=["payment_intent.latest_charge"]
    )
    intent = expanded["payment_intent"]
    assert intent["object"] == "payment_intent" and intent["id"] == plain["payment_intent"]
    assert intent["latest_charge"]["object"] == "charge"
    assert intent["latest_charge"]["amount"] == 1999
    assert isinstance(sim.session(session_id)["payment_intent"], str)  # the object is unchanged
    refused = await get(api, f"/v1/checkout/sessions/{session_id}", 400, expand=["customer"])
    assert refused["error"]["param"] == "expand[0]"
    missing = await get(api, "/v1/checkout/sessions/cs_test_nope", 404)
    assert missing["error"]["code"] == "resource_missing"


async def test_an_open_sessions_missing_payment_stays_null(
    sim: StripeSimulator, api: httpx.AsyncClient
) -> None:
    made = await STRIPE.create_checkout(
        CheckoutRequest(
            tx={"id": TX, "kind": "payment", "amount": 100, "currency": "EUR", "metadata": {}},
            product={"name": "Pro"},
            credentials={"secretKey": SECRET_KEY, "apiBase": sim.url},
            success_url="https://s",
            cancel_url="https://c",
            http=api,
        )  # fmt: skip
    )
    shown = await get(
        api, f"/v1/checkout/sessions/{made.provider_ref}", expand=["payment_intent.latest_charge"]
    )
    assert shown["payment_intent"] is None


async def test_a_renewal_paid(sim: StripeSimulator, api: httpx.AsyncClient) -> None:
    made = await STRIPE.create_checkout(
        CheckoutRequest(
            tx={
                "id": TX,
                "kind": "subscription",
                "amount": 900,
                "currency": "EUR",
                "interval": "month",
                "metadata": {},
            },
            product={"name": "Pro"},
            credentials={"secretKey": SECRET_KEY, "apiBase": sim.url},
            success_url="https://s",
            cancel_url="https://c",
            http=api,
        )  # fmt: skip
    )
    assert made.provider_ref is not None
    await sim.complete(made.provider_ref)
    sub_id = sim.session(made.provider_ref)["subscription"]
    await sim.fail_invoice(sub_id)
    invoice_id = await sim.pay_invoice(sub_id)
    shown = await get(
        api, f"/v1/checkout/sessions/{made.provider_ref}", expand=["subscription.latest_invoice"]
    )
    latest = shown["subscription"]["latest_invoice"]
    assert (latest["id"], latest["status"]) == (invoice_id, "paid")
    assert (shown["subscription"]["status"], latest["billing_reason"]) == (
        "active", "subscription_cycle",
    )  # fmt: skip
    types = [e["type"] for e in (await get(api, "/v1/events", limit=2))["data"]]
    assert types == ["customer.subscription.updated", "invoice.paid"]


# --- faults --------------------------------------------------------------------------------


async def test_a_rate_limited_call_is_refused_before_it_runs(
    sim: StripeSimulator, api: httpx.AsyncClient
) -> None:
    session_id = await paid(sim, api)
    sim.rate_limit_next(2)
    for _ in range(2):
        limited = await api.post(
            "/v1/refunds",
            content=stripe_form.encode(
                {"payment_intent": sim.session(session_id)["payment_intent"], "amount": 100}
            ),
            headers={"Idempotency-Key": "rf_9"},
        )
        assert limited.status_code == 429 and "retry-after" not in limited.headers
        error = limited.json()["error"]
        assert (error["type"], error["code"]) == ("invalid_request_error", "rate_limit")
    assert sim.refunds_of(session_id) == []
    made = await api.post(
        "/v1/refunds",
        content=stripe_form.encode(
            {"payment_intent": sim.session(session_id)["payment_intent"], "amount": 100}
        ),
        headers={"Idempotency-Key": "rf_9"},
    )
    assert made.status_code == 200 and "idempotent-replayed" not in made.headers
    sim.rate_limit_next(1, retry_after_s=2)
    limited = await api.get("/v1/events")
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "2")


async def test_webhooks_dropped_held_and_mis_signed(
    sim: StripeSimulator, api: httpx.AsyncClient, receiver: Receiver
) -> None:
    secret = sim.register_endpoint(SECRET_KEY, receiver.url)
    session_id = await paid(sim, api)
    assert receiver.types() == ["checkout.session.completed"]
    sim.webhook_faults.drop(types=("charge.refunded",), times=1)
    sim.webhook_faults.hold(types=("refund.created",))
    sim.webhook_faults.missign(types=("charge.dispute.created",))
    await sim.refund(session_id, 100)
    await sim.dispute(session_id)
    assert receiver.types() == ["checkout.session.completed", "charge.dispute.created"]
    headers, body = receiver.received[-1]
    with pytest.raises(SignatureInvalid):
        verify(headers["stripe-signature"], body, [secret], time.time())
    verify(headers["stripe-signature"], body, [WRONG_SECRET], time.time())
    assert [event["type"] for _, event in sim.held] == ["refund.created"]
    assert await sim.release() == [200]
    assert receiver.types()[-1] == "refund.created" and sim.held == []
    headers, body = receiver.received[-1]
    verify(headers["stripe-signature"], body, [secret], time.time())
    # what was never delivered is still in Stripe's event list
    listed = [e["type"] for e in (await get(api, "/v1/events"))["data"]]
    assert "charge.refunded" in listed and sim.webhook_faults.dropped == 1
