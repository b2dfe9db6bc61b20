"""One set of provider events, delivered in every order to the real actor and store, ends in
one record (CONTRACT 2): the same status, subscription status, flags for the merchant, late
money and money given back. Each set is a story an audit found told differently by order, or
one that must stay as it is; 19.99 EUR checkouts, times in ms."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from actors.project.harness import delivery
from actors.project.test_intake import _echo_owned_tx

from edge.actors import messages as m
from edge.actors.project import story
from edge.actors.project.refunds import refundable


def ev(name: str, kind: str, at: int, status: str | None = None, **more: Any) -> dict[str, Any]:
    out: dict[str, Any] = dict(id=name, type=kind, at=at, **more)
    if status:
        out["status"] = status
    return out


PAID = ev("S", "payment.succeeded", 1_000, "succeeded")
PROCESSING = ev("P", "payment.processing", 3_000, "processing")

STORIES: dict[str, list[dict[str, Any]]] = {
    # one named expiry told twice (a webhook, and a sync dating it at the invoice's end), a
    # payment under way dated between the two: paid after the end, whichever telling came first
    "end re-dated before the payment": [
        PROCESSING,
        ev("E_late", "checkout.expired", 5_000, "expired", change="inv_1"),
        ev("E_early", "checkout.expired", 2_000, "expired", change="inv_1"),
    ],
    # all of it refunded after a dispute opened
    "full refund after a dispute": [
        PAID,
        ev("R", "payment.refunded", 5_000, "refunded", amount=1999, refund=1999, refundOf="re_1"),
        ev("D", "payment.disputed", 3_000, "disputed", change="dp_1"),
    ],
    # an event with its own word for the merchant (PayPal's inquiry lost) that names only a
    # capture, linked by the payment's event
    "own attention of an event that waited": [
        ev("L", "payment.succeeded", 1_000, "succeeded", linkRefs=["cap_1"]),
        ev("W", "payment.dispute_closed", 9_000, refs=["cap_1"], attention="dispute_lost"),
    ],
    # one change told twice, only one telling saying part was paid (BTCPay's InvoiceExpired
    # {partiallyPaid}, and a read of the invoice that did not see it)
    "attention on one telling of two": [
        ev("E_flag", "checkout.expired", 2_000, "expired", change="inv_1", attention="paid_late"),
        ev("E_plain", "checkout.expired", 2_000, "expired", change="inv_1"),
    ],
    # the same, both tellings waiting for the capture they name to be linked
    "attention on one waiting telling of two": [
        ev("L", "payment.succeeded", 1_000, "succeeded", linkRefs=["cap_1"]),
        ev("W_flag", "payment.dispute_closed", 9_000, refs=["cap_1"], change="dp_1",
           attention="dispute_lost"),
        ev("W_plain", "payment.dispute_closed", 9_000, refs=["cap_1"], change="dp_1"),
    ],
    # a payment of another amount told twice (its webhook, what asking read), waiting
    "mismatch told twice, waiting": [
        ev("L", "payment.processing", 1_000, "processing", linkRefs=["ch_1"]),
        ev("M1", "payment.succeeded", 2_000, "succeeded", refs=["ch_1"], amount=1500),
        ev("M2", "payment.succeeded", 2_500, "succeeded", refs=["ch_1"], amount=1500),
    ],
    # two tellings of one payment under way, the end dated before both: late money once
    "late money told twice": [
        PROCESSING,
        ev("P2", "payment.processing", 4_000, "processing"),
        ev("E", "checkout.expired", 1_000, "expired"),
    ],
    "late money after a failure": [
        PROCESSING,
        ev("F", "payment.failed", 1_000, "failed"),
        ev("P2", "payment.processing", 4_000, "processing", amount=1999),
    ],
    # one payment told twice with two dates, around the end: paid in time after all
    "payment re-dated before the end": [
        ev("E", "checkout.expired", 3_000, "expired"),
        ev("P_late", "payment.processing", 5_000, "processing", change="pay_1"),
        ev("P_early", "payment.processing", 2_000, "processing", change="pay_1"),
    ],
    # the provider's cancel, which its own success voids: the payment under way was not late
    "cancel voided by the success": [
        ev("C", "checkout.canceled", 3_000, "canceled"),
        ev("P", "payment.processing", 5_000, "processing"),
        ev("S", "payment.succeeded", 6_000, "succeeded"),
    ],
    "refunds summed": [
        PAID,
        ev("R1", "payment.partially_refunded", 3_000, "partially_refunded", amount=1000,
           refund=1000, refundOf="re_1"),
        ev("R2", "payment.partially_refunded", 4_000, "partially_refunded", amount=999,
           refund=999, refundOf="re_2"),
        ev("T", "payment.partially_refunded", 5_000, "partially_refunded", amount=1999,
           refund=1999),
    ],
    "dispute lost for part, and a refund": [
        PAID,
        ev("D", "payment.disputed", 3_000, "disputed", change="dp_1"),
        ev("C", "payment.dispute_closed", 5_000, "partially_refunded", change="dp_1",
           amount=500, refund=500, refundOf="dp_1"),
        ev("R1", "payment.partially_refunded", 7_000, "partially_refunded", amount=500,
           refund=500, refundOf="re_1"),
    ],
    "amount mismatch, then the end": [
        ev("M", "payment.succeeded", 2_000, "succeeded", amount=1500),
        PROCESSING,
        ev("E", "checkout.expired", 4_000, "expired"),
    ],
    "late money that waited": [
        ev("L", "payment.processing", 1_000, "processing", linkRefs=["cap_1"]),
        ev("E", "checkout.expired", 3_000, "expired"),
        ev("W", "payment.processing", 5_000, "processing", refs=["cap_1"]),
    ],
}  # fmt: skip


async def _ends(harness: Any, order: tuple[dict[str, Any], ...]) -> dict[str, Any]:
    """What a new echo checkout's record ends as once ``order`` is delivered to it."""
    project_id, ledger, tx = await _echo_owned_tx(harness)
    for event in order:
        fields = {"refs": [tx["providerRef"]], "amount": tx["amount"], "currency": "EUR", **event}
        await harness.call(project_id, delivery(**fields))
    record = await ledger.tx(tx["id"])
    return {
        "status": record["status"],
        "needsAttention": bool(record.get("needsAttention")),
        "codes": sorted(f["code"] for f in record.get("attention") or ()),
        "lateMoney": sorted(m["amount"] for m in record.get("lateMoney") or ()),
        "refundable": refundable(record),
        "givenBack": story.reported(record).given_back,
    }


