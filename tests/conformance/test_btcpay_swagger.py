"""The BTCPay simulator's answers and webhook bodies, and the adapter's requests, validate against
BTCPay's own Greenfield swagger (``../shared/provider-data/btcpay``, the 28 templates merged,
with the allOf fix of PROVIDERS.md "Swagger and the allOf trap"): a body BTCPay would never send
(an unknown field, a flag as a string, an amount as a number) does not.

Where the swagger and BTCPay's own serialization disagree, the source wins and the schema is
corrected here, each correction named with its source (``as_served``): the pull payment's
``startsAt``/``expiresAt`` and whole-day ``BOLT11Expiration``, the payout's unix ``date`` and its
``paymentProof`` null until paid; the refund request's ``payoutMethodId`` is the v2.0 to v2.4.0
swagger's (kept by v2.4.1, ``[Obsolete]``)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import trio
from support.asgi import serve_asgi

from edge.providers.base import CheckoutRequest
from edge.providers.btcpay.adapter import invoice_body
from edge.providers.btcpay.refunds import refund_body
from edge.sim.btcpay import BTCPaySimulator

TX = "tx_01JD0000000000000000000001"


def published(provider_data: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every template's component schemas merged (``StoreId`` and others live in other
    templates), and the documented webhook types."""
    schemas: dict[str, Any] = {}
    webhooks: dict[str, Any] = {}
    for template in sorted((provider_data / "btcpay").glob("swagger.template*.json")):
        document = json.loads(template.read_text("utf-8"))
        schemas.update(document.get("components", {}).get("schemas", {}))
        webhooks.update(document.get("x-webhooks", {}))
    return schemas, webhooks


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def fixed(schemas: dict[str, Any]) -> dict[str, Any]:
    """``nullable: true`` as "null, or else the schema"; no ``additionalProperties: false`` in
    an allOf arm (inline or a component used as one): it would refuse the other arms'
    properties."""
    schemas = copy.deepcopy(schemas)
    arms = [arm for node in _walk(schemas) for arm in node.get("allOf") or []]
    for arm in arms:
        ref = arm.get("$ref", "")
        target = schemas[ref.rsplit("/", 1)[1]] if ref else arm
        if target.get("additionalProperties") is False:
            del target["additionalProperties"]
    for node in list(_walk(schemas)):
        if node.pop("nullable", False) is True:
            rest = dict(node)
            node.clear()
            node["anyOf"] = [{"type": "null"}, rest]
    return schemas


def validator(schemas: dict[str, Any], name: str) -> jsonschema.Draft202012Validator:
    # 2020-12's unevaluatedProperties sees through allOf and $ref: the whole body, strictly
    root = {
        "$ref": f"#/components/schemas/{name}",
        "unevaluatedProperties": False,
        "components": {"schemas": schemas},
    }
    return jsonschema.Draft202012Validator(root)


def errors(schemas: dict[str, Any], name: str, body: Any) -> list[str]:
    found = validator(schemas, name).iter_errors(body)
    return [f"{list(e.absolute_path)}: {e.message}" for e in found]


def webhook_schema(webhooks: dict[str, Any], event_type: str) -> str:
    """The documented schema of a webhook type; the base invoice event for the three BTCPay
    sends without one (InvoiceExpiredPaidPartial, InvoicePaidAfterExpiration, InvoiceRefund,
    this one with its pull payment: ``as_served``). Payout events are documented inline:
    ``as_served`` names them ``WebhookPayout:{type}``."""
    if event_type == "InvoiceRefund":
        return "WebhookInvoiceRefundEvent"
    documented = webhooks.get(event_type)
    if documented is None:
        return "WebhookInvoiceEvent"
    schema = documented["post"]["requestBody"]["content"]["application/json"]["schema"]
    if "$ref" not in schema:
        return f"WebhookPayout:{event_type}"
    return str(schema["$ref"].rsplit("/", 1)[1])


