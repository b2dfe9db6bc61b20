"""The cluster for real (issue 28, ``make test-cluster``): a throwaway PostgreSQL, Debian's
HAProxy with ``edge cluster``'s configuration, three ``edge serve`` processes on loopback in
cluster mode, and the Stripe simulator they call. Through the proxy, across many projects,
buyers start checkouts (pay-by-mail and Stripe), Stripe reports each Stripe payment by signed
webhooks (every delivery retried until answered 2xx, and delivered once more a few seconds
after), and a merchant's server reads statuses, while one node is SIGKILLed and another
SIGSTOPped past its lease, then let go.

Then: every checkout that was acknowledged (a 201) is stored exactly once, with exactly one
``checkout.created`` event; a retried checkout (same Idempotency-Key) never made a second
transaction; every webhook delivery acknowledged (a 2xx) is stored exactly once, as the event its
answer named, and its redelivery (same Stripe event id) made no second event; every status
answered was one the events sent allow (never behind an acknowledged one), every refusal a
retryable one; the SIGSTOPped node, awake again, wrote nothing under its lost leases; every
project is served again, the time it took measured against the lease.
"""

from __future__ import annotations

import bisect
import json
import os
import random
import shutil
import signal
import time
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import trio
from support.client import MAILING_ADDRESS, Admin, bearer
from support.haproxy import require_haproxy, running_haproxy
from support.nodes import NodeProcess
from support.postgres import execute, require_psycopg
from support.stripe_events import signed
from support.waits import bound

require_haproxy()
require_psycopg()

from edge.cluster.haproxy import Node  # noqa: E402
from edge.signing import SIGNING_KEY_FILE, Signer  # noqa: E402
from edge.sim.stripe import StripeSimulator, event_for_trigger  # noqa: E402

LEASE_S = 2.0
PROJECTS = 9
RUN_S = 34.0
KILL_AT, STOP_AT, CONT_AT = 4.0, 9.0, 16.0
# the killed node back on its address, into HAProxy's hash once its checks pass (2 of them,
# 2 s apart): its projects are handed to it by the nodes that covered for them
RETURN_AT = 19.0
RETURN_BOUND_S = 1.0  # the longest a project may be refused while a node returns
# PostgreSQL stopped and started again: cleanly, then as a crash
RESTARTS = ((26.0, "fast"), (30.0, "immediate"))
TRY_S = 4.0  # a request gives up after this long (a stopped node answers nothing)
RETRY_S = 0.1  # after a retryable refusal: the lease moves within LEASE_S
OUTAGE_BOUND_S = 3 * 2.0 + LEASE_S + TRY_S + 2.0

PRICE_MINOR = 1999  # the product's 19.99 EUR, as the node and Stripe count it
# What Stripe tells about a paid checkout, in order, and the status each event leaves: every
# event moves the status one step, so an answer can be placed between the events sent and
# the events acknowledged
LIFECYCLE = ("payment.succeeded", "payment.partially_refunded", "payment.refunded")
STATUSES = ("pending", "succeeded", "partially_refunded", "refunded")
# Stripe delivers at least once: an event answered 2xx may come again. Again later than a
# delivery's own retries, so that many arrive after their project moved to another node.
REDELIVER_AFTER_S = 3.0
STRIPE_AGENT = "Stripe/1.0 (+https://stripe.com/docs/webhooks)"

# the load comes from one address (the test's): CONTRACT 8's per-address buckets would cap it
LOAD_CONFIG = """
[rate_limits]
"checkout:ip" = { count = 1000000, period_s = 60 }
"checkout:key" = { count = 1000000, period_s = 60 }
"status:ip" = { count = 1000000, period_s = 60 }
"webhook" = { count = 1000000, period_s = 60 }
"manage" = { count = 1000000, period_s = 60 }
[tiers.free]
live_events = 1000000
test_events = 1000000
"""


@dataclass
class Delivery:
    """A Stripe event for one project's endpoint."""

    event_type: str  # the node's name for it (CONTRACT 6)
    event_id: str
    body: bytes
    stored_as: str | None = None  # the node's event id, as its first 2xx named it


