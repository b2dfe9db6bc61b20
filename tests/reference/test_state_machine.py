"""A hypothesis state machine through a real node (the demo, in a child process): checkouts by
card (Stripe, on its simulator) and by mail, provider events delivered valid, twice, out of
order and tampered, mark-paid, cancel and polls. Invariants (CONTRACT 2): no status moves
backwards, versions only grow, the quota's count is the distinct accepted events, a refused
delivery changes nothing, and at the end the final status converges: each card checkout's
accepted events, delivered again in the reverse order to a new checkout, end in the same status
(for checkouts the merchant did not mark paid or cancel, which are not provider events), but
for CONTRACT 2's one exception: a payment reported after the checkout expired leaves it
expired, flagged needsAttention."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule
from support.client import bearer
from support.fuzzing import demo_node, runs
from support.stripe_events import WEBHOOK_SECRET, event_body, signed, stripe_object

from edge.domain.status import PAYMENT_TRANSITIONS, Status

STRIPE_TYPES = ["checkout.session.completed", "checkout.session.expired"]


def reachable(start: str) -> set[str]:
    seen, todo = {start}, [Status(start)]
    while todo:
        for nxt in PAYMENT_TRANSITIONS.get(todo.pop(), ()):
            if nxt.value not in seen:
                seen.add(nxt.value)
                todo.append(nxt)
    return seen


def test_state_machine(tmp_path: Path) -> None:
    node, project_id = demo_node(tmp_path)
    try:
        with httpx.Client(base_url=node.url, headers=bearer(node.admin_token)) as admin:
            admin.put(
                f"/api/manage/projects/{project_id}/providers/stripe",
                json={"enabled": True, "test": {"webhookSecret": WEBHOOK_SECRET}},
            ).raise_for_status()
        Machine.url, Machine.project_id, Machine.token = node.url, project_id, node.admin_token
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


class Machine(RuleBasedStateMachine):
    url = project_id = token = ""
    txs = Bundle("txs")

    def __init__(self) -> None:
        super().__init__()
        self.http = httpx.Client(base_url=self.url, headers=bearer(self.token), timeout=30.0)
        self.seen: dict[str, tuple[str, int]] = {}
        self.accepted: set[str] = set()
        self.stories: dict[str, list[bytes]] = {}  # a card checkout's accepted deliveries
        self.touched: set[str] = set()  # marked paid or canceled by the merchant
        self.used_at_start = self._used()

    def teardown(self) -> None:
        try:
            for tx, story in self.stories.items():
                if tx not in self.touched and story:
                    self._converges(tx, story)
        finally:
            self.http.close()

    def _converges(self, tx: str, story: list[bytes]) -> None:
        """The same events, reversed, for a new checkout: the same final status."""
        answer = self.http.post(
            f"/api/checkout/stripe/{self.project_id}", json={"productId": "book", "mode": "test"}
        )
        twin = str(answer.json()["txId"])
        for body in reversed(story):
            event = json.loads(body.replace(tx.encode(), twin.encode()))
            event["id"] += "_twin"
            again = json.dumps(event).encode()
            posted = self.http.post(
                f"/webhook/stripe/{self.project_id}", content=again, headers=signed(again)
            )
            assert posted.status_code == 200, posted.text
        first, second = self._tx(tx), self._tx(twin)
        if first["status"] == second["status"]:
            return
        # CONTRACT 2's one exception: terminal stays terminal, so a success that comes after
        # the checkout ended (expired) leaves it ended, flagged for the merchant (paid late)
        ended, paid = sorted((first, second), key=lambda r: r["status"] == "succeeded")
        assert (ended["status"], paid["status"]) == ("expired", "succeeded"), (first, second)
        assert ended["needsAttention"] is True, (ended, [json.loads(b)["type"] for b in story])

    def _used(self) -> int:
        usage = self.http.get(f"/api/manage/projects/{self.project_id}/usage").json()
        return int(usage["test"]["used"])

    def _tx(self, tx: str) -> dict[str, Any]:
        answer = self.http.get(f"/api/projects/{self.project_id}/transactions/{tx}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    @rule(target=txs, provider=st.sampled_from(["stripe", "manual"]))
    def checkout(self, provider: str) -> str:
        answer = self.http.post(
            f"/api/checkout/{provider}/{self.project_id}",
            json={"productId": "book", "mode": "test"},
        )
        assert answer.status_code == 201, answer.text
        tx = str(answer.json()["txId"])
        self.seen[tx] = ("pending", 1)
        if provider == "stripe":
            self.stories[tx] = []
        return tx

    @rule(
        tx=txs,
        kind=st.sampled_from(STRIPE_TYPES),
        number=st.integers(0, 2),
        tampered=st.booleans(),
    )
    def deliver(self, tx: str, kind: str, number: int, tampered: bool) -> None:
        record = self._tx(tx)
        session = stripe_object(
            "checkout_session",
            id=record.get("providerRef") or "cs_test_x",
            client_reference_id=tx,
            metadata={"txId": tx},
            payment_status="paid" if kind.endswith("completed") else "unpaid",
            status="complete" if kind.endswith("completed") else "expired",
        )
        event_id = f"evt_sm_{tx[-8:]}_{kind[-9:]}_{number}"
        body = event_body(event_id, kind, session)
        before = self._tx(tx)
        headers = signed(body, "whsec_wrong" if tampered else WEBHOOK_SECRET)
        answer = self.http.post(f"/webhook/stripe/{self.project_id}", content=body, headers=headers)
        if tampered:
            assert answer.status_code == 401, answer.text
            assert self._tx(tx) == before  # nothing refused changes the store
            return
        assert answer.status_code == 200, answer.text
        if not answer.json()["duplicate"]:  # matched or stored unmatched: counted once
            assert event_id not in self.accepted, event_id
            self.accepted.add(event_id)
            if tx in self.stories:  # a pay-by-mail checkout's are unmatched: not a story
                self.stories[tx].append(body)

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

    @rule(tx=txs)
    def poll(self, tx: str) -> None:
        answer = self.http.get(f"/status/{self.project_id}/{tx}", params={"wait": 0})
        assert answer.status_code == 200, answer.text

    @invariant()
    def statuses_only_move_forward_and_versions_only_grow(self) -> None:
        for tx, (status, version) in list(self.seen.items()):
            now = self.http.get(f"/status/{self.project_id}/{tx}").json()
            assert now["status"] in reachable(status), (tx, status, now)
            assert now["version"] >= version, (tx, version, now)
            if now["status"] != status:
                assert now["version"] > version, (tx, version, now)
            self.seen[tx] = (now["status"], now["version"])

    @invariant()
    def usage_counts_the_distinct_accepted_events(self) -> None:
        assert self._used() - self.used_at_start == len(self.accepted)
