"""The one pure-ASGI layer in front of every path, fast routes and Quart alike. In order:

1. the request id: made here, answered as ``Cm-Request-Id`` on every answer;
2. ``Cm-Version``: a request pinning another version is answered ``400 unknown_version`` before
   any route sees it; every answer carries the version spoken;
3. security headers: ``X-Content-Type-Options: nosniff`` everywhere, the CSP on HTML answers;
4. CORS, for the browser endpoints only (edge.http.cors);
5. headers a handler adds to whatever answer goes out (the actor's ``RateLimit-*``, through
   ``scope[ANSWER_HEADERS]``);
6. ``Connection: close`` on an answer sent before the request's body was read (a 401, 404,
   405, 413 or 415 refusal, CONTRACT 8): the connection is closed after it, so a client reusing
   connections never waits on one whose unread body is still coming; and a body must come at
   ``body_min_rate`` bytes a second on average once ``body_grace_s`` have passed, else it is
   answered ``408 request_timeout`` and the connection closed (a slow body would hold a
   connection, and an actor's request slot, for as long as the sender likes);
7. the error envelope: a ContractError escaping a route is answered with its envelope and
   status (edge.http.errors.status_of); anything else is ``500 internal`` with the request id,
   logged once with its traceback, never a trace in the answer. A client that left
   (edge.http.asgi.Disconnected) is answered nothing.

Routes answer plain ASGI messages; this layer only adds headers to the ``http.response.start``
it passes on, so it costs a header scan and a list append per request. Every constant header is
kept encoded.
"""

from __future__ import annotations

import logging

import trio

from edge.activity import ActivityLog
from edge.actors.context import Load
from edge.domain.deadlines import body_deadline
from edge.domain.stalls import Stalls
from edge.errors import ContractError, Internal, RequestTimeout
from edge.http import cors
from edge.http.asgi import (
    WHOLE_BODY,
    ASGIApp,
    Disconnected,
    Headers,
    Message,
    Receive,
    Scope,
    Send,
    encode,
)
from edge.http.asgi import answer as send_answer
from edge.http.errors import status_of
from edge.http.jsonio import API_VERSION, dumps, unknown_version
from edge.http.request_ids import new_request_id
from edge.metrics import Metrics

log = logging.getLogger("edge.http")
# one line a request: method, path, status, duration, request id (the one a 500 answer names)
access = logging.getLogger("edge.access")

ANSWER_HEADERS = "edge.answer_headers"
"""Scope key: ``{name: value}`` a handler adds to the answer, success or error."""

# HTML answers (dashboard, demo pages) run only the node's own files: no inline script or style,
# no framing, no plugins.
HTML_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

_VERSION = API_VERSION.encode()
_COMMON = ((b"cm-version", _VERSION), (b"x-content-type-options", b"nosniff"))
_CSP = (b"content-security-policy", HTML_CSP.encode())
_CLOSE = (b"connection", b"close")


