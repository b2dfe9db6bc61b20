"""The notifier on a real store (edge.actors.notifier): the Standard Webhooks retry schedule
under an autojump clock, 410, bounded concurrency per endpoint, every attempt logged, an
address whose name resolves to loopback refused when sending, and an endpoint's answer read
no further than a small bound."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import httpx
import pytest
import trio
from support.raw_http import endless_answer
from support.waits import Pulse, bound, until

from edge.actors import messages as m
from edge.actors.notifier import BUSY_BACKOFF_S, PER_ENDPOINT, Notifier
from edge.actors.ownership import OTHERS_S
from edge.domain import notifications, standard_webhooks
from edge.providers.egress import provider_client
from edge.store import keys, notifyq, outbox
from edge.store.codec import pack
from edge.store.engine import Contended
from edge.store.lmdb.store import Store
from edge.store.writer import StoreWriter

PROJECT = "prj_0000000000000000"
ENDPOINT = "we_01JD0000000000000000000001"
SECRET = standard_webhooks.new_secret()


def now_ms() -> int:
    return int(trio.current_time() * 1000)


class Project:
    """Stands where the store holds the endpoint (never failing before: every failure is news
    for its actor) and where the actor takes the endpoint's health. ``told`` is set once
    ``expect`` outcomes have been reported."""

    def __init__(self, url: str = "https://hooks.merchant.example/edge", expect: int = 1) -> None:
        self.url = url
        self.outcomes: list[tuple[bool, int | None]] = []
        self.expect = expect
        self.told = trio.Event()

    async def targets(
        self, project_id: str, endpoint_id: str, event_id: str, now: int, queued: str | None
    ) -> Any:
        body = f'{{"id":"{event_id}"}}'.encode()
        return {
            "url": self.url,
            "secrets": [SECRET],
            "body": body,
            "failingSince": None,
            "wanted": True,
        }

    async def call(self, project_id: str, message: Any) -> Any:
        assert isinstance(message, m.EndpointOutcome)
        self.outcomes.append((message.ok, message.status))
        if len(self.outcomes) >= self.expect:
            self.told.set()
        return None


RECORD = {  # the project as the store holds it: the endpoint the entries are owed to
    "id": PROJECT,
    "endpoints": {ENDPOINT: {"id": ENDPOINT, "mode": "live", "types": [], "enabled": True}},
}


@asynccontextmanager
async def notifying(
    store: Store, writer: StoreWriter, answer: Callable[[httpx.Request], Any], **options: Any
) -> AsyncIterator[tuple[Notifier, Pulse]]:
    """A running notifier whose receiver's answers are ``answer(request)``, and a pulse fired
    at each attempt it records (its ``observed``); stopped on leaving."""
    attempts = Pulse()
    async with (
        httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http,
        trio.open_nursery() as nursery,
    ):
        notifier = Notifier(
            store,
            writer,
            Project().targets,
            Project().call,
            http,
            now_ms,
            observed=attempts.fire,
            **options,
        )
        await nursery.start(notifier.run)
        yield notifier, attempts
        nursery.cancel_scope.cancel()


async def enqueue(writer: StoreWriter, count: int = 1) -> list[str]:
    await writer.write([("records", keys.project(PROJECT), pack(RECORD))])
    entries = []
    for n in range(count):
        event = {"id": f"evt_01JD00000000000000000000{n:02d}", "txId": None}
        ops = notifyq.enqueue_ops(PROJECT, ENDPOINT, event, "live", now_ms())
        await writer.write(ops)
        entries.append(ops[0][1][len(outbox.ENTRY) :].decode())
    return entries


async def settled(store: Store, attempts: Pulse, entry_id: str) -> dict[str, Any]:
    """The entry once it is no longer pending, as the store holds it: looked at again at each
    attempt the notifier records (``attempts``), never on a timer."""

    async def done() -> dict[str, Any] | None:
        entry = await outbox.entry(store, entry_id, db=notifyq.DB)
        assert entry is not None
        return entry if entry["state"] != "pending" else None

    found = await attempts.until(done, what=f"entry {entry_id} settled", timeout_s=None)
    assert found is not None
    return found


async def run(store, writer, project, http, entry_ids, told=True):  # type: ignore[no-untyped-def]
    """Until every attempt's outcome is told (``told``), then until the entries settle: waiting
    on events, not polling, so the autojump clock moves only to the notifier's own deadlines (a
    poll's timer would let it run on while a thread writes)."""
    attempts = Pulse()
    async with trio.open_nursery() as nursery:
        notifier = Notifier(
            store,
            writer,
            project.targets,
            project.call,
            http,
            now_ms,
            wall_s=trio.current_time,
            observed=attempts.fire,
        )
        await nursery.start(notifier.run)
        if told:
            await project.told.wait()
        entries = [await settled(store, attempts, e) for e in entry_ids]
        nursery.cancel_scope.cancel()
    return entries


