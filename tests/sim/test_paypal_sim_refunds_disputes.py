"""The PayPal simulator's refunds, disputes, lists and failures: refunds tagged with
``custom_id`` and a ``note_to_payer`` that must be one line, a ``PayPal-Request-Id`` that
answers the refund's latest status, refunds that stay pending or fail, disputes from inquiry to
claim to resolution with their webhooks, the disputes and events lists with their paging,
PayPal's 429, and deliveries dropped, held or mis-signed as ``webhook_faults`` says."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from support.asgi import serving
from support.waits import until

from edge.providers.paypal.signature import load_public_key, signature_matches
from edge.sim.faults import WRONG_SECRET
from edge.sim.paypal import PayPalSimulator

TX = "tx_01JD0000000000000000000005"
RF = "rf_01JD0000000000000000000003"


class Receiver:
    """A webhook endpoint that keeps what it gets."""

    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        self.got.append(({k.decode().lower(): v.decode() for k, v in scope["headers"]}, body))
        return 200, b"{}"

    def types(self) -> list[str]:
        return [json.loads(body)["event_type"] for _, body in self.got]


class Api:
    """The merchant's calls, with a token of the app ``client``."""

    def __init__(self, sim: PayPalSimulator, http: httpx.AsyncClient) -> None:
        self.sim, self.http, self.token = sim, http, ""

    async def __call__(
        self, method: str, path: str, body: Any = None, **headers: str
    ) -> httpx.Response:
        if not self.token:
            answer = await self.http.post(
                f"{self.sim.url}/v1/oauth2/token",
                auth=("client", "secret"),
                data={"grant_type": "client_credentials"},
            )
            self.token = answer.json()["access_token"]
        return await self.http.request(
            method,
            f"{self.sim.url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {self.token}", **headers},
        )

    async def captured(self, value: str = "10.00") -> tuple[str, str]:
        """An order approved and captured; its id and its capture's."""
        unit = {"custom_id": TX, "amount": {"currency_code": "EUR", "value": value}}
        order = (
            await self(
                "POST", "/v2/checkout/orders", {"intent": "CAPTURE", "purchase_units": [unit]}
            )
        ).json()
        await self.http.post(
            f"{self.sim.url}/checkoutnow", data={"token": order["id"], "action": "approve"}
        )
        done = (await self("POST", f"/v2/checkout/orders/{order['id']}/capture", {})).json()
        return order["id"], done["purchase_units"][0]["payments"]["captures"][0]["id"]

    async def refund(self, capture: str, body: dict[str, Any], **headers: str) -> httpx.Response:
        return await self("POST", f"/v2/payments/captures/{capture}/refund", body, **headers)


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    app = Receiver()
    async with serving(app) as url:
        yield app, url


@pytest.fixture
async def api(paypal) -> AsyncIterator[Api]:
    async with httpx.AsyncClient() as http:
        yield Api(paypal, http)


def euros(value: str) -> dict[str, str]:
    return {"currency_code": "EUR", "value": value}


async def test_a_refund_keeps_its_tag_and_note_and_can_be_read(api, paypal, receiver):
    app, url = receiver
    paypal.register_webhook("client", "secret", url)
    order, capture = await api.captured()
    made = await api.refund(
        capture, {"amount": euros("4.00"), "custom_id": RF, "note_to_payer": "Sorry"}
    )
    assert made.status_code == 201
    refund = made.json()
    assert (refund["custom_id"], refund["note_to_payer"], refund["status"]) == (
        RF,
        "Sorry",
        "COMPLETED",
    )
    read = await api("GET", f"/v2/payments/refunds/{refund['id']}")
    assert read.json() == refund
    shown = paypal.order(order)["purchase_units"][0]["payments"]["refunds"]
    assert [r["id"] for r in shown] == [refund["id"]] and "custom_id" not in shown[0]
    assert app.types()[-1] == "PAYMENT.CAPTURE.REFUNDED"
    assert json.loads(app.got[-1][1])["resource"]["custom_id"] == RF
    missing = await api("GET", "/v2/payments/refunds/NOSUCHREFUND")
    assert (missing.status_code, missing.json()["name"]) == (404, "RESOURCE_NOT_FOUND")


