"""One driver per provider for the provider contract suite (tests/contract): the same methods on
each, so one test states a behaviour once for Stripe, PayPal, Paddle and BTCPay.

A driver owns the provider's simulator and a project wired to it (the provider enabled in test
mode with the simulator's credentials, as ``edge serve --demo`` wires one). It opens checkouts,
pays them at the simulator, builds the provider's own signed deliveries by hand (a payment of
the node's own checkout, one made elsewhere that names it, and ones badly signed) and moves
money back at the simulator (refunds, disputes). Every product is the "ten" product, 10.00 EUR.
What only one provider says (its checkout's shape, the words of its refund follow-up, its
provider type strings) is a per-provider expectation here, asserted by the suite."""

from __future__ import annotations

import copy
import datetime as dt
import json
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import httpx
import pytest
import trio
from support import paypal_events as pe
from support.btcpay_shop import BTCPayShop, btcpay_shop
from support.client import Admin, bearer
from support.paddle_shop import PaddleShop, paddle_shop
from support.pages import press
from support.paypal_shop import CLIENT_ID, CLIENT_SECRET, PayPalShop, paypal_shop
from support.stories import btcpay as btcpay_stories
from support.stories import paddle as paddle_stories
from support.stories import paypal as paypal_stories
from support.stories import stripe as stripe_stories
from support.stripe_events import event_body, signed, stripe_object
from support.stripe_shop import SECRET_KEY, StripeShop, stripe_shop
from support.waits import bound

from edge.node import RunningNode
from edge.providers.registry import PROVIDERS
from edge.sim.btcpay import BTCPaySimulator
from edge.sim.btcpay import deliveries as btcpay_deliveries
from edge.sim.btcpay import objects as btcpay_objects
from edge.sim.paddle import PaddleSimulator
from edge.sim.paddle import deliveries as paddle_deliveries
from edge.sim.paddle import objects as paddle_objects
from edge.sim.paypal import PayPalSimulator
from edge.sim.stripe import StripeSimulator

PRICE_MINOR = 1000  # the "ten" product: 10.00 EUR
WAIT_S = 20


@dataclass
class Checkout:
    tx: str
    ref: str  # the provider object the node created for it (its ``providerRef``)
    answer: dict[str, Any]


@dataclass
class Story:
    """A story of events for convergence: the product its checkout buys, where in-order
    delivery ends (the transaction's status and version; the subscription's, if it makes one)
    and, where the provider's story says it, whether the merchant must look."""

    product: str
    end: tuple[str, int]
    sub_end: tuple[str, int] | None = None
    attention: bool | None = None


@dataclass
class Played:
    """One story played for a new checkout: ``count`` deliveries, ``body(i)`` the i-th as the
    provider sends it (again: as it resends it); ``ids`` what finds its events in the store."""

    tx: str
    count: int
    body: Callable[[int], bytes]
    ids: Any = None


