"""BTCPay refunds made exactly once (CONTRACT 4.3a): ``send_refund`` makes a pull payment on the
store-scoped route named with the node's refund id, ``refunds_of`` lists the invoice's pull
payments (the node's, those made in BTCPay's own screens, archived ones) with their state from
their payouts, ``edge.providers.refunding.carry_out`` makes one pull payment however many
attempts lose their answer (dropped, 5xx, too late), and the read an ``InvoiceRefund`` asks for
reports the refund with its amount. Against the simulator, over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from edge.domain.convergence import Refund
from edge.domain.events import EventType as E
from edge.domain.status import Status as S
from edge.errors import ProviderError
from edge.providers import refunding
from edge.providers.base import (
    REFUND,
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    CheckoutRequest,
    FollowUp,
    FollowUpRequest,
)
from edge.providers.btcpay import BTCPAY, refunds
from edge.providers.btcpay.events import READ_REFUND
from edge.sim.btcpay import BTCPaySimulator
from edge.sim.faults import LOSSES

TX = "tx_01JD0000000000000000000005"
OTHER_TX = "tx_01JD0000000000000000000006"
RF = "rf_01JD00000000000000000000A1"
NOW_MS = 1_790_000_000_000


@pytest.fixture
async def btcpay() -> AsyncIterator[BTCPaySimulator]:
    simulator = BTCPaySimulator(retry_delays_s=(0.01,))
    async with simulator.serving():
        yield simulator


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    # an answer held back (LOST_LATE) is given up on after a second, as the node gives up
    async with httpx.AsyncClient(timeout=1.0) as client:
        yield client


def credentials(sim: BTCPaySimulator, store: str) -> dict[str, str]:
    return {"serverUrl": sim.url, "apiKey": "k", "storeId": store, "webhookSecret": "s"}


async def paid(
    sim: BTCPaySimulator, http: httpx.AsyncClient, store: str, tx_id: str = TX
) -> dict[str, Any]:
    """A checkout the node made and the buyer paid (10.00 EUR): the node's transaction."""
    tx = {"id": tx_id, "kind": "payment", "amount": 1000, "currency": "EUR", "isTest": True}
    made = await BTCPAY.create_checkout(
        CheckoutRequest(tx, {"name": "A book"}, credentials(sim, store), "https://s/ok", "", http)
    )
    await sim.pay(str(made.provider_ref))
    await sim.confirm(str(made.provider_ref))
    return {**tx, "providerRef": made.provider_ref}


def refund_request(
    sim: BTCPaySimulator,
    http: httpx.AsyncClient,
    store: str,
    tx: dict[str, Any],
    amount: int,
    *,
    whole: bool = False,
    reason: str | None = "Damaged in transit",
    attempts: int = 0,
) -> FollowUpRequest:
    params = {"refundId": RF, "amount": amount, "reason": reason, "whole": whole}
    return FollowUpRequest(
        FollowUp(REFUND, params), tx, credentials(sim, store), http, attempts, NOW_MS
    )


def read_request(
    sim: BTCPaySimulator, http: httpx.AsyncClient, store: str, tx: dict[str, Any], pp: str
) -> FollowUpRequest:
    return FollowUpRequest(
        FollowUp(READ_REFUND, {"pullPaymentId": pp}), tx, credentials(sim, store), http
    )


async def test_a_partial_refund_is_a_custom_pull_payment_named_with_the_refund_id(btcpay, http):
    store = btcpay.register_store("k")
    tx = await paid(btcpay, http, store)
    made = await BTCPAY.send_refund(refund_request(btcpay, http, store, tx, 400))
    [pp_id] = btcpay.pull_payments_of(tx["providerRef"])
    pp = btcpay.pull_payment(pp_id)
    assert (pp["name"], pp["description"], pp["amount"], pp["currency"]) == (
        f"Refund {RF} of {TX}",
        "Damaged in transit",
        "4.00",
        "EUR",
    )
    assert (made.id, made.amount_minor, made.state, made.tag) == (pp_id, 400, REFUND_PENDING, RF)
    assert made.created_ms == pp["startsAt"] * 1000
    assert pp["viewLink"] in made.detail  # the link the merchant sends the buyer


async def test_all_of_it_is_a_fiat_refund_of_what_the_buyer_paid(btcpay, http):
    store = btcpay.register_store("k")
    tx = await paid(btcpay, http, store)
    made = await BTCPAY.send_refund(
        refund_request(btcpay, http, store, tx, 1000, whole=True, reason=None)
    )
    pp = btcpay.pull_payment(made.id)
    assert (pp["amount"], pp["currency"], pp["description"]) == ("10.00", "EUR", "")
    assert made.amount_minor == 1000


