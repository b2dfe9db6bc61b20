"""Refunds from the merchant's server API, through a real node and each provider's simulator
(CONTRACT 4.5, issue 26): the node owes the provider's refund call from its durable queue
(``202``, state ``requested``, then ``sent``), and the transaction moves only when the
provider's own webhook says the money moved, summed by amount (``partially_refunded`` then
``refunded``). Pay by mail records a refund sent by hand at once. What cannot be refunded is
refused before anything is owed; what the provider refuses for good is ``failed`` with its
words.

Stripe's and PayPal's refunds in two parts are tests/contract (every provider, one test); what
is here is what only Paddle's approval, BTCPay's pull payments and pay by mail show.

The refund calls, from the providers' references: Stripe ``POST /v1/refunds`` on the payment
intent with an ``Idempotency-Key``; PayPal ``POST /v2/payments/captures/{id}/refund`` with a
``PayPal-Request-Id``; Paddle ``POST /adjustments`` (action refund, type full or partial by
line, approved by Paddle afterwards: "Most refunds for live accounts are created with the status
of pending_approval until reviewed by Paddle", openapi.yaml status-adjustment); BTCPay ``POST
/api/v1/stores/{storeId}/invoices/{invoiceId}/refund`` (a pull payment the buyer claims,
swagger RefundInvoiceRequest)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
import trio
from support.btcpay_shop import btcpay_shop
from support.client import bearer, manual_shop, post_checkout
from support.paddle_shop import paddle_shop
from support.stripe_shop import SECRET_KEY as STRIPE_SECRET_KEY
from support.stripe_shop import stripe_shop
from support.waits import bound, follow_ups_settled

from edge.actors.project.refunds import REFUNDS_KEPT
from edge.sim.faults import LOST_5XX


async def _checkout(http: httpx.AsyncClient, shop: Any, provider: str, product: str) -> dict:
    answer = await post_checkout(http, provider, shop, product, mode="test")
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


async def _refund(http: httpx.AsyncClient, shop: Any, tx: str, **body: Any) -> httpx.Response:
    return await http.post(
        f"/api/projects/{shop.project_id}/transactions/{tx}/refund",
        json=body,
        headers=bearer(shop.test_key),
    )


async def _record(http: httpx.AsyncClient, shop: Any, tx: str) -> dict[str, Any]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx}", headers=bearer(shop.test_key)
    )
    return dict(answer.json())


async def _until(http: httpx.AsyncClient, shop: Any, tx: str, wanted: str) -> dict[str, Any]:
    """The status record once it is ``wanted`` (a long poll on its version)."""
    with trio.fail_after(bound(20)):
        seen = (await http.get(f"/status/{shop.project_id}/{tx}")).json()
        while seen["status"] != wanted:
            answer = await http.get(
                f"/status/{shop.project_id}/{tx}",
                params={"wait": 10, "version": seen["version"]},
            )
            seen = answer.json()
    return dict(seen)


async def _refund_state(
    node: Any, http: httpx.AsyncClient, shop: Any, tx: str, wanted: str
) -> dict:
    """The transaction's last refund once it is in state ``wanted`` (the follow-up worker
    runs apart from the request): woken by the node's own watch on the transaction's follow-up
    attempts, which fires once an attempt is written; read while registered, so none is
    missed."""
    with trio.fail_after(bound(20)):
        while True:
            with node.ctx.attempts.expecting(tx) as attempted:
                record = await _record(http, shop, tx)
                if record["refunds"][-1]["state"] == wanted:
                    return dict(record["refunds"][-1])
                await attempted.wait()


async def test_a_paddle_transaction_is_refunded_once_paddle_approves(node, admin, http, paddle):
    shop = await paddle_shop(admin, paddle)
    made = await _checkout(http, shop, "paddle", "ten")
    await paddle.pay(made["token"])
    await _until(http, shop, made["txId"], "succeeded")
    asked = await _refund(http, shop, made["txId"])  # all of it: Paddle's type full
    assert (asked.status_code, asked.json()["amount"]) == (202, 10.0)
    await _refund_state(node, http, shop, made["txId"], "sent")
    # Paddle reviews it first: nothing moves while it waits for approval
    assert (await http.get(f"/status/{shop.project_id}/{made['txId']}")).json()[
        "status"
    ] == "succeeded"
    (waiting,) = paddle.adjustments_of(made["token"])
    assert (waiting["type"], waiting["status"]) == ("full", "pending_approval")
    await paddle.approve_refund(waiting["id"])
    await _until(http, shop, made["txId"], "refunded")


async def test_a_refund_while_paddle_reviews_another_waits_and_is_made_once(
    node, admin, http, paddle
):
    """Paddle takes one refund of a transaction at a time ("You are unable to create further
    adjustments against this transaction as there is a pending refund request",
    developer.paddle.com/errors/adjustments/adjustment_pending_refund_request). That refusal is
    not a failure (CONTRACT 4.3a): the second refund stays owed, its amount held, and is made
    once Paddle has approved the first."""
    shop = await paddle_shop(admin, paddle)
    made = await _checkout(http, shop, "paddle", "ten")
    await paddle.pay(made["token"])
    await _until(http, shop, made["txId"], "succeeded")
    assert (await _refund(http, shop, made["txId"], amount=3)).status_code == 202
    await _refund_state(node, http, shop, made["txId"], "sent")  # waits for Paddle's approval
    second = await _refund(http, shop, made["txId"], amount=2)
    assert second.status_code == 202
    with trio.fail_after(bound(20)), node.ctx.attempts.expecting(made["txId"]) as attempted:
        await attempted.wait()  # its first attempt: Paddle holds another for review
    record = await _record(http, shop, made["txId"])
    assert [r["state"] for r in record["refunds"]] == ["sent", "requested"]
    assert len(paddle.adjustments_of(made["token"])) == 1
    # both held: 3.00 under review, 2.00 not made yet
    left = await _refund(http, shop, made["txId"], amount=6)
    assert (left.status_code, left.json()["error"]["refundable"]) == (409, 5.0)
    (first,) = paddle.adjustments_of(made["token"])
    await paddle.approve_refund(first["id"])
    await _refund_state(node, http, shop, made["txId"], "sent")
    assert len(paddle.adjustments_of(made["token"])) == 2


async def _btcpay_refund_sent(
    node: Any, admin: Any, http: httpx.AsyncClient, btcpay: Any
) -> tuple[Any, dict[str, Any], str, dict[str, Any]]:
    """A BTCPay invoice of 10.00 paid and confirmed, then 4.00 of it refunded: the shop, the
    checkout, its invoice id and the refund once BTCPay made its pull payment."""
    shop = await btcpay_shop(admin, btcpay)
    made = await _checkout(http, shop, "btcpay", "ten")
    invoice = made["url"].rsplit("/", 1)[-1]
    await btcpay.pay(invoice)
    await btcpay.confirm(invoice)
    await _until(http, shop, made["txId"], "succeeded")
    asked = await _refund(http, shop, made["txId"], amount=4)
    assert asked.status_code == 202, asked.text
    sent = await _refund_state(node, http, shop, made["txId"], "sent")
    return shop, made, invoice, sent


async def test_a_btcpay_refund_is_a_pull_payment_counted_as_given_back(node, admin, http, btcpay):
    """A BTCPay refund is a pull payment the buyer claims with a wallet address; once BTCPay
    made it, its amount counts as given back (the merchant cannot offer the same money twice):
    its InvoiceRefund names the pull payment, which the node reads."""
    shop, made, invoice, sent = await _btcpay_refund_sent(node, admin, http, btcpay)
    assert sent["providerRefundId"] in btcpay.pull_payments_of(invoice)
    await btcpay.drained()
    await _until(http, shop, made["txId"], "partially_refunded")
    record = await _record(http, shop, made["txId"])
    assert (record["refunded"], record["refundable"]) == (4.0, 6.0)
    assert [r["refundId"] for r in record["providerRefunds"]] == [sent["id"]]


async def _paid_by_mail(admin: Any, http: httpx.AsyncClient) -> tuple[Any, dict]:
    """A pay-by-mail checkout of the book (19.99 EUR), marked paid."""
    shop = await manual_shop(admin)
    made = await _checkout(http, shop, "manual", "book")
    paid = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{made['txId']}/mark-paid",
        headers=bearer(shop.test_key),
    )
    assert paid.status_code == 200, paid.text
    return shop, made


async def test_pay_by_mail_records_a_refund_sent_by_hand(admin, http):
    shop, made = await _paid_by_mail(admin, http)
    part = await _refund(http, shop, made["txId"], amount=9.99)
    assert (part.status_code, part.json()["state"]) == (200, "done")
    assert (await _record(http, shop, made["txId"]))["status"] == "partially_refunded"
    rest = await _refund(http, shop, made["txId"])
    assert (rest.status_code, rest.json()["amount"]) == (200, 10.0)
    record = await _record(http, shop, made["txId"])
    assert (record["status"], [r["state"] for r in record["refunds"]]) == (
        "refunded",
        ["done", "done"],
    )
    refunds = [e for e in record["events"] if e["type"].startswith("payment.")]
    # each refund's own amount, and all given back so far beside it
    assert [(e["type"], e["amount"], e["refundedAmount"]) for e in refunds] == [
        ("payment.partially_refunded", 9.99, 9.99),
        ("payment.refunded", 10.0, 19.99),
    ]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"amount": 20}, 409, "refund_too_large"),  # more than was paid
        ({"amount": 0.001}, 422, "invalid_amount"),  # the transaction's EUR has two decimals
        ({"amount": -1}, 400, "invalid_amount"),
        ({"amount": "5"}, 400, "invalid_amount"),
        ({"note": "x"}, 400, "unknown_field"),
    ],
)
async def test_what_cannot_be_refunded_is_refused_before_anything_is_owed(
    admin, http, body, status, code
):
    shop, made = await _paid_by_mail(admin, http)
    refused = await _refund(http, shop, made["txId"], **body)
    assert (refused.status_code, refused.json()["error"]["code"]) == (status, code)
    record = await _record(http, shop, made["txId"])
    assert (record["status"], record["refunds"]) == ("succeeded", [])


async def test_a_pending_checkout_is_not_refunded(admin, http):
    shop = await manual_shop(admin)
    made = await _checkout(http, shop, "manual", "book")
    refused = await _refund(http, shop, made["txId"])
    assert (refused.status_code, refused.json()["error"]["code"]) == (422, "invalid_transition")


async def test_a_refund_asked_again_with_its_key_is_the_first_refund(admin, http):
    json_type = {"Content-Type": "application/json"}
    """A merchant that lost the answer asks again with the same ``Idempotency-Key``: the first
    refund's answer, never a second refund (a key is a checkout's and a refund's alike)."""
    shop, made = await _paid_by_mail(admin, http)
    tx = made["txId"]
    url = f"/api/projects/{shop.project_id}/transactions/{tx}/refund"
    keyed = {**bearer(shop.test_key), "Idempotency-Key": "refund-order-42"}
    first = await http.post(url, json={"amount": 5}, headers=keyed)
    assert first.status_code == 200 and "Idempotent-Replayed" not in first.headers
    again = await http.post(url, json={"amount": 5.0}, headers=keyed)  # 5 and 5.0 are one amount
    assert (again.status_code, again.json()) == (200, first.json())
    assert again.headers["Idempotent-Replayed"] == "true"
    other = await http.post(url, json={"amount": 6}, headers=keyed)
    assert (other.status_code, other.json()["error"]["code"]) == (409, "idempotency_conflict")

    # two at once with a new key: the second waits for the first's commit and gets its answer
    both = {**bearer(shop.test_key), "Idempotency-Key": "refund-order-43"}
    answers: list[httpx.Response] = []

    async def ask() -> None:
        answers.append(await http.post(url, json={"amount": 1, "reason": "late"}, headers=both))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(ask)
        nursery.start_soon(ask)
    assert [a.status_code for a in answers] == [200, 200]
    assert answers[0].json() == answers[1].json()
    # one made it, the other got its answer (waiting on its commit, or from the store)
    assert sorted(a.headers.get("Idempotent-Replayed", "") for a in answers) == ["", "true"]

    record = await _record(http, shop, tx)
    assert [(r["amount"], r["state"]) for r in record["refunds"]] == [(5.0, "done"), (1.0, "done")]
    assert record["refundable"] == 13.99
    # refunds' keys are their own: a checkout, which needs no key of the project's, can neither
    # take a refund's key nor be blocked by one
    checkout = await http.post(
        f"/api/checkout/manual/{shop.project_id}",
        json={"productId": "book"},
        headers={"Idempotency-Key": "refund-order-42"},
    )
    assert checkout.status_code == 201
    # another mode's key does not see the transaction, replay or not
    live = {**bearer(shop.live_key), "Idempotency-Key": "refund-order-42"}
    unseen = await http.post(url, json={"amount": 5}, headers=live)
    assert (unseen.status_code, unseen.json()["error"]["code"]) == (404, "not_found")
    # and each mode's keys are its own: the key tried in test mode refunds a live payment
    paid_live = await http.post(
        f"/api/checkout/manual/{shop.project_id}", json={"productId": "book", "mode": "live"}
    )
    live_tx = paid_live.json()["txId"]
    marked = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{live_tx}/mark-paid",
        headers=bearer(shop.live_key),
    )
    assert marked.status_code == 200, marked.text
    live_refund = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{live_tx}/refund",
        json={"amount": 5},
        headers=live,
    )
    assert live_refund.status_code == 200, live_refund.text
    assert "Idempotent-Replayed" not in live_refund.headers
    # an amount no currency can hold is the request's fault, never the node's: refused as the
    # body is read (CONTRACT 8: numbers bounded before they are parsed)
    huge = await http.post(
        url, content=b'{"amount": 1e9999999}', headers=bearer(shop.test_key) | json_type
    )
    assert (huge.status_code, huge.json()["error"]["code"]) == (400, "invalid_json")


