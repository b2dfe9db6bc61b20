"""``Idempotency-Key`` on checkout (CONTRACT 4.2), kept in the store for 24 hours.

- The same key with the same body returns the first answer again (with
  ``Idempotent-Replayed: true``), without a second provider call or a second transaction.
- The same key with another body is ``409 idempotency_conflict``.
- A request that arrives while the first is still at the provider waits for its answer, so two
  concurrent requests with one key create one transaction.
- Answers that never reached a transaction (validation errors) are not kept: the caller fixes
  the request and tries again with the same key.
- The answer is written in the same commit as the transaction's outcome, so a crash can never
  leave a transaction without its remembered answer.
"""

from __future__ import annotations

import hashlib
from typing import Any

from edge.actors import messages as m
from edge.actors.project.ledger import Ledger, Reply
from edge.errors import ERRORS, Conflict, ContractError, ProviderError
from edge.store import keys
from edge.store.codec import pack
from edge.store.writer import Op

KEEP_MS = 24 * 3600 * 1000
PURGE_BATCH = 50
REPLAYED = {"Idempotent-Replayed": "true"}


def _key_hash(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _conflict() -> ContractError:
    return Conflict(
        "idempotency_conflict",
        "This Idempotency-Key was used with a different body; use a new key for a new request.",
        field="Idempotency-Key",
    )


def _replayed(reply: Reply) -> Reply:
    def send(value: Any) -> None:
        if isinstance(value, ContractError):
            reply(value.with_headers(REPLAYED))
        else:
            reply(m.Answer(value, dict(REPLAYED)))

    return send


class IdempotencyKeys:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._in_flight: dict[str, tuple[str, list[Reply]]] = {}

    async def answer_known(self, msg: m.StartCheckout, reply: Reply) -> bool:
        """Answer from an earlier request with this key, if there is one; True if answered."""
        assert msg.idempotency_key is not None
        key = _key_hash(msg.idempotency_key)
        in_flight = self._in_flight.get(key)
        if in_flight is not None:
            body_hash, waiters = in_flight
            if body_hash != msg.body_hash:
                raise _conflict()
            waiters.append(_replayed(reply))
            return True
        stored = await self.ledger.ctx.store.get(
            keys.named(self.ledger.project_id, keys.IDEMPOTENCY, "", key)
        )
        if stored is None or stored["expiresAt"] <= self.ledger.now_ms():
            return False
        if stored["bodyHash"] != msg.body_hash:
            raise _conflict()
        answer = stored["answer"]
        if "error" not in answer:
            self.ledger.reply_read(reply, m.Answer(answer, dict(REPLAYED)))
        else:
            error = answer["error"]
            # Records written before errors had names kept only the status; 502 was the one kept.
            kind = ERRORS.get(stored.get("errorKind", ""), ProviderError)
            self.ledger.reply_read(
                reply,
                kind(
                    error["code"],
                    error["message"],
                    retryable=error.get("retryable", False),
                    headers=dict(REPLAYED),
                ),
            )
        return True

    def begin(self, msg: m.StartCheckout, reply: Reply) -> str:
        """Mark the key in flight; returns its hash (kept on the transaction)."""
        assert msg.idempotency_key is not None
        key = _key_hash(msg.idempotency_key)
        self._in_flight[key] = (msg.body_hash, [reply])
        return key

    def fan_out(self, key: str) -> Reply:
        """The reply of the first request: it answers every request that waited on it."""

        def send(value: Any) -> None:
            _, waiters = self._in_flight.pop(key, ("", []))
            for waiter in waiters:
                waiter(value)

        return send

    async def remember(
        self, tx: dict[str, Any], answer: dict[str, Any] | ContractError
    ) -> list[Op]:
        """Ops that keep the answer of ``tx``'s checkout for 24 hours, and purge old keys."""
        # From the transaction, not from memory: an actor restarted meanwhile still remembers.
        key = tx.get("idempotencyKey")
        if key is None:
            return []
        now = self.ledger.now_ms()
        expires = now + KEEP_MS
        record = {
            "bodyHash": tx["idempotencyBodyHash"],
            "errorKind": type(answer).__name__ if isinstance(answer, ContractError) else None,
            "answer": answer.body() if isinstance(answer, ContractError) else answer,
            "expiresAt": expires,
        }
        pid = self.ledger.project_id
        ops: list[Op] = [
            ("records", keys.named(pid, keys.IDEMPOTENCY, "", key), pack(record)),
            ("records", keys.named(pid, keys.IDEMPOTENCY_EXPIRY, f"{expires:016d}", key), b""),
        ]
        for index_key, _ in await self.ledger.ctx.store.scan(
            keys.prefix(pid, keys.IDEMPOTENCY_EXPIRY), limit=PURGE_BATCH
        ):
            expiry, _, old = index_key[len(keys.prefix(pid, keys.IDEMPOTENCY_EXPIRY)) :].partition(
                b"\x00"
            )
            if int(expiry) > now:
                break
            ops.append(("records", index_key, None))
            record_key = keys.named(pid, keys.IDEMPOTENCY, "", old.decode())
            kept = await self.ledger.ctx.store.get(record_key)
            if kept is not None and kept["expiresAt"] <= now:  # not a key used again since
                ops.append(("records", record_key, None))
        return ops
