"""A hypothesis state machine through a real node (the demo, in a child process): checkouts with
every provider (Stripe, PayPal, Paddle and BTCPay on their simulators, and pay by mail); provider
events delivered valid, twice, out of order and tampered, on the checkout's own provider object
or on another payment's that echoes its id, for the right amount or another; mark-paid, cancel
and polls.

Invariants (CONTRACT 2, 4.3): no status moves backwards and versions only grow; the quota counts
the distinct accepted events; a refused delivery changes nothing; a checkout succeeds only by a
payment on its own provider object for its amount and currency (or the merchant's mark-paid);
a payment of another amount on its own object flags it. At the end, each provider checkout's
accepted events, delivered again in the reverse order to a new checkout of the same provider,
end in the same status and the same ``needsAttention``, but for CONTRACT 2's one exception: a
story that holds both a success and an ending cannot be honoured in every order, so the two may
keep different ones of them, and both are then flagged for the merchant."""

from __future__ import annotations

import datetime as dt
import http.server
import json
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule
from support.client import bearer
from support.fuzzing import demo_node, runs
from support.stripe_events import WEBHOOK_SECRET, event_body, signed, stripe_object
from support.waits import bound

from edge.domain.status import PAYMENT_TRANSITIONS, Status
from edge.sim.btcpay import deliveries as btcpay_deliveries
from edge.sim.paddle import deliveries as paddle_deliveries
from edge.sim.paypal import deliveries as paypal_deliveries
from edge.sim.paypal.certificate import signing_certificate
from edge.sim.paypal.registration import DEMO_PAYPAL_CLIENT

PROVIDERS = ["stripe", "paypal", "paddle", "btcpay", "manual"]
KINDS = ["paid", "ended", "refund part", "refund rest"]
ASKED = (1999, "EUR")  # the demo's book
T0 = 1_790_000_000
SECRET = "sm-webhook-secret-0123456789"
WEBHOOK_ID = "WH-STATE-MACHINE"
PAYPAL_KEY, PAYPAL_CERT = signing_certificate("state-machine.test")


def reachable(start: str) -> set[str]:
    seen, todo = {start}, [Status(start)]
    while todo:
        for nxt in PAYMENT_TRANSITIONS.get(todo.pop(), ()):
            if nxt.value not in seen:
                seen.add(nxt.value)
                todo.append(nxt)
    return seen


@contextmanager
def certificate_server() -> Iterator[str]:
    """PayPal's signing certificate, served on loopback (a thread: the machine is not async)."""

    class Serve(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            self.send_response(200)
            self.send_header("Content-Length", str(len(PAYPAL_CERT)))
            self.end_headers()
            self.wfile.write(PAYPAL_CERT)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Serve)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/notifications/certs/CERT-sm"
    finally:
        server.shutdown()
        server.server_close()


def _paypal_knows(admin: httpx.Client, project_id: str, webhook_id: str) -> None:
    """The demo's PayPal app gets the webhook the genuine deliveries were signed for (saving
    the id asks PayPal for it, as the node does with any webhook id)."""
    project = admin.get(f"/api/manage/projects/{project_id}").json()
    paypal = next(p for p in project["providers"] if p["provider"] == "paypal")
    base = paypal["test"]["apiBase"]
    with httpx.Client(base_url=base) as sim:
        token = sim.post(
            "/v1/oauth2/token",
            auth=DEMO_PAYPAL_CLIENT,
            data={"grant_type": "client_credentials"},
        ).json()["access_token"]
        sim.post(
            "/sim/webhooks",
            json={"id": webhook_id, "url": "https://shop.example/hooks"},
            headers={"Authorization": f"Bearer {token}"},
        ).raise_for_status()


