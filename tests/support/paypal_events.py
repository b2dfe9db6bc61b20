"""Signed PayPal deliveries built by hand, for tests that need to choose each event's content
and order (the simulator sends what its buttons do). The signing key is the test's own; its
certificate is served by ``CertServer`` on loopback, which a project allows with
``certHosts: ["127.0.0.1"]``, exactly as PayPal's own host is allowed by default."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from functools import cache
from typing import Any

import trio
from cryptography.hazmat.primitives.asymmetric import rsa

from edge.sim.paypal import deliveries
from edge.sim.paypal.certificate import signing_certificate
from support.asgi import serve_asgi

T0 = 1_790_000_000  # seconds: every story starts here


@cache
def _key_and_cert() -> tuple[rsa.RSAPrivateKey, bytes]:
    return signing_certificate("paypal-events.test")


class CertServer:
    """Serves the test certificate; ``url`` once started with ``nursery.start(server.run)``."""

    def __init__(self) -> None:
        self.url = ""

    async def run(self, *, task_status: trio.TaskStatus[str] = trio.TASK_STATUS_IGNORED) -> None:
        async def certificate(scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
            return 200, _key_and_cert()[1]

        async with trio.open_nursery() as nursery:
            base = await nursery.start(serve_asgi, certificate)
            self.url = f"{base}/v1/notifications/certs/CERT-tests"
            task_status.started(self.url)

    def headers(self, body: bytes, webhook_id: str) -> dict[str, str]:
        """What PayPal sends with ``body`` to the subscription ``webhook_id``."""
        transmission = (str(uuid.uuid4()), "2026-11-23T10:00:00Z")
        return deliveries.signed(body, webhook_id, _key_and_cert()[0], self.url, transmission)


def _time(at_s: int) -> str:
    return dt.datetime.fromtimestamp(T0 + at_s, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def event(event_id: str, event_type: str, at_s: int, resource: dict[str, Any]) -> bytes:
    return json.dumps(
        {
            "id": event_id,
            "event_version": "1.0",
            "create_time": _time(at_s),
            "event_type": event_type,
            "resource": resource,
        }
    ).encode()


def amount(value: str, currency: str = "EUR") -> dict[str, str]:
    return {"currency_code": currency, "value": value}


def order(order_id: str, tx_id: str, status: str, value: str = "10.00") -> dict[str, Any]:
    return {
        "id": order_id,
        "status": status,
        "intent": "CAPTURE",
        "purchase_units": [{"custom_id": tx_id, "invoice_id": tx_id, "amount": amount(value)}],
    }


def capture(
    capture_id: str, order_id: str, tx_id: str, status: str, value: str = "10.00"
) -> dict[str, Any]:
    return {
        "id": capture_id,
        "status": status,
        "custom_id": tx_id,
        "invoice_id": tx_id,
        "amount": amount(value),
        "supplementary_data": {"related_ids": {"order_id": order_id}},
    }


def refund(refund_id: str, capture_id: str, tx_id: str, value: str, total: str) -> dict[str, Any]:
    return {
        "id": refund_id,
        "status": "COMPLETED",
        "custom_id": tx_id,
        "amount": amount(value),
        "seller_payable_breakdown": {"total_refunded_amount": amount(total)},
        "links": [{"rel": "up", "href": f"https://api.example/v2/payments/captures/{capture_id}"}],
    }


def dispute(capture_id: str, tx_id: str, outcome: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "dispute_id": f"PP-D-{capture_id[-6:]}",
        "disputed_transactions": [{"seller_transaction_id": capture_id, "custom": tx_id}],
        "dispute_amount": amount("10.00"),
    }
    if outcome:
        body["dispute_outcome"] = {"outcome_code": outcome}
    return body


def subscription(sub_id: str, tx_id: str, status: str, next_billing_s: int) -> dict[str, Any]:
    return {
        "id": sub_id,
        "status": status,
        "custom_id": tx_id,
        "billing_info": {"next_billing_time": _time(next_billing_s)},
    }


def sale(sale_id: str, sub_id: str, value: str = "9.00") -> dict[str, Any]:
    return {
        "id": sale_id,
        "state": "completed",
        "amount": {"total": value, "currency": "EUR"},
        "billing_agreement_id": sub_id,
    }
