"""The Paddle simulator's notifications and answers validate against Paddle's own OpenAPI 3.1
document (``../shared/provider-data/paddle/openapi.yaml``: the ``webhooks`` event schemas and
the API's request and response schemas, JSON Schema 2020-12), its lists (``GET /adjustments``,
``GET /events``, each listed event against its type's schema too), ``GET /subscriptions/{id}``
and its 429 included; the adapter's create-transaction and refund bodies validate against the
request schemas; and the SDK's own notification fixtures normalize
through the adapter's table to the types PROVIDERS.md gives. A body Paddle would never send (an
unknown status, an amount as a number) does not validate, so the checks can fail.

The document is YAML: reading it needs PyYAML, which skips these checks with a reason when it is
not installed (or fails them under EDGE_REQUIRE_CONFORMANCE=1, as a missing directory does)."""

from __future__ import annotations

import copy
import importlib
import json
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import trio

from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.providers.base import CheckoutRequest, FollowUp, FollowUpRequest
from edge.providers.paddle.adapter import checkout_body, send_refund
from edge.providers.paddle.events import normalize
from edge.sim.paddle import SUPPORTED_TRIGGERS, PaddleSimulator, event_for_trigger
from edge.sim.paddle import objects as paddle_objects

TX = "tx_01JD0000000000000000000001"
KEY = "pdl_sdbx_apikey_schemas"
UNUSED_HTTP = httpx.AsyncClient()  # the request carries one; building the body never calls


@pytest.fixture(scope="module")
def spec(provider_data: Path) -> dict[str, Any]:
    yaml: Any = importlib.import_module("yaml")  # (no type stubs for PyYAML)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader reads 1.6 MB in a blink
    with (provider_data / "paddle" / "openapi.yaml").open("rb") as document:
        loaded: dict[str, Any] = yaml.load(document, Loader=loader)
    return loaded


def errors(spec: dict[str, Any], schema: dict[str, Any], body: Any) -> list[str]:
    validator = jsonschema.Draft202012Validator({**schema, "components": spec["components"]})
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(body)]