@pytest.mark.parametrize(
    ("body", "issue", "field"),
    [
        ({"note_to_payer": "one\ntwo"}, "INVALID_PARAMETER_SYNTAX", "/note_to_payer"),
        ({"note_to_payer": "one\u2028two"}, "INVALID_PARAMETER_SYNTAX", "/note_to_payer"),
        ({"note_to_payer": "x" * 256}, "INVALID_STRING_LENGTH", "/note_to_payer"),
        ({"note_to_payer": ""}, "INVALID_STRING_LENGTH", "/note_to_payer"),
        ({"custom_id": "x" * 128}, "INVALID_STRING_LENGTH", "/custom_id"),
        ({"custom_id": 7}, "INVALID_PARAMETER_SYNTAX", "/custom_id"),
    ],
)
async def test_a_refund_request_breaking_the_schema_is_refused(api, paypal, body, issue, field):
    _, capture = await api.captured()
    refused = await api.refund(capture, {"amount": euros("1.00"), **body})
    detail = refused.json()["details"][0]
    assert (refused.status_code, refused.json()["name"]) == (400, "INVALID_REQUEST")
    assert (detail["issue"], detail["field"], detail["location"]) == (issue, field, "body")
    assert paypal.refunds_made(capture) == []


async def test_a_request_id_answers_the_refunds_latest_status_and_makes_no_other(api, paypal):
    _, capture = await api.captured()
    paypal.set_refund_outcome(capture, "PENDING")
    first = await api.refund(capture, {"amount": euros("3.00")}, **{"PayPal-Request-Id": RF})
    assert (first.status_code, first.json()["status"]) == (201, "PENDING")
    assert first.json()["status_details"] == {"reason": "ECHECK"}
    await paypal.settle_refund(first.json()["id"], "COMPLETED")
    again = await api.refund(capture, {"amount": euros("3.00")}, **{"PayPal-Request-Id": RF})
    assert (again.status_code, again.json()["id"]) == (200, first.json()["id"])
    assert again.json()["status"] == "COMPLETED" and "status_details" not in again.json()
    assert len(paypal.refunds_made(capture)) == 1