@dataclass
class Payment:
    """A Stripe checkout acknowledged, and how far Stripe has got in telling the node."""

    tx_id: str
    sent: int = 0  # events of LIFECYCLE whose delivery began: the furthest the status can be
    acked: int = 0  # events of LIFECYCLE answered 2xx: the least the status can be


@dataclass
class Shop:
    project_id: str
    key: str  # live: the pay-by-mail checkouts
    test_key: str  # test: the Stripe checkouts (the simulator is Stripe's test mode)
    webhook_secret: str
    acknowledged: dict[str, str] = field(default_factory=dict)  # idempotency key -> tx id
    keys: int = 0  # idempotency keys tried (one logical checkout each)
    manual: list[str] = field(default_factory=list)  # acknowledged pay-by-mail tx ids
    payments: list[Payment] = field(default_factory=list)
    deliveries: list[Delivery] = field(default_factory=list)  # first deliveries, in order
    due_again: deque[tuple[float, Delivery]] = field(default_factory=deque)
    redelivered: int = 0  # acknowledged events delivered again, answered 2xx
    stored_unanswered: int = 0  # deliveries stored by an attempt whose answer never came
    served: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    refused: Counter[tuple[str, int]] = field(default_factory=Counter)  # (kind, code); 0: none
    refusals: list[float] = field(default_factory=list)  # when each refused request began
    answers: list[float] = field(default_factory=list)  # when each request answered 2xx began

    def note(self, kind: str, began: float, code: int) -> None:
        """A request of ``kind`` begun at ``began`` answered ``code`` (0: no answer)."""
        if 200 <= code < 300:
            self.served[kind].append(time.monotonic())
            self.answers.append(began)
        else:
            self.refused[kind, code] += 1
            self.refusals.append(began)

    def longest_refusal(self, since: float, until: float) -> float:
        """The longest the project was refused, from a refused request begun in the window
        to the next request begun after it that was answered."""
        answers = sorted(self.answers)
        longest = 0.0
        for began in self.refusals:
            if since <= began < until:
                after = bisect.bisect_right(answers, began)
                longest = max(longest, (answers[after] if after < len(answers) else until) - began)
        return longest

    def longest_outage(self, kind: str) -> float:
        """The longest time the project went without a request of ``kind`` answered."""
        times = sorted(self.served[kind])
        return max((b - a for a, b in zip(times, times[1:], strict=False)), default=0.0)


def _data_dirs(root: Path, names: tuple[str, ...]) -> list[Path]:
    """Data dirs sharing one signing key (the button's SRI, the public-info signature)."""
    first = root / names[0]
    first.mkdir(parents=True)
    Signer.load(first)
    dirs = [first]
    for name in names[1:]:
        (root / name).mkdir()
        shutil.copy(first / SIGNING_KEY_FILE, root / name / SIGNING_KEY_FILE)
        dirs.append(root / name)
    return dirs


async def _set_up(admin: Admin, sim: StripeSimulator, proxy_url: str, index: int) -> Shop:
    project_id = await admin.project()
    await admin.product(project_id)
    await admin.provider(
        project_id,
        "manual",
        {"enabled": True, "live": {"mailingAddress": MAILING_ADDRESS}},
    )
    # an account of its own at the simulator, whose endpoint is the project's through the proxy
    secret_key = f"sk_test_chaos{index:02d}0123456789abcdefghij"
    webhook_secret = sim.register_endpoint(secret_key, f"{proxy_url}/webhook/stripe/{project_id}")
    credentials = {
        "secretKey": secret_key,
        "publishableKey": f"pk_test_chaos{index:02d}0123456789abcdefghij",
        "webhookSecret": webhook_secret,
        "apiBase": sim.url,
    }
    await admin.provider(project_id, "stripe", {"enabled": True, "test": credentials})
    return Shop(
        project_id,
        await admin.key(project_id, "live"),
        await admin.key(project_id, "test"),
        webhook_secret,
    )


