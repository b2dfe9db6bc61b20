"""The BTCPay simulator's refunds and what the node reads: refunds as pull payments on the
store-scoped route (the store-less one a 404 before v2.4.0), their refusals, the store's pull
payments (archived ones when asked), payouts claimed, paid out, cancelled and their webhooks, an
invoice's payment methods, the invoice list by date and page, and webhooks dropped, held or
mis-signed with BTCPay's retries kept."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import trio
from support.asgi import serve_asgi

from edge.providers.btcpay.signature import sign_header
from edge.sim.btcpay import BTCPaySimulator
from edge.sim.faults import WRONG_SECRET

TX = "tx_01JD0000000000000000000001"
AUTH = {"Authorization": "token k"}


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

    def types(self) -> list[str]:
        return [e["type"] for e in self.events()]


@pytest.fixture
async def btcpay() -> AsyncIterator[BTCPaySimulator]:
    simulator = BTCPaySimulator(retry_delays_s=(0.01, 0.02, 0.03))
    async with simulator.serving():
        yield simulator


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(headers=AUTH) as client:
        yield client


async def invoice(
    http: httpx.AsyncClient, sim: BTCPaySimulator, store: str, amount: str = "10.00"
) -> str:
    made = await http.post(
        f"{sim.url}/api/v1/stores/{store}/invoices",
        json={"amount": amount, "currency": "EUR", "metadata": {"orderId": TX}},
    )
    assert made.status_code == 200, made.text
    return str(made.json()["id"])


async def settled(http: httpx.AsyncClient, sim: BTCPaySimulator, store: str) -> str:
    invoice_id = await invoice(http, sim, store)
    await sim.pay(invoice_id)
    await sim.confirm(invoice_id)
    return invoice_id


def refund_url(sim: BTCPaySimulator, store: str, invoice_id: str) -> str:
    return f"{sim.url}/api/v1/stores/{store}/invoices/{invoice_id}/refund"


async def test_a_refund_is_a_pull_payment_made_on_the_store_scoped_route(btcpay, http):
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await nursery.start(serve_asgi, receiver))
        invoice_id = await settled(http, btcpay, store)
        made = await http.post(
            refund_url(btcpay, store, invoice_id),
            json={
                "name": "Refund rf_1 of tx_1",
                "description": "Damaged",
                "refundVariant": "Fiat",
                "payoutMethodId": "BTC-CHAIN",
            },
        )
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    assert made.status_code == 200, made.text
    pp = made.json()
    assert (pp["name"], pp["description"], pp["currency"], pp["amount"]) == (
        "Refund rf_1 of tx_1",
        "Damaged",
        "EUR",
        "10.00",  # what the buyer paid, in the invoice's currency
    )
    assert pp["archived"] is False and pp["autoApproveClaims"] is False
    assert pp["viewLink"] == f"{btcpay.url}/pull-payments/{pp['id']}"
    assert isinstance(pp["startsAt"], int) and pp["expiresAt"] is None
    assert btcpay.pull_payments_of(invoice_id) == [pp["id"]]
    refund = receiver.events()[-1]
    assert (refund["type"], refund["invoiceId"], refund["pullPaymentId"]) == (
        "InvoiceRefund",
        invoice_id,
        pp["id"],
    )


async def test_a_custom_refund_is_the_amount_asked_and_a_default_name_is_the_invoices(btcpay, http):
    store = btcpay.register_store("k")
    invoice_id = await settled(http, btcpay, store)
    made = await http.post(
        refund_url(btcpay, store, invoice_id),
        json={"refundVariant": "Custom", "customAmount": "4.00", "customCurrency": "EUR"},
    )
    assert (made.json()["amount"], made.json()["currency"]) == ("4.00", "EUR")
    assert made.json()["name"] == f"Refund {invoice_id}"  # Name = request.Name ?? "Refund {id}"


async def test_the_storeless_route_only_exists_from_2_4(btcpay, http):
    store = btcpay.register_store("k")
    invoice_id = await settled(http, btcpay, store)
    storeless = f"{btcpay.url}/api/v1/invoices/{invoice_id}/refund"
    btcpay.version = (2, 3, 9)
    old = await http.post(storeless, json={"refundVariant": "Fiat"})
    assert (old.status_code, old.content) == (404, b"")
    assert btcpay.pull_payments_of(invoice_id) == []
    btcpay.version = (2, 4, 0)
    assert (await http.post(storeless, json={"refundVariant": "Fiat"})).status_code == 200


async def test_a_server_before_2_4_1_sends_no_invoice_refund(btcpay, http):
    btcpay.version = (2, 3, 9)
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await nursery.start(serve_asgi, receiver))
        invoice_id = await settled(http, btcpay, store)
        await btcpay.refund(invoice_id)
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    assert "InvoiceRefund" not in receiver.types()
    assert len(btcpay.pull_payments_of(invoice_id)) == 1


@pytest.mark.parametrize(
    ("body", "path", "message"),
    [
        ({}, "RefundVariant", "`refundVariant` is mandatory"),
        ({"refundVariant": "Sometimes"}, "RefundVariant", "Please select a valid refund option"),
        (
            {"refundVariant": "Fiat", "payoutMethodId": "BTC-LN"},
            "PayoutMethodId",
            "Please select one of the payment methods which were available for the original"
            " invoice",
        ),
        (
            {"refundVariant": "Fiat", "payoutMethods": ["BTC-LN"]},
            "PayoutMethods",
            "Invalid or unsupported payout method: BTC-LN",
        ),
        ({"refundVariant": "Custom", "customCurrency": "EUR"}, "CustomAmount", None),
        (
            {"refundVariant": "Custom", "customAmount": "1", "customCurrency": "ZZZ"},
            "CustomCurrency",
            None,
        ),
        ({"refundVariant": "Fiat", "customAmount": "1"}, "CustomAmount", None),
        ({"refundVariant": "OverpaidAmount"}, "RefundVariant", "Invoice is not overpaid"),
        ({"refundVariant": "Fiat", "subtractPercentage": "101"}, "SubtractPercentage", None),
    ],
)
async def test_a_refund_that_does_not_validate_is_a_422_on_the_property(
    btcpay, http, body, path, message
):
    """``ModelState.AddModelError(nameof(request.X), ...)``: the C# property's name."""
    store = btcpay.register_store("k")
    invoice_id = await settled(http, btcpay, store)
    refused = await http.post(refund_url(btcpay, store, invoice_id), json=body)
    assert refused.status_code == 422
    assert refused.json()[0]["path"] == path
    if message:
        assert refused.json()[0]["message"] == message
    assert btcpay.pull_payments_of(invoice_id) == []