async def test_a_request_id_in_progress_is_409_and_makes_nothing(api, paypal):
    """PayPal: "When you send two simultaneous API requests with same PayPal-Request-Id
    header, PayPal processes the first request and might fail the second request"
    (developer.paypal.com/api/rest/reference/idempotency); the refund's 409 is
    ``PREVIOUS_REQUEST_IN_PROGRESS`` (payments_payment_v2.json). Once the first is done, the id
    answers its refund."""
    _, capture = await api.captured()
    paypal.pause_refunds()
    answers: list[httpx.Response] = []

    async def first() -> None:
        answers.append(
            await api.refund(capture, {"amount": euros("2.00")}, **{"PayPal-Request-Id": RF})
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(first)
        await until(lambda: RF in paypal.in_progress("client"), what="the first call runs")
        busy = await api.refund(capture, {"amount": euros("2.00")}, **{"PayPal-Request-Id": RF})
        assert (busy.status_code, busy.json()["name"]) == (409, "RESOURCE_CONFLICT")
        assert busy.json()["details"][0]["issue"] == "PREVIOUS_REQUEST_IN_PROGRESS"
        assert paypal.refunds_made(capture) == []
        paypal.resume_refunds()
    (made,) = answers
    assert made.status_code == 201 and paypal.in_progress("client") == frozenset()
    again = await api.refund(capture, {"amount": euros("2.00")}, **{"PayPal-Request-Id": RF})
    assert (again.status_code, again.json()["id"]) == (200, made.json()["id"])
    assert [r["id"] for r in paypal.refunds_made(capture)] == [made.json()["id"]]


async def test_a_pending_refund_sends_nothing_until_it_completes(api, paypal, receiver):
    app, url = receiver
    paypal.register_webhook("client", "secret", url)
    order, capture = await api.captured()
    paypal.set_refund_outcome(capture, "PENDING")
    pending = (await api.refund(capture, {"amount": euros("3.00")})).json()
    assert "PAYMENT.CAPTURE.REFUNDED" not in app.types()
    (shown,) = paypal.order(order)["purchase_units"][0]["payments"]["refunds"]
    assert shown["status"] == "PENDING"
    await paypal.settle_refund(pending["id"], "COMPLETED")
    assert app.types()[-1] == "PAYMENT.CAPTURE.REFUNDED"
    assert paypal.order(order)["purchase_units"][0]["payments"]["refunds"][0]["status"] == (
        "COMPLETED"
    )
    with pytest.raises(ValueError):
        await paypal.settle_refund(pending["id"], "FAILED")  # it has ended


async def test_a_failed_refund_gives_its_amount_back_to_the_capture(api, paypal, receiver):
    app, url = receiver
    paypal.register_webhook("client", "secret", url)
    _, capture = await api.captured()
    paypal.set_refund_outcome(capture, "PENDING")
    pending = (await api.refund(capture, {"amount": euros("10.00")})).json()
    over = await api.refund(capture, {"amount": euros("1.00")})
    assert over.json()["details"][0]["issue"] == "CAPTURE_FULLY_REFUNDED"
    await paypal.settle_refund(pending["id"], "FAILED")
    assert paypal.refund(pending["id"])["status"] == "FAILED"
    assert "PAYMENT.CAPTURE.REFUNDED" not in app.types()  # PayPal publishes no such event
    whole = await api.refund(capture, {})
    assert whole.json()["amount"] == euros("10.00")
    with pytest.raises(ValueError):
        paypal.set_refund_outcome(capture, "SUCCEEDED")


async def test_a_dispute_goes_from_inquiry_to_claim_to_resolution(api, paypal, receiver):
    app, url = receiver
    paypal.register_webhook("client", "secret", url)
    _, capture = await api.captured()
    dispute_id = await paypal.dispute(capture, amount="6.00", stage="INQUIRY")
    await paypal.escalate_dispute(dispute_id)
    await paypal.resolve_dispute(dispute_id, "RESOLVED_BUYER_FAVOUR")
    bodies = [json.loads(b) for _, b in app.got if b"CUSTOMER.DISPUTE" in b]
    stages = [
        (b["event_type"], b["resource"]["dispute_life_cycle_stage"], b["resource"]["status"])
        for b in bodies
    ]
    assert stages == [
        ("CUSTOMER.DISPUTE.CREATED", "INQUIRY", "OPEN"),
        ("CUSTOMER.DISPUTE.UPDATED", "CHARGEBACK", "WAITING_FOR_SELLER_RESPONSE"),
        ("CUSTOMER.DISPUTE.RESOLVED", "CHARGEBACK", "RESOLVED"),
    ]
    assert bodies[0]["resource"]["dispute_amount"] == euros("6.00")
    assert bodies[2]["resource"]["dispute_outcome"] == {
        "outcome_code": "RESOLVED_BUYER_FAVOUR",
        "amount_refunded": euros("6.00"),
    }
    assert paypal.refunds_made(capture) == []  # a claim's money moves by PayPal, not a refund
    with pytest.raises(ValueError):
        await paypal.escalate_dispute(dispute_id)


async def test_an_inquiry_settled_for_the_buyer_is_a_refund_first(api, paypal, receiver):
    app, url = receiver
    paypal.register_webhook("client", "secret", url)
    _, capture = await api.captured()
    dispute_id = await paypal.dispute(capture, stage="INQUIRY")
    await paypal.resolve_dispute(dispute_id, "RESOLVED_BUYER_FAVOUR", amount_refunded="2.50")
    assert app.types()[-2:] == ["PAYMENT.CAPTURE.REFUNDED", "CUSTOMER.DISPUTE.RESOLVED"]
    (refund,) = paypal.refunds_made(capture)
    assert refund["amount"] == euros("2.50")


async def test_the_disputes_of_a_capture_are_listed_as_summaries(api, paypal):
    _, capture = await api.captured()
    _, other = await api.captured("5.00")
    first = await paypal.dispute(capture, stage="INQUIRY")
    second = await paypal.dispute(capture)
    await paypal.dispute(other)
    listed = (await api("GET", f"/v1/customer/disputes?disputed_transaction_id={capture}")).json()
    assert [d["dispute_id"] for d in listed["items"]] == [second, first]  # newest first
    assert set(listed["items"][0]) == {
        "dispute_id",
        "reason",
        "status",
        "dispute_amount",
        "create_time",
        "update_time",
        "links",
    }
    one = (await api("GET", "/v1/customer/disputes?page_size=1")).json()
    assert len(one["items"]) == 1
    none = (await api("GET", "/v1/customer/disputes?disputed_transaction_id=NOTHING")).json()
    assert "items" not in none and none["links"][0]["rel"] == "self"
    shown = (await api("GET", f"/v1/customer/disputes/{second}")).json()
    assert shown["dispute_life_cycle_stage"] == "CHARGEBACK"
    wrong = await api("GET", "/v1/customer/disputes?page_size=51")
    assert wrong.status_code == 400


async def test_the_event_list_pages_newest_first_by_its_next_link(api, paypal):
    paypal.register_webhook("client", "secret", "http://127.0.0.1:9/unreachable")
    paypal.deliveries_paused = True
    await api.captured()
    made = [e["id"] for _, e in paypal.held]
    assert len(made) == 2
    seen: list[str] = []
    path = "/v1/notifications/webhooks-events?page_size=1&start_time=2000-01-01T00:00:00Z"
    while path:
        page = (await api("GET", path)).json()
        assert page["count"] == len(page["events"]) == 1
        seen += [e["id"] for e in page["events"]]
        following = [link["href"] for link in page["links"] if link["rel"] == "next"]
        path = following[0].removeprefix(paypal.url) if following else ""
        if path:
            assert "move_to=next" in path and "index_time=" in path
    assert seen == made[::-1]
    future = await api("GET", "/v1/notifications/webhooks-events?start_time=2100-01-01T00:00:00Z")
    assert future.json()["events"] == []
    past = await api("GET", "/v1/notifications/webhooks-events?end_time=2000-01-01T00:00:00Z")
    assert past.json()["events"] == []


async def test_a_rate_limit_answers_429_as_paypal_does(api, paypal):
    paypal.rate_limit(times=2, path=r"/v2/checkout/orders", retry_after_s=5)
    for _ in range(2):
        limited = await api("GET", "/v2/checkout/orders/ANY")
        assert limited.status_code == 429 and limited.headers["retry-after"] == "5"
        assert set(limited.json()) == {"name", "message", "debug_id"}
        assert limited.json()["name"] == "RATE_LIMIT_REACHED"
        assert limited.json()["message"] == "Too many requests. Blocked due to rate limiting."
    assert (await api("GET", "/v2/checkout/orders/ANY")).status_code == 404
    paypal.rate_limit(path=r"/v2/")
    no_wait = await api("GET", "/v2/checkout/orders/ANY")
    assert no_wait.status_code == 429 and "retry-after" not in no_wait.headers


async def test_webhook_faults_drop_hold_and_missign_deliveries(api, paypal, receiver):
    app, url = receiver
    webhook_id = paypal.register_webhook("client", "secret", url)
    paypal.webhook_faults.drop(types=("CHECKOUT.ORDER.APPROVED",))
    paypal.webhook_faults.hold(types=("PAYMENT.CAPTURE.COMPLETED",))
    await api.captured()
    assert app.got == [] and paypal.webhook_faults.dropped == 1
    listed = (await api("GET", "/v1/notifications/webhooks-events")).json()["events"]
    assert {e["event_type"] for e in listed} == {
        "CHECKOUT.ORDER.APPROVED",
        "PAYMENT.CAPTURE.COMPLETED",
    }  # a dropped delivery's event is listed still
    await paypal.release_held()
    assert app.types() == ["PAYMENT.CAPTURE.COMPLETED"]
    paypal.webhook_faults.clear()
    paypal.webhook_faults.missign(times=1)
    await api.captured("3.00")
    (headers, body), *_ = app.got[1:]
    key = load_public_key((await api.http.get(headers["paypal-cert-url"])).content)
    assert key is not None and not signature_matches(key, headers, body, webhook_id)
    assert signature_matches(key, headers, body, WRONG_SECRET)
    headers, body = app.got[-1]  # the capture after it is signed as usual
    assert signature_matches(key, headers, body, webhook_id)


async def test_a_subscriptions_paid_cycles_are_listed(api, paypal):
    product = (await api("POST", "/v1/catalogs/products", {"name": "Pro"})).json()
    cycle = {
        "frequency": {"interval_unit": "MONTH", "interval_count": 1},
        "tenure_type": "REGULAR",
        "sequence": 1,
        "total_cycles": 0,
        "pricing_scheme": {"fixed_price": euros("9.00")},
    }
    plan = (
        await api(
            "POST",
            "/v1/billing/plans",
            {"product_id": product["id"], "name": "Pro", "billing_cycles": [cycle]},
        )
    ).json()
    context = {"return_url": "https://s/back", "cancel_url": "https://s/c"}
    sub = (
        await api(
            "POST",
            "/v1/billing/subscriptions",
            {"plan_id": plan["id"], "custom_id": TX, "application_context": context},
        )
    ).json()
    token = sub["links"][0]["href"].rsplit("ba_token=", 1)[1]
    await api.http.post(
        f"{paypal.url}/webapps/billing/subscriptions", data={"ba_token": token, "action": "approve"}
    )
    await paypal.renew(sub["id"])
    window = "start_time=2000-01-01T00:00:00Z&end_time=2100-01-01T00:00:00Z"
    listed = (
        await api("GET", f"/v1/billing/subscriptions/{sub['id']}/transactions?{window}")
    ).json()
    assert [t["status"] for t in listed["transactions"]] == ["COMPLETED", "COMPLETED"]
    assert listed["transactions"][0]["amount_with_breakdown"]["gross_amount"] == euros("9.00")
    missing = await api("GET", f"/v1/billing/subscriptions/{sub['id']}/transactions")
    assert missing.status_code == 400