def _retryable(answer: httpx.Response) -> None:
    """A refusal the client may retry: the node's 503 (lease elsewhere, store fenced) or
    HAProxy's 502/503/504 (a node dead or paused). Never a 500, a 404 of something
    acknowledged, nor a provider error (the simulator never fails here)."""
    assert answer.status_code in (502, 503, 504), (answer.status_code, answer.text)
    assert "provider_error" not in answer.text, answer.text


async def _checkout(
    http: httpx.AsyncClient, shop: Shop, provider: str, until: float, headers: dict[str, str]
) -> dict[str, Any] | None:
    """One checkout, retried under its Idempotency-Key until answered; None if given up."""
    shop.keys += 1
    key = f"{shop.project_id}-{shop.keys}"
    while time.monotonic() < until + 2 * TRY_S:
        began = time.monotonic()
        try:
            answer = await http.post(
                f"/api/checkout/{provider}/{shop.project_id}",
                json={"productId": "book"},
                headers={"Idempotency-Key": key, **headers},
                timeout=TRY_S,
            )
        except httpx.TransportError:
            shop.note("checkout", began, 0)
            continue
        shop.note("checkout", began, answer.status_code)
        if answer.status_code == 201:
            body: dict[str, Any] = answer.json()
            shop.acknowledged[key] = body["txId"]
            return body
        _retryable(answer)
        await trio.sleep(RETRY_S)
    return None


async def _buyers(http: httpx.AsyncClient, shop: Shop, until: float) -> None:
    """Pay-by-mail checkouts one after another."""
    while time.monotonic() < until:
        answer = await _checkout(http, shop, "manual", until, {})
        if answer is not None:
            shop.manual.append(answer["txId"])


async def _stripe_buyers(
    http: httpx.AsyncClient, shop: Shop, sim: StripeSimulator, until: float
) -> None:
    """Stripe checkouts one after another, each paid, then refunded in two parts; Stripe tells
    the node each step with an event (built and signed by the simulator's code)."""
    while time.monotonic() < until:
        answer = await _checkout(http, shop, "stripe", until, bearer(shop.test_key))
        if answer is None:
            return
        session_id = answer["url"].rsplit("/", 1)[1]
        session = sim.session(session_id)  # KeyError: the node never asked Stripe for it
        assert session["client_reference_id"] == answer["txId"], session
        payment = Payment(answer["txId"])
        shop.payments.append(payment)
        tx = {
            "id": payment.tx_id,
            "amount": PRICE_MINOR,
            "currency": "EUR",
            "isTest": True,
            "kind": "payment",
            "providerRef": session_id,
        }
        for event_type in LIFECYCLE:
            event = event_for_trigger(event_type, tx)
            delivery = Delivery(event_type, event["id"], json.dumps(event).encode())
            shop.deliveries.append(delivery)
            payment.sent += 1
            if not await _deliver(http, shop, delivery, until):
                return
            payment.acked += 1
            shop.due_again.append((time.monotonic() + REDELIVER_AFTER_S, delivery))


async def _deliver(
    http: httpx.AsyncClient, shop: Shop, delivery: Delivery, until: float, *, again: bool = False
) -> bool:
    """Deliver as Stripe does: signed anew at each attempt, attempted again after anything but
    a 2xx (no answer in time included) until answered; False if given up. (Stripe's retries
    are hours apart; these are RETRY_S apart, to fit the run.)"""
    while time.monotonic() < until + 2 * TRY_S:
        began = time.monotonic()
        try:
            answer = await http.post(
                f"/webhook/stripe/{shop.project_id}",
                content=delivery.body,
                headers={**signed(delivery.body, shop.webhook_secret), "User-Agent": STRIPE_AGENT},
                timeout=TRY_S,
            )
        except httpx.TransportError:
            shop.note("webhook", began, 0)
            continue
        shop.note("webhook", began, answer.status_code)
        if 200 <= answer.status_code < 300:
            got = answer.json()
            assert got["received"] is True, got
            # every answer to one event id names the one stored event
            assert got["eventId"] == (delivery.stored_as or got["eventId"]), (delivery, got)
            assert got["duplicate"] or not again, (delivery, got)
            if delivery.stored_as is None and got["duplicate"]:
                shop.stored_unanswered += 1
            delivery.stored_as = got["eventId"]
            return True
        _retryable(answer)
        await trio.sleep(RETRY_S)
    return False


