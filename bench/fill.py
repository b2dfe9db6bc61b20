"""Write events straight into a node's store with edge's own writer, keys and codec: the store
of the start-up figure (1,000,000 events through HTTP would take far longer than the bench).

The records have the shape the webhook intake stores (``edge.actors.intake``): an event, its
dedup key and, for matched events, its transaction-history key, plus the quota counter. Run on
a stopped node's data dir: ``python -m bench.fill DATA_DIR PROJECT_ID TX_ID COUNT``.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import trio

from edge.domain import ids
from edge.domain.quota import period_of
from edge.node import STORE_DIR
from edge.store import keys
from edge.store.codec import pack
from edge.store.engine import Op
from edge.store.lmdb.store import open_store
from edge.store.writer import StoreWriter

EVENTS_PER_COMMIT = 5000
PROVIDER = "stripe"


def event_ops(project_id: str, tx_id: str, index: int, now_ms: int) -> list[Op]:
    provider_event_id = f"evt_fill{index:020d}"
    body = json.dumps(
        {
            "id": provider_event_id,
            "object": "event",
            "type": "charge.refunded",
            "livemode": False,
            "data": {
                "object": {
                    "object": "charge",
                    "amount": 1999,
                    "currency": "eur",
                    "metadata": {"txId": tx_id},
                }
            },
        },
        separators=(",", ":"),
    ).encode()
    event = {
        "id": ids.new_evt_id(),
        "projectId": project_id,
        "provider": PROVIDER,
        "providerEventId": provider_event_id,
        "providerType": "charge.refunded",
        "type": "payment.refunded",
        "txId": tx_id,
        "subscriptionId": None,
        "status": "refunded",
        "amount": 1999,
        "currency": "EUR",
        "isTest": True,
        "customerRef": None,
        "metadata": {"txId": tx_id},
        "occurredAt": now_ms,
        "receivedAt": now_ms,
        "bodySha256": hashlib.sha256(body).hexdigest(),
    }
    event_id = str(event["id"])
    return [
        ("records", keys.record(project_id, keys.EVENT, event_id), pack(event)),
        ("records", keys.history(project_id, tx_id, event_id), b""),
        (
            "records",
            keys.named(project_id, keys.DEDUP, PROVIDER, provider_event_id),
            event_id.encode(),
        ),
    ]


async def fill(data_dir: Path, project_id: str, tx_id: str, count: int) -> None:
    now_ms = int(time.time() * 1000)
    with open_store(data_dir / STORE_DIR) as store:
        writer = StoreWriter(store)
        async with trio.open_nursery() as nursery:
            await nursery.start(writer.run)
            for start in range(0, count, EVENTS_PER_COMMIT):
                ops: list[Op] = []
                for index in range(start, min(count, start + EVENTS_PER_COMMIT)):
                    ops += event_ops(project_id, tx_id, index, now_ms)
                await writer.write(ops)
            quota = keys.named(project_id, keys.QUOTA, period_of(now_ms), "test")
            await writer.write([("records", quota, pack({"count": count}))])
            writer.close()


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit("usage: python -m bench.fill DATA_DIR PROJECT_ID TX_ID COUNT")
    trio.run(fill, Path(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]))
