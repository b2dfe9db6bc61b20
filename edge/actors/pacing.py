"""How fast the node asks a provider account what became of its payments (CONTRACT 4.3a).

Asking (sync, reconcile) must never hammer a provider: a node with 10,000 pending checkouts of
one merchant makes at most ``rate`` requests a second to that merchant's provider account, and
none while the provider said to wait (a 429's ``Retry-After``). Calls the node makes because a
buyer or a merchant is waiting (a checkout, a refund, a capture) are not paced here.

- An account is one set of provider credentials (``account_of``: a hash of the provider, the
  mode and its secret fields), so two projects on one account share its budget.
- Every request made while ``asking(account)`` is in force takes a slot first: the shared
  provider client's request hook (``hook``) waits for it, so an adapter's several reads of one
  sync (a session, its refunds, its disputes) each count.
- ``free_in`` tells a scheduler how long until the account has a slot, without taking one, so
  a queue of owed syncs moves on to other accounts instead of waiting in line.
"""

from __future__ import annotations

import contextvars
import hashlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import httpx
import trio

from edge.domain.rate import Buckets, Limit

_ASKING: contextvars.ContextVar[str | None] = contextvars.ContextVar("asking", default=None)


def account_of(provider: str, mode: str, credentials: Mapping[str, Any], secrets: list[str]) -> str:
    """The provider account a set of credentials names (never the secrets themselves)."""
    digest = hashlib.sha256(f"{provider}|{mode}".encode())
    for name in sorted(secrets):
        digest.update(b"\x00" + str(credentials.get(name) or "").encode())
    return f"{provider}:{digest.hexdigest()[:16]}"


class ProviderPacing:
    def __init__(self, rate_per_s: float, clock_s: Callable[[], float] = trio.current_time):
        burst = max(1, int(rate_per_s))
        self._buckets = Buckets(Limit(burst, burst / rate_per_s), max_keys=100_000)
        self._paused: dict[str, float] = {}  # account -> clock time it may be asked again
        self._clock_s = clock_s

    @contextmanager
    def asking(self, account: str) -> Iterator[None]:
        """Requests made in this block (by this task) are paced as ``account``'s."""
        token = _ASKING.set(account)
        try:
            yield
        finally:
            _ASKING.reset(token)

    def told_to_wait(self, account: str, seconds: float) -> None:
        """The provider answered 429 with ``Retry-After``: nothing more until then."""
        until = self._clock_s() + seconds
        self._paused[account] = max(self._paused.get(account, 0.0), until)

    def free_in(self, account: str) -> float:
        """Seconds until ``account`` may be asked (0: now), taking nothing."""
        now = self._clock_s()
        paused = max(0.0, self._paused.get(account, 0.0) - now)
        return max(paused, self._buckets.wait_s(account, now))

    async def slot(self, account: str) -> None:
        """Wait until ``account`` may be asked, and take the slot."""
        while True:
            paused = self._paused.get(account, 0.0) - self._clock_s()
            if paused > 0:
                await trio.sleep(paused)
                continue
            decision = self._buckets.take(account, self._clock_s())
            if decision.allowed:
                return
            await trio.sleep(decision.retry_after_s)

    async def hook(self, request: httpx.Request) -> None:
        """The provider client's request hook: a request made while asking takes a slot."""
        account = _ASKING.get()
        if account is not None:
            await self.slot(account)