async def test_a_stripe_refund_asked_again_with_its_key_is_made_once(node, admin, http, sim):
    shop = await stripe_shop(admin, sim)
    made = await post_checkout(http, "stripe", shop, "book", mode="test")
    tx, session = made.json()["txId"], made.json()["url"].rsplit("/", 1)[-1]
    await sim.complete(session)
    await _until(http, shop, tx, "succeeded")
    url = f"/api/projects/{shop.project_id}/transactions/{tx}/refund"
    keyed = {**bearer(shop.test_key), "Idempotency-Key": "refund-order-42"}
    first = await http.post(url, json={"amount": 5}, headers=keyed)
    again = await http.post(url, json={"amount": 5}, headers=keyed)  # the answer was lost
    assert [first.status_code, again.status_code] == [202, 202]
    assert again.json()["id"] == first.json()["id"]
    await follow_ups_settled(node, tx)
    await _until(http, shop, tx, "partially_refunded")
    assert [r["amount"] for r in sim.refunds_of(session)] == [500]
    record = await _record(http, shop, tx)
    assert [r["id"] for r in record["refunds"]] == [first.json()["id"]]


async def test_a_refund_refused_after_a_lost_answer_stays_held_not_failed(node, admin, http, sim):
    """Stripe made the refund and a gateway lost its answer; the retry is refused for good (the
    merchant rotated the key), and so is the list that would tell: the outcome is unknown, so
    the amount stays held and nobody is told it failed. Stripe's own webhooks settle it."""
    shop = await stripe_shop(admin, sim)
    made = await post_checkout(http, "stripe", shop, "book", mode="test")
    tx, session = made.json()["txId"], made.json()["url"].rsplit("/", 1)[-1]
    await sim.complete(session)
    await _until(http, shop, tx, "succeeded")
    sim.webhook_faults.hold()  # the refund's webhooks come after the verdict
    sim.faults.lose("POST", r"/v1/refunds", LOST_5XX)
    with node.ctx.attempts.expecting(tx) as first:
        asked = await _refund(http, shop, tx, amount=5)
        assert asked.status_code == 202
        with trio.fail_after(bound(20)):
            await first.wait()
    assert len(sim.refunds_of(session)) == 1  # made; only its answer was lost
    sim.refused_keys.add(STRIPE_SECRET_KEY)
    with node.ctx.attempts.expecting(tx) as second:
        with trio.fail_after(bound(20)):
            await second.wait()
    sim.refused_keys.discard(STRIPE_SECRET_KEY)
    record = await _record(http, shop, tx)
    assert [r["state"] for r in record["refunds"]] == ["unknown"]
    assert record["refundable"] == 14.99  # held: the provider may have made it
    assert "payment.refund_failed" not in [e["type"] for e in record["events"]]
    await sim.release()
    await _until(http, shop, tx, "partially_refunded")
    record = await _record(http, shop, tx)
    assert [r["state"] for r in record["refunds"]] == ["succeeded"]
    assert record["refundable"] == 14.99 and len(sim.refunds_of(session)) == 1


