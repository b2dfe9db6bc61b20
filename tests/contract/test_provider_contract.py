"""The provider contract (CONTRACT 2, 4.2, 4.3, 4.5), once for every provider: Stripe, PayPal,
Paddle and BTCPay, each through a real node and its simulator (tests/contract/drivers.py).

A provider that lacks a behaviour is skipped for it, saying why; what only one provider does is
in tests/e2e/test_<provider>_*.py."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio
from contract.drivers import PRICE_MINOR, Driver, body_id, providers
from support.asgi import serve_asgi
from support.client import Admin, bearer
from support.merchant import Merchant, add_endpoint, listening

from edge.sim.faults import LOSSES

ALL = providers()
NO_AMOUNT = "BTCPay's webhooks name the invoice, never an amount paid"
NO_REFUND_WEBHOOK = (
    "a BTCPay refund is a pull payment the buyer may never claim: no webhook says money moved"
    " (its InvoiceRefund is history, tests/e2e/test_btcpay_flow.py)"
)
NO_DISPUTE = "Bitcoin payments cannot be disputed: BTCPay has no dispute or chargeback event"
TAKEN = ("sent", "succeeded")  # a refund the provider took: its money on the way, or back


@pytest.mark.parametrize("provider", ALL)
async def test_checkout_pay_webhook_succeeded(driver: Driver) -> None:
    made = await driver.checkout(metadata={"customerRef": "user-42"})
    answer = made.answer
    assert (answer["type"], answer["kind"]) == driver.shape
    assert answer["provider"] == driver.name and answer["isTest"] is True
    before = await driver.status(made.tx)
    assert (before["status"], before["version"]) == ("pending", 1)
    await driver.pay(made)
    status = await driver.status(made.tx)  # what the merchant's page asks, without a key
    assert status["status"] == "succeeded" and status["version"] >= 2
    tx = await driver.record(made.tx)
    assert tx["needsAttention"] is False
    succeeded = [e for e in tx["events"] if e["type"] == "payment.succeeded"]
    assert len(succeeded) == driver.succeeded_events
    assert all(e["customerRef"] == "user-42" for e in succeeded)
    assert all(e["provider"] == driver.name and e["isTest"] is True for e in succeeded)
    assert all(e["customerRef"] == "user-42" for e in tx["events"])


@pytest.mark.parametrize("provider", ALL)
async def test_a_badly_signed_delivery_is_refused_with_its_reason_and_kept(
    driver: Driver,
) -> None:
    made = await driver.checkout()
    body = driver.paid_event(made)
    cases = driver.refusals(body)
    assert {"missing_header", "malformed_header", "no_matching_signature"} <= set(cases)
    for reason, headers in cases.items():
        answer = await driver.deliver(body, headers)
        assert answer.status_code == 401, (reason, answer.text)
        error = answer.json()["error"]
        assert (error["code"], error["reason"]) == ("signature_invalid", reason)
    # a body changed after it was signed
    tampered = await driver.deliver(body + b" ", driver.sign(body))
    assert tampered.status_code == 401
    assert tampered.json()["error"]["reason"] == "no_matching_signature"
    other = "paypal" if driver.name != "paypal" else "stripe"
    not_enabled = await driver.http.post(f"/webhook/{other}/{driver.project_id}", content=body)
    assert (not_enabled.status_code, not_enabled.json()["error"]["code"]) == (
        404,
        "provider_not_enabled",
    )
    deliveries = (
        await driver.admin.ok("GET", f"/api/manage/projects/{driver.project_id}/deliveries")
    )["items"]
    # the provider not turned on is kept too: the merchant's clue (CONTRACT 4.3)
    assert [(d["provider"], d["reason"]) for d in deliveries] == [
        (other, "provider_not_enabled"),
        (driver.name, "no_matching_signature"),
        *((driver.name, reason) for reason in reversed(cases)),
    ]
    assert all(len(d["bodySha256"]) == 64 for d in deliveries)
    assert (await driver.status(made.tx))["status"] == "pending"  # none of it moved anything


@pytest.mark.parametrize("provider", ALL)
async def test_the_same_event_five_times_is_stored_and_counted_once(driver: Driver) -> None:
    made = await driver.checkout()
    project = await driver.admin.ok("GET", f"/api/manage/projects/{driver.project_id}")
    shown = json.dumps(project)
    assert not [s for s in driver.secrets() if s in shown]  # secrets are write-only
    body = driver.paid_event(made)
    first = await driver.delivered(body)
    assert first["duplicate"] is False
    usage = await driver.usage()
    again = [await driver.delivered(body) for _ in range(4)]
    assert [(a["duplicate"], a["eventId"]) for a in again] == [(True, first["eventId"])] * 4
    tx = await driver.record(made.tx)
    assert tx["status"] == "succeeded"
    assert [e["type"] for e in tx["events"]].count("payment.succeeded") == 1
    assert [e["providerEventId"] for e in tx["events"]].count(body_id(body)) == 1
    assert await driver.usage() == usage


@pytest.mark.parametrize("provider", ALL)
async def test_a_payment_the_node_did_not_create_never_completes_the_checkout(
    driver: Driver,
) -> None:
    made = await driver.checkout()
    answer = await driver.delivered(driver.elsewhere_event(made))
    status = await driver.status(made.tx)
    assert (status["status"], status["version"]) == ("pending", 1)
    stored = next(e for e in await driver.feed() if e["id"] == answer["eventId"])
    assert (stored["type"], stored["txId"], stored["claimedTxId"]) == ("unmatched", None, made.tx)
    assert (await driver.record(made.tx))["needsAttention"] is False
    # the node's own object still pays it
    await driver.delivered(driver.paid_event(made))
    assert (await driver.status(made.tx))["status"] == "succeeded"


@pytest.mark.parametrize("provider", providers(btcpay=NO_AMOUNT))
async def test_a_payment_of_another_amount_flags_the_checkout_and_says_so_everywhere(
    node, driver: Driver
) -> None:
    # the merchant's own account, so the dashboard shows the project
    account = await Admin.account(node.url, f"merchant-{driver.name}@example.com")
    driver.admin = account
    await driver.setup()
    merchant = Merchant()
    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_asgi, merchant)
        await add_endpoint(
            account,
            driver.project_id,
            url=base.replace("127.0.0.1", "localhost") + "/hooks",
            mode="test",
            types=["payment.amount_mismatch"],
        )
        made = await driver.checkout()  # 10.00 EUR
        await driver.delivered(driver.paid_event(made, amount_minor=100))  # but 1.00 EUR
        await merchant.wait_for(1)
        nursery.cancel_scope.cancel()

    status = await driver.status(made.tx)
    assert (status["status"], status["version"]) == ("pending", 1)
    record = await driver.record(made.tx)
    assert record["needsAttention"] is True
    flag = record["attention"][0]
    assert (flag["code"], flag["amount"], flag["currency"]) == ("amount_mismatch", 1.0, "EUR")
    assert (flag["expectedAmount"], flag["expectedCurrency"]) == (10.0, "EUR")
    mismatch = [e for e in record["events"] if e["type"] == "payment.amount_mismatch"]
    assert len(mismatch) == 1 and mismatch[0]["appliedAt"] is None
    assert (mismatch[0]["amount"], mismatch[0]["expectedAmount"]) == (1.0, 10.0)

    sent = json.loads(merchant.got[0][1])
    assert sent["type"] == "payment.amount_mismatch" and sent["txId"] == made.tx
    assert (sent["amount"], sent["expectedAmount"]) == (1.0, 10.0)

    token = node.ctx.settings.admin_token
    metrics = await driver.http.get("/metrics", headers=bearer(token))
    line = f'edge_webhooks_total{{outcome="amount_mismatch",provider="{driver.name}"}} 1.0'
    assert line in metrics.text

    page = await account.http.get(f"/dashboard/p/{driver.project_id}/transactions/{made.tx}")
    assert page.status_code == 200, page.text
    said = f"{driver.label} reported 1.00 EUR paid for this checkout of 10.00 EUR."
    assert said in page.text
    assert "It did not complete the checkout" in page.text
    await account.aclose()


@pytest.mark.parametrize("provider", providers(btcpay=NO_AMOUNT))
async def test_another_currency_is_a_mismatch_and_the_right_payment_still_completes(
    driver: Driver,
) -> None:
    made = await driver.checkout()
    wrong = await driver.delivered(driver.paid_event(made, 1, PRICE_MINOR, "USD"))
    status = await driver.status(made.tx)
    assert status["status"] == "pending" and wrong["duplicate"] is False
    # a provider would not send both for one checkout; the node still takes the right one when
    # it comes, and the merchant keeps the flag for the wrong one
    await driver.delivered(driver.paid_event(made, 2))
    record = await driver.record(made.tx)
    assert (record["status"], record["needsAttention"]) == ("succeeded", True)
    assert [f["code"] for f in record["attention"]] == ["amount_mismatch"]
    assert record["attention"][0]["currency"] == "USD"


@pytest.mark.parametrize("provider", providers(btcpay=NO_REFUND_WEBHOOK))
async def test_refunds_made_at_the_provider_in_part_then_in_full(driver: Driver) -> None:
    made = await driver.checkout()
    await driver.pay(made)
    await driver.refund(made, 300)
    part = await driver.until(made.tx, "partially_refunded")
    await driver.refund(made)
    done = await driver.until(made.tx, "refunded")
    assert done["version"] == part["version"] + 1
    await _refunds_said(driver, made.tx)


@pytest.mark.parametrize("provider", ALL)
async def test_the_merchants_refund_is_owed_to_the_provider_and_counted_by_its_webhook(
    driver: Driver,
) -> None:
    """CONTRACT 4.5: ``202`` and state ``requested``; the follow-up worker makes the provider's
    refund call (``sent``, with the provider's words); the status moves only when the
    provider's webhook says the money moved, summed by amount."""
    made = await driver.checkout()
    await driver.pay(made)
    part, sent = await driver.refund_asked(made.tx, amount=4, reason="a damaged cover")
    asked = part.json()
    assert (asked["state"], asked["amount"], asked["currency"]) == ("requested", 4.0, "EUR")
    assert asked["id"].startswith("rf_") and asked["reason"] == "a damaged cover"
    # taken (Paddle's review), or given back at once (Stripe's and PayPal's answers say so)
    assert sent["state"] in TAKEN, sent
    assert sent["detail"].startswith(driver.refund_detail), sent["detail"]
    assert sent["providerRefundId"], sent
    await driver.refund_approved(made)
    seen = await driver.until(made.tx, "partially_refunded")

    rest, sent = await driver.refund_asked(made.tx)  # no amount: all that is left
    assert rest.json()["amount"] == 6.0 and sent["state"] in TAKEN
    await driver.refund_approved(made)
    done = await driver.until(made.tx, "refunded")
    assert done["version"] == seen["version"] + 1
    said = await _refunds_said(driver, made.tx)
    # every provider's refund events say all given back so far: 4.00, then the whole 10.00
    assert [e["refundedAmount"] for e in said] == [4.0, 10.0], said
    again = await driver.http.post(
        f"/api/projects/{driver.project_id}/transactions/{made.tx}/refund",
        headers=bearer(driver.test_key),
    )
    assert (again.status_code, again.json()["error"]["code"]) == (422, "invalid_transition")


async def _refunds_said(driver: Driver, tx: str) -> list[dict[str, Any]]:
    """The transaction's changes end with the part, then the rest, each told once: a provider
    that stores a refund waiting for its approval first has it as history in between, and one
    that reports a refund twice (Stripe's charge.refunded and refund.created) has the second
    as its repeat (``duplicateOf``), nothing else."""
    events = (await driver.record(tx))["events"]
    told = [e["type"] for e in events if not e.get("duplicateOf")]
    said = [t for t in told if t != "unmatched"] if driver.refund_history else told
    assert said[-2:] == ["payment.partially_refunded", "payment.refunded"], [
        (e["type"], e["source"], e.get("duplicateOf"), e["appliedAt"]) for e in events
    ]
    refunds = ("payment.partially_refunded", "payment.refunded")
    return [e for e in events if not e.get("duplicateOf") and e["type"] in refunds][-2:]


@pytest.mark.parametrize("provider", providers(btcpay=NO_DISPUTE))
async def test_refunded_in_part_then_a_dispute_that_is_won_then_refunded(driver: Driver) -> None:
    made = await driver.checkout()
    await driver.pay(made)
    await driver.refund(made, 500)
    await driver.until(made.tx, "partially_refunded")
    await driver.dispute(made)
    await driver.until(made.tx, "disputed")
    await driver.close_dispute(made, won=True)
    # a dispute won moves it back to succeeded (CONTRACT 2: disputed -> succeeded, dispute won),
    # and takes back no refund: the 5.00 refunded before still counts when the rest is refunded
    # (refunds are summed by amount, CONTRACT 4.3)
    await driver.until(made.tx, "succeeded")
    await driver.refund(made)
    done = await driver.until(made.tx, "refunded")
    assert done["version"] >= 5
    events = [e["type"] for e in (await driver.record(made.tx))["events"]]
    assert events.count("payment.disputed") == 1 and events.count("payment.dispute_closed") == 1
    said = [t for t in events if t != "unmatched"] if driver.refund_history else events
    assert said[-1] == "payment.refunded", (await driver.record(made.tx))["events"]


@pytest.mark.parametrize(
    "provider",
    providers(
        paddle="the Paddle simulator makes a chargeback and its reversal (adjustment actions"
        " chargeback, chargeback_reverse): no event closes one lost",
        btcpay=NO_DISPUTE,
    ),
)
async def test_a_dispute_lost_ends_refunded(driver: Driver) -> None:
    made = await driver.checkout()
    await driver.pay(made)
    await driver.dispute(made)
    await driver.until(made.tx, "disputed")
    await driver.close_dispute(made, won=False)
    await driver.until(made.tx, "refunded")


@pytest.mark.parametrize("provider", ALL)
async def test_money_after_the_merchant_canceled_is_paid_late(driver: Driver) -> None:
    made = await driver.checkout()
    canceled = await driver.http.post(
        f"/api/projects/{driver.project_id}/transactions/{made.tx}/cancel",
        headers=bearer(driver.test_key),
    )
    assert canceled.json()["status"] == "canceled"
    assert canceled.json()["needsAttention"] is False
    await driver.delivered(driver.paid_event(made))
    tx = await driver.record(made.tx)
    assert (tx["status"], tx["version"], tx["needsAttention"]) == ("canceled", 2, True)
    late = [e for e in tx["events"] if e["type"] == "payment.paid_late"]
    assert len(late) == 1 and late[0]["amount"] is not None and late[0]["appliedAt"] is None


@pytest.mark.node_settings(provider_timeout_s=1.0)
@pytest.mark.parametrize("lost", LOSSES)
@pytest.mark.parametrize("provider", ALL)
async def test_a_refund_whose_answer_is_lost_is_made_once(driver: Driver, lost: str) -> None:
    """CONTRACT 4.3a: the provider acts and its answer never comes (after the node's timeout,
    a connection dropped half-way, a gateway's 5xx): the node asks again with the same
    idempotency key, or first asks what exists and adopts its own refund. One refund at the
    provider, whatever answer is lost; the amount is held while the outcome is unknown."""
    made = await driver.checkout()
    await driver.pay(made)
    driver.sim.faults.lose("POST", driver.refund_call, lost)
    asked = await driver.http.post(
        f"/api/projects/{driver.project_id}/transactions/{made.tx}/refund",
        json={"amount": 4},
        headers=bearer(driver.test_key),
    )
    assert asked.status_code == 202, asked.text
    # while the first answer is lost the 4.00 stays held: no more than 6.00 may be asked
    more = await driver.http.post(
        f"/api/projects/{driver.project_id}/transactions/{made.tx}/refund",
        json={"amount": 6.01},
        headers=bearer(driver.test_key),
    )
    assert more.json()["error"]["code"] == "refund_too_large", more.text
    refund = await driver.refund_attempted(made.tx, asked.json()["id"])
    assert driver.sim.faults.lost == 1
    assert refund["state"] in TAKEN and refund["providerRefundId"], refund
    assert driver.refunds_made(made) == 1
    await driver.refund_approved(made)
    await driver.until(made.tx, "partially_refunded")
    assert driver.refunds_made(made) == 1
    record = await driver.record(made.tx)
    assert record["refundable"] == 6.0 and record["refunded"] == 4.0, record


@pytest.mark.parametrize("provider", ALL)
async def test_what_is_left_counts_a_refund_made_in_the_providers_dashboard(
    driver: Driver,
) -> None:
    """Refundable = charged - what the provider reports - node refunds not yet reported: after
    4.00 of 10.00 refunded in the provider's own dashboard, and 5.00 asked through the node,
    1.00 is left (the node used to take the larger of the two and accept 6.00 more)."""
    made = await driver.checkout()
    await driver.pay(made)
    await driver.refund(made, 400)
    await driver.until(made.tx, "partially_refunded")
    record = await driver.record(made.tx)
    assert (record["refunded"], record["refundable"]) == (4.0, 6.0), record
    assert [r["refundId"] for r in record["providerRefunds"]] == [None]  # not the node's
    _, first = await driver.refund_asked(made.tx, amount=5)
    assert first["state"] in TAKEN
    too_much = await driver.http.post(
        f"/api/projects/{driver.project_id}/transactions/{made.tx}/refund",
        json={"amount": 2},
        headers=bearer(driver.test_key),
    )
    assert too_much.status_code == 409, too_much.text
    assert too_much.json()["error"]["refundable"] == 1.0
    await driver.refund_approved(made)
    _, rest = await driver.refund_asked(made.tx)  # all that is left: 1.00
    assert rest["amount"] == 1.0 and rest["state"] in TAKEN
    await driver.refund_approved(made)
    await driver.until(made.tx, "refunded")
    assert driver.refunds_made(made) == 3


@pytest.mark.parametrize("provider", providers(btcpay=NO_DISPUTE))
async def test_a_warning_before_a_chargeback_is_on_the_transaction_and_told(
    driver: Driver,
) -> None:
    """A warning that a chargeback may follow moves nothing, flags the transaction with the
    reason in words, and reaches the merchant's endpoint once."""
    merchant = Merchant()
    async with trio.open_nursery() as nursery:
        await listening(
            nursery,
            merchant,
            driver.admin,
            driver.project_id,
            mode="test",
            types=["payment.dispute_warning", "payment.resolved"],
        )
        made = await driver.checkout()
        await driver.pay(made)
        await driver.warn(made)
        await merchant.wait_for(1)
        record = await driver.record(made.tx)
        assert record["status"] == "succeeded" and record["needsAttention"] is True
        (flag,) = record["attention"]
        assert flag["code"] == "dispute_warning" and "chargeback may follow" in flag["reason"]
        resolved = await driver.http.post(
            f"/api/projects/{driver.project_id}/transactions/{made.tx}/resolve",
            json={"note": "called the buyer"},
            headers=bearer(driver.test_key),
        )
        assert resolved.status_code == 200, resolved.text
        after = resolved.json()
        assert after["needsAttention"] is False and after["attention"] == []
        (handled,) = after["handled"]
        assert handled["note"] == "called the buyer"
        assert handled["flags"][0]["code"] == "dispute_warning"
        again = await driver.http.post(
            f"/api/projects/{driver.project_id}/transactions/{made.tx}/resolve",
            headers=bearer(driver.test_key),
        )
        assert again.json()["error"]["code"] == "nothing_to_resolve"
        # asking the provider finds the warning again: the same change, handled already
        synced = await driver.http.post(
            f"/api/projects/{driver.project_id}/transactions/{made.tx}/sync",
            headers=bearer(driver.test_key),
        )
        assert synced.status_code == 200, synced.text
        assert synced.json()["needsAttention"] is False, synced.json()["attention"]
        await merchant.wait_for(2)
        nursery.cancel_scope.cancel()
    told = sorted(e["type"] for e in merchant.events())  # order is not promised (CONTRACT 4.8)
    assert told == ["payment.dispute_warning", "payment.resolved"]


@pytest.mark.node_settings(sync_every_s=0.5)
@pytest.mark.parametrize("provider", ALL)
async def test_with_every_webhook_held_back_the_node_asks_and_a_late_webhook_adds_nothing(
    driver: Driver,
) -> None:
    """CONTRACT 4.3a: with no webhook reaching the node, a checkout still open is looked at
    with the provider's own API (every ``EDGE_SYNC_EVERY_S``, here half a second) and reaches
    its true status; once asking has learned something no webhook brought, the provider
    account's lists are walked too, so a refund made in its dashboard is learned as well
    (BTCPay lists invoices, not events: there the merchant's own sync asks). The webhooks that
    come late afterwards add nothing: no second change, no status moved."""
    driver.sim.webhook_faults.hold()
    made = await driver.checkout()
    await driver.pay(made)
    paid = await driver.record(made.tx)
    assert paid["asked"] is not None or driver.name == "paypal", paid  # PayPal: the capture
    await driver.refund(made, 300)
    if driver.name == "btcpay":
        synced = await driver.http.post(
            f"/api/projects/{driver.project_id}/transactions/{made.tx}/sync",
            headers=bearer(driver.test_key),
        )
        assert synced.status_code == 200, synced.text
    refunded = await driver.until(made.tx, "partially_refunded")
    before = await driver.record(made.tx)
    told = _changes(before)
    learned = [e for e in told if e["source"] == "sync"]
    assert learned, before["events"]
    assert before["asked"]["learned"] >= 1 and before["asked"]["webhookArrived"] is False

    await driver.release_webhooks()
    with trio.move_on_after(2):  # the late deliveries, if any, come and change nothing
        while True:
            after = await driver.record(made.tx)
            if len(after["events"]) > len(before["events"]) and after["asked"]["webhookArrived"]:
                break
            await trio.sleep(0.05)
    after = await driver.record(made.tx)
    assert (after["status"], after["version"]) == ("partially_refunded", refunded["version"])
    assert _changes(after) == told
    assert (after["refunded"], after["refundable"]) == (3.0, 7.0)


def _changes(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The changes a transaction's history tells: events applied, each once (a late event
    that changes nothing is kept as history, with no ``appliedAt``)."""
    return [e for e in record["events"] if e["appliedAt"] and not e.get("duplicateOf")]