async def test_only_an_invoice_paid_can_be_refunded(btcpay, http):
    """``CanRefund``: Settled or Invalid, or Expired with money paid; else 400."""
    store = btcpay.register_store("k")
    new = await invoice(http, btcpay, store)
    refused = await http.post(refund_url(btcpay, store, new), json={"refundVariant": "Fiat"})
    assert (refused.status_code, refused.json()["code"]) == (400, "non-refundable")
    await btcpay.pay(new, part=True)
    await btcpay.expire(new)  # Expired, PaidPartial: refundable
    made = await http.post(refund_url(btcpay, store, new), json={"refundVariant": "Fiat"})
    assert (made.status_code, made.json()["amount"]) == (200, "5.00")
    missing = await http.post(refund_url(btcpay, store, "nope"), json={"refundVariant": "Fiat"})
    assert (missing.status_code, missing.json()["code"]) == (404, "invoice-not-found")


async def test_a_crypto_refund_from_btcpays_screens_approves_its_claims(btcpay, http):
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await nursery.start(serve_asgi, receiver))
        invoice_id = await settled(http, btcpay, store)
        pp_id = await btcpay.refund(invoice_id, "RateThen")
        pp = btcpay.pull_payment(pp_id)
        # 10 EUR at 100,000 EUR a BTC
        assert (pp["currency"], pp["amount"], pp["autoApproveClaims"]) == (
            "BTC",
            "0.00010000",
            True,
        )
        assert pp["name"] == f"Refund {invoice_id}"
        payout_id = await btcpay.claim(pp_id)
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    payouts = [e for e in receiver.events() if e["type"].startswith("Payout")]
    assert [(e["type"], e["payoutState"]) for e in payouts] == [
        ("PayoutCreated", "AwaitingApproval"),
        ("PayoutApproved", "AwaitingPayment"),
    ]
    assert {(e["payoutId"], e["pullPaymentId"], e["storeId"]) for e in payouts} == {
        (payout_id, pp_id, store)
    }