def as_served(schemas: dict[str, Any], webhooks: dict[str, Any]) -> dict[str, Any]:
    """The merged schemas corrected where BTCPay's own serialization (btcpayserver@03345c28)
    disagrees with its swagger, and the schemas of the webhooks it documents inline or not at
    all."""
    schemas = copy.deepcopy(schemas)
    unix = {"$ref": "#/components/schemas/UnixTimestamp"}
    pull_payment = schemas["PullPaymentData"]["properties"]
    # BTCPayServer.Client/Models/PullPaymentBaseData.cs: StartsAt, ExpiresAt (nullable) with
    # DateTimeToUnixTimeConverter; BOLT11Expiration with TimeSpanJsonConverter.Days (a number)
    pull_payment["startsAt"] = unix
    pull_payment["expiresAt"] = {"anyOf": [{"type": "null"}, unix]}
    pull_payment["BOLT11Expiration"] = {"type": "integer"}
    payout = schemas["PayoutData"]["properties"]
    # BTCPayServer.Client/Models/PayoutData.cs: Date with DateTimeToUnixTimeConverter;
    # PaymentProof = p.GetProofBlobJson(), null while there is no proof (PayoutExtensions.cs:54)
    payout["date"] = unix
    payout["paymentProof"] = {
        "anyOf": [{"type": "null"}, {"$ref": "#/components/schemas/PayoutPaymentProof"}]
    }
    # v2.0.0 to v2.4.0 swagger.template.invoices.json: RefundInvoiceRequest.payoutMethodId
    request = schemas["RefundInvoiceRequest"]["properties"]
    request["payoutMethodId"] = {"$ref": "#/components/schemas/PayoutMethodId"}
    # BTCPayServer.Client/Models/WebhookInvoiceEvent.cs:114-121, WebhookInvoiceRefundEvent
    schemas["WebhookInvoiceRefundEvent"] = {
        "allOf": [
            {"$ref": "#/components/schemas/WebhookInvoiceEvent"},
            {"type": "object", "properties": {"pullPaymentId": {"type": "string"}}},
        ]
    }
    # WebhookPayoutEvent (WebhookInvoiceEvent.cs:8-21) is a StoreWebhookEvent: the base event
    # and storeId, beside the properties x-webhooks documents
    for event_type in ("PayoutCreated", "PayoutApproved", "PayoutUpdated"):
        inline = webhooks[event_type]["post"]["requestBody"]["content"]["application/json"]
        schemas[f"WebhookPayout:{event_type}"] = {
            "allOf": [
                {"$ref": "#/components/schemas/WebhookEvent"},
                {"type": "object", "properties": {"storeId": {"type": "string"}}},
                inline["schema"],
            ]
        }
    schemas["InvoicePaymentMethodDataList"] = {
        "type": "array",
        "items": {"$ref": "#/components/schemas/InvoicePaymentMethodDataModel"},
    }
    return schemas


class Receiver:
    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        self.bodies.append(body)
        return 200, b""


