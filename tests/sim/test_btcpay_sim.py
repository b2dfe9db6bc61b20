"""The BTCPay Server simulator on its own: the Greenfield invoice API and its refusals, and
deliveries as BTCPay makes them (indented and signed, in order per webhook, a failure retried as
a new delivery, other 4xx final, manual redelivery with the current secret)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from support.asgi import serve_asgi

from edge.providers.btcpay import BTCPAY
from edge.providers.btcpay.signature import sign_header
from edge.sim.btcpay import SUPPORTED_TRIGGERS, BTCPaySimulator, event_for_trigger

TX = "tx_01JD0000000000000000000001"


class Receiver:
    """A webhook endpoint that keeps what it gets and answers ``statuses`` in turn (then 200)."""

    def __init__(self, *statuses: int) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []
        self.statuses = list(statuses)

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        self.got.append(({k.decode().lower(): v.decode() for k, v in scope["headers"]}, body))
        return (self.statuses.pop(0) if self.statuses else 200), b""

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(body) for _, body in self.got]


@pytest.fixture
async def btcpay() -> AsyncIterator[BTCPaySimulator]:
    simulator = BTCPaySimulator(retry_delays_s=(0.01, 0.02, 0.03))
    async with simulator.serving():
        yield simulator


async def listening(nursery: trio.Nursery, receiver: Receiver) -> str:
    return str(await nursery.start(serve_asgi, receiver))


async def create(
    http: httpx.AsyncClient, sim: BTCPaySimulator, store: str, key: str = "k", **body: Any
) -> httpx.Response:
    return await http.post(
        f"{sim.url}/api/v1/stores/{store}/invoices",
        json={"amount": "10.00", "currency": "EUR", "metadata": {"orderId": TX}, **body},
        headers={"Authorization": f"token {key}"},
    )


async def test_an_invoice_is_created_read_and_its_page_served(btcpay):
    store = btcpay.register_store("k")
    async with httpx.AsyncClient() as http:
        answer = await create(
            http,
            btcpay,
            store,
            checkout={"redirectURL": "https://a.example/{OrderId}", "redirectAutomatically": True},
        )
        assert answer.status_code == 200, answer.text
        invoice = answer.json()
        assert invoice["status"] == "New" and invoice["amount"] == "10.00"
        assert invoice["checkoutLink"] == f"{btcpay.url}/i/{invoice['id']}"
        assert invoice["expirationTime"] - invoice["createdTime"] == 15 * 60
        read = await http.get(
            f"{btcpay.url}/api/v1/stores/{store}/invoices/{invoice['id']}",
            headers={"Authorization": "token k"},
        )
        assert read.json() == invoice
        page = await http.get(invoice["checkoutLink"])
        assert "Pay in full" in page.text and "10.00 EUR" in page.text
        await btcpay.pay(invoice["id"])
        settled = await http.post(invoice["checkoutLink"], data={"action": "confirm"})
        assert settled.status_code == 303
        assert settled.headers["location"] == f"https://a.example/{TX}"


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({}, 401, "unauthenticated"),
        ({"Authorization": "Bearer k"}, 401, "unauthenticated"),
        ({"Authorization": "token wrong"}, 403, "missing-permission"),
    ],
)
async def test_keys_are_checked(btcpay, headers, status, code):
    store = btcpay.register_store("k")
    async with httpx.AsyncClient() as http:
        answer = await http.post(
            f"{btcpay.url}/api/v1/stores/{store}/invoices",
            json={"amount": "1.00", "currency": "EUR"},
            headers=headers,
        )
    assert (answer.status_code, answer.json()["code"]) == (status, code)


@pytest.mark.parametrize(
    ("body", "path"),
    [
        ({"amount": 10.0}, "amount"),  # a number, not a string
        ({"amount": "-1"}, "amount"),
        ({"amount": "ten"}, "amount"),
        ({"currency": "ZZZ"}, "currency"),
        ({"checkout": {"expirationMinutes": -5}}, "checkout.expirationMinutes"),
    ],
)
async def test_a_request_that_does_not_validate_is_answered_as_greenfield_does(btcpay, body, path):
    store = btcpay.register_store("k")
    async with httpx.AsyncClient() as http:
        answer = await create(http, btcpay, store, **body)
    assert answer.status_code == 422
    assert answer.json()[0]["path"] == path


async def test_deliveries_are_indented_signed_and_in_order(btcpay):
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        _, secret = btcpay.register_webhook(store, await listening(nursery, receiver))
        async with httpx.AsyncClient() as http:
            invoice = (await create(http, btcpay, store)).json()
        await btcpay.pay(invoice["id"])
        await btcpay.confirm(invoice["id"])
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    assert [e["type"] for e in receiver.events()] == [
        "InvoiceCreated",
        "InvoiceReceivedPayment",
        "InvoiceProcessing",
        "InvoicePaymentSettled",
        "InvoiceSettled",
    ]
    for headers, body in receiver.got:
        assert body.startswith(b'{\n  "deliveryId": ')
        assert headers["btcpay-sig"] == sign_header(secret, body)
        event = json.loads(body)
        assert event["originalDeliveryId"] == event["deliveryId"]
        assert event["isRedelivery"] is False
        assert event["invoiceId"] == invoice["id"] and event["metadata"]["orderId"] == TX


async def test_a_failure_is_retried_as_new_deliveries_and_holds_back_the_next(btcpay):
    receiver = Receiver(503, 408, 429)
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await listening(nursery, receiver))
        async with httpx.AsyncClient() as http:
            invoice = (await create(http, btcpay, store)).json()
        btcpay.clock_offset_s = 700  # the retries keep the first delivery's timestamp
        await btcpay.expire(invoice["id"])
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    got = receiver.events()
    assert [e["type"] for e in got] == ["InvoiceCreated"] * 4 + ["InvoiceExpired"]
    first = got[0]
    assert len({e["deliveryId"] for e in got[:4]}) == 4
    assert {e["originalDeliveryId"] for e in got[:4]} == {first["deliveryId"]}
    assert [e["isRedelivery"] for e in got[:4]] == [False, True, True, True]
    assert {e["timestamp"] for e in got[:4]} == {first["timestamp"]}
    assert got[4]["timestamp"] >= first["timestamp"] + 700


async def test_retries_end_after_the_last_delay(btcpay):
    receiver = Receiver(500, 500, 500, 500, 500)
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await listening(nursery, receiver))
        async with httpx.AsyncClient() as http:
            await create(http, btcpay, store)
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    assert len(receiver.got) == 4  # the first and three retries (the fixture's three delays)


@pytest.mark.parametrize("status", [400, 401, 404, 410])
async def test_any_other_4xx_is_final(btcpay, status):
    receiver = Receiver(status)
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await listening(nursery, receiver))
        async with httpx.AsyncClient() as http:
            await create(http, btcpay, store)
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    assert len(receiver.got) == 1


async def test_a_manual_redelivery_keeps_the_first_id_and_takes_the_current_secret(btcpay):
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        webhook, _ = btcpay.register_webhook(store, await listening(nursery, receiver))
        async with httpx.AsyncClient() as http:
            await create(http, btcpay, store)
            await btcpay.drained()
            first = receiver.events()[0]
            btcpay._stores[store].webhooks[webhook].secret = "rotated"
            path = f"/api/v1/stores/{store}/webhooks/{webhook}/deliveries"
            again = await http.post(
                f"{btcpay.url}{path}/{first['deliveryId']}/redeliver",
                headers={"Authorization": "token k"},
            )
            assert again.status_code == 200
            await btcpay.drained()
            # a redelivery of the redelivery still names the first delivery
            third = btcpay.redeliver(again.json())
            await btcpay.drained()
            listed = await http.get(f"{btcpay.url}{path}", headers={"Authorization": "token k"})
        nursery.cancel_scope.cancel()
    second, last = receiver.events()[1:]
    assert second["deliveryId"] == again.json() and last["deliveryId"] == third
    assert second["originalDeliveryId"] == last["originalDeliveryId"] == first["deliveryId"]
    assert second["isRedelivery"] is last["isRedelivery"] is True
    headers, body = receiver.got[1]
    assert headers["btcpay-sig"] == sign_header("rotated", body)
    assert [d["id"] for d in listed.json()] == [third, again.json(), first["deliveryId"]]


async def test_two_webhooks_get_deliveries_of_their_own(btcpay):
    a, b = Receiver(), Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await listening(nursery, a))
        btcpay.register_webhook(store, await listening(nursery, b))
        async with httpx.AsyncClient() as http:
            await create(http, btcpay, store)
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    assert a.events()[0]["originalDeliveryId"] != b.events()[0]["originalDeliveryId"]


# Where an invoice is, made by the simulator's own moves, and whether BTCPay lets the merchant
# mark it Settled or Invalid from there: InvoiceEntity.CanMarkComplete / CanMarkInvalid
# (btcpayserver@03345c28 BTCPayServer/Services/Invoices/InvoiceEntity.cs:804-822).
MARKING: list[tuple[str, str, bool]] = [
    ("new", "Settled", True),
    ("new", "Invalid", True),
    ("processing", "Settled", True),
    ("processing", "Invalid", True),
    ("expired", "Settled", True),
    ("expired", "Invalid", True),
    ("invalid", "Settled", True),
    ("invalid", "Invalid", False),
    ("settled", "Settled", False),
    ("settled", "Invalid", False),  # a settlement the chain made cannot be undone by hand
    ("marked settled", "Invalid", True),  # Status: not Invalid, ExceptionStatus: Marked
    ("marked settled", "Settled", False),
    ("marked invalid", "Settled", True),
    ("marked invalid", "Invalid", False),
    ("expired", "New", False),  # only Settled or Invalid (InvoiceRepository.cs:630-676)
]


async def _arrive(sim: BTCPaySimulator, invoice: str, state: str) -> None:
    if state in ("processing", "invalid", "settled"):
        await sim.pay(invoice)
    if state == "invalid":
        await sim.invalidate(invoice)
    if state == "settled":
        await sim.confirm(invoice)
    if state == "expired":
        await sim.expire(invoice)
    if state.startswith("marked "):
        await sim.mark(invoice, state.split()[1].capitalize())


@pytest.mark.parametrize(("state", "status", "allowed"), MARKING)
async def test_marking_by_hand_follows_btcpays_rules(btcpay, state, status, allowed):
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await listening(nursery, receiver))
        async with httpx.AsyncClient() as http:
            invoice = (await create(http, btcpay, store)).json()
            await _arrive(btcpay, invoice["id"], state)
            await btcpay.drained()
            before = len(receiver.got)
            offered = btcpay.invoice(invoice["id"])["availableStatusesForManualMarking"]
            assert (status in offered) is allowed, offered
            mark = f"{btcpay.url}/api/v1/stores/{store}/invoices/{invoice['id']}/status"
            answer = await http.post(
                mark, json={"status": status}, headers={"Authorization": "token k"}
            )
            await btcpay.drained()
        nursery.cancel_scope.cancel()
    sent = receiver.events()[before:]
    if not allowed:
        # GreenfieldInvoiceController.MarkInvoiceStatus (btcpayserver@03345c28
        # BTCPayServer/Controllers/GreenField/GreenfieldInvoiceController.cs:242-262): a model
        # error on Status, answered by CreateValidationError as 422 (GreenfieldExtensions.cs:14-17)
        assert answer.status_code == 422, answer.text
        assert answer.json() == [
            {
                "path": "Status",
                "message": "Status can only be marked to invalid or settled within certain"
                " conditions.",
            }
        ]
        assert sent == []
        return
    assert answer.status_code == 200, answer.text
    assert (answer.json()["status"], answer.json()["additionalStatus"]) == (status, "Marked")
    # one event and nothing else: InvoiceTriggerProvider.cs:152-159 (MarkedCompleted ->
    # InvoiceSettled, MarkedInvalid -> InvoiceInvalid, ManuallyMarked set)
    (event,) = sent
    assert event["type"] == f"Invoice{status}" and event["manuallyMarked"] is True
    assert event["invoiceId"] == invoice["id"]
    if status == "Settled":
        assert event["overPaid"] is False


async def test_a_point_of_sale_invoice_takes_the_callers_order_id(btcpay):
    """UIPointOfSaleController.ViewPointOfSale (btcpayserver@03345c28
    BTCPayServer/Plugins/PointOfSale/Controllers/UIPointOfSaleController.cs:186-205): an
    anonymous POST ([IgnoreAntiforgeryToken], CORS open to all, no [Authorize]) with
    ``orderId`` from the form; :404-409 ``OrderId = orderId ?? AppService.GetRandomOrderId()``;
    the invoice is the store's, so its webhooks report it like any other."""
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await listening(nursery, receiver))
        app = btcpay.register_pos_app(store, "EUR", items={"tea": ("Tea", 350)})
        async with httpx.AsyncClient() as http:
            keypad = await http.post(
                f"{btcpay.url}/apps/{app}/pos", data={"amount": "1.00", "orderId": TX}
            )
            assert keypad.status_code == 302  # RedirectToAction(Checkout): the invoice page
            invoice_id = keypad.headers["location"].rsplit("/", 1)[1]
            assert keypad.headers["location"] == f"/i/{invoice_id}"
            tea = await http.post(
                f"{btcpay.url}/apps/{app}/pos",
                data={"choiceKey": "tea", "amount": "0.01"},  # an item is never below its price
                headers={"Accept": "application/json"},
            )
            unknown = await http.post(f"{btcpay.url}/apps/nope/pos", data={"amount": "1"})
            free = await http.post(
                f"{btcpay.url}/apps/{app}/pos",
                data={"amount": "-5"},
                headers={"Accept": "application/json"},
            )
        await btcpay.pay(invoice_id)
        await btcpay.confirm(invoice_id)
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    invoice = btcpay.invoice(invoice_id)
    assert (invoice["amount"], invoice["currency"]) == ("1.00", "EUR")
    assert invoice["metadata"]["orderId"] == TX
    with pytest.raises(KeyError):
        btcpay.invoice_of(TX)  # not an invoice made through the API
    item = btcpay.invoice(tea.json()["invoiceId"])
    assert item["amount"] == "3.50" and item["metadata"]["itemCode"] == "tea"
    assert len(item["metadata"]["orderId"]) >= 20  # GetRandomOrderId: base58 of 16 bytes
    assert unknown.status_code == 404
    assert free.json() == {"error": "Zero amount invoices are disabled"}
    mine = [e for e in receiver.events() if e["invoiceId"] == invoice_id]
    assert [e["type"] for e in mine] == [
        "InvoiceCreated",
        "InvoiceReceivedPayment",
        "InvoiceProcessing",
        "InvoicePaymentSettled",
        "InvoiceSettled",
    ]
    assert {e["metadata"]["orderId"] for e in mine} == {TX}


@pytest.mark.parametrize("normalized", SUPPORTED_TRIGGERS)
def test_every_trigger_normalizes_to_its_type(normalized):
    tx = {"id": TX, "providerRef": "INV1", "metadata": {"customerRef": "c"}}
    event = event_for_trigger(normalized, tx)
    read = BTCPAY.normalize(json.dumps(event).encode(), "test")
    assert (read.type, read.tx_id, read.refs) == (normalized, TX, ("INV1",))


def test_an_unknown_trigger_names_the_supported_ones():
    with pytest.raises(ValueError, match="payment.succeeded"):
        event_for_trigger("payment.refunded", {"id": TX})