async def test_a_payout_is_claimed_paid_out_or_cancelled_with_its_webhooks(btcpay, http):
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await nursery.start(serve_asgi, receiver))
        invoice_id = await settled(http, btcpay, store)
        paid_pp = await btcpay.refund(invoice_id, "Custom", "4.00")
        paid = await btcpay.claim(paid_pp)
        await btcpay.complete_payout(paid)
        kept_pp = await btcpay.refund(invoice_id, "Custom", "1.00")
        cancelled = await btcpay.claim(kept_pp)
        await btcpay.cancel_payout(cancelled)
        await btcpay.drained()
        payouts_url = f"{btcpay.url}/api/v1/pull-payments/{{}}/payouts"
        done = (await http.get(payouts_url.format(paid_pp))).json()
        open_ = (await http.get(payouts_url.format(kept_pp))).json()
        every = (await http.get(payouts_url.format(kept_pp) + "?includeCancelled=true")).json()
        nursery.cancel_scope.cancel()
    assert [
        (e["type"], e["payoutId"], e["payoutState"])
        for e in receiver.events()
        if e["type"].startswith("Payout")
    ] == [
        ("PayoutCreated", paid, "AwaitingApproval"),
        ("PayoutApproved", paid, "AwaitingPayment"),
        ("PayoutUpdated", paid, "Completed"),
        ("PayoutCreated", cancelled, "AwaitingApproval"),
        ("PayoutUpdated", cancelled, "Cancelled"),
    ]
    [completed] = done
    assert (completed["state"], completed["originalAmount"], completed["originalCurrency"]) == (
        "Completed",
        "4.00",
        "EUR",
    )
    assert completed["payoutAmount"] == "0.00004000" and completed["paymentProof"]
    assert open_ == [] and [p["state"] for p in every] == ["Cancelled"]


async def test_a_claim_past_what_is_left_is_refused(btcpay, http):
    store = btcpay.register_store("k")
    pp_id = await btcpay.refund(await settled(http, btcpay, store), "Custom", "4.00")
    await btcpay.claim(pp_id, "3.00")
    with pytest.raises(ValueError, match="overdraft"):
        await btcpay.claim(pp_id, "2.00")
    await btcpay.claim(pp_id)  # what is left: 1.00
    assert sorted(p["originalAmount"] for p in btcpay.payouts_of(pp_id)) == ["1.00", "3.00"]


async def test_the_store_lists_its_pull_payments_archived_ones_when_asked(btcpay, http):
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await nursery.start(serve_asgi, receiver))
        invoice_id = await settled(http, btcpay, store)
        first = await btcpay.refund(invoice_id, "Custom", "1.00")
        btcpay.clock_offset_s = 10
        second = await btcpay.refund(invoice_id, "Custom", "2.00")
        claimed = await btcpay.claim(first)
        base = f"{btcpay.url}/api/v1/stores/{store}/pull-payments"
        archived = await http.delete(f"{base}/{first}")
        assert (archived.status_code, archived.content) == (200, b"")
        listed = (await http.get(base)).json()
        every = (await http.get(f"{base}?includeArchived=true")).json()
        gone = await http.delete(f"{base}/nope")
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    assert [pp["id"] for pp in listed] == [second]
    assert [(pp["id"], pp["archived"]) for pp in every] == [(second, False), (first, True)]
    assert (gone.status_code, gone.json()["code"]) == (404, "pullpayment-not-found")
    # archiving cancels the payouts not paid yet
    assert (receiver.events()[-1]["payoutId"], receiver.events()[-1]["payoutState"]) == (
        claimed,
        "Cancelled",
    )
    public = await http.get(f"{btcpay.url}/api/v1/pull-payments/{first}")
    assert public.json()["archived"] is True


async def test_an_unknown_pull_payment_is_a_404(btcpay, http):
    for path in ("", "/payouts"):
        answer = await http.get(f"{btcpay.url}/api/v1/pull-payments/nope{path}")
        assert (answer.status_code, answer.json()["code"]) == (404, "pullpayment-not-found")


