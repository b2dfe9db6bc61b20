"""``Idempotency-Key`` on checkout (CONTRACT 4.2) and on refunds, kept in the store for 24
hours. Refunds' keys are a namespace of their own: a checkout needs no key of the project's,
so a buyer who guessed a merchant's refund key could otherwise block that refund.

- The same key with the same body returns the first answer again (with
  ``Idempotent-Replayed: true``), without a second provider call or a second transaction.
- The same key with another body is ``409 idempotency_conflict``.
- A request that arrives while the first is still at the provider waits for its answer, so two
  concurrent requests with one key create one transaction.
- Answers that never reached a transaction (validation errors) are not kept: the caller fixes
  the request and tries again with the same key.
- The answer is written in the same commit as the transaction's outcome, so a crash can never
  leave a transaction without its remembered answer.
- The key is kept from the first request on, in the same commit as its pending transaction
  (``begin``): a request that was cut short (the node crashed or lost the project's lease
  while the provider was being asked) is taken up again by the retry, for the same transaction
  (``Resume``; the provider call is idempotent by the transaction id), never as a second one.
- A refund's answer is kept in the commit that records the refund and queues its provider call
  (``keep``): a merchant retrying a refund whose answer it lost gets the first refund, and the
  provider is asked once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from edge.actors import messages as m
from edge.actors.project.ledger import Ledger, Reply
from edge.errors import ERRORS, Conflict, ContractError, ProviderError
from edge.store import keys
from edge.store.codec import pack
from edge.store.engine import Op

KEEP_MS = 24 * 3600 * 1000
Keyed = m.StartCheckout | m.RefundTx  # the requests that may carry a key
PURGE_BATCH = 50
REPLAYED = {"Idempotent-Replayed": "true"}


def _key_hash(msg: Keyed) -> str:
    assert msg.idempotency_key is not None
    space = "refund\x00" if isinstance(msg, m.RefundTx) else ""  # checkouts' as they always were
    if msg.mode == "test":
        # each mode's keys are its own: a merchant who tried "order-42" in test mode uses it
        # live the same day (live keys hash as they always did)
        space += "test\x00"
    return hashlib.sha256((space + msg.idempotency_key).encode()).hexdigest()


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


@dataclass(frozen=True)
class Resume:
    """The key's first request made ``tx_id`` but was cut short before its answer."""

    tx_id: str


class IdempotencyKeys:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self._in_flight: dict[str, tuple[str, list[Reply]]] = {}

    async def answer_known(self, msg: Keyed, reply: Reply) -> bool | Resume:
        """Answer from an earlier request with this key, if there is one; True if answered,
        ``Resume`` when that request made its transaction but never answered."""
        key = _key_hash(msg)
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
        if "answer" not in stored:
            return Resume(stored["txId"])
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

    def begin(self, msg: m.StartCheckout, tx_id: str, reply: Reply) -> tuple[str, list[Op]]:
        """Mark the key in flight: its hash (kept on the transaction), and the writes that keep
        it, pending, in the transaction's own commit."""
        key = self._in_flight_now(msg, reply)
        pending = {
            "bodyHash": msg.body_hash,
            "txId": tx_id,
            "expiresAt": self.ledger.now_ms() + KEEP_MS,
        }
        return key, self._kept_ops(key, pending)

    def resume(self, msg: m.StartCheckout, reply: Reply) -> Reply:
        """Take up a cut-short request's key: this request waits for its answer, and so does
        any other that comes meanwhile; the reply that answers them all."""
        return self.fan_out(self._in_flight_now(msg, reply))

    def _in_flight_now(self, msg: Keyed, reply: Reply) -> str:
        """Requests with the key wait for this one's answer from now on; the key's hash."""
        key = _key_hash(msg)
        self._in_flight[key] = (msg.body_hash, [reply])
        return key

    def _kept_ops(self, key: str, record: dict[str, Any]) -> list[Op]:
        pid, expires = self.ledger.project_id, record["expiresAt"]
        return [
            ("records", keys.named(pid, keys.IDEMPOTENCY, "", key), pack(record)),
            ("records", keys.named(pid, keys.IDEMPOTENCY_EXPIRY, f"{expires:016d}", key), b""),
        ]

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
        record = _answered(tx["idempotencyBodyHash"], tx["id"], answer, now)
        # the purge first: the key's own expired record, if read there, is not deleted after it
        return await self._purged(now) + self._kept_ops(key, record)

    async def keep(
        self, msg: m.RefundTx, reply: Reply, tx_id: str, answer: dict[str, Any]
    ) -> tuple[list[Op], Reply]:
        """The writes that keep ``answer`` under the request's key, for the commit that makes
        what it answers, and the reply that answers this request and any other with the key
        that comes before that commit is durable."""
        now = self.ledger.now_ms()
        purged = await self._purged(now)
        key = self._in_flight_now(msg, reply)
        record = _answered(msg.body_hash, tx_id, answer, now)
        # the purge first: this key's expired record is deleted before it is written anew
        return purged + self._kept_ops(key, record), self.fan_out(key)

    async def _purged(self, now: int) -> list[Op]:
        """Ops that forget the oldest keys past their 24 hours (a batch at a time)."""
        pid = self.ledger.project_id
        ops: list[Op] = []
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


def _answered(
    body_hash: str, tx_id: str, answer: dict[str, Any] | ContractError, now: int
) -> dict[str, Any]:
    """What a key keeps once its request is answered: the answer, for 24 hours."""
    if isinstance(answer, ContractError):
        kind, kept = type(answer).__name__, answer.body()
    else:
        kind, kept = None, answer
    return {
        "bodyHash": body_hash,
        "txId": tx_id,
        "errorKind": kind,
        "answer": kept,
        "expiresAt": now + KEEP_MS,
    }
