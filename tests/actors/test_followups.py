"""The follow-up worker on a real store: attempts, backoff, every attempt recorded, dropped for an
ended checkout, woken by new entries, resumed from what the store holds."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import trio
from support.waits import Pulse
from trio.testing import wait_all_tasks_blocked

from edge.actors.followups import (
    ATTEMPT_TIMEOUT_S,
    BACKOFF_S,
    UNFINISHED_TIMES,
    AttemptWatch,
    FollowUpWorker,
)
from edge.actors.ownership import OTHERS_S
from edge.domain.events import EventType
from edge.errors import InvalidRequest, ProviderError, Unavailable
from edge.providers.base import (
    REFUND,
    FollowUpRequest,
    FollowUpResult,
    NormalizedEvent,
    Provider,
    ProviderRefund,
)
from edge.providers.calls import Unanswered
from edge.store import outbox
from edge.store.lmdb.store import Store
from edge.store.writer import StoreWriter, open_writer

PROJECT = "prj_0000000000000000"
TX = "tx_01JD0000000000000000000001"


@dataclass(frozen=True)
class Scripted(Provider):
    """Answers each follow-up with the next of ``answers``: an exception to raise, or a result."""

    answers: list[Any] = field(default_factory=list)
    calls: list[FollowUpRequest] = field(default_factory=list)
    called: Pulse = field(default_factory=Pulse)  # fired at each call

    async def follow_up(self, request: FollowUpRequest) -> FollowUpResult:
        self.calls.append(request)
        self.called.fire()
        answer = self.answers.pop(0) if self.answers else FollowUpResult(detail="captured")
        if isinstance(answer, BaseException):
            raise answer
        assert isinstance(answer, FollowUpResult)
        return answer


def scripted(*answers: Any) -> Scripted:
    return Scripted("scripted", "wallet", "approval", "Wallet", answers=list(answers))


def now_ms() -> int:
    return int(trio.current_time() * 1000)


class Targets:
    """Stands where the project actors answer (``followups.Projects``): the transaction, or
    None once it has ended; reported answers and expiries are recorded."""

    def __init__(self) -> None:
        self.status = "pending"
        self.asked = 0
        self.reported: list[tuple[str, str, FollowUpResult]] = []
        self.report_failures: list[BaseException] = []
        self.expired: list[str] = []
        self.unanswered: list[bool] = []
        self.refunds: list[tuple[str, str, ProviderRefund | None]] = []

    async def target(
        self, project_id: str, tx_id: str, mode: str, action: str = ""
    ) -> Mapping[str, Any] | None:
        self.asked += 1
        if self.status in ("canceled", "expired", "failed"):
            return None
        return {"tx": {"id": tx_id, "status": self.status}, "credentials": {"mode": mode}}

    async def report(
        self, project_id: str, provider: str, mode: str, result: FollowUpResult
    ) -> None:
        if self.report_failures:
            raise self.report_failures.pop(0)
        self.reported.append((provider, mode, result))

    async def expire(self, project_id: str, tx_id: str, *, unanswered: bool = False) -> str:
        self.expired.append(tx_id)
        self.unanswered.append(unanswered)
        return "expired"

    async def refund_outcome(
        self,
        project_id: str,
        tx_id: str,
        refund_id: str,
        outcome: str,
        refund: ProviderRefund | None,
        detail: str,
    ) -> None:
        if self.report_failures:
            raise self.report_failures.pop(0)
        self.refunds.append((refund_id, outcome, refund))


async def enqueue(writer: StoreWriter, action: str = "capture") -> str:
    ops = outbox.enqueue_ops(PROJECT, TX, "scripted", "test", action, {"order": "O-1"}, now_ms())
    await writer.write(ops)
    return ops[0][1][len(outbox.ENTRY) :].decode()


async def settled(store: Store, watch: AttemptWatch, entry_id: str) -> dict[str, Any]:
    """The entry once it is no longer pending, as the store holds it: looked at again at each
    attempt the worker records (``watch``), never on a timer, so under the autojump clock time
    moves only to the worker's own deadlines."""
    while True:
        with watch.expecting(TX) as attempted:  # entered before the look: no attempt is missed
            entry = await outbox.entry(store, entry_id)
            assert entry is not None
            if entry["state"] != "pending":
                return entry
            await attempted.wait()