def test_state_machine(tmp_path: Path) -> None:
    node, project_id = demo_node(tmp_path)
    try:
        with (
            certificate_server() as cert_url,
            httpx.Client(base_url=node.url, headers=bearer(node.admin_token)) as admin,
        ):
            test_secrets = {
                "stripe": {"webhookSecret": WEBHOOK_SECRET},
                "paypal": {"webhookId": WEBHOOK_ID, "certHosts": ["127.0.0.1"]},
                "paddle": {"webhookSecret": SECRET},
                "btcpay": {"webhookSecret": SECRET},
            }
            _paypal_knows(admin, project_id, WEBHOOK_ID)
            for provider, secrets in test_secrets.items():
                admin.put(
                    f"/api/manage/projects/{project_id}/providers/{provider}",
                    json={"enabled": True, "test": secrets},
                ).raise_for_status()
            Machine.url, Machine.project_id, Machine.token = node.url, project_id, node.admin_token
            Machine.cert_url = cert_url
            run = Machine.TestCase
            run.settings = settings(
                max_examples=runs(20),
                stateful_step_count=50,
                deadline=None,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            run().runTest()
    finally:
        node.terminate()


@dataclass
class Story:
    """A provider checkout's accepted deliveries, and what they say about it."""

    provider: str
    ref: str  # the provider object the node created (the transaction's providerRef)
    bodies: list[tuple[str, bytes]] = field(default_factory=list)  # (kind, body)
    own_paid_as_asked: bool = False
    own_canceled: bool = False  # the provider reported its own object canceled (Paddle's)


class Machine(RuleBasedStateMachine):
    url = project_id = token = cert_url = ""
    txs = Bundle("txs")

    def __init__(self) -> None:
        super().__init__()
        self.http = httpx.Client(base_url=self.url, headers=bearer(self.token), timeout=bound(30.0))
        self.seen: dict[str, tuple[str, int]] = {}
        self.accepted: set[tuple[str, str]] = set()  # (provider, event id)
        self.stories: dict[str, Story] = {}
        self.touched: set[str] = set()  # marked paid or canceled by the merchant
        self.merchant_canceled: set[str] = set()  # canceled by the merchant's own hand
        self.clock = 0
        self.used_at_start = self._used()

    def teardown(self) -> None:
        try:
            for tx, story in self.stories.items():
                if tx not in self.touched and story.bodies:
                    self._converges(tx, story)
        finally:
            self.http.close()

    # -- rules ----------------------------------------------------------------------------

    @rule(target=txs, provider=st.sampled_from(PROVIDERS))
    def checkout(self, provider: str) -> str:
        answer = self.http.post(
            f"/api/checkout/{provider}/{self.project_id}",
            json={"productId": "book", "mode": "test"},
        )
        assert answer.status_code == 201, answer.text
        tx = str(answer.json()["txId"])
        self.seen[tx] = ("pending", 1)
        if provider != "manual":
            self.stories[tx] = Story(provider, str(self._tx(tx)["providerRef"]))
        return tx

    @rule(
        tx=txs,
        kind=st.sampled_from(KINDS),
        own=st.booleans(),
        as_asked=st.booleans(),
        number=st.integers(0, 2),
        tampered=st.booleans(),
    )
    def deliver(
        self, tx: str, kind: str, own: bool, as_asked: bool, number: int, tampered: bool
    ) -> None:
        story = self.stories.get(tx)
        if story is None:
            return  # pay by mail: no provider events
        ref = story.ref if own else f"{story.ref}x{number}"  # another payment's object
        self.clock += 1
        event_id = f"SMID{tx[-10:]}{kind.replace(' ', '')}{int(own)}{int(as_asked)}{number}"
        body = BUILD[story.provider](event_id, kind, tx, ref, as_asked, T0 + number)
        before = self._tx(tx)
        answer = self._post(story.provider, body, tampered)
        if tampered:
            assert answer.status_code == 401, answer.text
            assert self._tx(tx) == before  # nothing refused changes the store
            return
        assert answer.status_code == 200, answer.text
        if answer.json()["duplicate"]:
            return
        key = (story.provider, event_id)  # matched or stored unmatched: counted once
        assert key not in self.accepted, key
        self.accepted.add(key)
        story.bodies.append((kind, body))
        if own and kind == "ended" and story.provider == "paddle":
            story.own_canceled = True
        if own and kind == "paid":
            # BTCPay's events state no amount: a settlement, by hand or not, is its own word
            story.own_paid_as_asked |= as_asked or story.provider == "btcpay"
            if not as_asked and story.provider != "btcpay":
                after = self._tx(tx)
                assert after["needsAttention"] is True, after  # money not what it asked

    @rule(tx=txs)
    def mark_paid(self, tx: str) -> None:
        answer = self.http.post(f"/api/projects/{self.project_id}/transactions/{tx}/mark-paid")
        assert answer.status_code in (200, 409, 422), answer.text
        self.touched.add(tx)

    @rule(tx=txs)
    def cancel(self, tx: str) -> None:
        answer = self.http.post(f"/api/projects/{self.project_id}/transactions/{tx}/cancel")
        assert answer.status_code in (200, 422), answer.text
        self.touched.add(tx)
        if answer.status_code == 200:
            self.merchant_canceled.add(tx)

    @rule(tx=txs)
    def poll(self, tx: str) -> None:
        answer = self.http.get(f"/status/{self.project_id}/{tx}", params={"wait": 0})
        assert answer.status_code == 200, answer.text

    # -- invariants -----------------------------------------------------------------------

    @invariant()
    def statuses_only_move_forward_and_versions_only_grow(self) -> None:
        for tx, (status, version) in list(self.seen.items()):
            now = self.http.get(f"/status/{self.project_id}/{tx}").json()
            ahead = reachable(status)
            if status == "canceled" and self._cancel_yields(tx):
                # docs/api.md: Paddle's own cancel of a checkout Paddle reports paid yields to
                # the payment, in any order (a record that took the cancel first moves on)
                ahead |= reachable("succeeded")
            assert now["status"] in ahead, (tx, status, now)
            assert now["version"] >= version, (tx, version, now)
            if now["status"] != status:
                assert now["version"] > version, (tx, version, now)
            self.seen[tx] = (now["status"], now["version"])

    @invariant()
    def a_checkout_succeeds_only_by_its_own_payment_as_asked(self) -> None:
        for tx, story in self.stories.items():
            status = self.seen[tx][0]
            if tx not in self.touched and status in ("succeeded", "partially_refunded", "refunded"):
                assert story.own_paid_as_asked, (tx, status, story.provider)

    @invariant()
    def usage_counts_the_distinct_accepted_events(self) -> None:
        assert self._used() - self.used_at_start == len(self.accepted)

    # -- helpers --------------------------------------------------------------------------

    def _converges(self, tx: str, story: Story) -> None:
        """The same events, reversed, for a new checkout of the same provider: the same final
        status and flag (CONTRACT 2), but for a contradicted story, flagged either way."""
        answer = self.http.post(
            f"/api/checkout/{story.provider}/{self.project_id}",
            json={"productId": "book", "mode": "test"},
        )
        assert answer.status_code == 201, answer.text
        twin = str(answer.json()["txId"])
        twin_ref = str(self._tx(twin)["providerRef"])
        for _, body in reversed(story.bodies):
            again = body.replace(tx.encode(), twin.encode()).replace(
                story.ref.encode(), twin_ref.encode()
            )
            again = again.replace(b"SMID", b"TWIN")  # the twin's own event ids
            posted = self._post(story.provider, again, False)
            assert posted.status_code == 200, posted.text
        first, second = self._tx(tx), self._tx(twin)
        got = [(r["status"], r["needsAttention"]) for r in (first, second)]
        if got[0] == got[1]:
            return
        # a success and an ending, or two endings, in one story: whichever came first stays,
        # flagged both ways
        assert first["needsAttention"] and second["needsAttention"], (got, _kinds(story))
        ended = {"failed", "canceled", "expired"}
        kept = {first["status"], second["status"]}
        assert (kept & ended and kept - ended) or kept <= ended, (got, _kinds(story))

    def _cancel_yields(self, tx: str) -> bool:
        story = self.stories.get(tx)
        return (
            story is not None
            and story.own_canceled
            and story.own_paid_as_asked
            and tx not in self.merchant_canceled
        )

    def _post(self, provider: str, body: bytes, tampered: bool) -> httpx.Response:
        headers = SIGN[provider](body, tampered, self.cert_url)
        return self.http.post(
            f"/webhook/{provider}/{self.project_id}", content=body, headers=headers
        )

    def _used(self) -> int:
        usage = self.http.get(f"/api/manage/projects/{self.project_id}/usage").json()
        return int(usage["test"]["used"])

    def _tx(self, tx: str) -> dict[str, Any]:
        answer = self.http.get(f"/api/projects/{self.project_id}/transactions/{tx}")
        assert answer.status_code == 200, answer.text
        record = dict(answer.json())
        record.pop("events", None)
        return record


def _kinds(story: Story) -> list[str]:
    return [kind for kind, _ in story.bodies]


# -- each provider's events, in its own shapes ----------------------------------------------


def _amount(as_asked: bool) -> int:
    return ASKED[0] if as_asked else 100  # a payment made elsewhere for 1.00


def _stripe(event_id: str, kind: str, tx: str, ref: str, as_asked: bool, at: int) -> bytes:
    pi = f"pi_{ref}"
    if kind in ("paid", "ended"):
        paid = kind == "paid"
        obj = stripe_object(
            "checkout_session",
            id=ref,
            client_reference_id=tx,
            metadata={"txId": tx},
            payment_intent=pi if paid else None,
            payment_status="paid" if paid else "unpaid",
            status="complete" if paid else "expired",
            amount_total=_amount(as_asked),
            currency="eur",
        )
        stripe_type = "checkout.session.completed" if paid else "checkout.session.expired"
    else:
        refunded = ASKED[0] // 2 if kind == "refund part" else ASKED[0]
        obj = stripe_object(
            "charge",
            id=f"ch_{ref}",
            payment_intent=pi,
            amount=ASKED[0],
            amount_refunded=refunded,
            refunded=refunded >= ASKED[0],
            currency="eur",
            metadata={"txId": tx},
        )
        stripe_type = "charge.refunded"
    envelope = json.loads(event_body(event_id, stripe_type, obj))
    envelope["created"] = at
    return json.dumps(envelope).encode()


def _paypal(event_id: str, kind: str, tx: str, ref: str, as_asked: bool, at: int) -> bytes:
    capture_id = f"CAP{ref}"

    def money(minor: int) -> dict[str, str]:
        return {"currency_code": "EUR", "value": f"{minor / 100:.2f}"}

    if kind == "paid":
        event_type = "PAYMENT.CAPTURE.COMPLETED"
        resource: dict[str, Any] = {
            "id": capture_id,
            "status": "COMPLETED",
            "custom_id": tx,
            "invoice_id": tx,
            "amount": money(_amount(as_asked)),
            "supplementary_data": {"related_ids": {"order_id": ref}},
        }
    elif kind == "ended":
        event_type = "CHECKOUT.PAYMENT-APPROVAL.REVERSED"
        resource = {
            "id": ref,
            "status": "APPROVED",
            "purchase_units": [{"custom_id": tx, "invoice_id": tx, "amount": money(ASKED[0])}],
        }
    else:
        total = ASKED[0] // 2 if kind == "refund part" else ASKED[0]
        event_type = "PAYMENT.CAPTURE.REFUNDED"
        resource = {
            "id": f"RF{ref}{total}",
            "status": "COMPLETED",
            "custom_id": tx,
            "amount": money(total),
            "seller_payable_breakdown": {"total_refunded_amount": money(total)},
            "links": [
                {"rel": "up", "href": f"https://api.example/v2/payments/captures/{capture_id}"}
            ],
        }
    when = dt.datetime.fromtimestamp(at, dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return json.dumps(
        {
            "id": f"WH-{event_id}",
            "event_version": "1.0",
            "create_time": when,
            "event_type": event_type,
            "resource": resource,
        }
    ).encode()


def _paddle(event_id: str, kind: str, tx: str, ref: str, as_asked: bool, at: int) -> bytes:
    when = dt.datetime.fromtimestamp(at, dt.UTC).isoformat().replace("+00:00", "Z")
    if kind in ("paid", "ended"):
        amount = str(_amount(as_asked))
        data: dict[str, Any] = {
            "id": ref,
            "status": "paid" if kind == "paid" else "canceled",
            "origin": "web",
            "currency_code": "EUR",
            "custom_data": {"txId": tx},
            "items": [
                {"quantity": 1, "price": {"unit_price": {"amount": amount, "currency_code": "EUR"}}}
            ],
            "details": {"totals": {"grand_total": amount, "total": amount, "discount": "0"}},
        }
        event_type = "transaction.paid" if kind == "paid" else "transaction.canceled"
    else:
        half = ASKED[0] // 2
        part = half if kind == "refund part" else ASKED[0] - half
        data = {
            "id": f"adj_{event_id[-26:]}",
            "action": "refund",
            "status": "approved",
            "type": None,  # as in Paddle's own SDK fixtures
            "transaction_id": ref,
            "currency_code": "EUR",
            "totals": {"total": str(part), "currency_code": "EUR"},
        }
        event_type = "adjustment.updated"
    return json.dumps(
        {
            "event_id": f"evt_{event_id}",
            "event_type": event_type,
            "occurred_at": when,
            "notification_id": f"ntf_{uuid.uuid4().hex}",
            "data": data,
        }
    ).encode()


def _btcpay(event_id: str, kind: str, tx: str, ref: str, as_asked: bool, at: int) -> bytes:
    # BTCPay's invoice events state no amount; a success by hand is BTCPay's own word too
    types = {
        "paid": ("InvoiceSettled", {"manuallyMarked": not as_asked, "overPaid": False}),
        "ended": ("InvoiceExpired", {"partiallyPaid": False}),
        "refund part": ("InvoiceInvalid", {"manuallyMarked": True}),
        "refund rest": ("InvoiceProcessing", {"overPaid": False}),
    }
    btcpay_type, extra = types[kind]
    return json.dumps(
        {
            "deliveryId": f"D{event_id}",
            "webhookId": "W1",
            "originalDeliveryId": f"D{event_id}",
            "isRedelivery": False,
            "type": btcpay_type,
            "timestamp": at,
            "storeId": "S1",
            "invoiceId": ref,
            "metadata": {"orderId": tx},
            **extra,
        },
        indent=2,
    ).encode()


BUILD: dict[str, Callable[[str, str, str, str, bool, int], bytes]] = {
    "stripe": _stripe,
    "paypal": _paypal,
    "paddle": _paddle,
    "btcpay": _btcpay,
}


def _sign_stripe(body: bytes, tampered: bool, cert_url: str) -> dict[str, str]:
    return signed(body, "whsec_wrong" if tampered else WEBHOOK_SECRET)


def _sign_paypal(body: bytes, tampered: bool, cert_url: str) -> dict[str, str]:
    webhook_id = "WH-OTHER" if tampered else WEBHOOK_ID
    return paypal_deliveries.signed(body, webhook_id, PAYPAL_KEY, cert_url)


def _sign_paddle(body: bytes, tampered: bool, cert_url: str) -> dict[str, str]:
    return paddle_deliveries.signed(body, "wrong" if tampered else SECRET)


def _sign_btcpay(body: bytes, tampered: bool, cert_url: str) -> dict[str, str]:
    return btcpay_deliveries.signed(body, "wrong" if tampered else SECRET)


SIGN: dict[str, Callable[[bytes, bool, str], dict[str, str]]] = {
    "stripe": _sign_stripe,
    "paypal": _sign_paypal,
    "paddle": _sign_paddle,
    "btcpay": _sign_btcpay,
}