class Driver:
    """What every provider's driver does; the HTTP side (the node's own API) is shared."""

    name: ClassVar[str]
    label: ClassVar[str]  # how the dashboard names the provider
    shape: ClassVar[tuple[str, str]]  # the checkout answer's (type, kind)
    refund_detail: ClassVar[str]  # the start of a sent refund's ``detail``
    # how many of the provider's events of one payment say it succeeded (each stored as
    # payment.succeeded; the first moves the status)
    succeeded_events: ClassVar[int] = 1
    # whether a refund is first stored as history (``unmatched``) before the event that counts
    refund_history: ClassVar[bool] = False
    # the path (a regular expression, from its start) of the provider's refund call, whose
    # answer a test loses (``sim.faults``)
    refund_call: ClassVar[str]

    def __init__(self, sim: Any, admin: Admin, http: httpx.AsyncClient, node: RunningNode) -> None:
        self.sim, self.admin, self.http, self.node = sim, admin, http, node
        self.project_id = self.test_key = ""

    @staticmethod
    def simulator() -> Any:
        raise NotImplementedError

    async def setup(self, project_id: str | None = None) -> None:
        raise NotImplementedError

    # --- provider side ------------------------------------------------------------------

    async def pay(self, c: Checkout) -> None:
        """The buyer pays at the simulator; returns once the node says succeeded."""
        raise NotImplementedError

    def sign(self, body: bytes) -> dict[str, str]:
        raise NotImplementedError

    def refusals(self, body: bytes) -> dict[str, dict[str, str]]:
        """Badly signed deliveries of ``body``: the reason the node must give -> headers."""
        raise NotImplementedError

    def secrets(self) -> list[str]:
        """The project's provider secrets: never shown back (write-only)."""
        raise NotImplementedError

    def paid_event(
        self, c: Checkout, n: int = 1, amount_minor: int = PRICE_MINOR, currency: str = "EUR"
    ) -> bytes:
        """The provider's "paid" event on the node's own object for ``c``, of this amount."""
        raise NotImplementedError

    def elsewhere_event(self, c: Checkout) -> bytes:
        """A payment, at the right amount, on an object the node did not create, that names
        ``c``'s transaction id in the field the buyer or merchant sets."""
        raise NotImplementedError

    async def refund(self, c: Checkout, amount_minor: int | None = None) -> None:
        """A refund made at the provider (its dashboard): ``amount_minor``, or what is left."""
        raise NotImplementedError

    async def dispute(self, c: Checkout) -> None:
        raise NotImplementedError

    async def close_dispute(self, c: Checkout, won: bool) -> None:
        raise NotImplementedError

    # --- stories for convergence ----------------------------------------------------------

    stories: ClassVar[dict[str, Story]] = {}
    samples: ClassVar[int] = 10  # orders tried when there are too many to try them all

    async def story_setup(self) -> None:
        """Ready the project for stories delivered by hand."""

    async def play(self, name: str) -> Played:
        raise NotImplementedError

    async def stored_once(self, played: Played, record: dict[str, Any], story: Story) -> None:
        """Every delivery of ``played`` is stored once, however often it came, and matched
        (the provider's own way of finding its events)."""
        raise NotImplementedError

    async def refund_approved(self, c: Checkout) -> None:
        """Whatever the provider does after the node's refund call before money moves."""

    def refunds_made(self, c: Checkout) -> int:
        """How many refunds the provider holds for ``c``'s payment (whoever asked)."""
        raise NotImplementedError

    async def warn(self, c: Checkout) -> None:
        """A warning that a chargeback may follow (Stripe's early fraud warning, PayPal's
        inquiry, Paddle's chargeback warning)."""
        raise NotImplementedError

    async def release_webhooks(self) -> None:
        """Send the deliveries the simulator held (``webhook_faults.hold()``), late."""
        await self.sim.release()

    # --- the node's side ----------------------------------------------------------------

    async def checkout(self, product: str = "ten", **body: Any) -> Checkout:
        answer = await self.http.post(
            f"/api/checkout/{self.name}/{self.project_id}",
            json={"productId": product, **body},
            headers=bearer(self.test_key),
        )
        assert answer.status_code == 201, answer.text
        made = dict(answer.json())
        record = await self.record(made["txId"])
        assert record["providerRef"], record
        return Checkout(made["txId"], record["providerRef"], made)

    async def deliver(
        self, body: bytes, headers: Mapping[str, str] | None = None
    ) -> httpx.Response:
        return await self.http.post(
            f"/webhook/{self.name}/{self.project_id}",
            content=body,
            headers=dict(self.sign(body) if headers is None else headers),
        )

    async def delivered(self, body: bytes) -> dict[str, Any]:
        answer = await self.deliver(body)
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def status(self, item: str, version: int = 0) -> dict[str, Any]:
        params = {"wait": 10, "version": version} if version else {}
        answer = await self.http.get(
            f"/status/{self.project_id}/{item}", params=params, headers=bearer(self.test_key)
        )
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def until(self, item: str, wanted: str) -> dict[str, Any]:
        """The status record once it is ``wanted`` (a long poll on its version)."""
        with trio.fail_after(bound(WAIT_S)):
            seen = await self.status(item)
            while seen["status"] != wanted:
                seen = await self.status(item, seen["version"])
        return seen

    async def record(self, tx: str) -> dict[str, Any]:
        answer = await self.http.get(
            f"/api/projects/{self.project_id}/transactions/{tx}", headers=bearer(self.test_key)
        )
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def feed(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        after = None
        while True:
            answer = await self.http.get(
                f"/api/projects/{self.project_id}/events",
                params={"limit": 100, **({"after": after} if after else {})},
                headers=bearer(self.test_key),
            )
            page = answer.json()
            found += page["items"]
            if not page["hasMore"]:
                return found
            after = page["next"]

    async def refund_asked(self, tx: str, **body: Any) -> tuple[httpx.Response, dict[str, Any]]:
        """The merchant asks for a refund (CONTRACT 4.5); the answer, and the refund once the
        node's follow-up worker has made the provider's refund call."""
        answer = await self.http.post(
            f"/api/projects/{self.project_id}/transactions/{tx}/refund",
            json=body,
            headers=bearer(self.test_key),
        )
        assert answer.status_code == 202, answer.text
        return answer, await self.refund_attempted(tx, answer.json()["id"])

    async def refund_attempted(self, tx: str, refund_id: str) -> dict[str, Any]:
        """The refund once it is no longer ``requested``: woken by the node's own watch on the
        transaction's follow-up attempts (as the buyer's return waits for a capture), which
        fires after the attempt is written; read while registered, so none is missed."""
        with trio.fail_after(bound(WAIT_S)):
            while True:
                with self.node.ctx.attempts.expecting(tx) as attempted:
                    refunds = (await self.record(tx))["refunds"]
                    (refund,) = [r for r in refunds if r["id"] == refund_id]
                    if refund["state"] != "requested":
                        return dict(refund)
                    await attempted.wait()

    async def usage(self) -> int:
        usage = await self.admin.ok("GET", f"/api/manage/projects/{self.project_id}/usage")
        return int(usage["test"]["used"])


class StripeDriver(Driver):
    name, label = "stripe", "Stripe"
    shape = ("redirect", "card")
    refund_detail = "Stripe took refund re_"
    refund_call = r"/v1/refunds$"
    sim: StripeSimulator

    def refunds_made(self, c: Checkout) -> int:
        return len(self.sim.refunds_of(c.ref))

    async def warn(self, c: Checkout) -> None:
        await self.sim.fraud_warning(c.ref)

    @staticmethod
    def simulator() -> StripeSimulator:
        return StripeSimulator()

    async def setup(self, project_id: str | None = None) -> None:
        self.shop: StripeShop = await stripe_shop(self.admin, self.sim, project_id)
        self.project_id, self.test_key = self.shop.project_id, self.shop.test_key
        await self.admin.product(self.project_id, "ten", name="Ten", amount=10, currency="EUR")

    async def pay(self, c: Checkout) -> None:
        await self.sim.complete(c.ref)
        await self.until(c.tx, "succeeded")

    def sign(self, body: bytes) -> dict[str, str]:
        return signed(body, self.shop.webhook_secret)

    def refusals(self, body: bytes) -> dict[str, dict[str, str]]:
        return {
            "missing_header": {"Content-Type": "application/json"},
            "malformed_header": {"Stripe-Signature": "garbage", "Content-Type": "application/json"},
            "no_matching_signature": signed(body, "whsec_wrong"),
            "timestamp_out_of_tolerance": signed(
                body, self.shop.webhook_secret, timestamp=int(time.time()) - 301
            ),
        }

    def secrets(self) -> list[str]:
        return [self.shop.webhook_secret, SECRET_KEY, "whsec"]

    def _session(
        self, session_id: str, tx: str, amount_minor: int, currency: str
    ) -> dict[str, Any]:
        session = stripe_object(
            "checkout_session",
            id=session_id,
            client_reference_id=tx,
            payment_intent=f"pi_{session_id[-12:]}",
            payment_status="paid",
            status="complete",
            amount_total=amount_minor,
            amount_subtotal=amount_minor,
            currency=currency.lower(),
            metadata={"txId": tx},
        )
        return session

    def paid_event(
        self, c: Checkout, n: int = 1, amount_minor: int = PRICE_MINOR, currency: str = "EUR"
    ) -> bytes:
        session = self._session(c.ref, c.tx, amount_minor, currency)
        return event_body(f"evt_paid_{c.tx[-8:]}_{n}", "checkout.session.completed", session)

    def elsewhere_event(self, c: Checkout) -> bytes:
        # a Payment Link's session: anyone can add ?client_reference_id= to its address
        # (docs.stripe.com/payment-links/url-parameters), at the right amount even
        session = self._session(f"cs_test_elsewhere{c.tx[-8:]}", c.tx, PRICE_MINOR, "EUR")
        return event_body(f"evt_elsewhere_{c.tx[-8:]}", "checkout.session.completed", session)

    async def refund(self, c: Checkout, amount_minor: int | None = None) -> None:
        await self.sim.refund(c.ref, amount_minor=amount_minor)

    stories = {
        name: Story(
            product,
            end,
            stripe_stories.SUBSCRIPTION_END if name == "subscription" else None,
        )
        for name, (product, _, end) in stripe_stories.STORIES.items()
    }
    samples = 12

    async def play(self, name: str) -> Played:
        product, build, _ = stripe_stories.STORIES[name]
        c = await self.checkout(product)
        tail = c.tx[-12:].lower()
        ids = stripe_stories.Ids(c.tx, c.ref, f"pi_conv{tail}", f"ch_conv{tail}", f"sub_conv{tail}")
        bodies = build(ids)
        return Played(c.tx, len(bodies), bodies.__getitem__)

    async def stored_once(self, played: Played, record: dict[str, Any], story: Story) -> None:
        events = record["events"]
        # every delivery stored once, none left unmatched once its story is complete
        assert len(events) == played.count + 1, events  # and the node's checkout.created
        assert not [e for e in events if e["type"] == "unmatched"], events
        held = [e for e in events if e["appliedAt"] is None and e["type"] != "checkout.created"]
        assert all(e["type"] != "payment.paid_late" for e in held)

    async def dispute(self, c: Checkout) -> None:
        await self.sim.dispute(c.ref)

    async def close_dispute(self, c: Checkout, won: bool) -> None:
        await self.sim.close_dispute(c.ref, "won" if won else "lost")


class PayPalDriver(Driver):
    name, label = "paypal", "PayPal"
    shape = ("approval", "wallet")
    refund_detail = "PayPal took refund"
    refund_call = r"/v2/payments/captures/[^/]+/refund$"
    sim: PayPalSimulator

    def refunds_made(self, c: Checkout) -> int:
        return len(self.sim.refunds_made(self._capture(c)))

    async def release_webhooks(self) -> None:
        await self.sim.release_held()

    async def warn(self, c: Checkout) -> None:
        await self.sim.dispute(self._capture(c), stage="INQUIRY")

    @staticmethod
    def simulator() -> PayPalSimulator:
        return PayPalSimulator()

    async def setup(self, project_id: str | None = None) -> None:
        self.shop: PayPalShop = await paypal_shop(self.admin, self.sim, project_id)
        self.project_id, self.test_key = self.shop.project_id, self.shop.test_key
        await self.admin.product(self.project_id, "ten", name="Ten", amount=10, currency="EUR")

    async def pay(self, c: Checkout) -> None:
        async with httpx.AsyncClient(timeout=bound(30.0)) as buyer:
            await press(buyer, c.answer["url"], "Approve")
        await self.until(c.tx, "succeeded")

    def sign(self, body: bytes) -> dict[str, str]:
        return self.sim.sign_headers(self.shop.webhook_id, body)

    def refusals(self, body: bytes) -> dict[str, dict[str, str]]:
        other_algo = {**self.sign(body), "PAYPAL-AUTH-ALGO": "SHA1withRSA"}
        return {
            "missing_header": {"Content-Type": "application/json"},
            "malformed_header": other_algo,
            "no_matching_signature": self.sim.sign_headers("WH-SOMEONE-ELSES", body),
        }

    def secrets(self) -> list[str]:
        return [CLIENT_SECRET]

    def _capture_event(
        self, c: Checkout, order: str, n: int, amount_minor: int, currency: str
    ) -> bytes:
        value = f"{amount_minor // 100}.{amount_minor % 100:02d}"
        capture = pe.capture(f"CAP{n}{c.tx[-12:]}", order, c.tx, "COMPLETED", value)
        capture["amount"] = pe.amount(value, currency)
        return pe.event(f"WH-PAID-{c.tx[-10:]}-{n}", "PAYMENT.CAPTURE.COMPLETED", n, capture)

    def paid_event(
        self, c: Checkout, n: int = 1, amount_minor: int = PRICE_MINOR, currency: str = "EUR"
    ) -> bytes:
        return self._capture_event(c, c.ref, n, amount_minor, currency)

    def elsewhere_event(self, c: Checkout) -> bytes:
        # an order made in the buyer's browser with the JS SDK, custom_id of the buyer's choosing
        return self._capture_event(c, f"ELSEWHERE{c.tx[-8:]}", 9, PRICE_MINOR, "EUR")

    async def _api(self, method: str, path: str, body: Any = None) -> dict[str, Any]:
        async with httpx.AsyncClient(base_url=self.sim.url) as client:
            token = await client.post(
                "/v1/oauth2/token",
                auth=(CLIENT_ID, CLIENT_SECRET),
                data={"grant_type": "client_credentials"},
            )
            answer = await client.request(
                method,
                path,
                json=body,
                headers={"Authorization": f"Bearer {token.json()['access_token']}"},
            )
        assert answer.is_success, answer.text
        return dict(answer.json()) if answer.content else {}

    def _capture(self, c: Checkout) -> str:
        return str(self.sim.order(c.ref)["purchase_units"][0]["payments"]["captures"][0]["id"])

    async def refund(self, c: Checkout, amount_minor: int | None = None) -> None:
        part = {}
        if amount_minor is not None:
            value = f"{amount_minor // 100}.{amount_minor % 100:02d}"
            part = {"amount": {"currency_code": "EUR", "value": value}}
        await self._api("POST", f"/v2/payments/captures/{self._capture(c)}/refund", part)

    stories = {
        name: Story(product, end, sub_end)
        for name, (product, _, end, sub_end) in paypal_stories.STORIES.items()
    }

    async def play(self, name: str) -> Played:
        product, build, _, _ = paypal_stories.STORIES[name]
        c = await self.checkout(product)
        tail = c.tx[-12:].upper()
        if product == "pro-monthly":  # the subscription made at PayPal
            ids = paypal_stories.Ids(c.tx, f"O{tail}", f"C{tail}", c.ref)
        else:  # the order made at PayPal
            ids = paypal_stories.Ids(c.tx, c.ref, f"C{tail}", f"I-{tail}")
        bodies = build(ids)
        return Played(c.tx, len(bodies), bodies.__getitem__)

    async def stored_once(self, played: Played, record: dict[str, Any], story: Story) -> None:
        # the simulator's own BILLING.SUBSCRIPTION.CREATED of the checkout is not the story's
        events = [
            e
            for e in record["events"]
            if (e["providerEventId"] or "").startswith(f"WH-{played.tx[-10:]}-")
            or e["type"] == "checkout.created"
        ]
        assert len(events) == played.count + 1, events  # each once, and checkout.created
        assert not [e for e in events if e["type"] == "unmatched"], events

    async def dispute(self, c: Checkout) -> None:
        self._dispute = await self.sim.dispute(self._capture(c))

    async def close_dispute(self, c: Checkout, won: bool) -> None:
        outcome = "RESOLVED_SELLER_FAVOUR" if won else "RESOLVED_BUYER_FAVOUR"
        await self.sim.resolve_dispute(self._dispute, outcome)


class PaddleDriver(Driver):
    name, label = "paddle", "Paddle"
    shape = ("token", "form")
    refund_detail = "Paddle took refund adj_"
    succeeded_events = 2  # transaction.paid, then transaction.completed
    refund_history = True  # adjustment.created, pending_approval: history until approved
    refund_call = r"/adjustments$"
    sim: PaddleSimulator

    def refunds_made(self, c: Checkout) -> int:
        return sum(a["action"] == "refund" for a in self.sim.adjustments_of(c.ref))

    async def warn(self, c: Checkout) -> None:
        await self.sim.chargeback_warning(c.ref)

    @staticmethod
    def simulator() -> PaddleSimulator:
        return PaddleSimulator()

    async def setup(self, project_id: str | None = None) -> None:
        self.shop: PaddleShop = await paddle_shop(self.admin, self.sim, project_id)
        self.project_id, self.test_key = self.shop.project_id, self.shop.test_key

    async def pay(self, c: Checkout) -> None:
        await self.sim.pay(c.ref)
        await self.until(c.tx, "succeeded")

    def sign(self, body: bytes) -> dict[str, str]:
        return self.sim.sign_headers(self.shop.webhook_secret, body)

    def refusals(self, body: bytes) -> dict[str, dict[str, str]]:
        old = int(time.time()) - 301
        return {
            "missing_header": {"Content-Type": "application/json"},
            "malformed_header": {"Paddle-Signature": "garbage"},
            "no_matching_signature": self.sim.sign_headers("pdl_ntfset_wrong", body),
            "timestamp_out_of_tolerance": paddle_deliveries.signed(
                body, self.shop.webhook_secret, old
            ),
        }

    def secrets(self) -> list[str]:
        return [self.shop.webhook_secret, "pdl_sdbx_apikey"]

    def _paid(self, txn_id: str, amount_minor: int, currency: str) -> dict[str, Any]:
        txn = copy.deepcopy(self.sim.transaction(txn_id))
        txn.update(customer_id=paddle_objects.paddle_id("ctm"), status="ready")
        txn["payments"].insert(0, paddle_objects.payment_attempt(txn, declined=False))
        paddle_objects.settle(txn, "paid")
        if amount_minor != PRICE_MINOR or currency != "EUR":
            # what a checkout asked for is its items; what it took, grand_total
            money = {"amount": str(amount_minor), "currency_code": currency}
            for item in txn["items"]:
                item["price"]["unit_price"] = dict(money)
            totals = txn["details"]["totals"]
            totals.update(grand_total=str(amount_minor), total=str(amount_minor))
            totals["currency_code"] = txn["currency_code"] = currency
        return txn

    def paid_event(
        self, c: Checkout, n: int = 1, amount_minor: int = PRICE_MINOR, currency: str = "EUR"
    ) -> bytes:
        txn = self._paid(c.ref, amount_minor, currency)
        return paddle_objects.body_of(paddle_objects.envelope("transaction.paid", txn))

    def elsewhere_event(self, c: Checkout) -> bytes:
        # Paddle.js opens a transaction of its own with customData of the page's choosing
        txn = self._paid(c.ref, PRICE_MINOR, "EUR")
        txn["id"] = paddle_objects.paddle_id("txn")
        assert txn["custom_data"]["txId"] == c.tx
        return paddle_objects.body_of(paddle_objects.envelope("transaction.paid", txn))

    async def refund(self, c: Checkout, amount_minor: int | None = None) -> None:
        await self.sim.refund(c.ref, amount=amount_minor)

    stories = {
        name: Story(product, end, sub_end)
        for name, (product, _, end, sub_end) in paddle_stories.STORIES.items()
    }
    samples = 8

    async def play(self, name: str) -> Played:
        """A new checkout, and the notifications its story makes, as Paddle would stamp them
        (``occurred_at`` ten seconds apart, in the order they happened); one sent again is a
        redelivery (a new ``notification_id``, the same ``event_id``)."""
        product, play, _, _ = paddle_stories.STORIES[name]
        c = await self.checkout(product)
        self.sim.deliveries_paused = True
        try:
            await play(self.sim, c.ref)
        finally:
            self.sim.deliveries_paused = False
        held, self.sim.held = self.sim.held, []
        events = [event for _, event in held]
        for n, event in enumerate(events):
            at = paddle_stories.START + dt.timedelta(seconds=10 * n)
            event["occurred_at"] = at.isoformat(timespec="microseconds").replace("+00:00", "Z")
        sent: set[int] = set()

        def body(index: int) -> bytes:
            event = events[index]
            if index in sent:
                event = paddle_objects.redelivered(event)
            sent.add(index)
            return paddle_objects.body_of(event)

        return Played(c.tx, len(events), body, {e["event_id"] for e in events})

    async def stored_once(self, played: Played, record: dict[str, Any], story: Story) -> None:
        stored = [e for e in await self.feed() if e["providerEventId"] in played.ids]
        assert len(stored) == len(played.ids), stored  # each once, however often delivered
        others = [e for e in stored if e["txId"] != played.tx]
        if story.end == ("pending", 1):  # paid elsewhere: none of it is the checkout's
            assert {(e["type"], e["txId"]) for e in others} == {("unmatched", None)}
            assert {e.get("claimedTxId") for e in others} <= {played.tx, None}
            assert any(e.get("claimedTxId") == played.tx for e in others)
        else:
            assert others == [], others

    async def dispute(self, c: Checkout) -> None:
        await self.sim.chargeback(c.ref)

    async def close_dispute(self, c: Checkout, won: bool) -> None:
        assert won, "Paddle sends no event for a chargeback lost"
        await self.sim.chargeback_reverse(c.ref)

    async def refund_approved(self, c: Checkout) -> None:
        # "Most refunds for live accounts are created with the status of pending_approval
        # until reviewed by Paddle" (openapi.yaml status-adjustment)
        for adjustment in self.sim.adjustments_of(c.ref):
            if adjustment["status"] == "pending_approval":
                await self.sim.approve_refund(adjustment["id"])


class BTCPayDriver(Driver):
    name, label = "btcpay", "BTCPay"
    shape = ("redirect", "crypto")
    # a refund is a pull payment at the BTCPay server (tests/e2e/test_refunds.py); its detail
    # is BTCPay's latest word on it: the call's answer, or its InvoiceRefund read first
    refund_detail = ""
    refund_history = True  # InvoiceRefund names only its pull payment: history until read
    refund_call = r"/api/v1/stores/[^/]+/invoices/[^/]+/refund$"
    sim: BTCPaySimulator

    def refunds_made(self, c: Checkout) -> int:
        return len(self.sim.pull_payments_of(c.ref))

    async def refund(self, c: Checkout, amount_minor: int | None = None) -> None:
        # in BTCPay's own screens: a pull payment of the invoice's currency, or all of it
        if amount_minor is None:
            await self.sim.refund(c.ref)
        else:
            value = f"{amount_minor // 100}.{amount_minor % 100:02d}"
            await self.sim.refund(c.ref, "Custom", value)

    async def release_webhooks(self) -> None:
        self.sim.release()

    @staticmethod
    def simulator() -> BTCPaySimulator:
        return BTCPaySimulator(retry_delays_s=(0.05, 0.1, 0.2))

    async def setup(self, project_id: str | None = None) -> None:
        self.shop: BTCPayShop = await btcpay_shop(self.admin, self.sim, project_id=project_id)
        self.project_id, self.test_key = self.shop.project_id, self.shop.test_key

    async def pay(self, c: Checkout) -> None:
        await self.sim.pay(c.ref)
        await self.sim.confirm(c.ref)
        await self.until(c.tx, "succeeded")

    def sign(self, body: bytes) -> dict[str, str]:
        return btcpay_deliveries.signed(body, self.shop.webhook_secret)

    def refusals(self, body: bytes) -> dict[str, dict[str, str]]:
        return {
            "missing_header": {"Content-Type": "application/json"},
            "malformed_header": {"BTCPay-Sig": "garbage"},
            "no_matching_signature": btcpay_deliveries.signed(body, "rotated-elsewhere"),
        }

    def secrets(self) -> list[str]:
        return [self.shop.webhook_secret]

    def _settled(self, invoice: str, tx: str, n: int) -> bytes:
        delivery_id = f"P{n}{invoice[-8:]}{tx[-8:]}"
        event = btcpay_objects.delivery(
            "InvoiceSettled",
            webhook_id=self.shop.webhook_id,
            delivery_id=delivery_id,
            original_delivery_id=delivery_id,
            is_redelivery=False,
            timestamp=btcpay_objects.now_s(),
            store_id=self.shop.store_id,
            invoice_id=invoice,
            metadata={"orderId": tx},
            manuallyMarked=False,
            overPaid=False,
        )
        return btcpay_objects.body(event)

    def paid_event(
        self, c: Checkout, n: int = 1, amount_minor: int = PRICE_MINOR, currency: str = "EUR"
    ) -> bytes:
        assert (amount_minor, currency) == (PRICE_MINOR, "EUR"), "BTCPay states no amount"
        return self._settled(c.ref, c.tx, n)

    stories = {
        name: Story("ten", (status, version), None, attention)
        for name, (_, (status, version, attention)) in btcpay_stories.STORIES.items()
    }

    async def story_setup(self) -> None:
        # the store's own webhook goes nowhere: only the story's deliveries reach the node
        self.shop = await btcpay_shop(self.admin, self.sim, "http://127.0.0.1:9/nobody")
        self.project_id, self.test_key = self.shop.project_id, self.shop.test_key

    async def play(self, name: str) -> Played:
        story, _ = btcpay_stories.STORIES[name]
        c = await self.checkout()
        deliveries = btcpay_stories.Deliveries(self.shop, c.tx, c.ref, story)
        return Played(c.tx, len(story), deliveries.body)

    async def stored_once(self, played: Played, record: dict[str, Any], story: Story) -> None:
        from_btcpay = [e for e in record["events"] if e["provider"] == "btcpay"]
        tail = played.tx[-12:]
        mine = [e for e in from_btcpay if (e["providerEventId"] or "").endswith(tail)]
        assert len(mine) == played.count, from_btcpay  # retries stored once

    def elsewhere_event(self, c: Checkout) -> bytes:
        # an invoice made at the store's Point of Sale with an orderId of the buyer's choosing
        return self._settled(btcpay_objects.btcpay_id(), c.tx, 9)


DRIVERS: dict[str, type[Driver]] = {
    d.name: d for d in (StripeDriver, PayPalDriver, PaddleDriver, BTCPayDriver)
}

# Registered providers the contract suite does not drive, and why: only one that talks to no
# provider (no webhooks, no calls) may be here (tests/contract/test_drivers.py holds it to that).
UNDRIVEN = {"manual": "pay by mail talks to no provider: the merchant records what arrives"}


def uncovered(
    registered: Iterable[str], drivers: Iterable[str], undriven: Iterable[str]
) -> list[str]:
    """The registered providers that have neither a driver nor a reason to go without one."""
    exempt = set(drivers) | set(undriven)
    return [name for name in registered if name not in exempt]


def driven() -> list[str]:
    """The providers the suite runs for: every registered one that is not ``UNDRIVEN``, in the
    registry's order; one without a driver is still listed, and its tests fail."""
    return [name for name in PROVIDERS if name not in UNDRIVEN]


def driver_kind(provider: str) -> type[Driver]:
    kind = DRIVERS.get(provider)
    if kind is None:
        pytest.fail(f"{provider} is registered but has no contract driver in tests/contract")
    return kind


def providers(**lacking: str) -> list[Any]:
    """Every driven provider, as ``provider`` parameters; one that lacks the behaviour
    (``name=why``) is skipped, saying why."""
    return [
        pytest.param(name, marks=pytest.mark.skip(reason=lacking[name]))
        if name in lacking
        else name
        for name in driven()
    ]


def body_id(body: bytes) -> str:
    """The provider's event id of a delivery built here."""
    event = json.loads(body)
    return str(event.get("event_id") or event.get("originalDeliveryId") or event["id"])