async def run_until_settled(
    store: Store, writer: StoreWriter, provider: Scripted, targets: Targets, entry_id: str
) -> dict[str, Any]:
    watch = AttemptWatch()
    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        worker = FollowUpWorker(store, writer, targets, http, {"scripted": provider}, now_ms, watch)
        await nursery.start(worker.run)
        entry = await settled(store, watch, entry_id)
        nursery.cancel_scope.cancel()
    return entry


async def test_an_owed_follow_up_is_carried_out_once_and_recorded(store, writer, autojump_clock):
    entry_id = await enqueue(writer)
    provider = scripted()
    entry = await run_until_settled(store, writer, provider, Targets(), entry_id)
    assert (entry["state"], entry["attempts"], entry["detail"]) == ("done", 1, "captured")
    (request,) = provider.calls
    assert (request.follow_up.action, dict(request.follow_up.params)) == (
        "capture",
        {"order": "O-1"},
    )
    assert request.tx["id"] == TX and request.credentials == {"mode": "test"}
    (attempt,) = await outbox.attempts(store, entry_id)
    assert (attempt["number"], attempt["outcome"], attempt["detail"]) == (1, "done", "captured")
    assert await outbox.next_due_ms(store) is None


async def test_transient_failures_are_retried_with_backoff(store, writer, autojump_clock):
    entry_id = await enqueue(writer)
    provider = scripted(
        ProviderError("provider_error", "PayPal answered 503"),
        httpx.ConnectError("refused"),
        FollowUpResult(detail="captured"),
    )
    entry = await run_until_settled(store, writer, provider, Targets(), entry_id)
    assert (entry["state"], entry["attempts"]) == ("done", 3)
    attempts = await outbox.attempts(store, entry_id)
    assert [a["outcome"] for a in attempts] == ["retry", "retry", "done"]
    assert attempts[0]["detail"] == "provider_error: PayPal answered 503"
    assert attempts[1]["detail"] == "network error: ConnectError"
    for before, after, wait_s in zip(attempts, attempts[1:], BACKOFF_S, strict=False):
        assert after["at"] >= before["at"] + before["durationMs"] + wait_s * 1000


async def test_a_provider_that_never_recovers_ends_failed(store, writer, autojump_clock):
    entry_id = await enqueue(writer)
    down = [Unavailable("unavailable", "down")] * (len(BACKOFF_S) + 1)
    provider = scripted(*down)
    entry = await run_until_settled(store, writer, provider, Targets(), entry_id)
    assert (entry["state"], entry["attempts"]) == ("failed", len(BACKOFF_S) + 1)
    outcomes = [a["outcome"] for a in await outbox.attempts(store, entry_id)]
    assert outcomes == ["retry"] * len(BACKOFF_S) + ["failed"]


async def test_a_refusal_for_good_is_not_retried(store, writer, autojump_clock):
    entry_id = await enqueue(writer)
    provider = scripted(InvalidRequest("order_not_approved", "The buyer has not approved it."))
    entry = await run_until_settled(store, writer, provider, Targets(), entry_id)
    assert (entry["state"], entry["attempts"]) == ("failed", 1)
    assert len(provider.calls) == 1


async def test_nothing_is_done_for_an_ended_checkout(store, writer, autojump_clock):
    entry_id = await enqueue(writer)
    targets = Targets()
    targets.status = "expired"
    provider = scripted()
    entry = await run_until_settled(store, writer, provider, targets, entry_id)
    assert entry["state"] == "dropped" and provider.calls == []
    (attempt,) = await outbox.attempts(store, entry_id)
    assert attempt["outcome"] == "dropped" and "ended" in attempt["detail"]


async def test_a_target_that_cannot_be_told_now_is_asked_again(store, writer, autojump_clock):
    entry_id = await enqueue(writer)
    answers = iter([Unavailable("unavailable", "The node is shutting down.")])

    class Flaky(Targets):
        async def target(
            self, project_id: str, tx_id: str, mode: str, action: str = ""
        ) -> Mapping[str, Any] | None:
            for error in answers:
                raise error
            return await super().target(project_id, tx_id, mode, action)

    flaky = Flaky()

    provider, watch = scripted(), AttemptWatch()
    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        worker = FollowUpWorker(store, writer, flaky, http, {"scripted": provider}, now_ms, watch)
        await nursery.start(worker.run)
        await settled(store, watch, entry_id)
        nursery.cancel_scope.cancel()
    assert [a["outcome"] for a in await outbox.attempts(store, entry_id)] == ["retry", "done"]


