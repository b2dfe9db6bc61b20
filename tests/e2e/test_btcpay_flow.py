"""BTCPay Server end to end through the real node and the BTCPay simulator: an invoice the buyer
is redirected to, paid and confirmed at the invoice page, and the webhooks that follow, retried
and redelivered as BTCPay sends them (CONTRACT 4.2, 4.3; PROVIDERS.md "BTCPay")."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import httpx
import pytest
import trio
from support.asgi import serve_asgi
from support.btcpay_shop import API_KEY, BTCPayShop, btcpay_shop
from support.client import ORIGIN, Admin, bearer, post_checkout
from support.pages import press
from support.waits import until

from edge.actors.messages import ExpireCheckout, LooksEnded
from edge.domain.timefmt import iso_ms
from edge.sim.btcpay import BTCPaySimulator


async def _checkout(http: httpx.AsyncClient, shop: BTCPayShop, **body: Any) -> dict[str, Any]:
    answer = await post_checkout(http, "btcpay", shop, "ten", **body)
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


async def _tx(http: httpx.AsyncClient, shop: BTCPayShop, tx_id: str) -> dict[str, Any]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def _kinds(tx: dict[str, Any], sim: BTCPaySimulator) -> list[tuple[str, str]]:
    """(BTCPay type, node type) of each of the transaction's events from BTCPay, in order."""
    sent = {e["originalDeliveryId"]: e["type"] for e, _, _ in sim.delivered}
    return [
        (sent[e["providerEventId"]], e["type"])
        for e in tx["events"]
        if e["providerEventId"] in sent
    ]


async def _usage(admin: Admin, shop: BTCPayShop) -> int:
    usage = await admin.ok("GET", f"/api/manage/projects/{shop.project_id}/usage")
    return int(usage["test"]["used"])


async def test_redirect_pay_confirm_and_back_to_the_success_page(admin, http, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    metadata = {"customerRef": "cust-7", "order": "A-1"}
    checkout = await _checkout(http, shop, metadata=metadata)
    assert checkout["type"] == "redirect" and checkout["kind"] == "crypto"
    assert checkout["provider"] == "btcpay" and checkout["amount"] == 10
    invoice = btcpay.invoice(btcpay.invoice_of(checkout["txId"]))
    assert checkout["url"] == invoice["checkoutLink"]
    assert invoice["amount"] == "10.00" and invoice["currency"] == "EUR"
    assert invoice["metadata"]["orderId"] == checkout["txId"]
    assert invoice["metadata"]["customerRef"] == "cust-7"
    assert invoice["metadata"]["order"] == "A-1"
    assert checkout["expiresAt"] is not None

    assert (await press(http, checkout["url"], "Pay in full")).endswith(invoice["id"])
    await btcpay.drained()
    assert (await _tx(http, shop, checkout["txId"]))["status"] == "processing"
    # its money is on its way: the merchant cannot abandon it now (CONTRACT 4.5: pending only)
    refused = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{checkout['txId']}/cancel",
        headers=bearer(shop.test_key),
    )
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "invalid_transition")
    assert refused.json()["error"]["status"] == "processing"
    assert await press(http, checkout["url"], "Confirm") == f"{ORIGIN}/thanks"
    await btcpay.drained()
    tx = await _tx(http, shop, checkout["txId"])
    assert tx["status"] == "succeeded" and tx["needsAttention"] is False
    kinds = _kinds(tx, btcpay)
    assert ("InvoiceSettled", "payment.succeeded") in kinds
    assert ("InvoicePaymentSettled", "payment.processing") in kinds
    # the move to processing is told (not history behind the payment received before it)
    sent = {e["originalDeliveryId"]: e["type"] for e, _, _ in btcpay.delivered}
    moved = [e for e in tx["events"] if sent.get(e["providerEventId"]) == "InvoiceProcessing"]
    assert moved[0]["status"] == "processing" and "duplicateOf" not in moved[0], moved
    assert all(e["customerRef"] == "cust-7" for e in tx["events"])
    assert all(status == 200 for _, _, status in btcpay.delivered)


