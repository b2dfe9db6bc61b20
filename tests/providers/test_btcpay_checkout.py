"""A BTCPay checkout taken up again (CONTRACT 4.2: a key's retry after its first request was cut
short) makes one invoice: BTCPay honours no idempotency key, so the adapter asks for the
invoice the first request made (by the ``orderId`` BTCPay indexes) before making one, and
adopts only one still open that asks all the node would have asked. Against the simulator,
over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from edge.providers.base import CheckoutRequest
from edge.providers.btcpay import BTCPAY
from edge.sim.btcpay import BTCPaySimulator

TX = "tx_01JD0000000000000000000042"


@pytest.fixture
async def btcpay() -> AsyncIterator[tuple[BTCPaySimulator, str]]:
    simulator = BTCPaySimulator()
    async with simulator.serving():
        yield simulator, simulator.register_store("k")


def _request(sim: BTCPaySimulator, store: str, http: httpx.AsyncClient, again: bool) -> Any:
    tx = {"id": TX, "kind": "payment", "amount": 1000, "currency": "EUR", "isTest": True}
    credentials = {"serverUrl": sim.url, "apiKey": "k", "storeId": store, "webhookSecret": "s"}
    return CheckoutRequest(
        tx, {"name": "A book"}, credentials, "https://s/ok", "", http, again=again
    )


def _invoices(sim: BTCPaySimulator, store: str) -> list[str]:
    return [
        invoice_id
        for invoice_id, invoice in sim._stores[store].invoices.items()  # noqa: SLF001
        if invoice.data["metadata"].get("orderId") == TX
    ]


async def test_a_checkout_taken_up_again_adopts_the_invoice_made_before(btcpay) -> None:
    sim, store = btcpay
    async with httpx.AsyncClient() as http:
        first = await BTCPAY.create_checkout(_request(sim, store, http, again=False))
        again = await BTCPAY.create_checkout(_request(sim, store, http, again=True))
    assert again.provider_ref == first.provider_ref
    assert again.fields == first.fields and again.expires_at_ms == first.expires_at_ms
    assert _invoices(sim, store) == [first.provider_ref]


async def test_a_checkout_taken_up_again_with_nothing_made_before_makes_its_invoice(
    btcpay,
) -> None:
    sim, store = btcpay
    async with httpx.AsyncClient() as http:
        made = await BTCPAY.create_checkout(_request(sim, store, http, again=True))
    assert _invoices(sim, store) == [made.provider_ref]


async def test_an_invoice_naming_the_transaction_for_another_amount_is_not_adopted(
    btcpay,
) -> None:
    sim, store = btcpay
    async with httpx.AsyncClient() as http:
        other = await http.post(
            f"{sim.url}/api/v1/stores/{store}/invoices",
            json={"amount": "0.01", "currency": "EUR", "metadata": {"orderId": TX}},
            headers={"Authorization": "token k"},
        )
        assert other.status_code == 200, other.text
        made = await BTCPAY.create_checkout(_request(sim, store, http, again=True))
    assert made.provider_ref != other.json()["id"]
    assert sorted(_invoices(sim, store)) == sorted([other.json()["id"], made.provider_ref])


async def test_a_point_of_sale_invoice_naming_the_transaction_is_not_adopted(btcpay) -> None:
    """Anyone may post a store's Point of Sale form with any ``orderId`` and keypad amount
    (and where the buyer goes after paying): the same amount, yet not the checkout's."""
    sim, store = btcpay
    app = sim.register_pos_app(store)
    async with httpx.AsyncClient() as http:
        posted = await http.post(
            f"{sim.url}/apps/{app}/pos",
            data={"amount": "10.00", "orderId": TX, "redirectUrl": "https://s/ok"},
            headers={"Accept": "application/json"},
        )
        assert posted.status_code == 200, posted.text
        made = await BTCPAY.create_checkout(_request(sim, store, http, again=True))
    assert made.provider_ref != posted.json()["invoiceId"]


async def test_an_invoice_made_before_that_ended_is_not_handed_out_again(btcpay) -> None:
    sim, store = btcpay
    async with httpx.AsyncClient() as http:
        first = await BTCPAY.create_checkout(_request(sim, store, http, again=False))
        assert first.provider_ref is not None
        await sim.expire(first.provider_ref)
        again = await BTCPAY.create_checkout(_request(sim, store, http, again=True))
    assert again.provider_ref != first.provider_ref
