"""The PayPal simulator's new bodies validate against PayPal's OpenAPI documents
(``../shared/provider-data/paypal``): refunds tagged and noted (made, pending, read back, and
as their order shows them), the refund request the adapter sends, the refusal of a note that
breaks its pattern, disputes at each stage and their list, the events list, a subscription's
transactions, a 429, and every webhook these send."""

from __future__ import annotations

import json
from typing import Any

import httpx
import jsonschema

from conformance.test_paypal_sim_schemas import SPECS, errors
from edge.providers.base import REFUND, CheckoutRequest, FollowUp, FollowUpRequest
from edge.providers.paypal import PAYPAL
from edge.sim.paypal import PayPalSimulator

TX = "tx_01JD0000000000000000000006"
RF = "rf_01JD0000000000000000000004"


def response_errors(provider_data, spec: str, path: str, method: str, status: str, body: Any):
    """``body`` against the documented answer ``status`` of ``method path``."""
    document = json.loads((provider_data / "paypal" / SPECS[spec]).read_text())
    answer = document["paths"][path][method]["responses"][status]
    schema = answer["content"]["application/json"]["schema"]
    validator = jsonschema.Draft4Validator({**schema, "components": document["components"]})
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(body)]


class Walk:
    """One of each new body, made through the API as the node and PayPal make them."""

    def __init__(self, sim: PayPalSimulator, http: httpx.AsyncClient) -> None:
        self.sim, self.http = sim, http
        self.credentials = {
            "clientId": "schemas",
            "clientSecret": "secret",
            "webhookId": "W",
            "apiBase": sim.url,
        }
        self.token = ""

    async def call(self, method: str, path: str, body: Any = None) -> httpx.Response:
        if not self.token:
            self.token = (
                await self.http.post(
                    f"{self.sim.url}/v1/oauth2/token",
                    auth=("schemas", "secret"),
                    data={"grant_type": "client_credentials"},
                )
            ).json()["access_token"]
        return await self.http.request(
            method,
            f"{self.sim.url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
        )

    async def paid_tx(self) -> dict[str, Any]:
        tx: dict[str, Any] = {
            "id": TX,
            "kind": "payment",
            "amount": 2000,
            "currency": "EUR",
            "isTest": True,
            "createdAt": 1_790_000_000_000,
            "metadata": {},
        }
        started = await PAYPAL.create_checkout(
            CheckoutRequest(
                tx, {"name": "A book"}, self.credentials, "https://s", "https://s", self.http
            )
        )
        tx["providerRef"] = started.provider_ref
        await self.http.post(
            f"{self.sim.url}/checkoutnow", data={"token": tx["providerRef"], "action": "approve"}
        )
        follow = FollowUpRequest(
            FollowUp("capture", {"orderId": tx["providerRef"]}), tx, self.credentials, self.http
        )
        await PAYPAL.follow_up(follow)
        return tx


async def _walk(sim: PayPalSimulator) -> dict[str, Any]:
    seen: dict[str, Any] = {}
    sim.register_webhook("schemas", "secret", "http://127.0.0.1:9/unreachable")
    sim.deliveries_paused = True
    sent: list[httpx.Request] = []

    async def record(request: httpx.Request) -> None:
        sent.append(request)

    async with httpx.AsyncClient(event_hooks={"request": [record]}) as http:
        walk = Walk(sim, http)
        tx = await walk.paid_tx()
        order_id = tx["providerRef"]
        capture = sim.order(order_id)["purchase_units"][0]["payments"]["captures"][0]["id"]
        params = {"refundId": RF, "amount": 500, "reason": "Returned, sorry", "whole": False}
        send = PAYPAL.send_refund
        assert send is not None
        made = await send(FollowUpRequest(FollowUp(REFUND, params), tx, walk.credentials, http))
        seen["refund request"] = json.loads(
            next(r for r in sent if r.url.path.endswith("/refund")).content
        )
        seen["refund made"] = (await walk.call("GET", f"/v2/payments/refunds/{made.id}")).json()
        sim.set_refund_outcome(capture, "PENDING")
        seen["refund pending"] = (
            await walk.call(
                "POST",
                f"/v2/payments/captures/{capture}/refund",
                {"amount": {"currency_code": "EUR", "value": "1.00"}, "custom_id": "rf_2"},
            )
        ).json()
        seen["refund refused"] = (
            await walk.call(
                "POST",
                f"/v2/payments/captures/{capture}/refund",
                {"amount": {"currency_code": "EUR", "value": "1.00"}, "note_to_payer": "a\nb"},
            )
        ).json()
        seen["order with refunds"] = (
            await walk.call("GET", f"/v2/checkout/orders/{order_id}")
        ).json()
        dispute = await sim.dispute(capture, amount="8.00", stage="INQUIRY")
        seen["dispute inquiry"] = (
            await walk.call("GET", f"/v1/customer/disputes/{dispute}")
        ).json()
        await sim.escalate_dispute(dispute)
        seen["dispute claim"] = (await walk.call("GET", f"/v1/customer/disputes/{dispute}")).json()
        await sim.resolve_dispute(dispute, "RESOLVED_BUYER_FAVOUR")
        seen["dispute lost"] = (await walk.call("GET", f"/v1/customer/disputes/{dispute}")).json()
        seen["disputes"] = (
            await walk.call("GET", f"/v1/customer/disputes?disputed_transaction_id={capture}")
        ).json()
        seen["no disputes"] = (
            await walk.call("GET", "/v1/customer/disputes?disputed_transaction_id=NONE")
        ).json()
        seen["events page"] = (
            await walk.call("GET", "/v1/notifications/webhooks-events?page_size=2")
        ).json()
        sim.rate_limit(path=r"/v2/checkout/orders")
        seen["rate limited"] = (await walk.call("GET", f"/v2/checkout/orders/{order_id}")).json()
        subscribed = await _subscription(walk)
        window = "start_time=2000-01-01T00:00:00Z&end_time=2100-01-01T00:00:00Z"
        seen["transactions"] = (
            await walk.call("GET", f"/v1/billing/subscriptions/{subscribed}/transactions?{window}")
        ).json()
    seen["events"] = [event for _, event in sim.held]
    return seen