async def test_a_refund_and_a_lost_dispute_add_up_to_all_given_back(node, admin, http, sim):
    """19.99 paid; 5.00 refunded in Stripe's dashboard, the node hearing ``charge.refunded``
    (``amount_refunded`` 5.00) and not ``refund.created`` (an endpoint on Stripe's older list
    of events never gets it); then a dispute of the other 14.99, lost. Stripe's total counts
    refunds only: the dispute's money is added to it, and all of 19.99 went back."""
    shop = await stripe_shop(admin, sim)
    made = await post_checkout(http, "stripe", shop, "book", mode="test")
    tx, session = made.json()["txId"], made.json()["url"].rsplit("/", 1)[-1]
    await sim.complete(session)
    await _until(http, shop, tx, "succeeded")
    sim.webhook_faults.drop(types=("refund.created",))
    await sim.refund(session, 500)
    await _until(http, shop, tx, "partially_refunded")
    await sim.dispute(session, amount=1499)
    await sim.close_dispute(session, "lost")
    await _until(http, shop, tx, "refunded")
    record = await _record(http, shop, tx)
    assert (record["status"], record["refunded"], record["refundable"]) == ("refunded", 19.99, None)


async def test_refunds_still_held_are_kept_past_the_records_kept(node, admin, http, sim):
    """A transaction keeps its latest refund records; one whose amount is still held (made,
    not yet reported by Stripe) is never the one dropped, or what is left to refund would
    grow by it."""
    shop = await stripe_shop(admin, sim)
    made = await post_checkout(http, "stripe", shop, "book", mode="test")
    tx, session = made.json()["txId"], made.json()["url"].rsplit("/", 1)[-1]
    await sim.complete(session)
    await _until(http, shop, tx, "succeeded")
    sim.webhook_faults.hold()  # Stripe's refund webhooks come later
    for n in range(REFUNDS_KEPT + 1):
        asked = await _refund(http, shop, tx, amount=0.01)
        assert asked.status_code == 202, (n, asked.text)
    record = await _record(http, shop, tx)
    assert record["refundable"] == round(19.99 - (REFUNDS_KEPT + 1) * 0.01, 2)