async def test_a_failing_endpoint_gets_the_retries_on_the_schedule(store, writer, autojump_clock):
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(500)

    (entry_id,) = await enqueue(writer)
    project = Project(expect=1 + len(notifications.RETRY_S))
    async with httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http:
        (entry,) = await run(store, writer, project, http, [entry_id])
    attempts = await outbox.attempts(store, entry_id, db=notifyq.DB)
    assert (entry["state"], len(attempts)) == ("failed", 1 + len(notifications.RETRY_S))
    assert [a["outcome"] for a in attempts] == ["retry"] * 7 + ["failed"]
    gaps = [(b["at"] - a["at"]) / 1000 for a, b in zip(attempts, attempts[1:], strict=False)]
    assert [round(g) for g in gaps] == list(notifications.RETRY_S)
    # every attempt is signed afresh, with the event id as webhook-id
    assert {r.headers["webhook-id"] for r in seen} == {"evt_01JD0000000000000000000000"}
    assert len({r.headers["webhook-timestamp"] for r in seen}) == 8
    log = await notifyq.log(store, ENDPOINT)
    assert [(a["number"], a["status"]) for a in log] == [(n, 500) for n in range(8, 0, -1)]
    assert project.outcomes == [(False, 500)] * 8


async def test_gone_ends_at_once_and_is_reported(store, writer, autojump_clock):
    (entry_id,) = await enqueue(writer)
    project = Project()
    async with httpx.AsyncClient(
        transport=httpx.MockTransport(lambda r: httpx.Response(410))
    ) as http:
        (entry,) = await run(store, writer, project, http, [entry_id])
    assert (entry["state"], entry["attempts"]) == ("failed", 1)
    assert project.outcomes == [(False, 410)]


async def test_one_endpoint_gets_a_bounded_number_at_once(store, writer, autojump_clock):
    at_once = peak = 0

    async def slow(request: httpx.Request) -> httpx.Response:
        nonlocal at_once, peak
        at_once += 1
        peak = max(peak, at_once)
        await trio.sleep(2)  # mock time, the subject: a slow receiver, so attempts overlap
        at_once -= 1
        return httpx.Response(204)

    entry_ids = await enqueue(writer, 12)
    async with httpx.AsyncClient(transport=httpx.MockTransport(slow)) as http:
        entries = await run(store, writer, Project(), http, entry_ids, told=False)
    assert {e["state"] for e in entries} == {"done"} and peak == PER_ENDPOINT


async def test_while_the_node_is_busy_attempts_trickle_however_fast_they_end(store, writer):
    """Real time: an instant receiver wakes the notifier at every answer, and still no more
    than one attempt starts a ``BUSY_BACKOFF_S`` while the node is busy; once it is not, the
    rest goes at once."""
    busy = True
    starts: list[float] = []

    def answer(request: httpx.Request) -> httpx.Response:
        starts.append(trio.current_time())
        return httpx.Response(204)

    entry_ids = await enqueue(writer, 60)
    async with notifying(store, writer, answer, busy=lambda: busy) as (notifier, attempts):
        began = trio.current_time()
        await trio.sleep(0.5)  # the subject: the real-time window the pace is measured over
        paced = len(starts)
        assert 3 <= paced <= 1 + 0.5 / BUSY_BACKOFF_S
        gaps = [b - a for a, b in zip(starts, starts[1:], strict=False)]
        assert min(gaps) >= BUSY_BACKOFF_S * 0.9 and starts[0] - began < 0.5
        busy = False
        notifier.notify()
        with trio.fail_after(bound(10)):
            entries = [await settled(store, attempts, e) for e in entry_ids]
    assert {e["state"] for e in entries} == {"done"} and len(starts) == 60