async def test_new_entries_wake_an_idle_worker(store, writer, autojump_clock):
    provider, watch = scripted(), AttemptWatch()
    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        worker = FollowUpWorker(
            store, writer, Targets(), http, {"scripted": provider}, now_ms, watch
        )
        await nursery.start(worker.run)
        await wait_all_tasks_blocked()
        entry_id = await enqueue(writer)
        # an hour of mock time, the subject: written behind its back, it does not poll
        await trio.sleep(3600)
        assert (await outbox.entry(store, entry_id))["state"] == "pending"
        worker.notify()
        await settled(store, watch, entry_id)
        nursery.cancel_scope.cancel()
    assert len(provider.calls) == 1


async def test_an_entry_for_an_unknown_provider_is_dropped(store, writer, autojump_clock):
    ops = outbox.enqueue_ops(PROJECT, TX, "gone", "live", "capture", {}, now_ms())
    await writer.write(ops)
    entry_id = ops[0][1][len(outbox.ENTRY) :].decode()
    entry = await run_until_settled(store, writer, scripted(), Targets(), entry_id)
    assert entry["state"] == "dropped" and "gone" in entry["detail"]


async def test_a_store_that_cannot_record_stops_neither_the_worker_nor_the_node(store):
    # real time: under the autojump clock, time runs on while the worker's threads work
    async with open_writer(store) as first:
        entry_id = await enqueue(first)
    closed = first  # takes no more writes: every attempt's record fails
    provider = scripted()
    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        worker = FollowUpWorker(store, closed, Targets(), http, {"scripted": provider}, now_ms)
        await nursery.start(worker.run)
        await provider.called.until(
            lambda: len(provider.calls) >= 2, what="the worker asking again after a failed pass"
        )
        nursery.cancel_scope.cancel()  # still running: nothing escaped into the nursery
    assert len(provider.calls) >= 2  # tried again after the failed pass
    entry = await outbox.entry(store, entry_id)
    assert entry is not None and (entry["state"], entry["attempts"]) == ("pending", 0)


async def test_what_the_provider_answered_is_applied_before_the_entry_settles(
    store, writer, autojump_clock
):
    entry_id = await enqueue(writer)
    event = NormalizedEvent("capture:C-1", EventType.PAYMENT_SUCCEEDED, "capture", tx_id=TX)
    answer = FollowUpResult(detail="captured", events=(event,), body=b"{}")
    targets = Targets()
    targets.report_failures.append(Unavailable("unavailable", "The store cannot commit."))
    provider = scripted(answer, answer)
    entry = await run_until_settled(store, writer, provider, targets, entry_id)
    # the first answer could not be applied: the entry stayed owed and the call was repeated
    assert [a["outcome"] for a in await outbox.attempts(store, entry_id)] == ["retry", "done"]
    assert entry["state"] == "done" and len(provider.calls) == 2
    assert targets.reported == [("scripted", "test", answer)]


async def test_a_checkout_is_expired_by_the_node_when_its_time_comes(store, writer, autojump_clock):
    due = now_ms() + 3 * 3600 * 1000
    ops = outbox.enqueue_ops(PROJECT, TX, "scripted", "test", outbox.EXPIRE, {}, now_ms(), due)
    await writer.write(ops)
    entry_id = ops[0][1][len(outbox.ENTRY) :].decode()
    targets, provider, watch = Targets(), scripted(), AttemptWatch()
    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        worker = FollowUpWorker(store, writer, targets, http, {"scripted": provider}, now_ms, watch)
        await nursery.start(worker.run)
        await trio.sleep(3 * 3600 - 1)  # mock time, the subject: a second before it is due
        assert targets.expired == [] and (await outbox.entry(store, entry_id))["state"] == "pending"
        entry = await settled(store, watch, entry_id)
        nursery.cancel_scope.cancel()
    assert targets.expired == [TX] and provider.calls == []
    assert (entry["state"], entry["detail"]) == ("done", "expired")
    assert now_ms() >= due


