"""The notifier: delivers what the notification queue (``edge.store.notifyq``) says is owed to
merchants' endpoints (CONTRACT 4.8).

It takes due entries soonest first and sends each as its own task, at most ``PER_ENDPOINT`` at
once to one endpoint and ``TOTAL`` in all, so one slow endpoint holds up neither the others
nor webhook ingest. An attempt reads the endpoint's address and secrets in use and the
event's body from the store (the project's actor is busy ingesting), posts it signed as
Standard Webhooks with a 15 s limit (never following a redirect, to an address the node
resolves and checks itself), and records the
attempt in the commit that settles or reschedules the entry, with a line in the endpoint's
attempt log. Failures are retried on the Standard Webhooks schedule; the endpoint's health
(failing since, disabled on 410 or after five days) is reported to its actor.

At least once: an entry stays pending until the outcome of an attempt is durable, so a crash
during an attempt repeats it after the restart; receivers deduplicate on ``webhook-id``. Never
twice otherwise: an attempt takes its entry first, durably (``outbox.claim_ops``), so one whose
delivery was acknowledged meanwhile is not sent again, and neither is one another node is
sending (a lease handed over mid-attempt); and an event is fanned out once each time it is
owed (again when it changes its type, matched later or a held refund's word settled, to the
endpoints that do not have it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

import httpx
import trio

from edge.actors import messages as m
from edge.actors.ownership import ONE_NODE, OTHERS_S
from edge.domain import ids, notifications, standard_webhooks
from edge.domain.timefmt import iso_ms
from edge.errors import ContractError, Unavailable
from edge.store import keys, notifyq, outbox
from edge.store.codec import unpack
from edge.store.engine import Contended, Engine, Op
from edge.store.writer import StoreWriter

log = logging.getLogger("edge.notifier")

PER_ENDPOINT = 4
TOTAL = 64
BATCH = 200
STORE_RETRY_S = 1.0
USER_AGENT = "edge-notifications/1"
# bytes of an endpoint's answer read, at most: its status alone decides, and a short answer
# read to its end leaves the connection to be used again
ANSWER_READ = 16 * 1024
# the skim of an answer ends this long before the attempt's limit, so closing its connection
# never runs the attempt past it
SKIM_MARGIN_S = 0.5
# How long an attempt holds its entry (``outbox.claim_ops``): its whole time limit and a margin
# for recording it; past that, a crash cut it short and the entry is due again
TAKEN_S = notifications.TIMEOUT_S + 10.0
# what of the hold must be left, beyond the attempt's time limit, for the request to be sent
HOLD_MARGIN_S = 2.0

# (project id, message) -> the project actor's reply
Call = Callable[[str, Any], Awaitable[Any]]
# (project id, endpoint id, event id, now ms, the type the entry was queued for) -> what one
# attempt needs (edge.actors.notify_targets; ``wanted`` false: the event changed since it was
# queued into one the endpoint does not take), or None when nothing is owed any more
Targets = Callable[[str, str, str, int, str | None], Awaitable[Mapping[str, Any] | None]]
# an endpoint's address, mode and secrets in use, for a test send (``StoredTargets.endpoint``)
Endpoints = Callable[[str, str, int], Awaitable[Mapping[str, Any] | None]]

# While the node is busy answering requests the notifier starts one piece of work (an attempt,
# or one event's fan-out) and then none for this long, whatever wakes it meanwhile (an attempt
# ending): a trickle of 20 a second, so a burst of webhooks is ingested at full speed and its
# notifications follow as the burst eases. They are durable meanwhile.
BUSY_BACKOFF_S = 0.05


class Notifier:
    def __init__(
        self,
        store: Engine,
        writer: StoreWriter,
        targets: Targets,
        call: Call,
        http: httpx.AsyncClient,
        clock_ms: Callable[[], int],
        wall_s: Callable[[], float] = time.time,
        busy: Callable[[], bool] = lambda: False,
        counted: Callable[[str], None] = lambda outcome: None,
        observed: Callable[[Mapping[str, Any]], None] = lambda line: None,
        mine: Callable[[str], Awaitable[bool]] = ONE_NODE.claim,
        endpoints: Endpoints | None = None,
        shared: bool = False,
    ) -> None:
        self._endpoints = endpoints
        # other nodes share the store: an attempt takes its entry first (``_take``)
        self._shared = shared
        # cluster mode: only the entries of projects this node holds (``Ownership.claim``)
        self._mine = mine
        self._others = False  # the last look passed over other nodes' entries
        self._store = store
        self._writer = writer
        self._targets = targets
        self._call = call
        self._http = http
        self._clock_ms = clock_ms
        self._wall_s = wall_s
        self._busy = busy
        self._counted = counted
        self._observed = observed  # each attempt's line, as recorded (edge logs --follow)
        self._wakeup = trio.Event()
        self._sending: set[str] = set()  # entry ids with an attempt under way
        self._per_endpoint: dict[str, int] = {}
        self._paced_until = -math.inf  # trio time: while busy, nothing new starts before it

    def notify(self) -> None:
        """New entries were committed, or a place freed up: look at the queue now."""
        self._wakeup.set()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            task_status.started()
            while True:
                self._wakeup = trio.Event()
                try:
                    wait_s = await self._start_due(nursery)
                except Unavailable:  # the store's outage is logged once, by the store
                    wait_s = STORE_RETRY_S
                except Exception:  # entries stay pending for the next pass
                    log.exception("notification queue: a pass failed; trying again")
                    wait_s = STORE_RETRY_S
                with trio.move_on_after(wait_s):
                    await self._wakeup.wait()

    async def _start_due(self, nursery: trio.Nursery) -> float:
        """Fan out the events owed (their entries are due at once), else start an attempt for
        every due entry there is a place for; how long until the next look. While due entries
        are being sent or wait for a place, the next look comes when an attempt ends (each one
        wakes the loop). While the node is busy: one piece of work a ``BUSY_BACKOFF_S``, however
        often the loop is woken."""
        busy = self._busy()
        if busy:
            paced = self._paced_until - trio.current_time()
            if paced > 0:
                return paced
        now = self._clock_ms()
        # busy: read only as far as the one piece of work that may start (a long scan would
        # hold up the requests it is giving way to)
        self._others = False
        owed, entries, gone = await self._look(now, busy)
        # one being sent is its attempt's to settle: it stays among those under way
        entries += [e for e in gone if e["id"] in self._sending]
        gone = [e for e in gone if e["id"] not in self._sending]
        if owed or gone:
            if owed:
                await self._fan_out(owed, now)
            else:  # nothing to send them to: settled, with no attempt to make
                await self._drop_gone(gone, now)
            return self._pause() if busy else 0
        refiled = [e for e in entries if e["action"] == notifyq.FAN_OUT_ENTRY]
        if refiled:
            await self._writer.write([op for e in refiled for op in notifyq.refiled_ops(e)])
            return 0
        for entry in entries:
            endpoint = entry["params"]["endpointId"]
            if entry["id"] in self._sending or len(self._sending) >= TOTAL:
                continue
            if self._per_endpoint.get(endpoint, 0) >= PER_ENDPOINT:
                continue
            self._sending.add(entry["id"])
            self._per_endpoint[endpoint] = self._per_endpoint.get(endpoint, 0) + 1
            nursery.start_soon(self._attempt, entry)
            if busy:
                return self._pause()
        if entries:
            return math.inf
        next_due = await outbox.next_due_ms(self._store, db=notifyq.DB)
        wait_s = math.inf if next_due is None else max(0, next_due - self._clock_ms()) / 1000
        # passed over: other nodes' work due now (an event to fan out is due however empty the
        # queue), looked at again in a while, when it may be this node's (its lease lapsed)
        return OTHERS_S if self._others else wait_s

    async def _drop_gone(self, gone: list[dict[str, Any]], now: int) -> None:
        """Each entry whose endpoint is gone dropped, each only while it is as read (another
        node may have taken it since: written over, its hold's queue key would be left with
        no pending entry, due for ever)."""
        read: dict[str, bytes] = {}
        for entry in gone:
            raw = await self._store.get_raw(outbox.entry_key(entry["id"]), db=notifyq.DB)
            if raw is not None and outbox.as_read(unpack(raw), entry, now):
                read[entry["id"]] = raw
        still = [entry for entry in gone if entry["id"] in read]
        if still and not await self._settle(still, now, None, _GONE, outbox.DROPPED, taken=read):
            for entry in still:  # one of them was taken meanwhile: the others go alone
                await self._settle([entry], now, None, _GONE, outbox.DROPPED, taken=read)

    def _pause(self) -> float:
        """A piece of work started while busy: the next starts ``BUSY_BACKOFF_S`` from now."""
        self._paced_until = trio.current_time() + BUSY_BACKOFF_S
        return BUSY_BACKOFF_S

    async def _look(
        self, now: int, busy: bool
    ) -> tuple[list[notifyq.Owed], list[dict[str, Any]], list[dict[str, Any]]]:
        """(events to fan out, due entries, due entries whose endpoint is gone or disabled);
        the others only when there are none of the first."""
        owed = [
            o
            for o in await notifyq.fan_outs(self._store, 1 if busy else BATCH)
            if await self._is_mine(o.project_id)
        ]
        if owed:
            return owed, [], []
        limit = len(self._sending) + 1 if busy else BATCH
        due, gone = [], []
        projects: dict[str, Any] = {}
        for entry in await outbox.due(self._store, now, limit, db=notifyq.DB):
            pid = entry["projectId"]
            if not await self._is_mine(pid):
                continue
            if pid not in projects:
                projects[pid] = await self._store.get(keys.project(pid))
            endpoint_id = entry["params"].get("endpointId")
            taken = notifyq.enabled_endpoint(projects[pid], endpoint_id) is not None
            if entry["action"] == notifyq.ACTION and not taken:
                gone.append(entry)
            else:
                due.append(entry)
        return [], due, gone

    async def _is_mine(self, project_id: str) -> bool:
        if await self._mine(project_id):
            return True
        self._others = True
        return False

    async def _fan_out(self, owed: list[notifyq.Owed], now: int) -> None:
        """Each owed event becomes one queue entry for each endpoint that takes it and does not
        have it yet, each event in a ticket of its own in one commit: one that changed since
        it was read (matched, applied) fails alone, and is read afresh next time."""
        tickets = []
        projects: dict[str, Any] = {}  # a burst's events are mostly one project's
        for one in owed:
            if one.project_id not in projects:
                projects[one.project_id] = await self._store.get(keys.project(one.project_id))
            ops = await notifyq.fan_out(self._store, one, projects[one.project_id], now)
            tickets.append(self._writer.submit(ops))
        for ticket in tickets:
            try:
                await ticket.wait()
            except Contended:
                # another node fanned it out first, or it changed since it was read
                log.info("notification fan-out: an owed event changed before its commit")

    async def _attempt(self, entry: Mapping[str, Any]) -> None:
        endpoint = entry["params"]["endpointId"]
        try:
            await self._deliver(entry)
        except Unavailable:  # the store's outage is logged once; the entry stays pending
            pass
        except Exception:  # the store could not record it: the entry stays pending
            log.exception("notification %s: the attempt could not be recorded", entry["id"])
        finally:
            self._sending.discard(entry["id"])
            self._per_endpoint[endpoint] -= 1
            if not self._per_endpoint[endpoint]:
                del self._per_endpoint[endpoint]
            self.notify()

    async def _deliver(self, entry: Mapping[str, Any]) -> None:
        project_id, params = entry["projectId"], entry["params"]
        started = self._clock_ms()
        took = await self._take(entry, started)
        if took is None:
            return
        entry, raw = took
        taken = {entry["id"]: raw}
        target = await self._targets(
            project_id, params["endpointId"], params["eventId"], started, params.get("type")
        )
        if target is None:
            await self._settle([entry], started, None, _GONE, outbox.DROPPED, taken=taken)
            return
        if not target["wanted"]:
            await self._settle([entry], started, None, _UNWANTED, outbox.DROPPED, taken=taken)
            return
        hold_left_s = (entry["dueAt"] - self._clock_ms()) / 1000  # the hold as taken
        if self._shared and hold_left_s < notifications.TIMEOUT_S + HOLD_MARGIN_S:
            # the store was slow to take it (or the node paused): posting now could outlast
            # the hold, while another node takes the entry and sends it too; due at its end
            log.warning("notification %s: its hold ran short; sent later", entry["id"])
            return
        status, error = await self._post(target, params["eventId"])
        ok = notifications.succeeded(status)
        if ok:
            state, due_ms = outbox.DONE, None
        else:
            wait_s = notifications.next_try_s(entry["attempts"])
            if notifications.gone(status) or wait_s is None:
                state, due_ms = outbox.FAILED, None
            else:
                state, due_ms = outbox.PENDING, self._clock_ms() + wait_s * 1000
        if not await self._settle([entry], started, status, error, state, due_ms, taken=taken):
            return
        health = notifications.health_after(ok, status, target["failingSince"], self._clock_ms())
        if health is not None:
            with contextlib.suppress(ContractError):  # told again by the next attempt
                await self._call(project_id, m.EndpointOutcome(params["endpointId"], ok, status))

    async def _take(
        self, entry: Mapping[str, Any], now: int
    ) -> tuple[dict[str, Any], bytes] | None:
        """The entry taken for this attempt, and its bytes as taken; None when it is no longer
        as read, pending and due, or another node took it first. A look at the queue that
        began before an attempt settled it may hand the same entry out again once that attempt
        is over (the store's reads give way on PostgreSQL), and at a lease's hand-over the
        node that gave the project up may still be sending it: taken, it is sent by one."""
        raw = await self._store.get_raw(outbox.entry_key(entry["id"]), db=notifyq.DB)
        if raw is None:
            return None
        current = unpack(raw)
        if not outbox.as_read(current, entry, now):
            return None
        if not self._shared:  # one node: its own ``_sending`` keeps an entry to one attempt
            return current, raw
        taken, packed, ops = outbox.claim_ops(
            current, raw, now + int(TAKEN_S * 1000), db=notifyq.DB
        )
        try:
            await self._writer.write(ops)
        except Contended:
            return None
        return taken, packed

    async def send_test(self, project_id: str, endpoint_id: str) -> dict[str, Any] | None:
        """A sample event (``notifications.sample_event``) posted to the endpoint now, signed as
        every notification, once: what its server answered and how long it took. None: no such
        endpoint. Nothing is stored or queued: a test the merchant watches, not a delivery."""
        if self._endpoints is None:
            return None
        found = await self._endpoints(project_id, endpoint_id, self._clock_ms())
        if found is None:
            return None
        event_id = ids.new_evt_id()
        now = iso_ms(self._clock_ms())
        sample = notifications.sample_event(
            event_id, ids.new_tx_id(), project_id, found["mode"] == "test", now
        )
        body = json.dumps(sample, separators=(",", ":")).encode()
        started = time.monotonic()
        status, error = await self._post({**found, "body": body}, event_id)
        return {
            "eventId": event_id,
            "status": status,
            "error": error or None,
            "durationMs": round((time.monotonic() - started) * 1000),
            "delivered": notifications.succeeded(status),
        }

    async def _post(self, target: Mapping[str, Any], event_id: str) -> tuple[int | None, str]:
        """(HTTP status or None, what went wrong in words)."""
        body: bytes = target["body"]
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            **standard_webhooks.headers(target["secrets"], event_id, int(self._wall_s()), body),
        }
        deadline = trio.current_time() + notifications.TIMEOUT_S
        try:
            with trio.fail_at(deadline):
                async with self._http.stream(
                    "POST", target["url"], content=body, headers=headers
                ) as response:
                    # the status came in time and decides (CONTRACT 4.8: a 2xx within 15 s
                    # is success): a body still coming at the limit is left, not waited for
                    with trio.move_on_at(deadline - SKIM_MARGIN_S):
                        await _skim(response)
        except trio.TooSlowError:
            return None, f"no answer in {notifications.TIMEOUT_S:.0f} s"
        except httpx.HTTPError as exc:
            return None, f"network error: {type(exc).__name__}: {str(exc)[:200]}"
        if notifications.succeeded(response.status_code):
            return response.status_code, ""
        return response.status_code, f"answered {response.status_code}"

    async def _settle(
        self,
        entries: Sequence[Mapping[str, Any]],
        started: int,
        status: int | None,
        detail: str,
        state: str,
        due_ms: int | None = None,
        taken: Mapping[str, bytes] | None = None,
    ) -> bool:
        """Each entry's attempt recorded, with its line in the endpoint's attempt log, and the
        entry moved to ``state``, in one commit; false when an entry ``taken`` (by id: its
        bytes as taken or read) is no longer so (its hold ran out and another attempt took
        it: that one's outcome is recorded), and nothing is written."""
        outcome = _OUTCOMES.get(state, state)
        attempt = {
            "at": started,
            "durationMs": self._clock_ms() - started,
            "outcome": outcome,
            "status": status,
            "detail": detail[:500],
        }
        ops: list[Op] = []
        lines: list[dict[str, Any]] = []
        for entry in entries:
            params = entry["params"]
            ops += outbox.settle_ops(
                entry,
                attempt,
                state=state,
                due_ms=due_ms,
                detail=detail,
                db=notifyq.DB,
                taken=(taken or {}).get(entry["id"]),
            )
            line = {
                **attempt,
                "eventId": params["eventId"],
                "entryId": entry["id"],
                "number": entry["attempts"] + 1,
                "nextAt": due_ms,
            }
            ops.append(notifyq.log_op(params["endpointId"], line))
            lines.append(
                {**line, "projectId": entry["projectId"], "endpointId": params["endpointId"]}
            )
        try:
            await self._writer.write(ops)
        except Contended:
            log.warning("notification %s: settled elsewhere meanwhile", entries[0]["id"])
            return False
        for line in lines:
            self._counted(outcome)
            self._observed(line)
        return True


async def _skim(response: httpx.Response) -> None:
    """Reads an endpoint's answer up to ``ANSWER_READ`` bytes and no further (an endless one
    would hold the attempt to its time limit, a huge one the node's memory). One that says it
    is longer is not read at all; one that turns out longer is cut off by cancelling the read,
    which closes the connection and ends httpx's chain of generators with it: leaving the loop
    would leave them unexhausted. Raw bytes: an answer that is never kept is not decoded (a
    compressed one could unpack to far more than was read)."""
    declared = response.headers.get("content-length", "")
    if response.is_stream_consumed or (declared.isdigit() and int(declared) > ANSWER_READ):
        return  # read whole by its transport already, or longer than is ever read
    read = 0
    with trio.CancelScope() as reading:
        async for chunk in response.aiter_raw():
            read += len(chunk)
            if read > ANSWER_READ:
                reading.cancel()


_OUTCOMES = {outbox.DONE: "done", outbox.PENDING: "retry"}
_GONE = "the endpoint is gone or disabled, or the event was pruned"
_UNWANTED = (
    "the event changed since it was queued (matched, or a refund's word settled): it is of a "
    "type the endpoint does not take, or repeats a change already told"
)
