"""Paddle stories for convergence (CONTRACT 2; Paddle: "We can't guarantee the order of delivery
for webhooks"): each is played at the Paddle simulator with its deliveries held, then delivered
to the node in every order (tests/contract, test_convergence_contract.py), with redeliveries (a
new ``notification_id``, the same ``event_id``).

The stories are every kind the simulator makes: payments and declines, cancels (only of an open
transaction), refunds as Paddle makes them (pending_approval then approved or rejected; type
full, partial by items, or null; see test_paddle_refunds.py for the sources), chargebacks,
subscriptions, and a payment made with Paddle.js elsewhere that names the checkout
(test_paddle_paid_elsewhere.py)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable

from support.paddle_shop import API_KEY, CLIENT_TOKEN

from edge.sim.paddle import PaddleSimulator

Play = Callable[[PaddleSimulator, str], Awaitable[None]]
START = dt.datetime(2026, 11, 23, 9, 0, tzinfo=dt.UTC)


async def refunded_in_two_parts(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    await sim.refund(txn, amount=300)
    await sim.refund(txn)


async def chargeback_reversed(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    await sim.chargeback(txn)
    await sim.chargeback_reverse(txn)


async def declined_then_paid(sim: PaddleSimulator, txn: str) -> None:
    await sim.decline(txn)
    await sim.pay(txn)


async def declined_then_canceled(sim: PaddleSimulator, txn: str) -> None:
    await sim.decline(txn)
    await sim.cancel_transaction(txn)


async def refunded_in_full(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    await sim.refund(txn)


def _line(sim: PaddleSimulator, txn: str) -> str:
    return str(sim.transaction(txn)["details"]["line_items"][0]["id"])


async def refunded_whole_by_items(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    await sim.refund(txn, items=[{"item_id": _line(sim, txn), "type": "full"}])


async def refunded_in_parts_with_a_null_type(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    await sim.refund(txn, 250, null_type=True)
    await sim.refund(txn, 750, null_type=True)


async def refunded_in_three_parts_by_items(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    for amount in (300, 300, 400):
        item = {"item_id": _line(sim, txn), "type": "partial", "amount": str(amount)}
        await sim.refund(txn, items=[item])


async def refunded_short_of_the_total(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    await sim.refund(txn, 300, null_type=True)
    await sim.refund(txn, 600)


async def a_refund_rejected(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    await sim.reject_refund(await sim.refund(txn, approve=False))
    await sim.refund(txn, 100)


async def a_refund_still_waiting(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    await sim.refund(txn, approve=False)


async def canceled_unpaid(sim: PaddleSimulator, txn: str) -> None:
    await sim.cancel_transaction(txn)


async def declined_twice_then_paid(sim: PaddleSimulator, txn: str) -> None:
    await sim.decline(txn)
    await sim.decline(txn)
    await sim.pay(txn)


async def paid_elsewhere_and_refunded(sim: PaddleSimulator, txn: str) -> None:
    """A buyer pays a 1.00 catalog price with Paddle.js, naming this checkout in customData;
    the merchant refunds it. None of it is this checkout's."""
    tip = sim.create_price(API_KEY, "Tip", 100, "EUR")
    tx_id = sim.transaction(txn)["custom_data"]["txId"]
    cheap = await sim.checkout_open(
        CLIENT_TOKEN, items=[{"priceId": tip, "quantity": 1}], custom_data={"txId": tx_id}
    )
    await sim.pay(cheap)
    await sim.refund(cheap)


async def subscription_lived(sim: PaddleSimulator, txn: str) -> None:
    await sim.pay(txn)
    sub = str(sim.transaction(txn)["subscription_id"])
    await sim.fail_renewal(sub)
    await sim.renew(sub)
    await sim.pause_subscription(sub)
    await sim.resume_subscription(sub)
    await sim.cancel_subscription(sub)


# name -> (product, play, (payment status, version), (subscription status, version) or None)
STORIES: dict[str, tuple[str, Play, tuple[str, int], tuple[str, int] | None]] = {
    "refunded in two parts": ("ten", refunded_in_two_parts, ("refunded", 4), None),
    "chargeback reversed": ("ten", chargeback_reversed, ("succeeded", 4), None),
    "declined, then paid": ("ten", declined_then_paid, ("succeeded", 2), None),
    "declined, then canceled": ("ten", declined_then_canceled, ("canceled", 2), None),
    "refunded in full": ("ten", refunded_in_full, ("refunded", 3), None),
    "refunded whole by items": ("ten", refunded_whole_by_items, ("refunded", 3), None),
    "refunded in parts, type null": (
        "ten",
        refunded_in_parts_with_a_null_type,
        ("refunded", 4),
        None,
    ),
    "refunded in three parts by items": (
        "ten",
        refunded_in_three_parts_by_items,
        ("refunded", 4),
        None,
    ),
    "refunded short of the total": (
        "ten",
        refunded_short_of_the_total,
        ("partially_refunded", 3),
        None,
    ),
    "a refund rejected, another approved": (
        "ten",
        a_refund_rejected,
        ("partially_refunded", 3),
        None,
    ),
    "a refund still waiting for approval": (
        "ten",
        a_refund_still_waiting,
        ("succeeded", 2),
        None,
    ),
    "canceled unpaid": ("ten", canceled_unpaid, ("canceled", 2), None),
    "declined twice, then paid": ("ten", declined_twice_then_paid, ("succeeded", 2), None),
    "paid elsewhere, naming it, and refunded": (
        "ten",
        paid_elsewhere_and_refunded,
        ("pending", 1),
        None,
    ),
    # active -> past_due -> active -> paused -> active -> canceled
    "a subscription's life": ("pro-monthly", subscription_lived, ("succeeded", 2), ("canceled", 6)),
}
