"""How a simulator fails the way a real provider fails: it acts and then loses its answer, and
its webhooks go missing, come late or arrive badly signed.

Real APIs do all of these. A request can succeed at the provider while its answer never reaches
the caller: the answer comes after the caller's timeout, the connection drops half-way, or a
proxy in front of the provider answers 5xx after the provider acted (Stripe: "if a connection
error occurs ... the request may or may not have succeeded", docs.stripe.com/idempotency;
PayPal: "if the request fails ... retry with the same PayPal-Request-Id",
developer.paypal.com/api/rest/reference/idempotency). Webhooks are lost to a wrong secret, a
wrong address or a node that is down past the provider's retries (Stripe retries for up to three
days, docs.stripe.com/webhooks#retries; BTCPay a few times over about an hour, PROVIDERS.md).

- ``AnswerFaults`` wraps a simulator's ASGI app: the request is carried out in full, then its
  answer is lost as asked (``LOST_LATE``, ``LOST_DROPPED``, ``LOST_5XX``).
- ``WebhookFaults`` is what a simulator's sender asks before each delivery: send it, drop it,
  hold it until ``release``, or sign it with a wrong secret.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

# How an answer is lost once the provider has acted.
LOST_LATE = "late"  # answered only after the caller gave up (the connection is held open)
LOST_DROPPED = "dropped"  # the connection closes half-way through the answer
LOST_5XX = "5xx"  # a gateway in front answers 502 although the request went through
LOSSES = (LOST_LATE, LOST_DROPPED, LOST_5XX)

LATE_S = 3600.0  # longer than any caller waits

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


@dataclass
class _Loss:
    method: str
    path: re.Pattern[str]
    how: str
    times: int


class AnswerFaults:
    """Answers to lose, each after the request was carried out.

    ``lose("POST", r"/adjustments", LOST_DROPPED)`` makes the next matching request act and
    then drop its connection; ``times`` matching requests are affected, in order. ``lost``
    counts the answers lost so far (a test's proof that the fault happened)."""

    def __init__(self) -> None:
        self._losses: list[_Loss] = []
        self.lost = 0

    def lose(self, method: str, path: str, how: str = LOST_DROPPED, times: int = 1) -> None:
        """Lose the answers of the next ``times`` requests of ``method`` whose path matches the
        regular expression ``path`` (from its start)."""
        if how not in LOSSES:
            raise ValueError(f"unknown loss {how!r}: one of {LOSSES}")
        self._losses.append(_Loss(method.upper(), re.compile(path), how, times))

    def clear(self) -> None:
        self._losses.clear()

    def _take(self, scope: Scope) -> str | None:
        for loss in self._losses:
            if loss.method == scope.get("method") and loss.path.match(scope.get("path", "")):
                loss.times -= 1
                if loss.times <= 0:
                    self._losses.remove(loss)
                return loss.how
        return None

    def wrap(self, app: App) -> App:
        """``app`` with its answers lost as asked."""

        async def faulty(scope: Scope, receive: Receive, send: Send) -> None:
            how = self._take(scope) if scope.get("type") == "http" else None
            if how is None:
                await app(scope, receive, send)
                return
            answer: list[dict[str, Any]] = []

            async def keep(message: dict[str, Any]) -> None:
                answer.append(message)

            await app(scope, receive, keep)  # the provider acts in full
            self.lost += 1
            await _lose(how, answer, send)

        return faulty


async def _lose(how: str, answer: list[dict[str, Any]], send: Send) -> None:
    if how == LOST_5XX:
        body = b"<html><body><h1>502 Bad Gateway</h1></body></html>"
        await send(
            {
                "type": "http.response.start",
                "status": 502,
                "headers": [
                    (b"content-type", b"text/html"),
                    (b"content-length", b"%d" % len(body)),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})
        return
    if how == LOST_LATE:
        await trio.sleep(LATE_S)
    start = next(m for m in answer if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in answer if m["type"] == "http.response.body")
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"content-length"]
    headers.append((b"content-length", b"%d" % (len(body) + 64)))
    await send({"type": "http.response.start", "status": start["status"], "headers": headers})
    await send({"type": "http.response.body", "body": body[: len(body) // 2], "more_body": True})
    # the server dies mid-answer: the caller reads a body cut short
    raise ConnectionAbortedError("simulated: the connection dropped half-way through the answer")


# What a sender does with one delivery.
SEND = "send"
DROP = "drop"  # never sent (a wrong address, a firewall, the provider's retries ran out)
HOLD = "hold"  # sent only at ``release`` (late)
MISSIGN = "missign"  # sent signed with a secret the receiver does not know
VERDICTS = (DROP, HOLD, MISSIGN)


@dataclass
class WebhookFaults:
    """Asked by a simulator's sender before each delivery (``verdict``).

    ``drop()`` with no arguments drops every delivery from now on; ``types`` limits a rule to
    those provider event types and ``times`` to that many deliveries. Held deliveries wait in
    ``held`` until the simulator's ``release`` sends them."""

    rules: list[tuple[str, frozenset[str], int | None]] = field(default_factory=list)
    dropped: int = 0
    missigned: int = 0

    def drop(self, types: tuple[str, ...] = (), times: int | None = None) -> None:
        self.rules.append((DROP, frozenset(types), times))

    def hold(self, types: tuple[str, ...] = (), times: int | None = None) -> None:
        self.rules.append((HOLD, frozenset(types), times))

    def missign(self, types: tuple[str, ...] = (), times: int | None = None) -> None:
        self.rules.append((MISSIGN, frozenset(types), times))

    def clear(self) -> None:
        self.rules.clear()

    def verdict(self, event_type: str) -> str:
        """What to do with the next delivery of ``event_type``."""
        for n, (what, types, times) in enumerate(self.rules):
            if types and event_type not in types:
                continue
            if times is not None:
                if times <= 1:
                    del self.rules[n]
                else:
                    self.rules[n] = (what, types, times - 1)
            if what == DROP:
                self.dropped += 1
            elif what == MISSIGN:
                self.missigned += 1
            return what
        return SEND


WRONG_SECRET = "whsec_simulated_wrong_secret_0000000000"  # signs a ``MISSIGN`` delivery