async def test_an_unanswered_checkouts_end_is_asked_as_such(store, writer, autojump_clock):
    """The expiry owed with a pending checkout in case its provider's answer is never
    recorded reaches the project as that (``unanswered``), not as the checkout's own end."""
    due = now_ms() + 80_000
    params = {outbox.UNANSWERED: True}
    ops = outbox.enqueue_ops(PROJECT, TX, "scripted", "test", outbox.EXPIRE, params, now_ms(), due)
    await writer.write(ops)
    targets, watch = Targets(), AttemptWatch()
    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        worker = FollowUpWorker(
            store, writer, targets, http, {"scripted": scripted()}, now_ms, watch
        )
        await nursery.start(worker.run)
        await settled(store, watch, outbox.entry_id_of(ops))
        nursery.cancel_scope.cancel()
    assert (targets.expired, targets.unanswered) == ([TX], [True])


async def test_a_return_waiting_for_an_attempt_is_woken_by_it_and_nothing_is_kept_after():
    watch = AttemptWatch()
    with watch.expecting("tx_1") as first, watch.expecting("tx_1") as second:
        assert first is second
        watch.attempted("tx_2")  # another transaction's attempt wakes nobody here
        assert not first.is_set()
        watch.attempted("tx_1")
        assert first.is_set()
        with watch.expecting("tx_1") as later:  # the next attempt is a new event
            assert later is not first and not later.is_set()
    assert watch._events == {} and not watch._waiting


async def test_another_nodes_entries_wait_for_it_and_are_taken_once_ours(
    store, writer, autojump_clock
):
    """Cluster mode: an entry of a project another node holds is never attempted here; the
    worker looks again every ``OTHERS_S`` (not in a busy loop) and takes it once the project
    is this node's."""
    entry_id = await enqueue(writer)
    provider = scripted()
    ours = False
    asked: list[float] = []

    async def mine(project_id: str) -> bool:
        asked.append(trio.current_time())
        return ours

    watch = AttemptWatch()
    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        worker = FollowUpWorker(
            store, writer, Targets(), http, {"scripted": provider}, now_ms, watch, mine=mine
        )
        await nursery.start(worker.run)
        await trio.sleep(10 * OTHERS_S)
        assert provider.calls == [] and 5 <= len(asked) <= 12  # one look a OTHERS_S
        ours = True
        entry = await settled(store, watch, entry_id)
        nursery.cancel_scope.cancel()
    assert (entry["state"], len(provider.calls)) == ("done", 1)


def refunding_provider(answers: list[Any], listed: list[ProviderRefund]) -> Scripted:
    """A provider with no idempotency key (Paddle's, BTCPay's shape): each refund call takes
    the next of ``answers`` (an exception, or the refund it makes, added to ``listed`` first:
    the provider acted even when its answer is lost)."""

    async def send(request: FollowUpRequest) -> ProviderRefund:
        made = ProviderRefund(
            f"ref_{len(listed) + 1}", int(request.follow_up.params["amount"]), "pending",
            tag=str(request.follow_up.params["refundId"]),
        )  # fmt: skip
        listed.append(made)
        answer = answers.pop(0) if answers else made
        if isinstance(answer, BaseException):
            raise answer
        return made

    async def look(request: FollowUpRequest) -> tuple[ProviderRefund, ...]:
        return tuple(listed)

    return Scripted(
        "scripted", "form", "token", "Card", refunds=True, send_refund=send, refunds_of=look
    )


Send = Callable[[FollowUpRequest], Awaitable[ProviderRefund]]


def wrap_send(
    provider: Scripted, wrapped: Callable[[int, FollowUpRequest, Send], Awaitable[ProviderRefund]]
) -> list[int]:
    """Hand ``provider``'s refund calls to ``wrapped`` (the call's number from 1, the request,
    and the send it wraps); the numbers of the calls made."""
    inner = provider.send_refund
    assert inner is not None
    made: list[int] = []

    async def send(request: FollowUpRequest) -> ProviderRefund:
        made.append(len(made) + 1)
        return await wrapped(made[-1], request, inner)

    object.__setattr__(provider, "send_refund", send)
    return made


async def enqueue_refund(writer: StoreWriter) -> str:
    params = {"refundId": "rf_01JD0000000000000000000001", "amount": 400, "reason": None}
    ops = outbox.enqueue_ops(PROJECT, TX, "scripted", "test", REFUND, params, now_ms())
    await writer.write(ops)
    return ops[0][1][len(outbox.ENTRY) :].decode()


