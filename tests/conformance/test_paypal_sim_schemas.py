"""The PayPal simulator's answers and webhook bodies validate against PayPal's own OpenAPI
documents (``../shared/provider-data/paypal``, PROVIDERS.md "Specs and payloads"): orders as
created, approved and completed, captures, refunds, plans, subscriptions, disputes and the
webhook envelope. A body PayPal would never send (an unknown status, an amount as a number)
does not validate, so the check can fail."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import httpx
import jsonschema

from edge.sim.paypal import PayPalSimulator

SPECS = {
    "orders": "checkout_orders_v2.json",
    "payments": "payments_payment_v2.json",
    "subscriptions": "billing_subscriptions_v1.json",
    "webhooks": "notifications_webhooks_v1.json",
    "disputes": "customer_disputes_v1.json",
}
TX = "tx_01JD0000000000000000000001"


def _validator(provider_data: Path, spec: str, schema: str) -> jsonschema.Draft4Validator:
    document = json.loads((provider_data / "paypal" / SPECS[spec]).read_text())
    root = {"$ref": f"#/components/schemas/{schema}", "components": document["components"]}
    return jsonschema.Draft4Validator(root)


def errors(provider_data: Path, spec: str, schema: str, body: Any) -> list[str]:
    validator = _validator(provider_data, spec, schema)
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(body)]


class Api:
    def __init__(self, sim: PayPalSimulator, http: httpx.AsyncClient) -> None:
        self.sim, self.http, self.token = sim, http, ""

    async def call(self, method: str, path: str, body: Any = None, status: int = 201) -> Any:
        if not self.token:
            answer = await self.http.post(
                f"{self.sim.url}/v1/oauth2/token",
                auth=("schema-client", "schema-secret"),
                data={"grant_type": "client_credentials"},
            )
            self.token = answer.json()["access_token"]
        answer = await self.http.request(
            method,
            f"{self.sim.url}{path}",
            json=body,
            headers={"Authorization": f"Bearer {self.token}"},
        )
        assert answer.status_code == status, answer.text
        return answer.json()


async def _walk(sim: PayPalSimulator) -> dict[str, Any]:
    """One of everything the simulator answers or delivers."""
    seen: dict[str, Any] = {}
    sim.register_webhook("schema-client", "schema-secret", "http://127.0.0.1:9/unreachable")
    sim.deliveries_paused = True  # keep the events; nobody listens
    async with httpx.AsyncClient() as http:
        api = Api(sim, http)
        context = {
            "return_url": "https://shop.example/back",
            "cancel_url": "https://shop.example/c",
        }
        seen["created"] = await api.call(
            "POST",
            "/v2/checkout/orders",
            {
                "intent": "CAPTURE",
                "purchase_units": [
                    {
                        "custom_id": TX,
                        "invoice_id": TX,
                        "description": "A book",
                        "amount": {"currency_code": "EUR", "value": "19.99"},
                    }
                ],
                "payment_source": {"paypal": {"experience_context": context}},
            },
        )
        order_id = seen["created"]["id"]
        await http.post(f"{sim.url}/checkoutnow", data={"token": order_id, "action": "approve"})
        seen["approved"] = await api.call("GET", f"/v2/checkout/orders/{order_id}", status=200)
        seen["completed"] = await api.call("POST", f"/v2/checkout/orders/{order_id}/capture", {})
        capture_id = seen["completed"]["purchase_units"][0]["payments"]["captures"][0]["id"]
        seen["capture"] = await api.call("GET", f"/v2/payments/captures/{capture_id}", status=200)
        seen["refund"] = await api.call(
            "POST",
            f"/v2/payments/captures/{capture_id}/refund",
            {"amount": {"currency_code": "EUR", "value": "5.00"}},
        )
        dispute_id = await sim.dispute(capture_id)
        await sim.resolve_dispute(dispute_id, "RESOLVED_SELLER_FAVOUR")
        product = await api.call(
            "POST", "/v1/catalogs/products", {"name": "Pro", "type": "SERVICE"}
        )
        seen["plan"] = await api.call(
            "POST",
            "/v1/billing/plans",
            {
                "product_id": product["id"],
                "name": "Pro",
                "billing_cycles": [
                    {
                        "frequency": {"interval_unit": "MONTH", "interval_count": 1},
                        "tenure_type": "REGULAR",
                        "sequence": 1,
                        "total_cycles": 0,
                        "pricing_scheme": {
                            "fixed_price": {"currency_code": "EUR", "value": "9.00"}
                        },
                    }
                ],
                "payment_preferences": {"auto_bill_outstanding": True},
            },
        )
        seen["subscription pending"] = await api.call(
            "POST",
            "/v1/billing/subscriptions",
            {"plan_id": seen["plan"]["id"], "custom_id": TX, "application_context": context},
        )
        token = seen["subscription pending"]["links"][0]["href"].rsplit("ba_token=", 1)[1]
        await http.post(
            f"{sim.url}/webapps/billing/subscriptions",
            data={"ba_token": token, "action": "approve"},
        )
        sub_id = seen["subscription pending"]["id"]
        await sim.renew(sub_id)
        await sim.fail_payment(sub_id)
        seen["subscription active"] = await api.call(
            "GET", f"/v1/billing/subscriptions/{sub_id}", status=200
        )
    seen["events"] = [event for _, event in sim.held]
    return seen


async def test_what_the_simulator_answers_is_what_paypal_documents(provider_data, paypal):
    seen = await _walk(paypal)
    checks = [
        ("orders", "order", "created"),
        ("orders", "order", "approved"),
        ("orders", "order", "completed"),
        ("payments", "capture-2", "capture"),
        ("payments", "refund", "refund"),
        ("subscriptions", "plan", "plan"),
        ("subscriptions", "subscription", "subscription pending"),
        ("subscriptions", "subscription", "subscription active"),
    ]
    for spec, schema, name in checks:
        assert errors(provider_data, spec, schema, seen[name]) == [], name
    assert seen["approved"]["status"] == "APPROVED" and seen["completed"]["status"] == "COMPLETED"


async def test_every_delivered_event_and_its_resource_validate(provider_data, paypal):
    seen = await _walk(paypal)
    types = [event["event_type"] for event in seen["events"]]
    assert types == [
        "CHECKOUT.ORDER.APPROVED",
        "PAYMENT.CAPTURE.COMPLETED",
        "PAYMENT.CAPTURE.REFUNDED",
        "CUSTOMER.DISPUTE.CREATED",
        "CUSTOMER.DISPUTE.RESOLVED",
        "BILLING.SUBSCRIPTION.CREATED",
        "BILLING.SUBSCRIPTION.ACTIVATED",
        "PAYMENT.SALE.COMPLETED",
        "PAYMENT.SALE.COMPLETED",
        "BILLING.SUBSCRIPTION.PAYMENT.FAILED",
    ]
    resource_schemas = {
        "CHECKOUT.": ("orders", "order"),
        "PAYMENT.CAPTURE.REFUNDED": ("payments", "refund"),
        "PAYMENT.CAPTURE.COMPLETED": ("payments", "capture-2"),
        "CUSTOMER.DISPUTE.": ("disputes", "dispute"),
        "BILLING.SUBSCRIPTION.": ("subscriptions", "subscription"),
    }
    for event in seen["events"]:
        assert errors(provider_data, "webhooks", "event", event) == [], event["event_type"]
        for prefix, (spec, schema) in resource_schemas.items():
            if event["event_type"].startswith(prefix):
                found = errors(provider_data, spec, schema, event["resource"])
                assert found == [], (event["event_type"], found)


def test_a_body_paypal_would_not_send_does_not_validate(provider_data):
    order = {
        "id": "5O190127TN364715T",
        "intent": "CAPTURE",
        "status": "APPROVED",
        "purchase_units": [{"amount": {"currency_code": "EUR", "value": "19.99"}}],
    }
    assert errors(provider_data, "orders", "order", order) == []
    wrong = copy.deepcopy(order)
    wrong["status"] = "SUCCEEDED"
    wrong["purchase_units"][0]["amount"]["value"] = 19.99
    assert len(errors(provider_data, "orders", "order", wrong)) == 2


def _response_errors(
    provider_data: Path, spec: str, path: str, status: str, body: Any
) -> list[str]:
    """``body`` against the documented answer ``status`` of ``POST path``."""
    document = json.loads((provider_data / "paypal" / SPECS[spec]).read_text())
    answer = document["paths"][path]["post"]["responses"][status]
    schema = answer["content"]["application/json"]["schema"]
    validator = jsonschema.Draft4Validator({**schema, "components": document["components"]})
    return [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(body)]


async def test_the_simulators_refusals_are_the_documented_errors(provider_data, paypal):
    """Each refusal of the money and invoice rules validates against the documented error answer
    of its endpoint (the issue among that answer's ``details`` issues)."""
    sim = paypal
    sim.register_webhook("schema-client", "schema-secret", "http://127.0.0.1:9/unreachable")
    sim.deliveries_paused = True
    orders, capture = "/v2/checkout/orders", "/v2/checkout/orders/{id}/capture"
    refund = "/v2/payments/captures/{capture_id}/refund"

    def body(value: str, currency: str = "EUR") -> dict[str, Any]:
        unit = {"invoice_id": TX, "amount": {"currency_code": currency, "value": value}}
        return {"intent": "CAPTURE", "purchase_units": [unit]}

    async with httpx.AsyncClient() as http:
        api = Api(sim, http)
        refused = [
            ("orders", orders, "422", await api.call("POST", orders, body("1.001"), 422)),
            ("orders", orders, "422", await api.call("POST", orders, body("1" * 16), 422)),
            ("orders", orders, "422", await api.call("POST", orders, body("0"), 422)),
            ("orders", orders, "400", await api.call("POST", orders, body("1,5"), 400)),
        ]
        first = await api.call("POST", orders, body("10.00"))
        second = await api.call("POST", orders, body("10.00"))
        for made in (first, second):
            await http.post(
                f"{sim.url}/checkoutnow", data={"token": made["id"], "action": "approve"}
            )
        done = await api.call("POST", f"/v2/checkout/orders/{first['id']}/capture", {})
        duplicate = await api.call("POST", f"/v2/checkout/orders/{second['id']}/capture", {}, 422)
        refused.append(("orders", capture, "422", duplicate))
        refused.append(
            ("orders", orders, "422", await api.call("POST", orders, body("10.00"), 422))
        )
        capture_id = done["purchase_units"][0]["payments"]["captures"][0]["id"]
        too_fine = {"amount": {"currency_code": "EUR", "value": "1.005"}}
        refused.append(
            (
                "payments",
                refund,
                "422",
                await api.call("POST", f"/v2/payments/captures/{capture_id}/refund", too_fine, 422),
            )
        )
    issues = [r[3]["details"][0]["issue"] for r in refused]
    assert issues == [
        "DECIMAL_PRECISION", "MAX_VALUE_EXCEEDED", "CANNOT_BE_ZERO_OR_NEGATIVE",
        "INVALID_PARAMETER_SYNTAX", "DUPLICATE_INVOICE_ID", "DUPLICATE_INVOICE_ID",
        "DECIMAL_PRECISION",
    ]  # fmt: skip
    for spec, path, status, answer in refused:
        assert _response_errors(provider_data, spec, path, status, answer) == [], answer


async def test_an_order_made_in_the_buyers_browser_is_an_order(provider_data, paypal):
    """The JS SDK's ``actions.order.create`` and ``actions.order.capture`` (paypal-js
    types/components/buttons.d.ts:18-22, 59-66) answer what the REST calls answer."""
    paypal.register_webhook("schema-client", "schema-secret", "http://127.0.0.1:9/unreachable")
    paypal.deliveries_paused = True
    async with httpx.AsyncClient() as http:
        token = (
            await http.post(f"{paypal.url}/sdk/token", params={"client-id": "schema-client"})
        ).json()["facilitatorAccessToken"]
        headers = {"Authorization": f"Bearer {token}"}
        unit = {"custom_id": TX, "amount": {"currency_code": "EUR", "value": "1.00"}}
        made = await http.post(
            f"{paypal.url}/v2/checkout/orders",
            json={"intent": "CAPTURE", "purchase_units": [unit]},
            headers=headers,
        )
        assert made.status_code == 201, made.text
        await http.post(
            f"{paypal.url}/checkoutnow", data={"token": made.json()["id"], "action": "approve"}
        )
        captured = await http.post(
            f"{paypal.url}/v2/checkout/orders/{made.json()['id']}/capture", headers=headers
        )
    assert errors(provider_data, "orders", "order", made.json()) == []
    assert errors(provider_data, "orders", "order", captured.json()) == []
    assert [e["event_type"] for _, e in paypal.held] == [
        "CHECKOUT.ORDER.APPROVED",
        "PAYMENT.CAPTURE.COMPLETED",
    ]
