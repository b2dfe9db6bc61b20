"""The follow-up worker: carries out what the outbox (``edge.store.outbox``) says is owed.

It takes due entries soonest first, asks the project's actor what the entry acts on (the
transaction and the provider's credentials; nothing once the checkout has ended), calls the
provider's ``follow_up``, and records the attempt in the same commit that settles or reschedules
the entry. Guarantees:

- At least once: an entry stays pending until an attempt's outcome is durable, so a crash during
  an attempt repeats it after the restart (providers' follow-ups are idempotent: PayPal's capture
  carries ``PayPal-Request-Id`` = the transaction id; a refund is made once or adopted,
  ``edge.providers.refunding``).
- Never twice for one answer: an entry is read again just before its attempt, and one that an
  attempt settled meanwhile is left alone.
- A refund's outcome reaches its transaction before the entry settles: the provider's refund
  (made, or adopted from an earlier attempt), a refusal for good, or, once the retries end with
  no answer, that its outcome is unknown (its amount then stays held).
- Every attempt is recorded: when, how long, the outcome and what the provider said.
- A transient failure (``ProviderError``, a network error, a provider that does not answer in
  ``ATTEMPT_TIMEOUT_S``) is retried on ``BACKOFF_S``; after the last step the entry is ``failed``.
- The node's own work is here too: expiring a checkout its provider never expires
  (``outbox.EXPIRE``), and looking at a checkout still open with no webhook (``outbox.SYNC``:
  asked again on ``edge.domain.asking``'s schedule, or later when the provider account's budget
  says wait, until the checkout is no longer open).
- Entries run one at a time, so a slow provider delays follow-ups but never multiplies them.
- A refund's attempt takes its entry first, durably (``outbox.claim_ops``): no other node
  attempts it until the attempt has had its time, and one a crash cut short still counts as
  begun, so a refusal for good after it is checked against the provider's list.
- A store that cannot record an attempt stops neither the worker nor the node: the entry stays
  pending and the pass is tried again.
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

import httpx
import trio

from edge.actors import messages as m
from edge.actors.ownership import ONE_NODE, OTHERS_S
from edge.actors.sync import UNWALKABLE_MS
from edge.errors import ContractError, Unavailable
from edge.providers import calls, refunding
from edge.providers.base import (
    REFUND,
    FollowUp,
    FollowUpRequest,
    FollowUpResult,
    Provider,
    ProviderRefund,
)
from edge.store import outbox
from edge.store.codec import unpack
from edge.store.engine import Contended, Engine
from edge.store.writer import StoreWriter

log = logging.getLogger("edge.followups")

# Seconds before each retry; the attempt after the last step is the last one.
BACKOFF_S = (1, 5, 30, 120, 600, 1800, 3600, 3 * 3600, 6 * 3600, 12 * 3600)
ATTEMPT_TIMEOUT_S = 30.0
# How long a refund's attempt holds its entry (``outbox.claim_ops``): its whole time, and a
# margin for the nodes' clocks, before another may attempt it.
TAKEN_S = ATTEMPT_TIMEOUT_S + 10.0
MIN_CALL_S = 5.0  # the least time a refund's provider call is begun with
# A refund call whose answer never came (it timed out, or was cut) may still be under way at the
# provider: the next attempt, which looks at the provider's list before it sends where no key
# makes a repeat safe, waits this many times the node's time for an answer for it to finish (a
# look sooner could miss it, and the refund be made twice).
UNFINISHED_TIMES = 4
UNFINISHED = "unfinished"  # an attempt's outcome: a refund whose answer never came, retried so
BATCH = 100
STORE_RETRY_S = 1.0  # after a pass the store could not complete
# a refund refused for good after an attempt whose answer was lost, its provider's list unread
UNKNOWN = "unknown"
LOOK_RETRY_S = 60  # a look the project could not take now (the node stopping, a provider off)
# a walk the provider refused for good (a key that may not read the account's lists) is tried
# again once its checkouts have been asked about one by one for as long (``Syncer.walk``)
REFUSED_WALK_RETRY_S = UNWALKABLE_MS // 1000


class Projects(Protocol):
    """The worker's way to the project actors. Each raises a ContractError when it cannot
    answer now (the node is stopping, the provider is disabled): the entry is tried again."""

    async def target(
        self, project_id: str, tx_id: str, mode: str, action: str
    ) -> Mapping[str, Any] | None:
        """``{"tx", "credentials"}``, or None when nothing is owed any more."""

    async def report(
        self, project_id: str, provider: str, mode: str, result: FollowUpResult
    ) -> None:
        """Apply ``result.events`` durably, like verified webhook deliveries."""

    async def expire(self, project_id: str, tx_id: str, *, unanswered: bool = False) -> str:
        """Expire a pending checkout whose time has come (``unanswered``: end one whose
        provider's answer never came); what happened, in words."""

    async def look(self, project_id: str, tx_id: str) -> tuple[str, int | None]:
        """Ask the provider about an open checkout (``edge.actors.sync.Syncer.owed``):
        ``("looked", None)``, or ``("again" | "later", when)``."""

    async def walk(
        self, project_id: str, provider: str, mode: str, since_ms: int
    ) -> tuple[int, int | None, str]:
        """Walk a provider account's lists since ``since_ms`` (``Syncer.walk``): (where the
        walk reached, when the next is due or None, what it found in words)."""

    async def refund_outcome(
        self,
        project_id: str,
        tx_id: str,
        refund_id: str,
        outcome: str,
        refund: ProviderRefund | None,
        detail: str,
    ) -> None:
        """Record on the transaction's refund what became of it (``messages.REFUND_*``)."""


class AttemptWatch:
    """Lets a request wait for the next recorded attempt at a transaction's follow-ups: the
    buyer's return waits for the answer to the capture it owed, so it can tell the buyer the
    outcome instead of a "thank you" for a payment PayPal may decline."""

    def __init__(self) -> None:
        self._events: dict[str, trio.Event] = {}
        self._waiting: Counter[str] = Counter()

    @contextmanager
    def expecting(self, tx_id: str) -> Iterator[trio.Event]:
        """An event set by the next attempt recorded for ``tx_id`` from now on (enter before
        the commit that owes it, so an attempt that is quick cannot be missed)."""
        event = self._events.setdefault(tx_id, trio.Event())
        self._waiting[tx_id] += 1
        try:
            yield event
        finally:
            self._waiting[tx_id] -= 1
            if not self._waiting[tx_id]:
                del self._waiting[tx_id]
                self._events.pop(tx_id, None)

    def attempted(self, tx_id: str) -> None:
        event = self._events.pop(tx_id, None)
        if event is not None:
            event.set()


class FollowUpWorker:
    def __init__(
        self,
        store: Engine,
        writer: StoreWriter,
        projects: Projects,
        http: httpx.AsyncClient,
        providers: Mapping[str, Provider],
        clock_ms: Callable[[], int],
        watch: AttemptWatch | None = None,
        mine: Callable[[str], Awaitable[bool]] = ONE_NODE.claim,
    ) -> None:
        # cluster mode: an entry is attempted only by the node holding its project's lease
        # (``Ownership.claim``), so no two nodes call a provider for the same entry
        self._mine = mine
        self._store = store
        self._writer = writer
        self._projects = projects
        self._http = http
        self._providers = providers
        self._clock_ms = clock_ms
        self._watch = watch or AttemptWatch()
        self._wakeup = trio.Event()
        self._due_at: dict[str, int] = {}  # entry id -> when a look is due again

    def notify(self) -> None:
        """New entries were committed: look at the queue now."""
        self._wakeup.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Work the queue until cancelled, starting with whatever a previous run left."""
        task_status.started()
        while True:
            self._wakeup = trio.Event()
            try:
                wait_s = await self._work_the_queue()
            except Unavailable:  # the store's outage is logged once, by the store
                wait_s = STORE_RETRY_S
            except Exception:  # entries stay pending for the next pass
                log.exception("follow-up queue: a pass failed; trying again")
                wait_s = STORE_RETRY_S
            with trio.move_on_after(wait_s):
                await self._wakeup.wait()

    async def _work_the_queue(self) -> float:
        """Attempt every due entry; how long until the next one is due."""
        others = False
        while True:
            entries = await outbox.due(self._store, self._clock_ms(), BATCH)
            for entry in entries:
                if await self._mine(entry["projectId"]):
                    await self._attempt(entry)
                else:
                    others = True
            if len(entries) < BATCH or others:
                break
        next_due = await outbox.next_due_ms(self._store)
        wait_s = math.inf if next_due is None else max(0, next_due - self._clock_ms()) / 1000
        return max(wait_s, OTHERS_S) if others else wait_s

    async def _attempt(self, entry: Mapping[str, Any]) -> None:
        raw = await self._store.get_raw(outbox.entry_key(entry["id"]), db=outbox.DB)
        if raw is None:
            return  # pruned since it was read
        current = unpack(raw)
        started = self._clock_ms()
        if not outbox.as_read(current, entry, started):
            return  # settled since it was read, or taken by another node's attempt
        # its settle holds only while the entry is as read here: another node's attempt at it
        # meanwhile (a lease moved) settles it once, never leaving a stray queue key behind
        entry, earlier, taken = current, outbox.begun(current), raw
        if entry["action"] == REFUND:
            entry, taken, ops = outbox.claim_ops(current, raw, started + int(TAKEN_S * 1000))
            try:
                await self._writer.write(ops)
            except Contended:
                return  # another node took it first: its attempt decides
        # a refund's provider call ends within its hold, the clocks' margin kept
        ends_ms = started + int(ATTEMPT_TIMEOUT_S * 1000)
        outcome, detail = await self._outcome(entry, earlier, ends_ms)
        finished = self._clock_ms()
        unfinished = outcome == UNFINISHED
        if unfinished:
            outcome = "retry"
        attempt = {
            "at": started,
            "durationMs": finished - started,
            "outcome": outcome,
            "detail": detail[:500],
        }
        step = entry["attempts"]  # attempts before this one
        due_at = self._due_at.pop(entry["id"], None)  # a look's own schedule
        given_up = outcome == "retry" and due_at is None and step >= len(BACKOFF_S)
        if given_up:
            outcome = attempt["outcome"] = "failed"
            log.warning("follow-up %s of %s gave up: %s", entry["action"], entry["txId"], detail)
        unknown = given_up or outcome == UNKNOWN
        if outcome == UNKNOWN:
            outcome = attempt["outcome"] = "failed"  # the entry ends; its refund stays held
        if outcome in ("failed", "dropped") and entry["action"] == REFUND:
            # the refund's transaction hears of it before the entry is settled
            heard = await self._tell_refund(
                entry, m.REFUND_UNKNOWN if unknown else m.REFUND_REFUSED, None, detail
            )
            if not heard:
                outcome = attempt["outcome"] = "retry"
                detail = attempt["detail"] = "the refund's outcome could not be recorded yet"
        if outcome == "retry":
            wait_s = BACKOFF_S[min(step, len(BACKOFF_S) - 1)]
            if unfinished:
                read = self._http.timeout.read  # the node's wait for an answer
                wait_s = max(wait_s, math.ceil(UNFINISHED_TIMES * (read or ATTEMPT_TIMEOUT_S)))
            ops = outbox.settle_ops(
                entry,
                attempt,
                state=outbox.PENDING,
                due_ms=due_at if due_at is not None else finished + wait_s * 1000,
                detail=detail,
                taken=taken,
            )
        else:
            state = {"done": outbox.DONE, "dropped": outbox.DROPPED, "failed": outbox.FAILED}[
                outcome
            ]
            ops = outbox.settle_ops(entry, attempt, state=state, detail=detail, taken=taken)
        try:
            await self._writer.write(ops)
        except Contended:
            # another node attempted the entry meanwhile (a refund's outlived its time): that
            # attempt's outcome is the one recorded (a refund is made once, or adopted, either
            # way; a capture carries PayPal-Request-Id)
            log.warning(
                "follow-up %s of %s: settled elsewhere meanwhile", entry["action"], entry["txId"]
            )
        self._watch.attempted(entry["txId"])

    async def _look(self, entry: Mapping[str, Any]) -> tuple[str, str]:
        """An owed look at an open checkout: done once it is no longer open; else due again
        when the schedule, or the provider account's budget, says (``_due_at``)."""
        try:
            verdict, when = await self._projects.look(entry["projectId"], entry["txId"])
        except ContractError as error:
            self._due_at[entry["id"]] = self._clock_ms() + LOOK_RETRY_S * 1000
            return "retry", f"{error.code}: {error.message}"
        if when is None:
            return "done", "the checkout is no longer open: nothing more to ask"
        self._due_at[entry["id"]] = when
        if verdict == "later":
            return "retry", "not asked yet: the provider account's budget says wait"
        return "retry", "asked; the checkout is still open: looking again later"

    async def _walk(self, entry: Mapping[str, Any]) -> tuple[str, str]:
        """An owed walk of a provider account's lists, from where the last one reached: done
        once the project says walking is over; else due again when it says."""
        params = entry["params"]
        try:
            walked_to, when, said = await self._projects.walk(
                entry["projectId"], entry["provider"], entry["mode"], int(params["since"])
            )
        except ContractError as error:
            wait_s = LOOK_RETRY_S if error.retryable else REFUSED_WALK_RETRY_S
            self._due_at[entry["id"]] = self._clock_ms() + wait_s * 1000
            return "retry", f"{error.code}: {error.message}"
        if when is None:
            return "done", f"{said}; the provider's webhooks reach the node again, or a week passed"
        params["since"] = walked_to  # the entry is written with its attempt
        self._due_at[entry["id"]] = when
        return "retry", said

    async def _tell_refund(
        self, entry: Mapping[str, Any], outcome: str, refund: ProviderRefund | None, detail: str
    ) -> bool:
        """Record a refund's outcome on its transaction; False when it cannot be now."""
        try:
            await self._projects.refund_outcome(
                entry["projectId"],
                entry["txId"],
                str(entry["params"]["refundId"]),
                outcome,
                refund,
                detail,
            )
        except ContractError as error:
            log.info("refund %s: outcome not recorded yet (%s)", entry["txId"], error.code)
            return False
        return True

    async def _outcome(
        self, entry: Mapping[str, Any], earlier: int, ends_ms: int
    ) -> tuple[str, str]:
        """("done" | "dropped" | "failed" | "retry" | ``UNKNOWN`` | ``UNFINISHED``, what
        happened, in words). ``earlier``: the attempts that began before this one;
        ``ends_ms``: when a refund's call must be over (its hold, less the clocks' margin:
        another node may attempt it after)."""
        if entry["action"] == outbox.EXPIRE:
            try:
                said = await self._projects.expire(
                    entry["projectId"],
                    entry["txId"],
                    unanswered=bool(entry["params"].get(outbox.UNANSWERED)),
                )
                return "done", said
            except ContractError as error:
                return "retry", f"{error.code}: {error.message}"
        if entry["action"] == outbox.SYNC:
            return await self._look(entry)
        if entry["action"] == outbox.RECONCILE:
            return await self._walk(entry)
        provider = self._providers.get(entry["provider"])
        if provider is None:
            return "dropped", f"this node has no provider {entry['provider']!r}"
        try:
            target = await self._projects.target(
                entry["projectId"], entry["txId"], entry["mode"], entry["action"]
            )
        except ContractError as error:
            return "retry", f"{error.code}: {error.message}"
        if target is None:
            return "dropped", "the checkout has ended: nothing is done for it any more"
        request = FollowUpRequest(
            follow_up=FollowUp(entry["action"], entry["params"]),
            tx=target["tx"],
            credentials=target["credentials"],
            http=self._http,
            attempts=earlier,
            created_ms=entry["createdAt"],
        )
        limit_s = ATTEMPT_TIMEOUT_S
        # a call whose answer never came: a refund waits for it to finish before it is retried
        unanswered = UNFINISHED if entry["action"] == REFUND else "retry"
        if entry["action"] == REFUND:
            limit_s = min(limit_s, (ends_ms - self._clock_ms()) / 1000)
            if limit_s < MIN_CALL_S:
                # the wait for the project used the hold up: a call now could outlive it, and
                # a provider without a key would make the refund twice if another node began
                return "retry", "the attempt's time ran out before the provider was asked"
        try:
            with trio.fail_after(limit_s):
                if entry["action"] == REFUND:
                    result = await refunding.carry_out(provider, request, self._clock_ms())
                else:
                    result = await provider.follow_up(request)
        except trio.TooSlowError:
            return unanswered, f"{provider.name} did not answer in {limit_s:.0f} s"
        except calls.Unanswered as error:
            return unanswered, f"{error.code}: {error.message}"
        except ContractError as error:
            return ("retry" if error.retryable else "failed"), f"{error.code}: {error.message}"
        except refunding.OutcomeUnknown as unknown:
            return UNKNOWN, str(unknown)
        except httpx.HTTPError as error:
            return "retry", f"network error: {type(error).__name__}"
        except Exception as error:  # a fault of the adapter's: keep the entry, say what it was
            log.exception("follow-up %s of %s raised", entry["action"], entry["txId"])
            return "retry", f"internal: {type(error).__name__}"
        if result.events:
            # applied before the entry settles: a crash between the two repeats the call
            try:
                await self._projects.report(
                    entry["projectId"], provider.name, entry["mode"], result
                )
            except ContractError as error:
                return "retry", f"the answer could not be applied: {error.code}"
        if result.refund is not None and not await self._tell_refund(
            entry, m.REFUND_MADE, result.refund, result.detail
        ):
            return "retry", "the refund was made; its record waits for the project"
        return ("done" if result.done else "retry"), result.detail