async def test_an_invoices_payment_methods_say_what_was_paid_and_at_what_rate(btcpay, http):
    store = btcpay.register_store("k")
    invoice_id = await invoice(http, btcpay, store)
    await btcpay.pay(invoice_id, part=True)
    answer = await http.get(
        f"{btcpay.url}/api/v1/stores/{store}/invoices/{invoice_id}/payment-methods"
    )
    [method] = answer.json()
    assert (method["paymentMethodId"], method["currency"], method["rate"]) == (
        "BTC-CHAIN",
        "BTC",
        "100000",
    )
    assert (method["amount"], method["paymentMethodPaid"], method["due"]) == (
        "0.00010000",
        "0.00005000",
        "0.00005000",
    )
    [payment] = method["payments"]
    assert payment["destination"] == method["destination"] and payment["value"] == "0.00005000"
    missing = await http.get(f"{btcpay.url}/api/v1/stores/{store}/invoices/nope/payment-methods")
    assert missing.status_code == 404


async def test_the_invoice_list_is_by_creation_date_newest_first_in_pages(btcpay, http):
    store = btcpay.register_store("k")
    made = []
    for offset in (0, 100, 200):
        btcpay.clock_offset_s = offset
        made.append(await invoice(http, btcpay, store))
    created = [btcpay.invoice(i)["createdTime"] for i in made]
    base = f"{btcpay.url}/api/v1/stores/{store}/invoices"

    async def ids(**query: Any) -> list[str]:
        answer = await http.get(base, params=query)
        assert answer.status_code == 200, answer.text
        return [i["id"] for i in answer.json()]

    assert await ids() == made[::-1]
    assert await ids(startDate=created[1]) == [made[2], made[1]]
    assert await ids(startDate=created[0], endDate=created[1]) == [made[1], made[0]]
    assert await ids(skip=1, take=1) == [made[1]]
    assert await ids(skip=3) == []
    with_methods = (await http.get(base, params={"includePaymentMethods": "true"})).json()
    assert with_methods[0]["paymentMethods"][0]["paymentMethodId"] == "BTC-CHAIN"
    wrong = await http.get(base, params={"startDate": "yesterday"})
    assert (wrong.status_code, wrong.json()[0]) == (
        422,
        {"path": "startDate", "message": "Invalid unix timestamp"},
    )
    upside_down = await http.get(base, params={"startDate": created[2], "endDate": created[0]})
    assert upside_down.status_code == 422


async def test_a_dropped_delivery_is_never_sent(btcpay, http):
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await nursery.start(serve_asgi, receiver))
        btcpay.webhook_faults.drop(("InvoiceCreated",))
        invoice_id = await invoice(http, btcpay, store)
        await btcpay.expire(invoice_id)
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    assert receiver.types() == ["InvoiceExpired"]
    assert btcpay.webhook_faults.dropped == 1


async def test_a_held_delivery_comes_after_the_later_ones_at_release(btcpay, http):
    receiver = Receiver()
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        btcpay.register_webhook(store, await nursery.start(serve_asgi, receiver))
        btcpay.webhook_faults.hold(("InvoiceProcessing",), times=1)
        invoice_id = await invoice(http, btcpay, store)
        await btcpay.pay(invoice_id)
        await btcpay.confirm(invoice_id)
        await btcpay.drained()
        assert "InvoiceProcessing" not in receiver.types()
        assert btcpay.release() == 1
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    assert receiver.types()[-2:] == ["InvoiceSettled", "InvoiceProcessing"]


async def test_a_missigned_delivery_is_refused_and_not_retried_while_a_5xx_still_is(btcpay, http):
    receiver = Receiver(401, 503)
    async with trio.open_nursery() as nursery:
        store = btcpay.register_store("k")
        _, secret = btcpay.register_webhook(store, await nursery.start(serve_asgi, receiver))
        btcpay.webhook_faults.missign(("InvoiceCreated",), times=1)
        invoice_id = await invoice(http, btcpay, store)
        await btcpay.expire(invoice_id)
        await btcpay.drained()
        nursery.cancel_scope.cancel()
    (signed, created), expired, retried = receiver.got
    assert json.loads(created)["type"] == "InvoiceCreated"
    assert (
        signed["btcpay-sig"] == sign_header(WRONG_SECRET, created) != sign_header(secret, created)
    )
    # the 401 was final; the 503 to the next event was retried, with the right secret
    assert [json.loads(b)["type"] for _, b in (expired, retried)] == ["InvoiceExpired"] * 2
    assert retried[0]["btcpay-sig"] == sign_header(secret, retried[1])
    assert btcpay.webhook_faults.missigned == 1