async def _redeliveries(http: httpx.AsyncClient, shop: Shop, until: float) -> None:
    """Every acknowledged event once more, REDELIVER_AFTER_S after its acknowledgement."""
    while time.monotonic() < until:
        if not shop.due_again:
            await trio.sleep(RETRY_S)  # nothing acknowledged yet: nothing announces it
            continue
        due, delivery = shop.due_again.popleft()
        await trio.sleep(max(0.0, due - time.monotonic()))
        if await _deliver(http, shop, delivery, until, again=True):
            shop.redelivered += 1


async def _status_reads(http: httpx.AsyncClient, shop: Shop, until: float) -> None:
    """A merchant's server polling: the Stripe payment under way, and an earlier checkout."""
    while time.monotonic() < until:
        if shop.payments:
            await _read_status(http, shop, shop.payments[-1].tx_id, shop.payments[-1])
        if shop.manual:
            await _read_status(http, shop, random.choice(shop.manual), None)
        if not shop.payments and not shop.manual:
            await trio.sleep(RETRY_S)  # no checkout answered yet


async def _read_status(
    http: httpx.AsyncClient, shop: Shop, tx_id: str, payment: Payment | None
) -> None:
    """One status read: a state between the last event acknowledged before it was asked and
    the last one sent by its answer (pay-by-mail: pending, nothing moves it), or a retryable
    refusal."""
    least = payment.acked if payment else 0
    began = time.monotonic()
    try:
        answer = await http.get(f"/status/{shop.project_id}/{tx_id}", timeout=TRY_S)
    except httpx.TransportError:
        shop.note("status", began, 0)
        return
    shop.note("status", began, answer.status_code)
    if answer.status_code != 200:
        _retryable(answer)
        await trio.sleep(RETRY_S)
        return
    most = payment.sent if payment else 0
    record = answer.json()
    assert record["id"] == tx_id, record
    assert record["status"] in STATUSES[least : most + 1], (record, least, most)


async def _served_again(http: httpx.AsyncClient, shop: Shop, tx_id: str) -> None:
    """The project answers a status read (after the load, whatever node serves it now)."""
    while True:
        try:
            answer = await http.get(f"/status/{shop.project_id}/{tx_id}", timeout=TRY_S)
            if answer.status_code == 200:
                return
        except httpx.TransportError:
            pass
        await trio.sleep(RETRY_S)  # nothing announces the move: ask again


async def test_kill_pause_return_and_restarts_lose_nothing_and_serve_every_project_again(
    tmp_path, postgres, pg_url
) -> None:
    names = ("n1", "n2", "n3")
    config = tmp_path / "edge.toml"
    config.write_text(LOAD_CONFIG)
    env = {
        "EDGE_CONFIG": str(config),
        "EDGE_STORE": pg_url,
        "EDGE_LEASE_S": str(LEASE_S),
        "EDGE_ACTOR_IDLE_S": str(2 * LEASE_S),
        "EDGE_SECRET_KEY": os.urandom(32).hex(),
        "EDGE_ADMIN_TOKEN": "cluster-operator-token-for-the-test",
        "EDGE_TRUSTED_PROXIES": "127.0.0.1",
    }
    nodes = [
        NodeProcess(data, {**env, "EDGE_NODE_ID": name}).start()
        for name, data in zip(names, _data_dirs(tmp_path, names), strict=True)
    ]
    sim = StripeSimulator()
    try:
        listed = [Node(n, p.url.removeprefix("http://")) for n, p in zip(names, nodes, strict=True)]
        async with (
            sim.serving(),
            running_haproxy(tmp_path, listed) as proxy,
            httpx.AsyncClient(base_url=proxy.url, timeout=bound(30)) as http,
        ):
            admin = Admin(proxy.url, env["EDGE_ADMIN_TOKEN"])
            shops = [await _set_up(admin, sim, proxy.url, i) for i in range(PROJECTS)]
            await admin.aclose()
            until = time.monotonic() + RUN_S
            async with trio.open_nursery() as nursery:
                for shop in shops:
                    nursery.start_soon(_buyers, http, shop, until)
                    nursery.start_soon(_stripe_buyers, http, shop, sim, until)
                    nursery.start_soon(_redeliveries, http, shop, until)
                    nursery.start_soon(_status_reads, http, shop, until)
                await trio.sleep_until(trio.current_time() + KILL_AT)
                killed, paused = await _busiest(pg_url, names, shops)
                nodes[killed].kill()
                await trio.sleep(STOP_AT - KILL_AT)
                stopped = nodes[paused].proc
                assert stopped is not None
                stopped.send_signal(signal.SIGSTOP)
                await trio.sleep(CONT_AT - STOP_AT)
                stopped.send_signal(signal.SIGCONT)
                await trio.sleep(RETURN_AT - CONT_AT)
                returned_at = time.monotonic()
                nodes[killed] = await trio.to_thread.run_sync(_returned, nodes[killed])
                at = RETURN_AT
                for restart_at, mode in RESTARTS:
                    await trio.sleep(restart_at - at)
                    await trio.to_thread.run_sync(postgres.restart, mode)
                    at = restart_at
            for shop in shops:
                assert shop.acknowledged, (shop.project_id, shop.refused)
                await _served_again(http, shop, next(iter(shop.acknowledged.values())))
                await _lost_nothing(http, shop)
            _report_and_bound(shops, nodes, returned_at)
    finally:
        for node in nodes:
            if node.proc is not None and node.proc.poll() is None:
                node.proc.send_signal(signal.SIGCONT)
                node.terminate()