async def test_owed_events_and_an_earlier_nodes_fan_out_entry_reach_the_endpoint(store, writer):
    record = {
        "id": PROJECT,
        "endpoints": {ENDPOINT: {"id": ENDPOINT, "mode": "live", "types": [], "enabled": True}},
    }
    owed = [
        {"id": f"evt_01JD00000000000000000000{n:02d}", "txId": None, "isTest": False}
        | {"type": "payment.succeeded"}
        for n in range(3)
    ]
    ops = [("records", keys.project(PROJECT), pack(record))]
    for event in owed:
        ops.append(("records", keys.record(PROJECT, keys.EVENT, event["id"]), pack(event)))
    ops += notifyq.owed_ops(record, owed[0]) + notifyq.owed_ops(record, owed[1])
    # a node before the fan-out keys queued the third as an entry
    ops += outbox.enqueue_ops(
        PROJECT, "", "", "live", notifyq.FAN_OUT_ENTRY, {"eventId": owed[2]["id"]}, 0, db="notify"
    )
    await writer.write(ops)
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers["webhook-id"])
        return httpx.Response(204)

    async def sent_and_emptied() -> bool:
        return len(seen) >= 3 and not await notifyq.depth(store, 10)

    async with notifying(store, writer, answer) as (_, attempts):
        await attempts.until(sent_and_emptied, what="three events sent and the queue emptied")
    assert sorted(seen) == [event["id"] for event in owed]


async def test_entries_owed_to_an_endpoint_gone_are_dropped_together_with_no_request(store, writer):
    entry_ids = await enqueue(writer, 40)
    gone = {**RECORD, "endpoints": {}}  # the endpoint was deleted meanwhile
    await writer.write([("records", keys.project(PROJECT), pack(gone))])
    asked: list[httpx.Request] = []
    commits = writer.stats.commits
    async with notifying(store, writer, asked.append) as (_, attempts):
        with trio.fail_after(bound(10)):
            entries = [await settled(store, attempts, e) for e in entry_ids]
    assert {e["state"] for e in entries} == {"dropped"} and asked == []
    assert writer.stats.commits - commits == 1
    (attempt,) = await outbox.attempts(store, entry_ids[0], db=notifyq.DB)
    assert attempt["outcome"] == "dropped" and "gone" in attempt["detail"]
    assert len(await notifyq.log(store, ENDPOINT)) == 40


async def test_an_entry_under_way_when_its_endpoint_goes_is_settled_by_its_attempt_alone(
    store, writer
):
    (entry_id,) = await enqueue(writer)
    asked, answer_now = trio.Event(), trio.Event()

    async def slow(request: httpx.Request) -> httpx.Response:
        asked.set()
        await answer_now.wait()
        return httpx.Response(204)

    passes = Pulse()

    def busy() -> bool:  # asked as each pass of the notifier begins: counts them
        passes.fire()
        return False

    async with notifying(store, writer, slow, busy=busy) as (notifier, attempts):
        await asked.wait()
        await writer.write([("records", keys.project(PROJECT), pack({**RECORD, "endpoints": {}}))])
        before = passes.fired
        notifier.notify()  # a pass while the attempt is under way
        await passes.until(lambda: passes.fired > before, what="a pass after the endpoint went")
        notifier.notify()  # the next pass begins once that one has ended
        await passes.until(lambda: passes.fired > before + 1, what="that pass ended")
        answer_now.set()
        with trio.fail_after(bound(10)):
            entry = await settled(store, attempts, entry_id)
    assert (entry["state"], entry["attempts"]) == ("done", 1)
    assert [line["outcome"] for line in await notifyq.log(store, ENDPOINT)] == ["done"]


async def test_a_name_that_resolves_to_loopback_is_refused_when_sending(store, writer):
    async def loopback(host: str, port: int, **_: Any) -> list[tuple[Any, ...]]:
        return [(2, 1, 6, "", ("127.0.0.1", port))]

    (entry_id,) = await enqueue(writer)
    async with (
        provider_client(frozenset({"localhost"}), resolve=loopback) as http,
        trio.open_nursery() as nursery,
    ):
        project, attempts = Project(), Pulse()
        notifier = Notifier(
            store, writer, project.targets, project.call, http, now_ms, observed=attempts.fire
        )
        await nursery.start(notifier.run)
        await attempts.until(
            lambda: outbox.attempts(store, entry_id, db=notifyq.DB), what="the attempt recorded"
        )
        nursery.cancel_scope.cancel()
    (attempt,) = await outbox.attempts(store, entry_id, db=notifyq.DB)
    assert attempt["status"] is None and "resolves to a private address" in attempt["detail"]