async def test_the_store_scoped_route_serves_a_server_from_before_2_4(btcpay, http):
    btcpay.version = (2, 3, 9)  # no store-less routes, no InvoiceRefund
    store = btcpay.register_store("k")
    tx = await paid(btcpay, http, store)
    made = await BTCPAY.send_refund(refund_request(btcpay, http, store, tx, 300))
    assert made.state == REFUND_PENDING and made.amount_minor == 300


async def test_a_refusal_for_good_is_not_retried_and_says_btcpays_words(btcpay, http):
    store = btcpay.register_store("k")
    tx = await paid(btcpay, http, store)
    unpaid = {**tx, "providerRef": await _new_invoice(btcpay, http, store)}
    with pytest.raises(ProviderError) as refused:
        await BTCPAY.send_refund(refund_request(btcpay, http, store, unpaid, 300))
    assert not refused.value.retryable
    assert "Cannot refund this invoice" in refused.value.message
    assert "token k" not in refused.value.message


@pytest.mark.parametrize("how", LOSSES)
async def test_a_refund_whose_answer_is_lost_is_made_once_across_attempts(btcpay, http, how):
    store = btcpay.register_store("k")
    tx = await paid(btcpay, http, store)
    btcpay.faults.lose("POST", r"/api/v1/stores/[^/]+/invoices/[^/]+/refund$", how)
    with pytest.raises(ProviderError) as lost:
        await refunding.carry_out(BTCPAY, refund_request(btcpay, http, store, tx, 400), NOW_MS)
    assert lost.value.retryable and btcpay.faults.lost == 1
    # BTCPay made the pull payment; the next attempt finds it by its name and adopts it
    again = await refunding.carry_out(
        BTCPAY, refund_request(btcpay, http, store, tx, 400, attempts=1), NOW_MS + 60_000
    )
    [pp_id] = btcpay.pull_payments_of(tx["providerRef"])
    assert again.refund is not None
    assert (again.refund.id, again.refund.tag, again.refund.amount_minor) == (pp_id, RF, 400)
    assert "found the refund an earlier attempt made" in again.detail
    # and a third attempt (a crash after the second) makes nothing more
    await refunding.carry_out(
        BTCPAY, refund_request(btcpay, http, store, tx, 400, attempts=2), NOW_MS + 120_000
    )
    assert btcpay.pull_payments_of(tx["providerRef"]) == [pp_id]


async def test_the_first_attempt_asks_too_and_makes_one(btcpay, http):
    store = btcpay.register_store("k")
    tx = await paid(btcpay, http, store)
    made = await refunding.carry_out(BTCPAY, refund_request(btcpay, http, store, tx, 400), NOW_MS)
    assert made.refund is not None and "took refund" in made.detail
    assert len(btcpay.pull_payments_of(tx["providerRef"])) == 1


async def test_the_refunds_of_an_invoice_are_its_pull_payments_in_every_state(btcpay, http):
    store = btcpay.register_store("k")
    tx = await paid(btcpay, http, store)
    other = await paid(btcpay, http, store, OTHER_TX)
    ours = await BTCPAY.send_refund(refund_request(btcpay, http, store, tx, 100))
    screens = await btcpay.refund(tx["providerRef"], "Custom", "2.00")  # BTCPay's own screens
    paid_out = await btcpay.refund(tx["providerRef"], "Custom", "3.00")
    await btcpay.pay_refund(paid_out)
    withdrawn = await btcpay.refund(tx["providerRef"], "Custom", "1.50")
    await btcpay.claim(withdrawn)
    await btcpay.archive_pull_payment(withdrawn)
    await btcpay.refund(other["providerRef"], "Custom", "9.00")  # another invoice's
    found = {r.id: r for r in await BTCPAY.refunds_of(refund_request(btcpay, http, store, tx, 100))}
    assert set(found) == {ours.id, screens, paid_out, withdrawn}
    assert (found[ours.id].tag, found[ours.id].state) == (RF, REFUND_PENDING)
    assert (found[screens].tag, found[screens].amount_minor) == (None, 200)
    assert (found[paid_out].state, found[paid_out].amount_minor) == (REFUND_SUCCEEDED, 300)
    assert (found[withdrawn].state, found[withdrawn].amount_minor) == (REFUND_FAILED, 150)


async def test_a_crypto_refund_counts_at_the_invoices_own_rate(btcpay, http):
    store = btcpay.register_store("k")
    tx = await paid(btcpay, http, store)
    pp = await btcpay.refund(tx["providerRef"], "RateThen")  # 0.0001 BTC, as paid
    [refund] = await BTCPAY.refunds_of(refund_request(btcpay, http, store, tx, 100))
    assert (refund.id, refund.amount_minor) == (pp, 1000)