async def test_a_refund_whose_answer_was_lost_is_adopted_not_made_again(
    store, writer, autojump_clock
):
    """The provider made the refund and its answer was lost: the next attempt asks what
    exists and adopts the refund tagged with the node's id; one refund at the provider, and
    its transaction hears of it before the entry settles."""
    listed: list[ProviderRefund] = []
    provider = refunding_provider([httpx.ReadError("lost")], listed)
    targets = Targets()
    entry = await run_until_settled(store, writer, provider, targets, await enqueue_refund(writer))
    assert (entry["state"], entry["attempts"]) == ("done", 2)
    assert [r.id for r in listed] == ["ref_1"]
    (told,) = targets.refunds
    assert told[:2] == ("rf_01JD0000000000000000000001", "made") and told[2].id == "ref_1"


async def test_a_refund_refused_for_good_is_told_failed(store, writer, autojump_clock):
    listed: list[ProviderRefund] = []
    refused = ProviderError("provider_error", "Paddle answered 400", retryable=False)
    targets = Targets()
    provider = refunding_provider([refused], listed)
    entry = await run_until_settled(store, writer, provider, targets, await enqueue_refund(writer))
    assert entry["state"] == "failed"
    assert [(r, o) for r, o, _ in targets.refunds] == [("rf_01JD0000000000000000000001", "refused")]


async def test_a_refund_never_answered_is_told_unknown_when_the_retries_end(
    store, writer, autojump_clock
):
    """Every attempt's answer is lost and nothing is made (the provider never saw them): once
    the retries end the refund is ``unknown``, its amount held, never freed as refused."""
    down = [Unavailable("unavailable", "down")] * (len(BACKOFF_S) + 1)

    async def send(request: FollowUpRequest) -> ProviderRefund:
        raise down.pop(0)

    async def look(request: FollowUpRequest) -> tuple[ProviderRefund, ...]:
        return ()

    provider = Scripted(
        "scripted", "form", "token", "Card", refunds=True, send_refund=send, refunds_of=look
    )
    targets = Targets()
    entry = await run_until_settled(store, writer, provider, targets, await enqueue_refund(writer))
    assert (entry["state"], entry["attempts"]) == ("failed", len(BACKOFF_S) + 1)
    assert [o for _, o, _ in targets.refunds] == ["unknown"]


async def test_an_entry_settled_since_it_was_read_is_not_attempted_again(
    store, writer, autojump_clock
):
    """A pass that read an entry before another settled it does not attempt it again."""
    entry_id = await enqueue(writer)
    as_read = await outbox.entry(store, entry_id)
    provider = scripted()
    await run_until_settled(store, writer, provider, Targets(), entry_id)
    assert len(provider.calls) == 1
    async with httpx.AsyncClient() as http:
        worker = FollowUpWorker(store, writer, Targets(), http, {"scripted": provider}, now_ms)
        await worker._attempt(as_read)  # noqa: SLF001 (the stale hand-out, made to happen)
    assert len(provider.calls) == 1
    assert len(await outbox.attempts(store, entry_id)) == 1


async def test_two_nodes_attempting_one_refund_at_once_make_it_once(store, writer, autojump_clock):
    """Cluster mode: two nodes' workers may both find one refund entry due (a lease handed
    over, or given up as quiet, while an attempt waits on the provider). With a provider that
    honours no key both would find nothing made and both make it: the first takes the entry,
    the other leaves it, and no one attempts it again until that attempt has had its time."""
    listed: list[ProviderRefund] = []
    provider = refunding_provider([], listed)

    async def slow_send(number: int, request: FollowUpRequest, send: Send) -> ProviderRefund:
        await trio.sleep(5)  # the provider takes its time: the other node's pass comes meanwhile
        return await send(request)

    sends = wrap_send(provider, slow_send)
    entry_id = await enqueue_refund(writer)
    (due,) = await outbox.due(store, now_ms(), 10)
    targets = Targets()
    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        for _ in range(2):  # each node read the entry due; each attempts it
            worker = FollowUpWorker(store, writer, targets, http, {"scripted": provider}, now_ms)
            nursery.start_soon(worker._attempt, due)  # noqa: SLF001
    assert sends == [1] and [r.id for r in listed] == ["ref_1"]
    entry = await outbox.entry(store, entry_id)
    assert entry is not None and (entry["state"], entry["attempts"]) == ("done", 1)