@pytest.mark.parametrize(("status", "state"), [(200, "done"), (410, "failed")])
async def test_an_answer_that_never_ends_is_read_no_further_than_a_bound(
    store, writer, status, state
):
    """The status decides: whatever follows it is read up to a small bound, then the
    connection is closed (read whole, an endless answer would hold the attempt to its 15 s
    limit, to be told as no answer, and fill the node's memory meanwhile)."""
    sent: list[int] = []
    (entry_id,) = await enqueue(writer)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(endless_answer, status, sent)
        project = Project(url=f"http://127.0.0.1:{port}/hooks")
        async with provider_client(frozenset({"127.0.0.1"})) as http:
            with trio.fail_after(bound(10)):
                (entry,) = await run(store, writer, project, http, [entry_id], told=status != 200)
        nursery.cancel_scope.cancel()
    (attempt,) = await outbox.attempts(store, entry_id, db=notifyq.DB)
    assert (entry["state"], attempt["status"]) == (state, status)
    # a few chunks at most: what the sockets' buffers took before the notifier hung up
    assert sum(sent) < 1 << 20


async def test_another_nodes_notifications_are_left_to_it_until_the_project_is_ours(store, writer):
    """Cluster mode: entries of a project another node holds are never sent from here (two
    nodes never both send one); once the project is this node's, they go."""
    [entry_id] = await enqueue(writer)
    sent: list[httpx.Request] = []
    ours = trio.Event()
    asked = 0

    async def mine(project_id: str) -> bool:
        nonlocal asked
        asked += 1
        return ours.is_set()

    def answer(request: httpx.Request) -> httpx.Response:
        sent.append(request)
        return httpx.Response(200)

    async with notifying(store, writer, answer, mine=mine) as (notifier, attempts):
        await until(lambda: asked >= 2, what="the notifier looks twice")
        assert sent == []
        ours.set()
        notifier.notify()
        entry = await settled(store, attempts, entry_id)
    assert entry["state"] == "done" and len(sent) == 1


async def test_an_entry_handed_out_again_after_its_delivery_was_acknowledged_is_not_sent(
    store, writer
):
    """A look at the queue that began before an attempt settled an entry can hand the same
    entry out once that attempt is over (on PostgreSQL the store's reads give way: about 4 %
    of messages went out twice). The entry is read again before it is sent: one whose delivery
    was acknowledged is never sent again."""
    seen: list[httpx.Request] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(204)

    (entry_id,) = await enqueue(writer)
    as_read = await outbox.entry(store, entry_id, db=notifyq.DB)  # before it was sent
    async with notifying(store, writer, answer) as (notifier, attempts):
        assert (await settled(store, attempts, entry_id))["state"] == "done"
        assert len(seen) == 1
        await notifier._deliver(as_read)  # noqa: SLF001 (the stale hand-out, made to happen)
    assert len(seen) == 1
    assert len(await notifyq.log(store, ENDPOINT)) == 1


async def test_an_entry_another_node_is_sending_is_not_sent_again(store, writer):
    """At a lease's hand-over the node that gave the project up may still be sending an entry
    when the new holder reads it, pending: the attempt took the entry first, so the second
    node finds it taken and sends nothing, and the first one's outcome is recorded."""
    seen: list[httpx.Request] = []
    answering = trio.Event()
    answer_now = trio.Event()

    async def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answering.set()
        await answer_now.wait()
        return httpx.Response(204)

    (entry_id,) = await enqueue(writer)
    as_read = await outbox.entry(store, entry_id, db=notifyq.DB)
    assert as_read is not None
    async with (
        notifying(store, writer, answer, shared=True) as (_, attempts),
        httpx.AsyncClient(transport=httpx.MockTransport(answer)) as http,
    ):
        await answering.wait()
        project = Project()
        other = Notifier(store, writer, project.targets, project.call, http, now_ms, shared=True)
        with trio.fail_after(60):  # (posted again, it would wait for an answer held back)
            await other._deliver(as_read)  # noqa: SLF001 (the new holder's read, made to happen)
        assert len(seen) == 1
        answer_now.set()
        entry = await settled(store, attempts, entry_id)
    assert entry["state"] == "done" and entry["attempts"] == 1 and len(seen) == 1
    assert len(await notifyq.log(store, ENDPOINT)) == 1