async def _subscription(walk: Walk) -> str:
    product = (await walk.call("POST", "/v1/catalogs/products", {"name": "Pro"})).json()
    cycle = {
        "frequency": {"interval_unit": "MONTH", "interval_count": 1},
        "tenure_type": "REGULAR",
        "sequence": 1,
        "total_cycles": 0,
        "pricing_scheme": {"fixed_price": {"currency_code": "EUR", "value": "9.00"}},
    }
    plan = (
        await walk.call(
            "POST",
            "/v1/billing/plans",
            {"product_id": product["id"], "name": "Pro", "billing_cycles": [cycle]},
        )
    ).json()
    context = {"return_url": "https://s/back", "cancel_url": "https://s/c"}
    sub = (
        await walk.call(
            "POST",
            "/v1/billing/subscriptions",
            {"plan_id": plan["id"], "custom_id": TX, "application_context": context},
        )
    ).json()
    token = sub["links"][0]["href"].rsplit("ba_token=", 1)[1]
    await walk.http.post(
        f"{walk.sim.url}/webapps/billing/subscriptions",
        data={"ba_token": token, "action": "approve"},
    )
    await walk.sim.renew(sub["id"])
    return str(sub["id"])


async def test_the_new_answers_are_what_paypal_documents(provider_data, paypal):
    seen = await _walk(paypal)
    checks = [
        ("payments", "refund_request", "refund request"),
        ("payments", "refund", "refund made"),
        ("payments", "refund", "refund pending"),
        ("orders", "order", "order with refunds"),
        ("disputes", "dispute", "dispute inquiry"),
        ("disputes", "dispute", "dispute claim"),
        ("disputes", "dispute", "dispute lost"),
        ("disputes", "dispute_search", "disputes"),
        ("disputes", "dispute_search", "no disputes"),
        ("webhooks", "EventList", "events page"),
        ("webhooks", "error", "rate limited"),
        ("subscriptions", "transactions_list", "transactions"),
    ]
    for spec, schema, name in checks:
        assert errors(provider_data, spec, schema, seen[name]) == [], name
    assert seen["refund request"] == {
        "amount": {"currency_code": "EUR", "value": "5.00"},
        "custom_id": RF,
        "note_to_payer": "Returned, sorry",
    }
    assert seen["refund made"]["custom_id"] == RF
    assert seen["refund pending"]["status"] == "PENDING"
    assert seen["order with refunds"]["purchase_units"][0]["payments"]["refunds"]
    assert seen["dispute lost"]["dispute_outcome"]["amount_refunded"]["value"] == "8.00"
    assert seen["rate limited"]["name"] == "RATE_LIMIT_REACHED"
    refused = seen["refund refused"]
    path = "/v2/payments/captures/{capture_id}/refund"
    assert response_errors(provider_data, "payments", path, "post", "400", refused) == []
    assert refused["details"][0]["issue"] == "INVALID_PARAMETER_SYNTAX"


async def test_every_new_webhook_and_its_resource_validate(provider_data, paypal):
    seen = await _walk(paypal)
    types = [event["event_type"] for event in seen["events"]]
    assert types[:6] == [
        "CHECKOUT.ORDER.APPROVED",
        "PAYMENT.CAPTURE.COMPLETED",
        "PAYMENT.CAPTURE.REFUNDED",
        "CUSTOMER.DISPUTE.CREATED",
        "CUSTOMER.DISPUTE.UPDATED",
        "CUSTOMER.DISPUTE.RESOLVED",
    ]
    for event in seen["events"]:
        assert errors(provider_data, "webhooks", "event", event) == [], event["event_type"]
        kind = event["event_type"]
        if kind.startswith("CUSTOMER.DISPUTE."):
            assert errors(provider_data, "disputes", "dispute", event["resource"]) == [], kind
        if kind == "PAYMENT.CAPTURE.REFUNDED":
            assert errors(provider_data, "payments", "refund", event["resource"]) == [], kind
            assert event["resource"]["custom_id"] == RF
