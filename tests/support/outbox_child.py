"""A process that owes a follow-up, for the SIGKILL test (tests/e2e/test_followup_durability.py).

``commit DATA LEDGER``: commits a follow-up to the outbox, says ``committed``, then runs a worker
whose lookup of the transaction never returns, so the process is between the commit and the
attempt when it is killed.
``resume DATA LEDGER``: runs a worker on the same store until the entry is settled, then prints
the entry and its attempts as JSON. The provider's "capture" appends one line to LEDGER and
fsyncs it: the outside world, which must see the capture exactly once.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import trio

from edge.actors.followups import AttemptWatch, FollowUpWorker
from edge.providers.base import FollowUpRequest, FollowUpResult, Provider
from edge.store import outbox
from edge.store.lmdb.store import open_store
from edge.store.writer import open_writer

PROJECT = "prj_0000000000000000"
TX = "tx_01JD0000000000000000000001"


@dataclass(frozen=True)
class Ledgered(Provider):
    ledger: str = ""

    async def follow_up(self, request: FollowUpRequest) -> FollowUpResult:
        line = f"{request.follow_up.action} {request.tx['id']}\n"
        await trio.to_thread.run_sync(_append, self.ledger, line)
        return FollowUpResult(detail="captured")


def _append(path: str, line: str) -> None:
    with open(path, "a") as out:
        out.write(line)
        out.flush()
        os.fsync(out.fileno())


async def main(phase: str, data: Path, ledger: str) -> None:
    provider = Ledgered("wallet", "wallet", "approval", "Wallet", "wallet.svg", ledger=ledger)

    class Projects:
        """The actors' side: every transaction pending; in the commit phase nobody answers."""

        async def target(
            self, project_id: str, tx_id: str, mode: str, action: str
        ) -> Mapping[str, Any] | None:
            if phase == "commit":
                await trio.sleep_forever()
            return {"tx": {"id": tx_id, "status": "pending"}, "credentials": {}}

        async def report(
            self, project_id: str, provider: str, mode: str, result: FollowUpResult
        ) -> None:
            pass

        async def expire(self, project_id: str, tx_id: str, *, unanswered: bool = False) -> str:
            return "expired"

        async def refund_outcome(self, *told: Any) -> None:
            pass

    with open_store(data, 2**26) as store:
        async with open_writer(store) as writer, httpx.AsyncClient() as http:
            watch = AttemptWatch()
            worker = FollowUpWorker(
                store, writer, Projects(), http, {"wallet": provider}, lambda: 0, watch
            )
            if phase == "commit":
                ops = outbox.enqueue_ops(PROJECT, TX, "wallet", "live", "capture", {}, 0)
                await writer.write(ops)
                print("committed", ops[0][1][len(outbox.ENTRY) :].decode(), flush=True)
                await worker.run()
                return
            async with trio.open_nursery() as nursery:
                await nursery.start(worker.run)
                while True:  # looked at again at each attempt the worker records
                    with watch.expecting(TX) as attempted:
                        if await outbox.next_due_ms(store) is None:
                            break
                        await attempted.wait()
                nursery.cancel_scope.cancel()
            entries = []
            for key, _ in await store.scan(outbox.ENTRY, db=outbox.DB):
                unpacked = await outbox.entry(store, key[len(outbox.ENTRY) :].decode())
                if unpacked is not None:
                    attempts = await outbox.attempts(store, unpacked["id"])
                    entries.append({"entry": unpacked, "attempts": attempts})
            print(json.dumps(entries), flush=True)


if __name__ == "__main__":
    trio.run(main, sys.argv[1], Path(sys.argv[2]), sys.argv[3])