class Middleware:
    """Wraps ``app`` (the router of fast routes and Quart) with the concerns above."""

    def __init__(
        self,
        app: ASGIApp,
        body_min_rate: float = 1024.0,
        body_grace_s: float = 2.0,
        load: Load | None = None,
        metrics: Metrics | None = None,
        activity: ActivityLog | None = None,
        stalls: Stalls | None = None,
    ):
        self.app = app
        # the node's own pauses, which a body's pace never pays for (edge.domain.stalls)
        self.stalls = stalls or Stalls(trio.current_time())
        self.body_min_rate = body_min_rate
        self.body_grace_s = body_grace_s
        self.load = load or Load()
        self.metrics = metrics or Metrics()
        self.activity = activity

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan
            await self.app(scope, receive, send)
            return
        self.load.begun()
        request_id = new_request_id()
        began = trio.current_time()
        status: list[int] = []  # the answer's, noted as it starts (by ``_http``)
        try:
            await self._http(scope, receive, send, request_id, status)
        finally:
            seconds = trio.current_time() - began
            code = status[0] if status else 0
            self.metrics.request(scope["path"], code, seconds)
            if self.activity is not None:  # for edge logs --follow
                self.activity.request(
                    scope["method"], scope["path"], code, seconds, request_id.decode()
                )
            if access.isEnabledFor(logging.INFO):
                _access_line(scope, code, seconds, request_id)

    async def _http(
        self, scope: Scope, receive: Receive, send: Send, request_id: bytes, status: list[int]
    ) -> None:
        origin = preflight = body_unread = False
        version: bytes | None = None
        for name, value in scope["headers"]:
            if name == b"origin":
                origin = True
            elif name == b"cm-version":
                if version is None:  # the first of repeated lines, as Werkzeug reads them
                    version = value
            elif name == b"access-control-request-method":
                preflight = scope["method"] == "OPTIONS"
            elif name == b"content-length":
                body_unread = value != b"0"
            elif name == b"transfer-encoding":
                body_unread = True
        if body_unread and WHOLE_BODY in scope.get("extensions", ()):
            body_unread = False  # the server read it all: nothing to pace, nothing left unread
        with_cors = cors.applies(scope["path"], origin=origin)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(message["status"])
                headers = _with_headers(message["headers"], request_id, scope, with_cors, preflight)
                if body_unread:
                    headers.append(_CLOSE)
                message["headers"] = headers
            await send(message)

        if body_unread:  # only requests with a body pay for the watch
            receive_body = receive
            begun = trio.current_time()
            received = 0

            async def receive_noting_the_end() -> Message:
                nonlocal body_unread, received
                if not body_unread:
                    # the body has been read: what a framework waits for now is the client's
                    # disconnect, for as long as the handler works (no body pace to keep)
                    return await receive_body()
                paced = body_deadline(begun, received, self.body_min_rate, self.body_grace_s)
                stalls = self.stalls
                while True:
                    due = paced + stalls.since(begun, trio.current_time())
                    with trio.move_on_at(due) as late:
                        message = await receive_body()
                    if not late.cancelled_caught:
                        break
                    if trio.current_time() >= paced + stalls.since(begun, trio.current_time()):
                        raise RequestTimeout(
                            "request_timeout",
                            f"The body came slower than {self.body_min_rate:.0f} bytes a second.",
                        )
                received += len(message.get("body", b""))
                if message["type"] != "http.request" or not message.get("more_body", False):
                    body_unread = False  # read to its end, or nothing more will come
                return message

            receive = receive_noting_the_end

        try:
            if version is not None and version != _VERSION:
                raise unknown_version()
            await self.app(scope, receive, send_with_headers)
        except BaseException as exc:
            failure = _leaf(exc)
            if isinstance(failure, Disconnected):
                return  # nobody to answer
            if not isinstance(failure, Exception):
                raise  # cancellation, KeyboardInterrupt: not a request's fault
            if status:  # the answer is under way: nothing left to tell the client
                _log_fault(scope, request_id, failure)
                return
            await _fail(failure, scope, request_id, send_with_headers)


def _access_line(scope: Scope, code: int, seconds: float, request_id: bytes) -> None:
    ms, rid = round(seconds * 1000, 1), request_id.decode()
    access.info(
        "%s %s %s %sms %s",
        scope["method"],
        scope["path"],
        code,
        ms,
        rid,
        extra={
            "method": scope["method"],
            "path": scope["path"],
            "status": code,
            "durationMs": ms,
            "requestId": rid,
        },
    )


def _with_headers(
    answer: Headers, request_id: bytes, scope: Scope, with_cors: bool, preflight: bool
) -> Headers:
    """The route's headers and ours. The route's list is extended in place: every route makes a
    new one per answer."""
    headers = answer if type(answer) is list else list(answer)
    for name, value in headers:
        if name == b"content-type":
            if value.startswith(b"text/html"):
                headers.append(_CSP)
            break
    if with_cors:
        headers.extend(cors.headers(headers, preflight))
    extra = scope.get(ANSWER_HEADERS)
    if extra:
        # the answer's own win: a 429's RateLimit-* are its bucket's, not an earlier one's
        named = {name for name, _ in headers}
        headers.extend(pair for pair in encode(extra) if pair[0] not in named)
    headers.append((b"cm-request-id", request_id))
    headers.extend(_COMMON)
    return headers


async def _fail(failure: Exception, scope: Scope, request_id: bytes, send: Send) -> None:
    if not isinstance(failure, ContractError):
        _log_fault(scope, request_id, failure)
        failure = Internal(
            "internal",
            "An unexpected fault; it has been logged. Quote the request id when reporting it.",
        )
    if isinstance(failure, Internal):  # the request id is what gets quoted
        failure.extra.setdefault("requestId", request_id.decode())
    body = dumps(failure.body())
    head = scope["method"] == "HEAD"
    await send_answer(send, status_of(failure), body, encode(failure.headers), head=head)


def _leaf(exc: BaseException) -> BaseException:
    """The one error a nursery (Quart-Trio runs each request in one) wrapped in a group."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def _log_fault(scope: Scope, request_id: bytes, exc: BaseException) -> None:
    log.error(
        "unexpected fault in %s %s (request %s)",
        scope["method"],
        scope["path"],
        request_id.decode(),
        exc_info=exc,
    )