async def _lost_nothing(http: httpx.AsyncClient, shop: Shop) -> None:
    """Everything acknowledged is stored exactly once; nothing is stored twice."""
    modes = (shop.key, shop.test_key)  # a key sees its own mode's records only
    txs = {t["id"]: t for key in modes for t in await _every(http, shop, "transactions", key)}
    events = [e for key in modes for e in await _every(http, shop, "events", key)]
    created = Counter(e["txId"] for e in events if e["type"] == "checkout.created")
    for key, tx_id in shop.acknowledged.items():
        assert tx_id in txs, (key, tx_id)
        assert created[tx_id] == 1, (tx_id, created[tx_id])
    # a retried key replayed its first answer: never two transactions for one key
    # (a key given up on may have made one, unacknowledged: at most one too)
    assert len(txs) <= shop.keys, (len(txs), shop.keys)
    assert all(count == 1 for count in created.values()), created
    from_stripe: defaultdict[str, list[dict[str, Any]]] = defaultdict(list)
    for event in events:
        if event.get("providerEventId"):
            from_stripe[event["providerEventId"]].append(event)
    sent = {d.event_id: d for d in shop.deliveries}
    assert set(from_stripe) <= set(sent), set(from_stripe) - set(sent)
    for delivery in shop.deliveries:
        stored = from_stripe.get(delivery.event_id, [])
        if delivery.stored_as is not None:  # acknowledged: that event, once, whatever came again
            assert [e["id"] for e in stored] == [delivery.stored_as], (delivery, stored)
            assert stored[0]["type"] == delivery.event_type, (delivery, stored)
        else:  # given up on: its attempts may have stored it, once at most
            assert len(stored) <= 1, (delivery, stored)
    for payment in shop.payments:
        status = txs[payment.tx_id]["status"]
        assert status in STATUSES[payment.acked : payment.sent + 1], (payment, status)


async def _busiest(pg_url: str, names: tuple[str, ...], shops: list[Shop]) -> tuple[int, int]:
    """The node holding the most of the shops' projects (the one to kill), then the busiest of
    the others (the one to pause): HAProxy's consistent hash of random project ids may leave a
    node none, and a node killed or paused with nothing to hand over proves nothing."""
    rows = await trio.to_thread.run_sync(
        execute,
        pg_url,
        "SELECT owner FROM leases WHERE project_id = ANY(%s)",
        [shop.project_id for shop in shops],
    )
    held = Counter(owner for (owner,) in rows)
    assert held, "the load has taken no lease yet"
    busiest = sorted(range(len(names)), key=lambda i: -held[names[i]])
    return busiest[0], busiest[1]