@pytest.mark.parametrize("name", sorted(STORIES))
async def test_every_delivery_order_ends_in_one_record(harness, echo, name):
    ends = {}
    for order in itertools.permutations(STORIES[name]):
        ends[tuple(e["id"] for e in order)] = await _ends(harness, order)
    distinct: dict[str, list[tuple[str, ...]]] = {}
    for order, end in ends.items():
        distinct.setdefault(repr(end), []).append(order)
    assert len(distinct) == 1, "\n".join(f"{end}: {orders}" for end, orders in distinct.items())


async def test_money_after_the_end_is_flagged_once_with_its_amount(harness, echo):
    """What the orders agree on is what the story says: paid after the expiry, once."""
    end = await _ends(harness, tuple(STORIES["late money told twice"]))
    assert (end["status"], end["codes"], end["lateMoney"]) == ("expired", ["paid_late"], [1999])
    redated = await _ends(harness, tuple(STORIES["end re-dated before the payment"]))
    assert (redated["codes"], redated["lateMoney"]) == (["paid_late"], [1999])
    refunded = await _ends(harness, tuple(STORIES["full refund after a dispute"]))
    assert (refunded["status"], refunded["codes"]) == ("refunded", ["disputed"])


async def _after_the_merchants_cancel(harness: Any, names: tuple[str, ...]) -> dict[str, Any]:
    """The merchant cancels a checkout; then the provider reports it paid (a minute before the
    cancel) and canceled (a minute after), in the order ``names`` gives."""
    project_id, ledger, tx = await _echo_owned_tx(harness)
    await harness.call(project_id, m.CancelTx(tx["id"], "test"))
    now = ledger.now_ms()
    said = {
        "paid": ev("paid", "payment.succeeded", now - 60_000, "succeeded"),
        "canceled": ev("canceled", "checkout.canceled", now + 60_000, "canceled"),
    }
    for name in names:
        fields = {"refs": [tx["providerRef"]], "amount": tx["amount"], "currency": "EUR"}
        await harness.call(project_id, delivery(**fields, **said[name]))
    record = await ledger.tx(tx["id"])
    return {
        "status": record["status"],
        "codes": sorted(f["code"] for f in record.get("attention") or ()),
    }


async def test_a_provider_paid_and_canceled_after_the_merchants_cancel_alike_in_any_order(
    harness, echo
):
    """The money came after the merchant's cancel (paid_late), and the provider says both paid
    and canceled (contradicted), whichever of its two reports came first."""
    ends = [
        await _after_the_merchants_cancel(harness, order)
        for order in (("paid", "canceled"), ("canceled", "paid"))
    ]
    assert ends == [{"status": "canceled", "codes": ["contradicted", "paid_late"]}] * 2
