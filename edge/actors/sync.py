"""Asking providers what became of payments (CONTRACT 4.3a): sync and reconcile.

Webhooks get lost: a wrong signing secret, a typo in the address, a node down longer than the
provider retries, a firewall. So the node asks:

- ``sync``: one transaction's objects, read with the provider's own API (``Provider.sync``),
  on demand (``POST .../transactions/{txId}/sync``, ``edge tx sync``, the dashboard's "Check
  with ..."), for a checkout still pending past its provider's usual time (``owed``: the
  follow-up queue's ``node.sync`` entries, ``edge.domain.asking``'s schedule), and for a refund
  whose outcome is not known. Where the provider keeps a list of every event (Stripe, PayPal,
  Paddle) an open checkout is looked after by walking that list every period instead (one
  request for all of an account's open checkouts: 10,000 of them cost what one does), and is
  asked about itself once, at its end.
- ``reconcile``: after an outage or a fixed secret, the provider's own list of events (or of
  checkout objects) since a time, applied as the webhooks the node missed would have been; and
  by itself (``walk``), every ``EDGE_SYNC_EVERY_S`` for a week after asking last learned what no
  webhook had brought, so the refunds and disputes of payments already paid are learned too.

Either way what the provider says goes through the webhook pipeline in the project's actor
(``edge.actors.project.asking``): a change learned by asking is told once, and its webhook, if
it ever comes, is a repeat. The provider calls run here, off the actor, paced per provider
account (``edge.actors.pacing``): a 429's ``Retry-After`` holds back every ask of that account.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import httpx
import trio

from edge.actors import messages as m
from edge.actors.pacing import ProviderPacing, account_of
from edge.domain.asking import WEEK_MS, looks_end_at, next_look_ms
from edge.errors import Conflict, ContractError, ProviderError, unavailable
from edge.metrics import Metrics
from edge.providers.base import EventsPage, EventsRequest, Provider, SyncRequest
from edge.providers.registry import PROVIDERS

log = logging.getLogger("edge.sync")

ASK_TIMEOUT_S = 60.0  # one sync, every read it makes included
MAX_PAGES = 1000  # one reconcile's pages of one provider account
WALK_OVERLAP_MS = 60_000  # a walk looks this far behind where the last one reached
UNWALKABLE_MS = 3_600_000  # after a walk refused for good, checkouts are asked about one by one
RECHECK_PERIODS = 10  # a checkout a walk looks after is looked at again after this many periods
ASK_AT_EXPIRY_S = 10.0  # asking before an expiry holds the follow-up queue no longer than this
EXPIRY_GRACE_MS = 3_600_000  # past its end by this much, a checkout expires unasked if need be

# what the follow-up queue does with an owed look (``Syncer.owed``)
LOOKED = "looked"  # done: the checkout is no longer open, or there is nothing more to ask
AGAIN = "again"  # asked; look again later
LATER = "later"  # not asked: the account's budget says wait

Call = Callable[[str, Any], Awaitable[Any]]
Now = Callable[[], int]


class Syncer:
    def __init__(
        self,
        call: Call,
        http: httpx.AsyncClient,
        pacing: ProviderPacing,
        metrics: Metrics,
        clock_ms: Now,
        every_s: float,
    ) -> None:
        self._call = call
        self._http = http
        self._pacing = pacing
        self._metrics = metrics
        self._clock_ms = clock_ms
        self.every_ms = int(every_s * 1000)
        # (project, provider, mode) -> until when its account's lists are not walked in place of
        # asking about each open checkout: a walk was refused for good (kept in memory: how to
        # ask, not what is owed; the next walk after a restart finds it again)
        self._unwalkable: dict[tuple[str, str, str], int] = {}

    async def sync(self, project_id: str, tx_id: str, mode: str | None, why: str) -> dict[str, Any]:
        """Ask the provider about one transaction and apply what it says; the transaction as
        it now is, with ``learned`` (changes no webhook had brought) and ``found``."""
        target = await self._call(project_id, m.SyncTarget(tx_id, mode))
        return await self._ask(project_id, target, why)

    async def owed(self, project_id: str, tx_id: str) -> tuple[str, int | None]:
        """A look the follow-up queue owes a transaction: a checkout still open, or a refund
        whose outcome is not known. (LOOKED, None) once there is nothing left to ask, (AGAIN,
        when) after asking, (LATER, when) when the account must wait. A checkout still open
        when its looks run out is ended by the node (``LooksEnded``)."""
        try:
            target = await self._call(project_id, m.SyncTarget(tx_id, None))
        except Conflict:  # a provider the node cannot ask
            return LOOKED, None
        if _waits_for(target["tx"]) is None:
            return LOOKED, None
        now = self._clock_ms()
        walked_until = self._walked_until(target)
        walks = now >= self._unwalkable.get((project_id, target["provider"], target["mode"]), 0)
        if walked_until is not None and now < walked_until and walks:
            # the account's list of events looks after it every period: one request for all
            # its open checkouts; this one is asked about itself at its end, or sooner once a
            # walk is refused for good (looked at again every ``RECHECK_PERIODS`` to see)
            provider, mode = target["provider"], target["mode"]
            created = int(target["tx"]["createdAt"])
            await self._call(project_id, m.WalkUntil(provider, mode, walked_until, created))
            return AGAIN, min(walked_until, now + RECHECK_PERIODS * self.every_ms)
        wait_s = self._pacing.free_in(_account(target))
        if wait_s > 0:
            return LATER, now + int(wait_s * 1000) + 1
        await self._ask(project_id, target, "owed")
        tx = (await self._call(project_id, m.SyncTarget(tx_id, None)))["tx"]
        since = _waits_for(tx)
        if since is None:
            return LOOKED, None
        expires = looks_end_at(tx["status"], tx.get("expiresAt"))
        later = next_look_ms(self._clock_ms(), since, expires, self.every_ms)
        if later is None:
            if tx["status"] in OPEN:
                await self._call(project_id, m.LooksEnded(tx_id))
            return LOOKED, None
        return AGAIN, later

    async def before_expiry(self, project_id: str, tx_id: str) -> None:
        """Ask the provider about a checkout the node is about to expire (an approval whose
        webhook was lost is learned, and its capture owed, instead). An account that must wait,
        or a provider that does not answer within ``ASK_AT_EXPIRY_S``, is asked again later
        (``Unavailable``: the expiry is tried again), for up to ``EXPIRY_GRACE_MS`` past the
        checkout's end; past that, or where the provider cannot be asked, the node expires it
        without an answer. The follow-up queue runs one entry at a time: never held long."""
        try:
            target = await self._call(project_id, m.SyncTarget(tx_id, None))
        except Conflict:  # a provider the node cannot ask (pay by mail)
            return
        expires = target["tx"].get("expiresAt")
        late = expires is not None and self._clock_ms() > int(expires) + EXPIRY_GRACE_MS
        if self._pacing.free_in(_account(target)) > 0:
            if late:
                return
            raise unavailable("The provider account must wait; the expiry is tried again.")
        try:
            with trio.fail_after(ASK_AT_EXPIRY_S):
                await self._ask(project_id, target, "expiry")
        except trio.TooSlowError:
            if not late:
                raise unavailable(
                    "The provider did not answer; the expiry is tried again."
                ) from None
        except ContractError as error:
            if error.retryable and not late:
                raise

    def _walked_until(self, target: Mapping[str, Any]) -> int | None:
        """Until when walking the provider account's list of events looks after an open
        checkout in its stead (its expiry and a period, or a week for one that never expires);
        None where the list does not cover checkouts (BTCPay) or it is not open."""
        tx = target["tx"]
        if not PROVIDERS[target["provider"]].walks_cover_checkouts or tx["status"] not in OPEN:
            return None
        expires = tx.get("expiresAt")
        if expires is not None:
            return int(expires) + self.every_ms
        return int(tx["createdAt"]) + WEEK_MS

    async def reconcile(
        self, project_id: str, provider_name: str, mode: str, since_ms: int
    ) -> dict[str, Any]:
        """Walk the provider's list of events (or checkout objects) since ``since_ms`` and
        apply what the node missed; how many were seen, learned and asked about."""
        provider = PROVIDERS.get(provider_name)
        if provider is None or provider.list_events is None:
            raise Conflict(
                "reconcile_unsupported",
                f"{provider_name} keeps no list of events the node can walk.",
            )
        target = await self._call(project_id, m.ProviderTarget(provider_name, mode))
        account = _account(target)
        cursor: str | None = None
        seen = learned = asked = 0
        walk = provider.list_events
        until_ms = self._clock_ms()
        for _ in range(MAX_PAGES):
            request = EventsRequest(
                target["credentials"], mode, since_ms, self._http, cursor, until_ms
            )
            page: EventsPage = await self._paced(provider, account, partial(walk, request))
            if page.bodies:
                applied = await self._call(
                    project_id, m.Reconciled(provider_name, mode, page.bodies)
                )
                seen += applied["seen"]
                learned += applied["learned"]
            for ref in page.objects:
                tx_id = await self._call(project_id, m.TxOfRef(provider_name, mode, ref))
                if tx_id is not None:
                    answer = await self.sync(project_id, tx_id, mode, "reconcile")
                    learned += answer["learned"]
                    asked += 1
            cursor = page.cursor
            if cursor is None:
                break
        return {
            "provider": provider_name,
            "mode": mode,
            "seen": seen,
            "learned": learned,
            "asked": asked,
        }

    async def walk(
        self, project_id: str, provider: str, mode: str, since_ms: int
    ) -> tuple[int, int | None, str]:
        """An owed walk of a provider account whose webhooks do not reach the node: reconcile
        since ``since_ms`` (less a minute, for events stamped late); where it reached, when the
        next is due (None: walking is over), and what it found."""
        now = self._clock_ms()
        try:
            found = await self.reconcile(
                project_id, provider, mode, max(0, since_ms - WALK_OVERLAP_MS)
            )
        except ContractError as error:
            if not error.retryable:
                # refused for good (a restricted key that may not read the account's events):
                # its open checkouts are asked about one by one meanwhile, not at their end
                self._unwalkable[(project_id, provider, mode)] = now + UNWALKABLE_MS
            raise
        self._unwalkable.pop((project_id, provider, mode), None)
        when = await self._call(project_id, m.WalkNext(provider, mode, now))
        said = f"walked: {found['seen']} event(s) seen, {found['learned']} change(s) learned"
        return now, when, said

    async def _ask(self, project_id: str, target: Mapping[str, Any], why: str) -> dict[str, Any]:
        provider = PROVIDERS[target["provider"]]
        assert provider.sync is not None
        sync = provider.sync
        request = SyncRequest(
            tx=target["tx"],
            subscription=target["subscription"],
            credentials=target["credentials"],
            http=self._http,
        )
        result = await self._paced(provider, _account(target), lambda: sync(request))
        self._metrics.asked(provider.name, "found" if result.found else "not_found")
        answer: dict[str, Any] = await self._call(
            project_id,
            m.SyncReported(target["tx"]["id"], provider.name, target["mode"], result, why),
        )
        return answer

    async def _paced(
        self, provider: Provider, account: str, ask: Callable[[], Awaitable[Any]]
    ) -> Any:
        """``ask()`` with its requests paced as ``account``'s; a provider that does not answer,
        or answers 429, is a retryable ``provider_error`` (and a 429 pauses the account)."""
        name = provider.display_name or provider.name
        try:
            with self._pacing.asking(account), trio.fail_after(ASK_TIMEOUT_S):
                return await ask()
        except trio.TooSlowError:
            self._metrics.asked(provider.name, "timeout")
            raise ProviderError(
                "provider_error", f"{name} did not answer in {ASK_TIMEOUT_S:.0f} s.", retryable=True
            ) from None
        except ContractError as error:
            wait = error.headers.get("Retry-After")
            if wait and wait.isdigit():
                self._pacing.told_to_wait(account, float(wait))
            self._metrics.asked(provider.name, "refused")
            raise
        except httpx.HTTPError as error:
            self._metrics.asked(provider.name, "unreachable")
            raise ProviderError(
                "provider_error",
                f"Could not reach {name} ({type(error).__name__}).",
                retryable=True,
            ) from None


OPEN = ("pending", "processing")


def _waits_for(tx: Mapping[str, Any]) -> int | None:
    """Since when the transaction waits for word from its provider (ms): a checkout still
    open, since it was made; a refund the provider never answered, since it was asked; None
    when it waits for nothing."""
    if tx["status"] in OPEN:
        return int(tx["createdAt"])
    unknown = [r["requestedAt"] for r in tx.get("refunds") or () if r.get("state") == "unknown"]
    return min(unknown) if unknown else None


def _account(target: Mapping[str, Any]) -> str:
    return account_of(target["provider"], target["mode"], target["credentials"], target["secrets"])