class SlowTargets(Targets):
    """Targets whose project answers its first ask only after ``delays_s`` (a busy actor)."""

    def __init__(self, *delays_s: float) -> None:
        super().__init__()
        self.delays_s = list(delays_s)

    async def target(
        self, project_id: str, tx_id: str, mode: str, action: str = ""
    ) -> Mapping[str, Any] | None:
        if self.delays_s:
            await trio.sleep(self.delays_s.pop(0))
        return await super().target(project_id, tx_id, mode, action)


async def test_a_refund_whose_hold_ran_short_waiting_is_not_sent_then(
    store, writer, autojump_clock
):
    """The attempt waited for its project until too little of its hold was left: a provider
    call begun now could outlive the hold, and another node's attempt at the entry after it
    would make a keyless provider's refund twice. It is sent on the next attempt instead."""
    listed: list[ProviderRefund] = []
    provider = refunding_provider([], listed)
    targets = SlowTargets(28)
    entry_id = await enqueue_refund(writer)
    entry = await run_until_settled(store, writer, provider, targets, entry_id)
    assert (entry["state"], entry["attempts"]) == ("done", 2)
    first, _ = await outbox.attempts(store, entry_id)
    assert (first["outcome"], first["detail"]) == (
        "retry",
        "the attempt's time ran out before the provider was asked",
    )
    assert [r.id for r in listed] == ["ref_1"]


async def test_a_refunds_provider_call_ends_within_the_attempts_hold(store, writer, autojump_clock):
    """Half the attempt's time went waiting for the project: the provider call gets what is
    left, so the attempt is over before its hold ends (less the clocks' margin); the next
    attempt waits until the call that timed out has surely finished at the provider."""
    listed: list[ProviderRefund] = []
    provider = refunding_provider([], listed)

    async def hangs_once(number: int, request: FollowUpRequest, send: Send) -> ProviderRefund:
        if number == 1:
            await trio.sleep_forever()  # the provider never answers the first call
        return await send(request)

    wrap_send(provider, hangs_once)
    entry_id = await enqueue_refund(writer)
    entry = await run_until_settled(store, writer, provider, SlowTargets(15), entry_id)
    assert entry["state"] == "done"
    first, second = await outbox.attempts(store, entry_id)
    assert first["outcome"] == "retry" and first["durationMs"] <= ATTEMPT_TIMEOUT_S * 1000
    assert first["detail"] == "scripted did not answer in 15 s"
    # the call that timed out may still be under way at the provider: the look before the
    # next send waits for it to finish, not a second (the worker's client waits 5 s an answer)
    assert second["at"] >= first["at"] + first["durationMs"] + UNFINISHED_TIMES * 5_000
    assert [r.id for r in listed] == ["ref_1"]


async def test_a_refund_whose_answer_timed_out_is_looked_for_only_once_it_surely_finished(
    store, writer, autojump_clock
):
    """The HTTP client gave up on the provider's answer (its own timeout, before the attempt's):
    the provider may still be making the refund, and lists it only once done. The next
    attempt waits for that before it looks, and adopts it: one refund."""
    listed: list[ProviderRefund] = []
    made: list[ProviderRefund] = []
    provider = refunding_provider([], made)

    async def slow_then_listed(number: int, request: FollowUpRequest, send: Send) -> ProviderRefund:
        refund = await send(request)
        if number == 1:

            async def finish() -> None:
                await trio.sleep(10)  # the provider finishes 10 s after the node gave up
                listed.append(refund)

            finishing.start_soon(finish)
            raise Unanswered("provider_error", "Could not reach Scripted (ReadTimeout).")
        listed.append(refund)
        return refund

    async def look(request: FollowUpRequest) -> tuple[ProviderRefund, ...]:
        return tuple(listed)

    calls_made = wrap_send(provider, slow_then_listed)
    object.__setattr__(provider, "refunds_of", look)
    entry_id = await enqueue_refund(writer)
    async with trio.open_nursery() as finishing:
        entry = await run_until_settled(store, writer, provider, Targets(), entry_id)
    assert entry["state"] == "done"
    first, second = await outbox.attempts(store, entry_id)
    assert second["at"] >= first["at"] + first["durationMs"] + UNFINISHED_TIMES * 5_000
    assert calls_made == [1] and [r.id for r in listed] == ["ref_1"]