def component(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def answer_schema(spec: dict[str, Any], path: str, method: str, status: str) -> dict[str, Any]:
    schema: dict[str, Any] = spec["paths"][path][method]["responses"][status]["content"][
        "application/json"
    ]["schema"]
    return schema


def request_schema(spec: dict[str, Any], path: str) -> dict[str, Any]:
    schema: dict[str, Any] = spec["paths"][path]["post"]["requestBody"]["content"][
        "application/json"
    ]["schema"]
    return schema


async def _walk(sim: PaddleSimulator) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Every notification the simulator makes, and one of each API answer."""
    sim.deliveries_paused = True  # keep the events; nobody listens
    sim.register_destination(KEY, "http://127.0.0.1:9/unreachable")
    answers: dict[str, Any] = {}
    headers = {"Authorization": f"Bearer {KEY}", "Paddle-Version": "1"}

    def body(currency: str, cycle: bool) -> dict[str, Any]:
        price: dict[str, Any] = {
            "description": "Plan",
            "name": "Plan",
            "unit_price": {"amount": "1999", "currency_code": currency},
            "product": {"name": "Plan", "tax_category": "standard"},
        }
        if cycle:
            price["billing_cycle"] = {"interval": "month", "frequency": 1}
        return {"items": [{"quantity": 1, "price": price}], "custom_data": {"txId": TX}}

    async with httpx.AsyncClient() as http:

        async def create(currency: str, cycle: bool) -> str:
            made = await http.post(
                f"{sim.url}/transactions", json=body(currency, cycle), headers=headers
            )
            assert made.status_code == 201, made.text
            answers.setdefault("created", made.json())
            return str(made.json()["data"]["id"])

        one_time = await create("JPY", cycle=False)  # no payout currency: payouts are null
        await sim.decline(one_time)
        await sim.pay(one_time)
        await sim.refund(one_time, 100)
        await sim.refund(one_time, 100, null_type=True)  # as Paddle's SDK fixtures show them
        rejected = await sim.refund(one_time, 100, approve=False)
        await sim.reject_refund(rejected)
        line = sim.transaction(one_time)["details"]["line_items"][0]["id"]
        adjusted = await http.post(
            f"{sim.url}/adjustments",
            json={
                "action": "refund",
                "transaction_id": one_time,
                "reason": "error",
                "items": [{"item_id": line, "type": "partial", "amount": "50"}],
            },
            headers=headers,
        )
        answers["adjustment"] = adjusted.json()
        await sim.approve_refund(adjusted.json()["data"]["id"])
        await sim.refund(one_time, items=[{"item_id": line, "type": "full"}])
        # Paddle.js: a catalog price, customData given and then replaced
        token = sim.register_client_token(KEY)
        price = sim.create_price(KEY, "Tip", 100, "EUR")
        web = await sim.checkout_open(
            token, items=[{"priceId": price, "quantity": 1}], custom_data={"txId": TX}
        )
        await sim.update_checkout(token, web, {"txId": TX, "note": "replaced"})
        await sim.pay(web)
        await sim.refund(web)
        await sim.chargeback(one_time)
        await sim.chargeback_reverse(one_time)
        recurring = await create("EUR", cycle=True)
        await sim.pay(recurring)
        read = await http.get(f"{sim.url}/transactions/{recurring}", headers=headers)
        answers["read"] = read.json()
        sub_id = sim.subscription_of(TX)
        await sim.refund(recurring, 500)
        await sim.renew(sub_id)
        await sim.fail_renewal(sub_id)
        await sim.pause_subscription(sub_id)
        await sim.resume_subscription(sub_id)
        await sim.cancel_subscription(sub_id)
        await sim.cancel_transaction(await create("USD", cycle=False))
        patched = await http.patch(
            f"{sim.url}/transactions/{await create('USD', cycle=False)}",
            json={"status": "canceled"},
            headers=headers,
        )
        answers["patched"] = patched.json()
        # what Paddle makes itself: a chargeback warning and its reversal, a chargeback of part
        # of a payment and its reversal (the chargeback is then ``reversed``)
        await sim.chargeback_warning(one_time, 50)
        await sim.chargeback_warning_reverse(one_time)
        await sim.chargeback(recurring, 300)
        await sim.chargeback_reverse(recurring)
        answers["adjustments"] = (
            await http.get(f"{sim.url}/adjustments", params={"per_page": "50"}, headers=headers)
        ).json()
        answers["events"] = (
            await http.get(f"{sim.url}/events", params={"per_page": "200"}, headers=headers)
        ).json()
        answers["subscription"] = (
            await http.get(f"{sim.url}/subscriptions/{sub_id}", headers=headers)
        ).json()
        sim.rate_limit(retry_after_s=3)
        answers["limited"] = (await http.get(f"{sim.url}/events", headers=headers)).json()
        customer = sim.subscription(sub_id)["customer_id"]
        portal = await http.post(
            f"{sim.url}/customers/{customer}/portal-sessions",
            json={"subscription_ids": [sub_id]},
            headers=headers,
        )
        answers["portal"] = portal.json()
        refused = await http.post(f"{sim.url}/transactions", json={"items": []}, headers=headers)
        answers["error"] = refused.json()
        short = body("EUR", cycle=False)
        short["items"][0]["price"]["description"] = "A"  # minLength 2
        refused = await http.post(f"{sim.url}/transactions", json=short, headers=headers)
        answers["short"] = refused.json()
    return [event for _, event in sim.held], answers


@pytest.fixture(scope="module")
def walked() -> tuple[list[dict[str, Any]], dict[str, Any]]:
    async def run() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        sim = PaddleSimulator()
        async with trio.open_nursery() as nursery:
            await nursery.start(sim.run)
            try:
                return await _walk(sim)
            finally:
                sim.stop()

    return trio.run(run)


def test_every_simulated_notification_validates(spec, walked):
    notifications, _ = walked
    types = {event["event_type"] for event in notifications}
    assert {"transaction.completed", "adjustment.updated", "subscription.created"} <= types
    assert "transaction.updated" in types  # Paddle.js's updateCheckout
    assert len(types) == 16
    refunds = [e["data"] for e in notifications if e["event_type"] == "adjustment.updated"]
    assert {r["type"] for r in refunds} == {"full", "partial", None}
    assert {r["status"] for r in refunds} == {"approved", "rejected"}
    for event in notifications:
        assert errors(spec, component(event["event_type"]), event) == [], event["event_type"]


@pytest.mark.parametrize("normalized_type", SUPPORTED_TRIGGERS)
def test_every_trigger_event_validates(spec, normalized_type):
    tx = {"id": TX, "kind": "subscription", "amount": 1999, "currency": "EUR", "interval": "month"}
    event = event_for_trigger(normalized_type, tx)
    assert errors(spec, component(event["event_type"]), json.loads(json.dumps(event))) == []


def test_what_paddle_would_never_send_does_not_validate(spec, walked):
    notifications, _ = walked
    completed = next(e for e in notifications if e["event_type"] == "transaction.completed")
    for change in (
        lambda d: d.update(status="succeeded"),
        lambda d: d["details"]["totals"].update(total=1999),
        lambda d: d.update(id="txn_123"),
    ):
        bad = copy.deepcopy(completed)
        change(bad["data"])
        assert errors(spec, component("transaction.completed"), bad)
    bad = copy.deepcopy(completed)
    bad["event_id"] = "evt_TOO_SHORT"
    assert errors(spec, component("transaction.completed"), bad)


def test_the_api_answers_validate(spec, walked):
    _, answers = walked
    created = answer_schema(spec, "/transactions", "post", "201")
    assert errors(spec, created, answers["created"]) == []
    read = answer_schema(spec, "/transactions/{transaction_id}", "get", "200")
    assert errors(spec, read, answers["read"]) == []
    portal = answer_schema(spec, "/customers/{customer_id}/portal-sessions", "post", "201")
    assert errors(spec, portal, answers["portal"]) == []
    assert errors(spec, component("error"), answers["error"]) == []
    assert errors(spec, component("error"), answers["short"]) == []
    assert answers["short"]["error"]["errors"][0]["field"] == "items[0].price.description"
    patched = answer_schema(spec, "/transactions/{transaction_id}", "patch", "200")
    assert errors(spec, patched, answers["patched"]) == []
    adjusted = answer_schema(spec, "/adjustments", "post", "201")
    assert errors(spec, adjusted, answers["adjustment"]) == []
    wrong = copy.deepcopy(answers["portal"])
    wrong["data"]["urls"]["general"]["extra"] = "x"  # additionalProperties: false
    assert errors(spec, portal, wrong)
    subscription = answer_schema(spec, "/subscriptions/{subscription_id}", "get", "200")
    assert errors(spec, subscription, answers["subscription"]) == []
    assert errors(spec, component("error"), answers["limited"]) == []
    assert answers["limited"]["error"]["code"] == "too_many_requests"


def test_the_lists_validate_with_every_kind_of_adjustment_and_event(spec, walked):
    notifications, answers = walked
    adjustments = answer_schema(spec, "/adjustments", "get", "200")
    assert errors(spec, adjustments, answers["adjustments"]) == []
    listed = answers["adjustments"]["data"]
    assert {a["action"] for a in listed} == {
        "refund",
        "chargeback",
        "chargeback_reverse",
        "chargeback_warning",
        "chargeback_warning_reverse",
    }
    assert {a["status"] for a in listed} == {"approved", "rejected", "reversed"}
    assert None not in {a["type"] for a in listed}  # null only in notifications
    stream = answer_schema(spec, "/events", "get", "200")
    assert errors(spec, stream, answers["events"]) == []
    events = answers["events"]["data"]
    assert {e["event_id"] for e in events} == {e["event_id"] for e in notifications}
    for event in events:
        assert errors(spec, component(event["event_type"]), event) == [], event["event_type"]
    wrong = copy.deepcopy(answers["events"])
    wrong["meta"]["pagination"].pop("next")  # "Always returned, even if has_more is false"
    assert errors(spec, stream, wrong)
    wrong = copy.deepcopy(answers["adjustments"])
    wrong["data"][0]["status"] = "refunded"
    assert errors(spec, adjustments, wrong)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"kind": "subscription", "interval": "month", "quantity": 1},
        {"currency": "JPY", "amount": 1000},
        {"amount": 3001},  # does not split into 3: one line
    ],
)
def test_the_adapters_transaction_body_validates(spec, changes):
    tx = {
        "id": TX,
        "kind": "payment",
        "amount": 3000,
        "currency": "EUR",
        "quantity": 3,
        "customerRef": "cust-1",
        "metadata": {"order": "A-1"},
        **changes,
    }
    request = CheckoutRequest(
        tx=tx,
        product={"name": "A book"},
        credentials={},
        success_url="",
        cancel_url="",
        http=UNUSED_HTTP,
    )
    body = checkout_body(request)
    schema = request_schema(spec, "/transactions")
    assert errors(spec, schema, body) == []
    body["items"][0]["price"]["unit_price"]["amount"] = 1999  # a number, not Paddle's string
    assert errors(spec, schema, body)


def test_the_lists_and_the_subscription_parse_as_the_sdks_entities(walked):
    """paddle-python-sdk 1.16.1 reads each answer into its own entities: ``Adjustment``,
    ``Event`` (typed ``data``), ``Subscription``; none is left undefined. Its notification
    enum of adjustment actions lacks chargeback_warning_reverse (openapi.yaml
    ``adjustment_action`` has it): that value alone is let through."""
    sdk: Any = importlib.import_module("paddle_billing.Entities.Adjustment")
    events: Any = importlib.import_module("paddle_billing.Entities.Event")
    subscriptions: Any = importlib.import_module("paddle_billing.Entities.Subscription")
    undefined: Any = importlib.import_module(
        "paddle_billing.Notifications.Entities.UndefinedEntity"
    )
    _, answers = walked
    for adjustment in answers["adjustments"]["data"]:
        parsed = sdk.Adjustment.from_dict(adjustment)
        assert parsed.action.is_known() and parsed.status.is_known() and parsed.type.is_known()
    for event in answers["events"]["data"]:
        parsed = events.Event.from_dict(event)
        assert not isinstance(parsed.data, undefined.UndefinedEntity), event["event_type"]
    parsed = subscriptions.Subscription.from_dict(answers["subscription"]["data"])
    assert parsed.status.is_known() and parsed.id == answers["subscription"]["data"]["id"]


@pytest.mark.parametrize("whole", [True, False])
async def test_the_adapters_refund_body_validates(spec, whole):
    """What ``send_refund`` posts to ``/adjustments`` is an ``adjustment-create``."""
    sent: list[Any] = []
    at = paddle_objects.now_iso()
    product = paddle_objects.product({"name": "Plan"}, at)
    given = {"description": "Plan", "unit_price": {"amount": "1000", "currency_code": "EUR"}}
    txn = paddle_objects.transaction(
        "https://sandbox-checkout.paddle.com",
        [(paddle_objects.price(given, product["id"], at), product, 1)],
        "EUR",
        {"txId": TX},
    )

    def paddle_answers(request: httpx.Request) -> httpx.Response:
        if request.method == "GET":
            return httpx.Response(200, json={"data": txn, "meta": {"request_id": "r"}})
        sent.append(json.loads(request.content))
        made = paddle_objects.adjustment(txn, "refund", 300, sent[-1]["reason"], "pending_approval")
        made["customer_id"] = paddle_objects.paddle_id("ctm")
        return httpx.Response(201, json={"data": made, "meta": {"request_id": "r"}})

    tx = {"id": TX, "currency": "EUR", "isTest": True, "providerRef": txn["id"]}
    params = {"refundId": "rf_01JD0000000000000000000001", "amount": 300, "whole": whole}
    async with httpx.AsyncClient(transport=httpx.MockTransport(paddle_answers)) as http:
        credentials = {"apiKey": KEY, "apiBase": "https://sandbox-api.paddle.com"}
        await send_refund(FollowUpRequest(FollowUp("refund", params), tx, credentials, http))
    (body,) = sent
    schema = request_schema(spec, "/adjustments")
    assert errors(spec, schema, body) == []
    assert body["type"] == ("full" if whole else "partial") and ("items" in body) != whole
    body["action"] = "refunded"
    assert errors(spec, schema, body)


FIXTURES = {
    "subscription.activated": (E.SUBSCRIPTION_UPDATED, None, S.ACTIVE),
    "subscription.canceled": (E.SUBSCRIPTION_CANCELED, None, S.CANCELED),
    "subscription.created": (E.SUBSCRIPTION_CREATED, S.SUCCEEDED, S.ACTIVE),
    "subscription.past_due": (E.SUBSCRIPTION_PAST_DUE, None, S.PAST_DUE),
    "subscription.paused": (E.SUBSCRIPTION_UPDATED, None, S.PAUSED),
    "subscription.resumed": (E.SUBSCRIPTION_UPDATED, None, S.ACTIVE),
    "subscription.trialing": (E.SUBSCRIPTION_UPDATED, None, S.TRIALING),
    "subscription.updated": (E.SUBSCRIPTION_UPDATED, None, S.ACTIVE),
    "transaction.canceled": (E.CHECKOUT_CANCELED, S.CANCELED, None),  # origin api
    "transaction.completed": (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),  # origin web
    "transaction.paid": (E.PAYMENT_SUCCEEDED, S.SUCCEEDED, None),
    "transaction.past_due": (E.SUBSCRIPTION_PAYMENT_FAILED, None, S.PAST_DUE),  # a renewal
    "transaction.payment_failed": (E.PAYMENT_ATTEMPT_FAILED, None, None),
}


@pytest.mark.parametrize("event_type", sorted(FIXTURES))
def test_the_sdks_fixtures_normalize_to_the_tables_types(provider_data, event_type):
    data = json.loads((provider_data / "paddle" / f"entity_{event_type}.json").read_text())
    body = {
        "event_id": "evt_01hv8wptq8987qeep44cyrewp9",
        "event_type": event_type,
        "occurred_at": "2024-04-12T10:18:49.621022Z",
        "notification_id": "ntf_01hv8wptq8987qeep44cyrewp9",
        "data": data,
    }
    event = normalize(json.dumps(body).encode())
    assert (event.type, event.payment_status, event.subscription_status) == FIXTURES[event_type]
    assert event.provider_customer == data["customer_id"]
    starts = event_type in ("subscription.created", "transaction.completed")
    assert event.starts_subscription == starts


def test_a_signed_sample_of_another_kind_is_stored_unmatched(provider_data):
    event = normalize((provider_data / "paddle" / "standard_payload.json").read_bytes())
    assert (event.type, event.provider_type) == (E.UNMATCHED, "customer.created")