async def _everything(sim: BTCPaySimulator, url: str) -> dict[str, Any]:
    """One of every answer, and every delivery, the simulator makes."""
    store = sim.register_store("k")
    webhook, _ = sim.register_webhook(store, url)
    base, auth = f"{sim.url}/api/v1/stores/{store}", {"Authorization": "token k"}
    answers: dict[str, Any] = {}
    async with httpx.AsyncClient() as http:

        async def create() -> str:
            body = {
                "amount": "10.00",
                "currency": "EUR",
                "metadata": {"orderId": TX, "customerRef": "c"},
                "checkout": {"redirectURL": "https://shop.example/thanks", "expirationMinutes": 30},
            }
            answer = await http.post(f"{base}/invoices", json=body, headers=auth)
            answers.setdefault("created", answer.json())
            return str(answer.json()["id"])

        paid = await create()
        await sim.pay(paid, part=True)
        await sim.pay(paid)
        await sim.confirm(paid)
        await sim.refund(paid)
        answers["read"] = (await http.get(f"{base}/invoices/{paid}", headers=auth)).json()
        answers["payment_methods"] = (
            await http.get(f"{base}/invoices/{paid}/payment-methods", headers=auth)
        ).json()
        refund = {"refundVariant": "Custom", "customAmount": "4.00", "customCurrency": "EUR"}
        made = await http.post(f"{base}/invoices/{paid}/refund", json=refund, headers=auth)
        answers["pull_payment"] = made.json()
        pull_payment = str(made.json()["id"])
        await sim.pay_refund(pull_payment)
        crypto = await sim.refund(paid, "RateThen")
        cancelled = await sim.claim(crypto, "0.00001000")
        await sim.cancel_payout(cancelled)
        await sim.claim(crypto)
        await sim.archive_pull_payment(crypto)
        answers["pull_payments"] = (
            await http.get(f"{base}/pull-payments?includeArchived=true", headers=auth)
        ).json()
        answers["payouts"] = [
            payout
            for pp in (pull_payment, crypto)
            for payout in (
                await http.get(f"{sim.url}/api/v1/pull-payments/{pp}/payouts?includeCancelled=true")
            ).json()
        ]
        answers["refund_refused"] = (
            await http.post(f"{base}/invoices/{paid}/refund", json={}, headers=auth)
        ).json()
        # a naturally settled invoice cannot be marked (InvoiceEntity.cs:804-822): Greenfield's
        # validation error; one marked settled while New can then be marked invalid
        refused = await http.post(
            f"{base}/invoices/{paid}/status", json={"status": "Invalid"}, headers=auth
        )
        assert refused.status_code == 422, refused.text
        answers["refused"] = refused.json()
        by_hand = await create()
        await http.post(
            f"{base}/invoices/{by_hand}/status", json={"status": "Settled"}, headers=auth
        )
        marked = await http.post(
            f"{base}/invoices/{by_hand}/status", json={"status": "Invalid"}, headers=auth
        )
        answers["marked"] = marked.json()
        app = sim.register_pos_app(store, "EUR")
        made = await http.post(
            f"{sim.url}/apps/{app}/pos",
            data={"amount": "1.00", "orderId": TX},
            headers={"Accept": "application/json"},
        )
        answers["pos"] = (
            await http.get(f"{base}/invoices/{made.json()['invoiceId']}", headers=auth)
        ).json()
        await sim.pay(made.json()["invoiceId"])
        late = await create()
        await sim.pay(late, part=True)
        await sim.expire(late)
        await sim.pay(late)
        answers["expired"] = (await http.get(f"{base}/invoices/{late}", headers=auth)).json()
        invalid = await create()
        await sim.pay(invalid)
        await sim.invalidate(invalid)
        answers["invoices"] = (
            await http.get(f"{base}/invoices?includePaymentMethods=true&take=3", headers=auth)
        ).json()
        answers["non_refundable"] = (
            await http.post(f"{base}/invoices/{await create()}/refund", json=refund, headers=auth)
        ).json()
        await sim.drained()
        deliveries = f"{base}/webhooks/{webhook}/deliveries"
        answers["deliveries"] = (await http.get(deliveries, headers=auth)).json()
    return answers


@pytest.fixture
async def walked() -> Any:
    sim, receiver = BTCPaySimulator(), Receiver()
    async with trio.open_nursery() as nursery:
        await nursery.start(sim.run)
        answers = await _everything(sim, await nursery.start(serve_asgi, receiver))
        sim.stop()
        nursery.cancel_scope.cancel()
    return answers, [json.loads(body) for body in receiver.bodies]


async def test_every_delivery_validates(provider_data, walked):
    schemas, webhooks = published(provider_data)
    schemas = fixed(as_served(schemas, webhooks))
    _, deliveries = walked
    types = {d["type"] for d in deliveries}
    assert types == {
        "InvoiceCreated",
        "InvoiceReceivedPayment",
        "InvoiceProcessing",
        "InvoicePaymentSettled",
        "InvoiceSettled",
        "InvoiceRefund",
        "InvoiceInvalid",
        "InvoiceExpired",
        "InvoiceExpiredPaidPartial",
        "InvoicePaidAfterExpiration",
        "PayoutCreated",
        "PayoutApproved",
        "PayoutUpdated",
    }
    for delivery in deliveries:
        name = webhook_schema(webhooks, delivery["type"])
        assert errors(schemas, name, delivery) == [], (delivery["type"], delivery)