async def test_a_refund_cut_short_by_a_crash_then_refused_asks_what_was_made(
    store, writer, autojump_clock
):
    """An attempt reached the provider and the node died before recording it: the entry was
    taken (begun) with no attempt recorded. The next attempt is refused for good (the merchant
    rotated the key): the provider's list decides, and the refund it made is adopted, never
    told refused with its amount freed."""
    listed = [ProviderRefund("ref_1", 400, "pending", tag="rf_01JD0000000000000000000001")]
    refused = ProviderError("provider_error", "Stripe answered 401", retryable=False)

    async def send(request: FollowUpRequest) -> ProviderRefund:
        raise refused

    async def look(request: FollowUpRequest) -> tuple[ProviderRefund, ...]:
        return tuple(listed)

    provider = Scripted(
        "scripted", "form", "token", "Card", refunds=True, send_refund=send, refunds_of=look,
        refund_key_s=24 * 3600,  # Stripe's shape: a young key is sent without asking first
    )  # fmt: skip
    entry_id = await enqueue_refund(writer)
    entry = await outbox.entry(store, entry_id)
    raw = await store.get_raw(outbox.entry_key(entry_id), db=outbox.DB)
    assert entry is not None and raw is not None
    _, _, ops = outbox.claim_ops(entry, raw, now_ms())  # the crashed attempt's take
    await writer.write(ops)
    targets = Targets()
    settled_entry = await run_until_settled(store, writer, provider, targets, entry_id)
    assert (settled_entry["state"], settled_entry["attempts"]) == ("done", 1)
    assert [(r, o, m and m.id) for r, o, m in targets.refunds] == [
        ("rf_01JD0000000000000000000001", "made", "ref_1")
    ]


class Walks(Targets):
    """Targets whose provider account's walk answers with ``refusals`` first."""

    def __init__(self, *refusals: BaseException) -> None:
        super().__init__()
        self.refusals = list(refusals)
        self.walked: list[float] = []

    async def walk(
        self, project_id: str, provider: str, mode: str, since_ms: int
    ) -> tuple[int, int | None, str]:
        self.walked.append(trio.current_time())
        if self.refusals:
            raise self.refusals.pop(0)
        return now_ms(), None, "walked"


@pytest.mark.parametrize(
    ("refusal", "again_s"),
    [
        (ProviderError("provider_error", "Stripe answered 403.", retryable=False), 3600),
        (ProviderError("provider_error", "Stripe answered 503."), 60),
    ],
)
async def test_a_walk_refused_for_good_is_tried_again_an_hour_later_not_every_minute(
    store, writer, autojump_clock, refusal, again_s
):
    """A key that may not read the account's events is refused every time: its walk is tried
    again an hour on (its checkouts are asked about one by one meanwhile), where a passing
    failure is tried again in a minute."""
    ops = outbox.enqueue_ops(
        PROJECT, TX, "scripted", "test", outbox.RECONCILE, {"since": now_ms()}, now_ms()
    )
    await writer.write(ops)
    entry_id = outbox.entry_id_of(ops)
    targets = Walks(refusal)
    entry = await run_until_settled(store, writer, scripted(), targets, entry_id)
    assert entry["state"] == "done"
    first, second = targets.walked
    assert second - first == pytest.approx(again_s, abs=1)


async def test_two_nodes_settling_one_capture_leave_no_stray_queue_key(
    store, writer, autojump_clock
):
    """Two nodes' workers attempt one capture entry at once (a lease moved): the second settle
    finds the entry changed and writes nothing, so the queue keeps no key of an entry that is
    done (a stray key kept its worker looking again at once, for ever)."""
    entry_id = await enqueue(writer)
    (due,) = await outbox.due(store, now_ms(), 10)
    answers = [ProviderError("provider_error", "PayPal answered 503"), FollowUpResult("captured")]

    async def slow(request: FollowUpRequest) -> FollowUpResult:
        answer = answers.pop(0)
        await trio.sleep(1 if isinstance(answer, FollowUpResult) else 2)  # the retry ends last
        if isinstance(answer, BaseException):
            raise answer
        return answer

    provider = scripted()
    object.__setattr__(provider, "follow_up", slow)
    async with httpx.AsyncClient() as http, trio.open_nursery() as nursery:
        for _ in range(2):
            worker = FollowUpWorker(store, writer, Targets(), http, {"scripted": provider}, now_ms)
            nursery.start_soon(worker._attempt, due)  # noqa: SLF001
    entry = await outbox.entry(store, entry_id)
    assert entry is not None and (entry["state"], entry["attempts"]) == ("done", 1)
    assert await outbox.next_due_ms(store) is None
