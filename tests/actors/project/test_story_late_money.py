"""Money the provider dates after the checkout's end is late money, flagged for the merchant,
whichever of the two is delivered first (CONTRACT 2: the same events, the same outcome and flag
in any order), on the real actor and store."""

from __future__ import annotations

import pytest
from actors.project.harness import delivery
from actors.project.test_intake import _echo_owned_tx

PROCESSING = dict(id="paying", status="processing", type="payment.processing", at=3_000)
EXPIRED = dict(id="ended", status="expired", type="checkout.expired", at=1_000)


@pytest.mark.parametrize("order", [(PROCESSING, EXPIRED), (EXPIRED, PROCESSING)])
async def test_money_dated_after_the_end_is_flagged_in_either_order(harness, echo, order):
    project_id, ledger, tx = await _echo_owned_tx(harness)
    answers = {}
    for step in order:
        posted = delivery(refs=[tx["providerRef"]], amount=tx["amount"], currency="EUR", **step)
        answers[step["id"]] = await harness.call(project_id, posted)
    record = await ledger.tx(tx["id"])
    assert record["status"] == "expired"
    assert record.get("needsAttention") is True
    paying = answers["paying"]["eventId"]
    assert [(f["code"], f["eventId"]) for f in record["attention"]] == [("paid_late", paying)]
    # the late money is one a refund may give back
    assert record["lateMoney"] == [{"eventId": paying, "amount": tx["amount"]}]


async def test_money_dated_before_the_end_is_no_late_money(harness, echo):
    """A payment replaced and the invoice then run out of time (BTCPay): nothing to look at."""
    project_id, ledger, tx = await _echo_owned_tx(harness)
    for step in (dict(EXPIRED, at=5_000), PROCESSING):
        posted = delivery(refs=[tx["providerRef"]], amount=tx["amount"], currency="EUR", **step)
        await harness.call(project_id, posted)
    record = await ledger.tx(tx["id"])
    assert (record["status"], record.get("needsAttention", False)) == ("expired", False)