async def test_an_attempt_whose_entry_was_taken_again_records_nothing(store, writer):
    """An attempt that outlived its hold (a paused node) finds its entry taken by another
    attempt: its settle fails alone and records nothing; the later attempt's outcome stands."""
    (entry_id,) = await enqueue(writer)
    raw = await store.get_raw(outbox.entry_key(entry_id), db=notifyq.DB)
    entry = await outbox.entry(store, entry_id, db=notifyq.DB)
    assert raw is not None and entry is not None
    first, first_bytes, ops = outbox.claim_ops(entry, raw, now_ms() + 1, db=notifyq.DB)
    await writer.write(ops)
    _, again, ops = outbox.claim_ops(first, first_bytes, now_ms() + 2, db=notifyq.DB)
    await writer.write(ops)
    async with httpx.AsyncClient() as http:
        project = Project()
        notifier = Notifier(store, writer, project.targets, project.call, http, now_ms)
        recorded = await notifier._settle(  # noqa: SLF001 (the late attempt's outcome)
            [first], now_ms(), 204, "", outbox.DONE, taken={first["id"]: first_bytes}
        )
    assert recorded is False
    assert await store.get_raw(outbox.entry_key(entry_id), db=notifyq.DB) == again
    assert await notifyq.log(store, ENDPOINT) == []


async def test_an_event_another_node_owes_is_looked_at_again_soon(store, writer):
    """An event still to fan out of a project another node holds is due now, however empty
    the queue: the notifier looks again in a while (the node may die, its lease lapse), not
    only when a commit of its own wakes it."""
    await writer.write([("records", keys.project(PROJECT), pack(RECORD))])
    event = {"id": "evt_01JD0000000000000000000077", "txId": None, "isTest": False}
    event["type"] = "payment.succeeded"
    await writer.write(notifyq.owed_ops(RECORD, event))

    async def elsewhere(project_id: str) -> bool:
        return False

    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        project = Project()
        notifier = Notifier(
            store, writer, project.targets, project.call, http, now_ms, mine=elsewhere
        )
        assert await notifier._start_due(nursery) == OTHERS_S  # noqa: SLF001


async def test_an_entry_whose_endpoint_went_is_not_dropped_over_another_nodes_hold(store, writer):
    """Entries of an endpoint gone are dropped only as read: one another node took meanwhile
    keeps its hold (written over, the hold's queue key would be left due for ever)."""
    first, second = await enqueue(writer, 2)
    await writer.write([("records", keys.project(PROJECT), pack({**RECORD, "endpoints": {}}))])
    gone = await outbox.due(store, now_ms(), 10, db=notifyq.DB)
    raw = await store.get_raw(outbox.entry_key(first), db=notifyq.DB)
    entry = await outbox.entry(store, first, db=notifyq.DB)
    assert raw is not None and entry is not None
    _, held, ops = outbox.claim_ops(entry, raw, now_ms() + 10_000, db=notifyq.DB)
    await writer.write(ops)  # another node takes the first meanwhile
    async with httpx.AsyncClient() as http:
        project = Project()
        notifier = Notifier(store, writer, project.targets, project.call, http, now_ms)
        await notifier._drop_gone(gone, now_ms())  # noqa: SLF001
    assert await store.get_raw(outbox.entry_key(first), db=notifyq.DB) == held
    assert (await outbox.entry(store, second, db=notifyq.DB))["state"] == "dropped"
    queued = await store.scan(outbox.QUEUE, db=notifyq.DB)
    assert [key[9:].decode() for key, _ in queued] == [first]


async def test_an_attempt_whose_hold_ran_short_before_it_was_sent_sends_nothing(store, writer):
    """The hold is what keeps other nodes off an entry: an attempt that reaches its request
    with less of it left than the request may take (a slow store, a paused node) sends
    nothing; the entry is due again at the hold's end."""
    (entry_id,) = await enqueue(writer)
    seen: list[httpx.Request] = []
    late = 0

    def clock() -> int:
        return now_ms() + late

    class Slow(Project):
        async def targets(self, *args: Any) -> Any:
            nonlocal late
            late = 15_000  # the endpoint's address and secrets took this long to read
            return await super().targets(*args)

    entry = await outbox.entry(store, entry_id, db=notifyq.DB)
    async with httpx.AsyncClient(transport=httpx.MockTransport(seen.append)) as http:
        project = Slow()
        notifier = Notifier(store, writer, project.targets, project.call, http, clock, shared=True)
        await notifier._deliver(entry)  # noqa: SLF001
    assert seen == []
    held = await outbox.entry(store, entry_id, db=notifyq.DB)
    assert held is not None and (held["state"], held["attempts"]) == ("pending", 0)
    assert held["dueAt"] > now_ms()