async def test_a_btcpay_refund_withdrawn_after_part_was_paid_out_counts_that_part(
    node, admin, http, btcpay
):
    """4.00 offered back as a pull payment; the buyer claims 1.00 and it is paid out; the
    merchant then archives the pull payment. 1.00 went back: the other 3.00 is refundable
    again, and the record says the rest of the refund failed."""
    shop, made, invoice, sent = await _btcpay_refund_sent(node, admin, http, btcpay)
    await btcpay.drained()
    await _until(http, shop, made["txId"], "partially_refunded")
    pull_payment = sent["providerRefundId"]
    await btcpay.complete_payout(await btcpay.claim(pull_payment, "1"))
    await btcpay.archive_pull_payment(pull_payment)
    await btcpay.drained()
    synced = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{made['txId']}/sync",
        headers=bearer(shop.test_key),
    )
    assert synced.status_code == 200, synced.text
    record = await _record(http, shop, made["txId"])
    assert [r["amount"] for r in record["providerRefunds"]] == [1.0]
    assert (record["status"], record["refunded"], record["refundable"]) == (
        "partially_refunded",
        1.0,
        9.0,
    )


async def _failures_told(http: httpx.AsyncClient, shop: Any, tx: str) -> list[dict[str, Any]]:
    """The transaction's ``payment.refund_failed`` events, once the node has two: its own
    word (the retry found the refund failed) and the provider's late report of it."""
    with trio.fail_after(bound(20)):
        while True:
            record = await _record(http, shop, tx)
            failed = [e for e in record["events"] if e["type"] == "payment.refund_failed"]
            if len(failed) >= 2:
                return failed
            await trio.sleep(0.05)