def _returned(killed: NodeProcess) -> NodeProcess:
    """The killed node started again on its data dir and its address (HAProxy's server)."""
    port = killed.url.rsplit(":", 1)[1]
    return NodeProcess(killed.data_dir, killed.env, args=("--port", port)).start()


def _report_and_bound(shops: list[Shop], nodes: list[NodeProcess], returned_at: float) -> None:
    checkouts = sum(len(s.acknowledged) for s in shops)
    paid = sum(len(s.payments) for s in shops)
    webhooks = sum(1 for s in shops for d in s.deliveries if d.stored_as is not None)
    redelivered = sum(s.redelivered for s in shops)
    unanswered = sum(s.stored_unanswered for s in shops)
    reads = sum(len(s.served["status"]) for s in shops)
    refused = sum((s.refused for s in shops), Counter())
    outage = {k: max(s.longest_outage(k) for s in shops) for k in ("checkout", "webhook", "status")}
    fenced = sum(_fence_refusals(node.log) for node in nodes)
    # from the node's start until the first restart of PostgreSQL
    window = (returned_at, returned_at + RESTARTS[0][0] - RETURN_AT)
    on_return = max(s.longest_refusal(*window) for s in shops)
    handed = sum(_handed(node.log) for node in nodes)
    print(
        f"cluster: {checkouts} checkouts acknowledged ({paid} Stripe); {webhooks} webhook"
        f" deliveries acknowledged ({unanswered} stored by an attempt left unanswered),"
        f" {redelivered} redeliveries answered as duplicates; {reads} status reads answered;"
        f" refused on the way {dict(sorted(refused.items()))}; the longest a project went"
        f" unserved: {', '.join(f'{k} {v:.1f} s' for k, v in outage.items())}"
        f" (lease {LEASE_S} s); commits refused by the fence: {fenced}; a node's return:"
        f" {handed} projects handed over, the longest a project was refused {on_return:.2f} s"
    )
    assert checkouts >= PROJECTS * 5
    assert webhooks >= PROJECTS * 5
    assert redelivered >= PROJECTS
    assert reads >= PROJECTS * 5
    # a node's death or pause costs its projects at most: HAProxy's detection (3 failed
    # checks 2 s apart), the lease running out, a request timing out
    for kind, longest in outage.items():
        assert longest <= OUTAGE_BOUND_S, (kind, longest)
    assert handed >= 1
    assert on_return <= RETURN_BOUND_S, on_return
    for node in nodes:  # PostgreSQL's restarts told in a line each way, never a traceback
        said = node.log.read_text(errors="replace")
        assert "Traceback" not in said, said


async def _every(
    http: httpx.AsyncClient, shop: Shop, listing: str, key: str
) -> list[dict[str, Any]]:
    """Every item of one of the project's listings (of ``key``'s mode), page after page."""
    items: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        params = {"limit": 100, **({"after": after} if after else {})}
        url = f"/api/projects/{shop.project_id}/{listing}"
        # a listing reads the store: right after PostgreSQL's last restart the node it reaches
        # may still be reconnecting, and says so (503, retryable) until the outage's bound
        give_up_at = trio.current_time() + OUTAGE_BOUND_S
        page = await http.get(url, params=params, headers=bearer(key))
        while page.status_code != 200 and trio.current_time() < give_up_at:
            _retryable(page)
            await trio.sleep(RETRY_S)
            page = await http.get(url, params=params, headers=bearer(key))
        assert page.status_code == 200, page.text
        body = page.json()
        items += body["items"]
        # the feed says hasMore (its next is where to go on from); transactions, only next
        after = body.get("next") if body.get("hasMore", True) else None
        if not after:
            return items


def _handed(log: Path) -> int:
    """Projects a node handed over on another's asking (its log says so)."""
    return log.read_text(errors="replace").count("on its asking")


def _fence_refusals(log: Path) -> int:
    """Commits a node's store refused for a lease it no longer held (its log says so)."""
    return log.read_text(errors="replace").count("no longer holds the lease")