async def test_an_event_is_fanned_out_once_even_by_two_at_once(store, writer):
    """Two nodes at a lease's hand-over may both read an event still to fan out: the second
    commit finds its fan-out key gone and fails (``Contended``), so one queue entry an endpoint
    is made, not two."""
    await writer.write([("records", keys.project(PROJECT), pack(RECORD))])
    event = {"id": "evt_01JD0000000000000000000099", "txId": None, "isTest": False}
    event["type"] = "payment.succeeded"
    stored = pack(event)
    await writer.write(notifyq.owed_ops(RECORD, event))
    await writer.write([("records", keys.record(PROJECT, keys.EVENT, event["id"]), stored)])
    (owed,) = await notifyq.fan_outs(store, 10)
    first = notifyq.fan_out_ops(owed, RECORD, stored, now_ms())
    second = notifyq.fan_out_ops(owed, RECORD, stored, now_ms())
    await writer.write(first)
    with pytest.raises(Contended):
        await writer.write(second)
    queued = await outbox.due(store, now_ms() + 1, 10, db=notifyq.DB)
    assert len(queued) == 1


async def test_an_event_that_changed_since_its_fan_out_read_it_fails_alone(
    store, writer, monkeypatch
):
    """Each owed event is fanned out in a ticket of its own: one whose guard fails (changed
    since it was read: matched, applied, or fanned out by another node) holds up none of the
    others, and is read afresh next time."""
    await writer.write([("records", keys.project(PROJECT), pack(RECORD))])
    events = [
        {"id": f"evt_01JD00000000000000000001{n:02d}", "txId": None, "isTest": False}
        | {"type": "payment.succeeded"}
        for n in range(3)
    ]
    for event in events:
        stored = pack(event)
        key = keys.record(PROJECT, keys.EVENT, event["id"])
        await writer.write([("records", key, stored), *notifyq.owed_ops(RECORD, event)])
    owed = await notifyq.fan_outs(store, 10)
    changed = events[1] | {"appliedAt": 5}
    await writer.write(
        [("records", keys.record(PROJECT, keys.EVENT, changed["id"]), pack(changed))]
    )

    read_now = notifyq.fan_out

    async def read_before(store_: Any, one: notifyq.Owed, project: Any, now: int) -> list[Any]:
        """The fan-out as it would be had it read the second event before its change."""
        if one.event_id == changed["id"]:
            return notifyq.fan_out_ops(one, project, pack(events[1]), now)
        return await read_now(store_, one, project, now)

    monkeypatch.setattr(notifyq, "fan_out", read_before)
    async with httpx.AsyncClient() as http:  # a notifier not running: this fan-out alone
        project = Project()
        notifier = Notifier(store, writer, project.targets, project.call, http, now_ms)
        await notifier._fan_out(owed, now_ms())
    assert [o.event_id for o in await notifyq.fan_outs(store, 10)] == [changed["id"]]
    queued = await outbox.due(store, now_ms() + 10**9, 10, db=notifyq.DB)
    assert sorted(e["params"]["eventId"] for e in queued) == [events[0]["id"], events[2]["id"]]


async def test_a_2xx_whose_body_trickles_on_is_success(store, writer, monkeypatch):
    """CONTRACT 4.8: a 2xx within 15 s is success. The 200 came at once; its body trickling on
    past the time limit does not turn it into "no answer" (and a retry)."""
    monkeypatch.setattr(notifications, "TIMEOUT_S", 1.0)
    async with trio.open_nursery() as nursery:
        port = await nursery.start(partial(endless_answer, 200, [], pause_s=0.1, chunk=b"x"))
        project = Project(url=f"http://127.0.0.1:{port}/hooks")
        async with provider_client(frozenset({"127.0.0.1"})) as http:
            notifier = Notifier(store, writer, project.targets, project.call, http, now_ms)
            target = {"url": project.url, "body": b"{}", "secrets": ["whsec_" + "A" * 32]}
            status, detail = await notifier._post(target, "evt_01JD0000000000000000000000")
        nursery.cancel_scope.cancel()
    assert (status, detail) == (200, "")