def _told_once(failed: list[dict[str, Any]]) -> None:
    """One change, one event: the later telling is the first's repeat, told to no one."""
    told = [e for e in failed if not e.get("duplicateOf")]
    assert len(told) == 1, failed
    assert all(e["duplicateOf"] == told[0]["id"] for e in failed if e is not told[0]), failed


async def _failed_while_unanswered(
    node: Any,
    http: httpx.AsyncClient,
    shop: Any,
    tx: str,
    sim: Any,
    call: str,
    amount: int,
    fail: Callable[[], Awaitable[None]],
) -> None:
    """A refund the provider made while a gateway lost its answer (``call``), its webhooks
    held; the provider then fails it (``fail``), and the node's retry finds it failed."""
    sim.webhook_faults.hold()
    sim.faults.lose("POST", call, LOST_5XX)
    with node.ctx.attempts.expecting(tx) as first:
        assert (await _refund(http, shop, tx, amount=amount)).status_code == 202
        with trio.fail_after(bound(20)):
            await first.wait()
    with node.ctx.attempts.expecting(tx) as second:
        await fail()
        with trio.fail_after(bound(20)):
            await second.wait()
    assert [r["state"] for r in (await _record(http, shop, tx))["refunds"]] == ["failed"]
    sim.webhook_faults.clear()