async def test_every_answer_validates(provider_data, walked):
    schemas = fixed(published(provider_data)[0])
    answers, _ = walked
    for name in ("created", "read", "marked", "expired", "pos"):
        assert errors(schemas, "InvoiceData", answers[name]) == [], (name, answers[name])
    assert answers["expired"]["additionalStatus"] == "PaidLate"
    assert (answers["marked"]["status"], answers["marked"]["additionalStatus"]) == (
        "Invalid",
        "Marked",
    )
    assert errors(schemas, "ValidationProblemDetails", answers["refused"]) == []
    assert errors(schemas, "WebhookDeliveryList", answers["deliveries"]) == []


async def test_every_refund_answer_validates(provider_data, walked):
    """The pull payments, their payouts (each state), the invoice list with payment methods,
    and the refund's refusals."""
    schemas = fixed(as_served(*published(provider_data)))
    answers, _ = walked
    assert errors(schemas, "PullPaymentData", answers["pull_payment"]) == []
    assert errors(schemas, "PullPaymentDataList", answers["pull_payments"]) == []
    # offered in BTCPay's screens (one since archived), and made through the API
    assert [pp["archived"] for pp in answers["pull_payments"]] == [True, False, False]
    assert errors(schemas, "PayoutDataList", answers["payouts"]) == []
    assert {p["state"] for p in answers["payouts"]} == {"Completed", "Cancelled"}
    assert errors(schemas, "InvoiceDataList", answers["invoices"]) == []
    assert [len(i["paymentMethods"]) for i in answers["invoices"]] == [1, 1, 1]
    assert errors(schemas, "InvoicePaymentMethodDataList", answers["payment_methods"]) == []
    assert errors(schemas, "ValidationProblemDetails", answers["refund_refused"]) == []
    assert answers["non_refundable"]["code"] == "non-refundable"
    assert errors(schemas, "ProblemDetails", answers["non_refundable"]) == []
    # the corrections are needed: the swagger alone refuses what BTCPay serves
    published_only = fixed(published(provider_data)[0])
    assert errors(published_only, "PullPaymentData", answers["pull_payment"])
    assert errors(published_only, "PayoutDataList", answers["payouts"])


def test_the_adapters_refund_request_validates(provider_data):
    schemas = fixed(as_served(*published(provider_data)))
    tx = {"id": TX, "currency": "EUR", "providerRef": "INV1"}
    rf = "rf_01JD00000000000000000000A1"
    for whole in (False, True):
        params = {"refundId": rf, "amount": 400, "reason": "Damaged", "whole": whole}
        body = refund_body(tx, params, "BTC-CHAIN")
        assert errors(schemas, "RefundInvoiceRequest", body) == [], body
    wrong = {**refund_body(tx, params, None), "customAmount": 4.0, "refundVariant": "Partial"}
    assert errors(schemas, "RefundInvoiceRequest", wrong)


def test_the_adapters_request_validates(provider_data):
    schemas = fixed(published(provider_data)[0])
    tx = {
        "id": TX,
        "kind": "payment",
        "amount": 1999,
        "currency": "EUR",
        "customerRef": "c",
        "metadata": {"customerRef": "c", "order": "A-1"},
    }
    request = CheckoutRequest(
        tx=tx,
        product={"name": "Book"},
        credentials={},
        success_url="https://shop.example/thanks",
        cancel_url="https://shop.example/cart",
        http=httpx.AsyncClient(),
    )
    body = invoice_body(request)
    assert errors(schemas, "CreateInvoiceRequest", body) == []
    wrong = {**body, "amount": 19.99, "checkout": {**body["checkout"], "redirectUrl": "x"}}
    assert errors(schemas, "CreateInvoiceRequest", wrong)


async def test_the_check_can_fail(provider_data, walked):
    schemas, webhooks = published(provider_data)
    _, deliveries = walked
    settled = next(d for d in deliveries if d["type"] == "InvoiceSettled")
    # as published, every real body fails: the base's additionalProperties: false in an allOf
    assert errors(schemas, "WebhookInvoiceSettledEvent", settled)
    strict = fixed(schemas)
    assert errors(strict, "WebhookInvoiceSettledEvent", {**settled, "bogus": 1})
    assert errors(strict, "WebhookInvoiceSettledEvent", {**settled, "overPaid": "no"})
    assert errors(strict, "WebhookInvoiceEvent", {**settled, "timestamp": "1795254528"})