async def test_a_payment_still_processing_when_the_looks_end_is_flagged_never_canceled(
    node, admin, http, btcpay
):
    """The node stops asking a week on (``LooksEnded``, sent here as its follow-up queue would):
    a payment still waiting for its confirmations was paid, so it is neither canceled nor
    called unpaid: the merchant is told it has not settled."""
    shop = await btcpay_shop(admin, btcpay)
    checkout = await _checkout(http, shop)
    assert (await press(http, checkout["url"], "Pay in full")).endswith(
        btcpay.invoice_of(checkout["txId"])
    )
    await btcpay.drained()
    assert (await _tx(http, shop, checkout["txId"]))["status"] == "processing"
    await node.ctx.registry.call(shop.project_id, LooksEnded(checkout["txId"]))
    tx = await _tx(http, shop, checkout["txId"])
    assert (tx["status"], tx["needsAttention"]) == ("processing", True)
    ((flag,),) = [tx["attention"]]
    assert flag["code"] == "still_processing" and "has not settled" in flag["reason"]
    # nor does the node's own expiry (PayPal's, at expiresAt) end a payment under way
    await node.ctx.registry.call(shop.project_id, ExpireCheckout(checkout["txId"]))
    assert (await _tx(http, shop, checkout["txId"]))["status"] == "processing"


@pytest.mark.node_settings(sync_every_s=1.0)
async def test_a_payment_processing_past_its_checkouts_end_is_asked_about_until_it_settles(
    admin, http, btcpay
):
    """A payment under way when its checkout's time is up (here the invoice was made "an hour
    ago" by BTCPay's clock, so its end has passed) is asked about on, with no webhook ever
    coming: it settles and the node learns it, never flagged nor ended for having outlived
    the checkout."""
    shop = await btcpay_shop(admin, btcpay)
    btcpay.webhook_faults.drop()  # no webhook reaches the node: it learns by asking only
    btcpay.clock_offset_s = -3600
    checkout = await _checkout(http, shop)
    btcpay.clock_offset_s = 0
    invoice = btcpay.invoice_of(checkout["txId"])
    await btcpay.pay(invoice)
    assert checkout["expiresAt"] < iso_ms(int(time.time() * 1000))  # its end has passed

    async def status() -> str:
        return str((await _tx(http, shop, checkout["txId"]))["status"])

    await until(lambda: _is(status, "processing"), what="the payment learned by asking")
    for _ in range(2):  # two more looks, past the checkout's end
        looked = (await _tx(http, shop, checkout["txId"]))["asked"]["at"]

        async def looked_again(before: str = looked) -> bool:
            return bool((await _tx(http, shop, checkout["txId"]))["asked"]["at"] != before)

        await until(looked_again, what="the node asking again")
    tx = await _tx(http, shop, checkout["txId"])
    assert (tx["status"], tx["needsAttention"]) == ("processing", False)
    await btcpay.confirm(invoice)
    await until(lambda: _is(status, "succeeded"), what="the settlement learned by asking")
    tx = await _tx(http, shop, checkout["txId"])
    assert tx["needsAttention"] is False and tx["asked"]["webhookArrived"] is False


async def _is(status: Any, wanted: str) -> bool:
    return bool(await status() == wanted)