async def test_a_rejected_refund_found_by_the_retry_is_told_once(node, admin, http, paddle):
    """Paddle made the adjustment and a gateway lost its answer; Paddle then rejected it on
    review. The retry finds it rejected and tells the merchant; Paddle's own webhooks of it,
    held until then, repeat that telling."""
    shop = await paddle_shop(admin, paddle)
    made = await _checkout(http, shop, "paddle", "ten")
    tx, txn = made["txId"], made["token"]
    await paddle.pay(txn)
    await _until(http, shop, tx, "succeeded")

    async def reject() -> None:
        (adjustment,) = paddle.adjustments_of(txn)  # made: only its answer was lost
        await paddle.reject_refund(adjustment["id"])

    await _failed_while_unanswered(node, http, shop, tx, paddle, r"/adjustments$", 3, reject)
    handled = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{tx}/resolve",
        json={"note": "refunded by bank transfer"},
        headers=bearer(shop.test_key),
    )
    assert handled.status_code == 200, handled.text
    await paddle.release()
    _told_once(await _failures_told(http, shop, tx))
    # Paddle's own report of the failure is the one the merchant handled: not flagged again
    record = await _record(http, shop, tx)
    assert (record["needsAttention"], record["attention"]) == (False, []), record["attention"]


async def test_a_withdrawn_refund_found_by_the_retry_is_told_once(node, admin, http, btcpay):
    """BTCPay made the pull payment and a gateway lost its answer; the store then archived it.
    The retry adopts it as failed and tells the merchant; the held ``InvoiceRefund`` makes the
    node read the pull payment, which says the same."""
    shop = await btcpay_shop(admin, btcpay)
    made = await _checkout(http, shop, "btcpay", "ten")
    tx, invoice = made["txId"], made["url"].rsplit("/", 1)[-1]
    await btcpay.pay(invoice)
    await btcpay.confirm(invoice)
    await _until(http, shop, tx, "succeeded")

    async def archive() -> None:
        (pull_payment,) = btcpay.pull_payments_of(invoice)  # made: only its answer was lost
        await btcpay.archive_pull_payment(pull_payment)

    refund_call = r"/api/v1/stores/[^/]+/invoices/[^/]+/refund$"
    await _failed_while_unanswered(node, http, shop, tx, btcpay, refund_call, 4, archive)
    btcpay.release()
    await btcpay.drained()
    _told_once(await _failures_told(http, shop, tx))