async def test_a_refund_offered_is_read_with_its_amount_and_state(btcpay, http):
    """The follow-up an ``InvoiceRefund`` asks for: the refund with its amount, counted under
    the pull payment's id, pending while it waits, then paid out, or withdrawn."""
    store = btcpay.register_store("k")
    tx = await paid(btcpay, http, store)
    pp = await btcpay.refund(tx["providerRef"], "Custom", "4.00")
    read = await BTCPAY.follow_up(read_request(btcpay, http, store, tx, pp))
    assert read.done and read.refund is None
    [offered] = read.events
    assert (offered.type, offered.payment_status, offered.refund) == (
        E.PAYMENT_PARTIALLY_REFUNDED,
        S.PARTIALLY_REFUNDED,
        Refund(400, pp),
    )
    assert offered.dedup_ids == (f"sync:{pp}:pending",) and offered.link_refs == (pp,)
    assert offered.refs == (tx["providerRef"],)
    assert offered.provider_refund is not None
    assert (offered.provider_refund.state, offered.provider_refund.tag) == (REFUND_PENDING, None)
    await btcpay.pay_refund(pp)
    [done] = (await BTCPAY.follow_up(read_request(btcpay, http, store, tx, pp))).events
    assert done.dedup_ids == (f"sync:{pp}:succeeded",) and done.refund == Refund(400, pp)
    assert done.provider_refund is not None and done.provider_refund.state == REFUND_SUCCEEDED
    withdrawn = await btcpay.refund(tx["providerRef"], "Custom", "1.00")
    await btcpay.archive_pull_payment(withdrawn)
    [failed] = (await BTCPAY.follow_up(read_request(btcpay, http, store, tx, withdrawn))).events
    assert (failed.type, failed.payment_status, failed.refund) == (
        E.PAYMENT_REFUND_FAILED,
        None,
        Refund(100, withdrawn),
    )


async def test_a_pull_payment_btcpay_no_longer_has_is_done_with(btcpay, http):
    store = btcpay.register_store("k")
    tx = await paid(btcpay, http, store)
    read = await BTCPAY.follow_up(read_request(btcpay, http, store, tx, "gone"))
    assert read.done and read.events == () and "no pull payment" in read.detail


def test_the_tag_is_read_from_the_name_alone():
    assert refunds.tag_of(f"Refund {RF} of {TX}") == RF
    assert refunds.tag_of("Refund 7Ab3") is None
    assert refunds.tag_of(f"Refund x{RF}") is None and refunds.tag_of(None) is None


@pytest.mark.parametrize(
    ("name", "ours"),
    [
        (f"Refund {RF} of {TX}", True),
        ("Refund INV1", True),  # BTCPay's own default name
        ("Remboursement INV1", True),  # its screens localize the word, never the id
        ("Refund INV12", False),
        (f"Refund {RF} of {OTHER_TX}", False),
        ("Payroll", False),
    ],
)
def test_a_pull_payment_is_the_transactions_by_its_name(name, ours):
    assert refunds.belongs({"name": name}, TX, "INV1") is ours


@pytest.mark.parametrize(
    ("paid_with", "payout"),
    [
        ({"BTC-CHAIN": 1}, "BTC-CHAIN"),
        ({"BTC-LNURL": 1}, "BTC-LN"),  # LNURL is paid back over lightning (PayoutTypes)
        ({"BTC-CHAIN": 1, "BTC-LN": 2}, "BTC-LN"),
        ({"BTC-CHAIN": 0}, None),  # nothing paid (marked settled): BTCPay's default
    ],
)
def test_the_payout_method_is_how_the_buyer_paid(paid_with, payout):
    methods = [
        {"paymentMethodId": method, "payments": [{"id": str(n)} for n in range(count)]}
        for method, count in paid_with.items()
    ]
    assert refunds.payout_method(methods) == payout


def test_the_refund_request_is_btcpays_refund_invoice_request():
    tx = {"id": TX, "currency": "JPY", "providerRef": "INV1"}
    part = {"refundId": RF, "amount": 1500, "reason": "Late", "whole": False}
    assert refunds.refund_body(tx, part, "BTC-CHAIN") == {
        "name": f"Refund {RF} of {TX}",
        "description": "Late",
        "refundVariant": "Custom",
        "customAmount": "1500",
        "customCurrency": "JPY",
        "payoutMethodId": "BTC-CHAIN",
    }
    whole = {"refundId": RF, "amount": 1500, "reason": None, "whole": True}
    assert refunds.refund_body(tx, whole, None) == {
        "name": f"Refund {RF} of {TX}",
        "refundVariant": "Fiat",
    }


async def _new_invoice(sim: BTCPaySimulator, http: httpx.AsyncClient, store: str) -> str:
    made = await http.post(
        f"{sim.url}/api/v1/stores/{store}/invoices",
        json={"amount": "1.00", "currency": "EUR"},
        headers={"Authorization": "token k"},
    )
    return str(made.json()["id"])
