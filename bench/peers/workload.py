"""The load every server gets, the node and each peer alike: pool files for ``wrk`` with
``bench/requests.lua`` (one request a line, sent in order), made once for a run and sent to
each server of a pair.

- *Webhooks*: Stripe-signed ``checkout.session.completed`` events (the Stripe simulator's own,
  ``bench.events``), each naming one of the shop's orders with its amount and currency. Nine in
  ten have a fresh event id; every tenth is a redelivery, the same event (id and body) as one
  sent shortly before, as Stripe retries one whose answer it did not get.
- *Status reads*: ``GET /status/{project}/{tx}`` with the project's key, over every order.

The check after a run: the events stored must be the distinct event ids acknowledged. ``wrk``
counts the answers it read, not which, and up to ``CONNECTIONS`` requests are in flight when it
stops: the answered lines are among the first ``requests + CONNECTIONS`` of the pool and all but
``CONNECTIONS`` of the first ``requests``, which bounds the count either side
(``bench.peers.measure``).
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass
from pathlib import Path

from bench import events, shop

REDELIVERED_EVERY = 10  # every tenth delivery repeats an earlier one: 10 %
REDELIVERY_WINDOW = 200  # ... one of the last 200 fresh ones
_EVENT_ID = re.compile(rb'"id":"(evt_[0-9a-f]{24})"')


@dataclass
class Pool:
    path: Path
    event_ids: list[str]  # the event id of each line (empty for status reads)

    def distinct(self, lines: int) -> int:
        """Distinct event ids in the first ``lines`` lines sent (the pool again if wrk cycled)."""
        if lines <= len(self.event_ids):
            return len(set(self.event_ids[:lines]))
        return len(set(self.event_ids))  # nothing new after the first pass


def checkout_bodies(bench_shop: shop.StripeShop) -> list[str]:
    """One ``checkout.session.completed`` template per order (``bench.events``' placeholder
    for the event id)."""
    bodies = [
        body
        for body in events.templates(bench_shop.txs)
        if json.loads(body)["type"] == "checkout.session.completed"
    ]
    assert len(bodies) == len(bench_shop.txs), "one checkout.session.completed per order"
    return bodies


def webhook_pool(path: Path, bench_shop: shop.StripeShop, count: int, seed: int) -> Pool:
    """``count`` deliveries signed now, a tenth of them redeliveries."""
    rng = random.Random(seed)
    fresh = events.deliveries(checkout_bodies(bench_shop), count, shop.WEBHOOK_SECRET)
    sent: list[tuple[str, bytes, str]] = []
    ids: list[str] = []
    route = bench_shop.webhook_path.encode()
    with open(path, "wb") as out:
        for i in range(count):
            if i % REDELIVERED_EVERY == REDELIVERED_EVERY - 1 and sent:
                signature, body, event_id = rng.choice(sent[-REDELIVERY_WINDOW:])
            else:
                signature, body = next(fresh)
                found = _EVENT_ID.search(body)
                assert found is not None, "a delivery without an event id"
                event_id = found.group(1).decode()
                sent.append((signature, body, event_id))
            ids.append(event_id)
            out.write(b"POST\t%s\t%s\tStripe-Signature: %s\n" % (route, body, signature.encode()))
    return Pool(path, ids)


def status_pool(path: Path, bench_shop: shop.StripeShop) -> Pool:
    with open(path, "w") as out:
        for i in range(len(bench_shop.txs)):
            out.write(
                f"GET\t{bench_shop.status_path(i)}\t\tAuthorization: Bearer {bench_shop.test_key}\n"
            )
    return Pool(path, [])