async def test_expired_then_paid_late_needs_attention(admin, http, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    checkout = await _checkout(http, shop)
    await press(http, checkout["url"], "Let expire")
    await btcpay.drained()
    assert (await _tx(http, shop, checkout["txId"]))["status"] == "expired"
    await press(http, checkout["url"], "Pay in full")
    await btcpay.drained()
    tx = await _tx(http, shop, checkout["txId"])
    assert tx["status"] == "expired" and tx["needsAttention"] is True
    assert ("InvoicePaidAfterExpiration", "payment.paid_late") in _kinds(tx, btcpay)
    assert {e["amount"] for e in tx["events"] if e["type"] == "payment.paid_late"} == {10}
    assert tx["refundable"] == 10


async def test_a_part_payment_after_expiry_needs_attention(admin, http, btcpay):
    """CONTRACT 2: a partial payment on an expired invoice is money for an ended checkout, which
    the merchant must act on. BTCPay says it only in InvoiceReceivedPayment's afterExpiration
    (nothing follows a payment that leaves the invoice short), in bitcoin: the transaction is
    flagged, no euro amount guessed; asking BTCPay finds it in the invoice's payments."""
    shop = await btcpay_shop(admin, btcpay)
    checkout = await _checkout(http, shop)
    await press(http, checkout["url"], "Let expire")
    await btcpay.drained()
    await btcpay.pay(btcpay.invoice_of(checkout["txId"]), part=True)  # a wallet still sends
    await btcpay.drained()
    tx = await _tx(http, shop, checkout["txId"])
    assert tx["status"] == "expired" and tx["needsAttention"] is True
    assert [flag["code"] for flag in tx["attention"]] == ["paid_late"]
    assert ("InvoiceReceivedPayment", "payment.processing") in _kinds(tx, btcpay)
    assert tx["refundable"] is None  # in bitcoin: refunded in BTCPay, never a price guessed

    # the same invoice read by asking (no webhook reached the node): the same flag
    quiet = await btcpay_shop(admin, btcpay)
    asked = await _checkout(http, quiet)
    btcpay.webhook_faults.drop()  # no webhook reaches the node from now on
    await press(http, asked["url"], "Let expire")
    btcpay.clock_offset_s = 60  # paid a minute after the expiry
    await btcpay.pay(btcpay.invoice_of(asked["txId"]), part=True)
    synced = await http.post(
        f"/api/projects/{quiet.project_id}/transactions/{asked['txId']}/sync",
        headers=bearer(quiet.test_key),
    )
    assert synced.status_code == 200, synced.text
    tx = await _tx(http, quiet, asked["txId"])
    assert tx["status"] == "expired" and tx["needsAttention"] is True


async def test_settled_by_hand_after_expiry_is_paid_late(admin, http, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    checkout = await _checkout(http, shop)
    invoice_id = btcpay.invoice_of(checkout["txId"])
    await btcpay.expire(invoice_id)
    btcpay.clock_offset_s = 60
    await btcpay.mark(invoice_id, "Settled")
    await btcpay.drained()
    tx = await _tx(http, shop, checkout["txId"])
    assert tx["status"] == "expired" and tx["needsAttention"] is True
    assert [k for k in _kinds(tx, btcpay) if k[0] == "InvoiceSettled"] == [
        ("InvoiceSettled", "payment.paid_late")
    ]


async def test_partial_payment_then_expiry(admin, http, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    checkout = await _checkout(http, shop)
    await press(http, checkout["url"], "Pay part")
    await btcpay.drained()
    assert (await _tx(http, shop, checkout["txId"]))["status"] == "pending"
    await press(http, checkout["url"], "Let expire")
    await btcpay.drained()
    tx = await _tx(http, shop, checkout["txId"])
    assert tx["status"] == "expired" and tx["needsAttention"] is True
    # flagged once, whichever of InvoiceExpired (partiallyPaid) and InvoiceExpiredPaidPartial
    # comes first: the second is the first's repeat
    assert [flag["code"] for flag in tx["attention"]] == ["paid_late"]
    types = dict(_kinds(tx, btcpay))
    assert types["InvoiceExpiredPaidPartial"] == "checkout.expired"
    assert types["InvoiceReceivedPayment"] == "payment.processing"


async def test_processing_replaced_then_expired(admin, http, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    checkout = await _checkout(http, shop)
    invoice_id = btcpay.invoice_of(checkout["txId"])
    await btcpay.pay(invoice_id)
    await btcpay.replace_payment(invoice_id)  # RBF: back to New, BTCPay says nothing
    btcpay.clock_offset_s = 60
    await btcpay.expire(invoice_id)
    await btcpay.drained()
    tx = await _tx(http, shop, checkout["txId"])
    assert tx["status"] == "expired" and tx["needsAttention"] is False


async def test_invalid_after_processing_fails(admin, http, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    checkout = await _checkout(http, shop)
    await press(http, checkout["url"], "Pay in full")
    await press(http, checkout["url"], "Mark invalid")
    await btcpay.drained()
    assert (await _tx(http, shop, checkout["txId"]))["status"] == "failed"


async def test_refund_offered_changes_nothing(admin, http, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    checkout = await _checkout(http, shop)
    invoice_id = btcpay.invoice_of(checkout["txId"])
    await btcpay.pay(invoice_id)
    await btcpay.confirm(invoice_id)
    await btcpay.refund(invoice_id)
    await btcpay.drained()
    tx = await _tx(http, shop, checkout["txId"])
    assert tx["status"] == "succeeded"
    assert ("InvoiceRefund", "unmatched") in _kinds(tx, btcpay)


class Flaky:
    """Between BTCPay and the node: passes every delivery on, but answers BTCPay 503 for the
    first ``failures`` (as if the node's answer had been lost on the way back)."""

    def __init__(self, target: str, failures: int) -> None:
        self.target, self.failures, self.seen = target, failures, 0

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        headers = {k.decode(): v.decode() for k, v in scope["headers"]}
        async with httpx.AsyncClient() as client:
            answer = await client.post(
                self.target + scope["path"],
                content=body,
                headers={k: v for k, v in headers.items() if k.lower() != "host"},
            )
        self.seen += 1
        return (503, b"") if self.seen <= self.failures else (answer.status_code, answer.content)


async def test_retried_three_times_and_redelivered_by_hand_counts_once(admin, http, node, btcpay):
    async with trio.open_nursery() as nursery:
        proxy = await nursery.start(serve_asgi, Flaky(node.url, failures=3))
        shop = await btcpay_shop(admin, btcpay, webhook_url=proxy + "/webhook/btcpay/{project}")
        checkout = await _checkout(http, shop)
        await btcpay.drained()  # InvoiceCreated: three 503s, then through on the third retry
        before = await _usage(admin, shop)
        invoice_id = btcpay.invoice_of(checkout["txId"])
        await btcpay.pay(invoice_id)
        await btcpay.confirm(invoice_id)
        await btcpay.drained()
        created = [e for e, _, _ in btcpay.delivered if e["type"] == "InvoiceCreated"]
        assert [e["isRedelivery"] for e in created] == [False, True, True, True]
        assert len({e["deliveryId"] for e in created}) == 4
        assert {e["originalDeliveryId"] for e in created} == {created[0]["deliveryId"]}
        settled = next(e for e, _, _ in btcpay.delivered if e["type"] == "InvoiceSettled")
        again = btcpay.redeliver(settled["deliveryId"])
        await btcpay.drained()
        redelivered = next(e for e, _, _ in btcpay.delivered if e["deliveryId"] == again)
        assert redelivered["originalDeliveryId"] == settled["deliveryId"]
        tx = await _tx(http, shop, checkout["txId"])
        nursery.cancel_scope.cancel()
    by_type: dict[str, int] = {}
    for btcpay_type, _ in _kinds(tx, btcpay):
        by_type[btcpay_type] = by_type.get(btcpay_type, 0) + 1
    assert by_type["InvoiceCreated"] == 1 and by_type["InvoiceSettled"] == 1
    assert tx["status"] == "succeeded"
    # created once (exempt); the payment received (no move) and processing (the move to
    # processing) are a change each, payment settled the first's repeat (answered as a
    # duplicate, not counted again); settled: 3 counted
    assert await _usage(admin, shop) == before + 3


async def test_a_delivery_the_node_refuses_is_not_retried(admin, http, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    shop.sim._stores[shop.store_id].webhooks[shop.webhook_id].secret = "rotated-elsewhere"
    await _checkout(http, shop)
    await btcpay.drained()
    assert [status for _, _, status in btcpay.delivered] == [401]
    refused = await admin.ok("GET", f"/api/manage/projects/{shop.project_id}/deliveries")
    assert refused["items"][0]["reason"] == "no_matching_signature"


async def test_a_subscription_is_refused(admin, http, btcpay: BTCPaySimulator):
    shop = await btcpay_shop(admin, btcpay)
    await admin.product(
        shop.project_id, "monthly", name="Monthly", kind="subscription", amount=5, interval="month"
    )
    answer = await post_checkout(http, "btcpay", shop, "monthly")
    assert answer.status_code == 409, answer.text
    assert answer.json()["error"]["code"] == "subscription_not_supported"


async def test_portal_is_unsupported(admin, http, btcpay):
    shop = await btcpay_shop(admin, btcpay)
    answer = await http.post(
        f"/api/subscriptions/{shop.project_id}/sub_01JD0000000000000000000000/portal-url",
        headers=bearer(shop.test_key),
    )
    assert answer.status_code in (404, 409), answer.text


async def test_edge_trigger_btcpay_sends_a_signed_event_through_the_pipeline(
    admin, http, node, btcpay
):
    shop = await btcpay_shop(admin, btcpay)
    checkout = await _checkout(http, shop)
    data = str(node.ctx.settings.data_dir)

    async def trigger(event_type: str) -> dict[str, Any]:
        sent = await trio.run_process(
            [sys.executable, "-m", "edge", "trigger", "btcpay", event_type]
            + ["--tx", checkout["txId"], "--data", data, "--json"],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        assert sent.returncode == 0, sent.stderr
        return dict(json.loads(sent.stdout))

    processing = await trigger("payment.processing")
    assert (processing["status"], processing["providerType"]) == (200, "InvoiceProcessing")
    assert (await _tx(http, shop, checkout["txId"]))["status"] == "processing"
    settled = await trigger("payment.succeeded")
    assert settled["providerType"] == "InvoiceSettled" and settled["answer"]["duplicate"] is False
    tx = await _tx(http, shop, checkout["txId"])
    assert tx["status"] == "succeeded"
    assert settled["providerEventId"] in {e["providerEventId"] for e in tx["events"]}


async def test_edge_trigger_without_a_transaction_starts_a_test_checkout_first(
    admin, http, node, btcpay
):
    shop = await btcpay_shop(admin, btcpay)
    sent = await trio.run_process(
        [sys.executable, "-m", "edge", "trigger", "btcpay", "payment.succeeded"]
        + ["--project", shop.project_id, "--data", str(node.ctx.settings.data_dir)],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert sent.returncode == 0, sent.stderr
    started = sent.stderr.decode()
    assert started.startswith("started tx_") and "(book, test mode)" in started
    tx_id = started.split()[1]
    tx = await _tx(http, shop, tx_id)
    assert (tx["status"], tx["isTest"], tx["productId"]) == ("succeeded", True, "book")
    assert b"InvoiceSettled" in sent.stdout
    lost = await trio.run_process(
        [sys.executable, "-m", "edge", "trigger", "btcpay", "payment.succeeded"]
        + ["--data", str(node.ctx.settings.data_dir)],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert lost.returncode == 1 and b"give --tx, or --project" in lost.stderr
    # a type the simulator does not send is refused before a checkout starts for nothing
    before = await http.get(
        f"/api/projects/{shop.project_id}/transactions", headers=bearer(shop.test_key)
    )
    typo = await trio.run_process(
        [sys.executable, "-m", "edge", "trigger", "btcpay", "payment.succeded"]
        + ["--project", shop.project_id, "--data", str(node.ctx.settings.data_dir)],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert typo.returncode == 1
    assert b"btcpay sends no simulated payment.succeded: one of" in typo.stderr
    assert b"payment.succeeded" in typo.stderr
    after = await http.get(
        f"/api/projects/{shop.project_id}/transactions", headers=bearer(shop.test_key)
    )
    assert after.json()["items"] == before.json()["items"]


async def _feed(http: httpx.AsyncClient, shop: BTCPayShop) -> list[dict[str, Any]]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/events", headers=bearer(shop.test_key)
    )
    assert answer.status_code == 200, answer.text
    return list(answer.json()["items"])


async def test_a_point_of_sale_invoice_echoing_a_checkout_does_not_pay_it(admin, http, btcpay):
    """Anyone may make an invoice at a store's Point of Sale with an orderId of their choosing
    (btcpayserver@03345c28 BTCPayServer/Plugins/PointOfSale/Controllers/
    UIPointOfSaleController.cs:186-205, ``string orderId`` of an anonymous POST; :404-409
    ``OrderId = orderId ?? ...``); the store's webhook then reports it like the node's own
    invoices. A 1.00 invoice naming the node's 99,999,999.99 checkout must not complete it."""
    shop = await btcpay_shop(admin, btcpay)
    await admin.product(shop.project_id, "big", name="Big", amount=99999999.99, currency="EUR")
    big = await _checkout(http, shop, productId="big")
    app = btcpay.register_pos_app(shop.store_id, "EUR")
    async with httpx.AsyncClient() as buyer:  # no key, no session: a stranger on the web
        made = await buyer.post(
            f"{btcpay.url}/apps/{app}/pos",
            data={"amount": "1.00", "orderId": big["txId"]},
            headers={"Accept": "application/json"},
        )
    small = made.json()["invoiceId"]
    assert btcpay.invoice(small)["metadata"]["orderId"] == big["txId"]
    await btcpay.pay(small)
    await btcpay.confirm(small)
    await btcpay.drained()
    tx = await _tx(http, shop, big["txId"])
    assert (tx["status"], tx["version"], tx["needsAttention"]) == ("pending", 1, False)
    forged = {e["originalDeliveryId"] for e, _, _ in btcpay.delivered if e["invoiceId"] == small}
    stored = [e for e in await _feed(http, shop) if e["providerEventId"] in forged]
    assert len(stored) == len(forged) == 5  # created, payment, processing, settled x2
    assert {(e["type"], e["txId"], e["claimedTxId"]) for e in stored} == {
        ("unmatched", None, big["txId"])
    }
    # the node's own invoice still pays it
    await btcpay.pay(btcpay.invoice_of(big["txId"]))
    await btcpay.confirm(btcpay.invoice_of(big["txId"]))
    await btcpay.drained()
    assert (await _tx(http, shop, big["txId"]))["status"] == "succeeded"


# How the merchant marks the node's invoice by hand (Greenfield's POST .../status) in each state
# BTCPay allows (btcpayserver@03345c28 InvoiceEntity.cs:804-822), and where the transaction
# must end: a marked settlement is a success, after the invoice ended it is money for an ended
# checkout (paid_late); a marked invalidation is a failure, after a success it changes nothing
# but the merchant must look (contradicted).
MARKED: dict[str, tuple[list[str], str, bool, set[str]]] = {
    "settled while new": (["Settled"], "succeeded", False, set()),
    "settled while processing": (["pay", "Settled"], "succeeded", False, set()),
    "settled after expiry": (["expire", "Settled"], "expired", True, {"paid_late"}),
    "invalid while new": (["Invalid"], "failed", False, set()),
    "invalid while processing": (["pay", "Invalid"], "failed", False, set()),
    "invalid after a marked settlement": (
        ["Settled", "Invalid"],
        "succeeded",
        True,
        {"contradicted"},
    ),
}


@pytest.mark.parametrize("name", MARKED)
async def test_an_invoice_marked_by_hand(admin, http, btcpay, name):
    steps, status, attention, codes = MARKED[name]
    shop = await btcpay_shop(admin, btcpay)
    checkout = await _checkout(http, shop)
    invoice_id = btcpay.invoice_of(checkout["txId"])
    async with httpx.AsyncClient() as merchant:
        for step in steps:
            btcpay.clock_offset_s += 60  # BTCPay stamps each event when it happens
            if step == "pay":
                await btcpay.pay(invoice_id)
            elif step == "expire":
                await btcpay.expire(invoice_id)
            else:
                answer = await merchant.post(
                    f"{btcpay.url}/api/v1/stores/{shop.store_id}/invoices/{invoice_id}/status",
                    json={"status": step},
                    headers={"Authorization": f"token {API_KEY}"},
                )
                assert answer.status_code == 200, answer.text
    await btcpay.drained()
    tx = await _tx(http, shop, checkout["txId"])
    assert (tx["status"], tx["needsAttention"]) == (status, attention), tx
    flagged = {flag["code"] for flag in tx.get("attention") or []}
    # a success after an ending is also a story that holds both: contradicted may come with it
    assert codes <= flagged <= (codes | {"contradicted"} if codes else set()), flagged
    marked = [k for k in _kinds(tx, btcpay) if k[0] in ("InvoiceSettled", "InvoiceInvalid")]
    assert len(marked) == sum(1 for s in steps if s in ("Settled", "Invalid"))
