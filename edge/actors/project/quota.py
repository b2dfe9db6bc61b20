"""The monthly event quota (CONTRACT 8): counting stored webhook events, and the usage answer.

Being over quota never drops an event (a payment confirmation is always stored); it only
refuses new live checkouts. Counts include events whose commit is still pending.
"""

from __future__ import annotations

from typing import Any

from edge.actors import messages as m
from edge.actors.project.ledger import Ledger, Reply
from edge.domain.quota import Tier, over_quota, period_end_ms, period_of
from edge.domain.timefmt import iso_ms
from edge.errors import QuotaExceeded
from edge.store import keys
from edge.store.codec import pack, unpack
from edge.store.engine import Op


class Quota:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._counts: dict[tuple[str, str], int] = {}
        ledger.on_reload(self._counts.clear)

    async def used(self, period: str, mode: str) -> int:
        """Events counted in ``period`` for ``mode``, including ones whose commit is pending."""
        key = (period, mode)
        if key not in self._counts:
            raw = await self.ledger.ctx.store.get_raw(self._key(period, mode))
            self._counts[key] = unpack(raw)["count"] if raw else 0
        return self._counts[key]

    async def count(self, period: str, mode: str) -> Op:
        """The write that counts one more event."""
        count = await self.used(period, mode) + 1
        self._counts[(period, mode)] = count
        return ("records", self._key(period, mode), pack({"count": count}))

    async def require_live_allowance(self) -> None:
        """Raise ``quota_exceeded`` once the live events of this period are used up."""
        period = period_of(self.ledger.now_ms())
        if over_quota(self._tier(), False, await self.used(period, "live")):
            raise QuotaExceeded(
                "quota_exceeded",
                "This project has used its live events for the month; upgrade its tier or wait "
                "for the next period.",
                extra={"resetsAt": iso_ms(period_end_ms(period))},
            )

    async def get_usage(self, msg: m.GetUsage, reply: Reply) -> None:
        tier = self._tier()
        period = period_of(self.ledger.now_ms())
        usage: dict[str, Any] = {
            "period": period,
            "tier": tier.name,
            "resetsAt": iso_ms(period_end_ms(period)),
        }
        for mode, allowance in (("live", tier.live_events), ("test", tier.test_events)):
            used = await self.used(period, mode)
            usage[mode] = {
                "used": used,
                "limit": allowance,
                "left": max(0, allowance - used),
                "overQuota": over_quota(tier, mode == "test", used),
            }
        self.ledger.reply_read(reply, usage)

    def _tier(self) -> Tier:
        return self.ledger.ctx.settings.tiers[self.ledger.project["tier"]]

    def _key(self, period: str, mode: str) -> bytes:
        return keys.named(self.ledger.project_id, keys.QUOTA, period, mode)
