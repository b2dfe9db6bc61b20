"""Serving HTTP: Hypercorn's trio worker, with the node's own hold on connections (CONTRACT 8).

``hypercorn.trio.run.worker_serve`` builds its listeners itself, so the node serves its bound
sockets here, the same way, with three changes:

- a ``ConnectionGate`` shared by every listener: at most ``max_connections`` client connections
  at once; one more is accepted and closed at once (refused at accept, rather than slowing the
  connections held), and the node accepts again as soon as one closes;
- each connection runs inside a cancel scope whose deadline follows its ``RequestClock``
  (edge.domain.deadlines): ``keep_alive_s`` while idle, ``header_timeout_s`` from a request's
  first byte until its headers are complete (answered ``408`` when cut there), none while a
  request is handled. Hypercorn's own idle timer cannot do the second: it runs from the moment
  the connection fell idle, whatever bytes come, so it would cut a client that paused and then
  sent its headers well within their time. It only closes idle connections at shutdown here.
- slow bodies are the middleware's (edge.http.middleware), which alone knows where a body ends.

The clock learns of bytes from ``_Watched`` (the socket stream, one check per read) and of
requests from Hypercorn's own ``Updated`` events (``_Connection.protocol_send``). A request costs
two deadline changes (idle, then busy; a third only for headers that come in parts) and no task:
Hypercorn's own idle timer, a task started each time a connection falls idle and cancelled when
a request comes, is not run. Its one other duty, closing idle connections when the server
stops, is ``IdleConnections``'.

An answer's head (status line and headers) is written with what follows it, its body or its end,
in one write rather than two or three: the bytes of one answer go out in one segment.
"""

from __future__ import annotations

import errno
import logging
import math
import socket
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from typing import Any

import h11
import trio
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.config import Config, Sockets
from hypercorn.events import Closed, Event, RawData, Updated
from hypercorn.protocol.h11 import H11Protocol
from hypercorn.trio.lifespan import Lifespan
from hypercorn.trio.tcp_server import MAX_RECV, TCPServer
from hypercorn.trio.worker_context import WorkerContext
from hypercorn.typing import AppWrapper, ConnectionState, LifespanState
from hypercorn.utils import ShutdownError, raise_shutdown, repr_socket_addr

from edge import fast_lane
from edge.domain.deadlines import BUSY, HEADERS, IDLE, RequestClock
from edge.domain.stalls import Stalls
from edge.errors import RequestTimeout
from edge.http import plain_request
from edge.http.errors import status_of
from edge.http.jsonio import API_VERSION, JSON_TYPE, dumps
from edge.http.request_ids import new_request_id

log = logging.getLogger("edge.serving")

# The client may be gone already: nothing to tell it then.
_CLIENT_GONE = suppress(trio.BrokenResourceError, trio.ClosedResourceError)
# How long a cut connection's 408 may take to go out before the socket is closed anyway.
_LATE_ANSWER_S = 1.0
_RECEIVE_SIZE = 65536  # a read's size when the caller gives none (trio's SocketStream's)


@dataclass(frozen=True)
class ConnectionLimits:
    max_connections: int
    keep_alive_s: float
    header_timeout_s: float


class ConnectionGate:
    """At most ``cap`` client connections held at once, over every listener."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.held = 0
        self.refused = 0

    def admit(self) -> bool:
        if self.held < self.cap:
            self.held += 1
            return True
        self.refused += 1
        if self.refused in (1, 10, 100) or self.refused % 1000 == 0:
            log.warning("at %d client connections: refused %d", self.cap, self.refused)
        return False

    def release(self) -> None:
        self.held -= 1


class GatedListener(trio.abc.Listener[trio.SocketStream]):
    """A socket listener that closes at once what ``gate`` does not admit."""

    def __init__(self, inner: trio.SocketListener, gate: ConnectionGate) -> None:
        self.inner = inner
        self.gate = gate

    async def accept(self) -> trio.SocketStream:
        while True:
            stream = await self.inner.accept()
            if self.gate.admit():
                return stream
            await trio.aclose_forcefully(stream)

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Watched(trio.abc.HalfCloseableStream):
    """A client's socket stream that keeps its clock's deadline on every read: when a
    request's first bytes come, and whenever the connection falls idle or busy
    (``deadline_moved``). A read cut at the deadline closes the connection (``scope``) only if
    the client is late once the node's own stalls are taken off: bytes sent while the node
    stood still were sent on time.

    Reads and writes go to the socket itself first, and through trio's stream only for what
    that cannot finish: trio's ``SocketStream`` wraps each call in error translation, a
    conflict check and two checkpoints, the one after a write that went out whole being a
    round through the scheduler; a request and its answer would pay that on every turn. A
    read that finds bytes waiting still yields once, as trio's does, so a client that keeps
    its socket full never holds the loop. A socket error is raised at once as the stream error
    trio documents (``_stream_error``): asking trio's stream to meet it again would not do,
    as Linux reports a reset once and then reads the end."""

    def __init__(
        self,
        stream: trio.SocketStream,
        clock: RequestClock,
        scope: trio.CancelScope,
        stalls: Stalls,
    ):
        self._stream = stream
        self._clock = clock
        self._scope = scope
        self._stalls = stalls
        self._reading: trio.CancelScope | None = None
        self.socket = getattr(stream, "socket", None)  # Hypercorn reads the peer's address here
        # the standard library's socket under trio's, where trio keeps it
        self._raw: socket.socket | None = getattr(self.socket, "_sock", None)
        self._sending = False  # trio's stream has a write under way: nothing may overtake it

    def _due(self) -> float:
        clock = self._clock
        if clock.phase is BUSY:
            return math.inf
        return clock.deadline + self._stalls.since(clock.since, trio.current_time())

    def deadline_moved(self) -> None:
        if self._reading is not None:
            self._reading.deadline = self._due()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        size = max_bytes or _RECEIVE_SIZE
        raw = self._raw
        waited = False
        # as trio's read: a cancelled one reads nothing
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            # headers already late are cut below, waiting bytes or not, as they always were
            if raw is not None and not (
                self._clock.phase is HEADERS and trio.current_time() >= self._due()
            ):
                try:
                    data: bytes | bytearray = raw.recv(size)
                    break
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as exc:
                    raise _stream_error(exc) from exc  # once: a reset is not reported twice
            with trio.CancelScope(deadline=self._due()) as reading:
                self._reading = reading
                try:
                    if raw is None:
                        data = await self._stream.receive_some(size)
                    else:
                        await trio.lowlevel.wait_readable(raw)
                        waited = True
                finally:
                    self._reading = None
            if not reading.cancelled_caught:
                if raw is None:
                    break
                continue  # readable: read it
            if trio.current_time() < self._due():
                continue  # the node stood still meanwhile: the client is not late
            # a request that came as the keep-alive ran out is answered, not dropped: its
            # bytes wait on the socket (and its headers have their own time from now on)
            if self._clock.phase is IDLE and _bytes_waiting(self.socket):
                data = await self._stream.receive_some(size)  # there: no wait
                break
            self._scope.cancel()  # the client's own lateness
            await trio.lowlevel.checkpoint()  # raises Cancelled
        if raw is not None and not waited:
            await trio.lowlevel.cancel_shielded_checkpoint()  # as trio's read of waiting bytes
        clock = self._clock
        if data and clock.phase is IDLE:
            clock.received(trio.current_time())
        return data

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        raw = self._raw
        if self._sending or raw is None:
            await self._stream.send_all(data)  # trio's stream tells a second sender off
            return
        try:
            sent = raw.send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError as exc:
            raise _stream_error(exc) from exc
        if sent == len(data):
            return
        self._sending = True
        try:
            await self._stream.send_all(memoryview(data)[sent:])
        finally:
            self._sending = False

    async def wait_send_all_might_not_block(self) -> None:
        await self._stream.wait_send_all_might_not_block()

    async def send_eof(self) -> None:
        await self._stream.send_eof()

    async def aclose(self) -> None:
        await self._stream.aclose()


def _stream_error(exc: OSError) -> trio.BrokenResourceError | trio.ClosedResourceError:
    """A socket's error as trio's ``SocketStream`` raises it (its private
    ``_translate_socket_errors_to_stream_errors``, a context manager a call): the socket
    closed, or the connection broken."""
    if exc.errno in (errno.EBADF, errno.ENOTSOCK):
        return trio.ClosedResourceError("this socket was already closed")
    return trio.BrokenResourceError(f"socket connection broken: {exc}")


def _bytes_waiting(sock: Any) -> bool:
    """Bytes (or the client's end) wait unread on the socket, without reading them."""
    if sock is None:
        return False
    try:
        with socket.fromfd(sock.fileno(), sock.family, sock.type) as peek:  # a dup: ours to close
            return bool(peek.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
    except OSError:  # nothing waiting (EAGAIN), or the socket is gone
        return False


class IdleConnections:
    """The connections waiting for their next request: closed at once when the server stops
    (what Hypercorn's idle timer did), and any that falls idle after that."""

    def __init__(self) -> None:
        self._scopes: set[trio.CancelScope] = set()
        self.stopping = False

    def idle(self, scope: trio.CancelScope) -> None:
        if self.stopping:
            scope.cancel()
        else:
            self._scopes.add(scope)

    def busy(self, scope: trio.CancelScope) -> None:
        self._scopes.discard(scope)

    def stop(self) -> None:
        self.stopping = True
        for scope in self._scopes:
            scope.cancel()
        self._scopes.clear()


class LoopWatch:
    """Ticks ``stalls`` (the loop's lag, each tick told to ``on_lag``) while a client is
    connected, the only time a deadline asks about stalls: a node with no client wakes for
    nothing (ticking costs an idle node about half a percent of a core)."""

    def __init__(self, stalls: Stalls, on_lag: Callable[[float], None] | None = None) -> None:
        self.stalls = stalls
        self._on_lag = on_lag
        self._connected = 0
        self._woken = trio.Event()
        stalls.pause()

    def opened(self) -> None:
        """A client connected: ticking from now on, before any of its deadlines asks."""
        self._connected += 1
        if self.stalls.paused:
            self.stalls.resume(trio.current_time())
            self._woken.set()

    def closed(self) -> None:
        self._connected -= 1

    async def run(self) -> None:
        stalls = self.stalls
        while True:
            if stalls.paused:
                self._woken = trio.Event()
                await self._woken.wait()
            await trio.sleep(stalls.tick_s)
            lag = stalls.tick(trio.current_time())
            if self._on_lag is not None:
                self._on_lag(lag)
            if not self._connected:
                stalls.pause()


class _NoIdleTimer:
    """Stands for Hypercorn's idle timer task (``TrioSingleTask``), which is not run."""

    async def restart(self, *_: object) -> None:
        pass

    async def stop(self) -> None:
        pass


_HEAD = b"HTTP/1.1 "
_INTERIM = b"HTTP/1.1 1"  # 100 Continue: the client waits for it before sending the body


class _Connection(TCPServer):
    """Hypercorn's connection: its idle and busy turns move the clock's deadline, and an
    answer's head waits for the bytes that follow it."""

    def __init__(
        self,
        clock: RequestClock,
        scope: trio.CancelScope,
        idle: IdleConnections,
        watched: _Watched,
        app: AppWrapper,
        config: Config,
        context: WorkerContext,
        state: LifespanState,
    ) -> None:
        super().__init__(app, config, context, state, watched)  # type: ignore[arg-type]
        self._clock = clock
        self._scope = scope
        self._idle = idle
        self._watched = watched
        self.idle_task = _NoIdleTimer()  # type: ignore[assignment]
        self._head_due = False  # a request began: the next bytes out are its answer's head
        self._held = b""
        self._state = state
        self._asgi = app.app if isinstance(app, ASGIWrapper) else None

    async def _read_data(self) -> None:
        """Hypercorn's reading loop, with the fast lane: a plain request that came whole in
        one read while h11 holds nothing is answered here (``edge.fast_lane``)."""
        while True:
            try:
                data = bytes(await self.stream.receive_some(MAX_RECV))
            except (trio.ClosedResourceError, trio.BrokenResourceError):
                break
            if data and self._asgi is not None and self._between_requests():
                request = plain_request.read(data)
                if request is not None:
                    if await self._answer_here(request):
                        continue
                    break
            await self.protocol.handle(RawData(data))
            if data == b"":
                break
        await self.protocol.handle(Closed())

    def _between_requests(self) -> bool:
        """h11 is waiting for a request and holds none of its bytes."""
        inner = self.protocol.protocol
        if not isinstance(inner, H11Protocol) or inner.stream is not None:
            return False
        connection = inner.connection
        return (
            isinstance(connection, h11.Connection)
            and connection.our_state is h11.IDLE
            and connection.their_state is h11.IDLE
            and not connection.trailing_data[0]
        )

    async def _answer_here(self, request: plain_request.PlainRequest) -> bool:
        """Answer ``request`` on this task; False when the connection is to end."""
        assert self._asgi is not None
        inner = self.protocol.protocol
        assert isinstance(inner, H11Protocol)
        self._turn(idle=False)
        asgi_scope = fast_lane.scope_of(
            request, inner.client, inner.server, self.config, self._state
        )
        answer = await fast_lane.run(self._asgi, asgi_scope, request.body)
        inner.keep_alive_requests += 1
        await self.context.mark_request()
        extra = _response_headers(self.config)
        ending = fast_lane.closes(answer) or self.context.terminated.is_set()
        if inner.keep_alive_requests >= self.config.keep_alive_max_requests:
            extra.append((b"connection", b"close"))
            ending = True
        try:
            await self.stream.send_all(fast_lane.encode(answer, extra, request.method == "HEAD"))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        if ending:
            return False
        self._turn(idle=True)
        return True

    def _turn(self, *, idle: bool) -> None:
        """The connection fell idle, or a request began: its clock and deadline follow."""
        if idle:
            self._clock.idle(trio.current_time())
            self._idle.idle(self._scope)
        else:
            self._clock.busy()
            self._idle.busy(self._scope)
        self._watched.deadline_moved()

    async def protocol_send(self, event: Event) -> None:
        if isinstance(event, RawData):
            data = event.data
            if self._head_due and not data.startswith(_INTERIM):  # an interim one goes now
                self._head_due = False
                if data.startswith(_HEAD):
                    self._held = data  # Hypercorn sends the body, or the end, right after
                    return
            if self._held:
                data, self._held = self._held + data, b""
            elif not data:
                return  # the end of a body of known length: nothing to write
            await super().protocol_send(RawData(data))
        elif isinstance(event, Updated):
            self._turn(idle=event.idle)
            if not event.idle:
                self._head_due = True
        else:
            if isinstance(event, Closed) and self._held:
                held, self._held = self._held, b""
                await super().protocol_send(RawData(held))
            await super().protocol_send(event)


class _ResponseHeaders:
    """Hypercorn's own headers (its date, to the second): formatted once a second, not once an
    answer."""

    __slots__ = ("_second", "_config", "_headers")

    def __init__(self) -> None:
        self._second = -1
        self._config: Config | None = None
        self._headers: list[tuple[bytes, bytes]] = []

    def __call__(self, config: Config) -> list[tuple[bytes, bytes]]:
        second = int(time.time())
        if second != self._second or config is not self._config:
            self._second, self._config = second, config
            self._headers = config.response_headers("h11")
        return list(self._headers)


_response_headers = _ResponseHeaders()


def late_headers_answer() -> bytes:
    """``408 request_timeout`` in the contract's envelope, for headers that came too slowly:
    written on the socket itself, as no request was ever made of them."""
    failure = RequestTimeout("request_timeout", "The request's headers came too slowly.")
    body = dumps(failure.body())
    head = (
        f"HTTP/1.1 {status_of(failure)} Request Timeout\r\n"
        f"content-type: {JSON_TYPE}\r\n"
        f"content-length: {len(body)}\r\n"
        "connection: close\r\n"
        f"cm-request-id: {new_request_id().decode()}\r\n"
        f"cm-version: {API_VERSION}\r\n"
        "x-content-type-options: nosniff\r\n\r\n"
    )
    return head.encode() + body


def connection_handler(
    app: AppWrapper,
    config: Config,
    context: WorkerContext,
    state: LifespanState,
    gate: ConnectionGate,
    limits: ConnectionLimits,
    idle: IdleConnections,
    watch: LoopWatch,
) -> Callable[[trio.SocketStream], Awaitable[None]]:
    """What serves one admitted connection; its place in ``gate`` is given back when it ends
    (``trio.serve_listeners`` closes the socket)."""

    async def handle(stream: trio.SocketStream) -> None:
        watch.opened()
        clock = RequestClock(limits.keep_alive_s, limits.header_timeout_s, trio.current_time())
        scope = trio.CancelScope()  # cancelled by its reads' deadlines (``_Watched``)
        try:
            with scope:
                idle.idle(scope)  # until its first request
                watched = _Watched(stream, clock, scope, watch.stalls)
                connection = _Connection(clock, scope, idle, watched, app, config, context, state)
                await connection.run()
            if scope.cancelled_caught and clock.phase is HEADERS:
                with trio.move_on_after(_LATE_ANSWER_S), _CLIENT_GONE:
                    await stream.send_all(late_headers_answer())
        finally:
            watch.closed()
            idle.busy(scope)
            gate.release()

    return handle


async def serve(
    app: AppWrapper,
    config: Config,
    sockets: Sockets,
    shutdown_trigger: Callable[[], Awaitable[None]],
    limits: ConnectionLimits,
    stalls: Stalls | None = None,
    on_lag: Callable[[float], None] | None = None,
    *,
    task_status: trio.TaskStatus[ConnectionGate] = trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve ``app`` on the bound plain-HTTP ``sockets`` until ``shutdown_trigger`` returns,
    as ``worker_serve`` does; then give open requests ``graceful_timeout`` to finish.
    ``stalls``: the node's own pauses, which no client deadline counts (ticked here while a
    client is connected, each tick's lag told to ``on_lag``)."""
    watch = LoopWatch(stalls or Stalls(trio.current_time()), on_lag)
    lifespan_state: LifespanState = {}
    lifespan = Lifespan(app, config, lifespan_state)
    context = WorkerContext(None)
    gate = ConnectionGate(limits.max_connections)
    async with trio.open_nursery() as lifespan_nursery:
        await lifespan_nursery.start(lifespan.handle_lifespan)
        await lifespan.wait_for_startup()
        async with trio.open_nursery() as server_nursery:
            listeners = []
            for sock in sockets.insecure_sockets:
                inner = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
                listeners.append(GatedListener(inner, gate))
                bind = repr_socket_addr(sock.family, sock.getsockname())
                await config.log.info(f"Running on http://{bind} (CTRL + C to quit)")
            task_status.started(gate)
            state = ConnectionState(lifespan_state.copy())
            idle = IdleConnections()
            handler = connection_handler(app, config, context, state, gate, limits, idle, watch)
            try:
                async with trio.open_nursery(strict_exception_groups=True) as nursery:
                    nursery.start_soon(raise_shutdown, shutdown_trigger)
                    nursery.start_soon(raise_shutdown, context.terminate.wait)
                    nursery.start_soon(watch.run)  # ends with the taking of connections
                    nursery.start_soon(
                        partial(
                            trio.serve_listeners,
                            handler,
                            listeners,
                            handler_nursery=server_nursery,
                        )
                    )
                    await trio.sleep_forever()
            except BaseExceptionGroup as error:
                _, other_errors = error.split((ShutdownError, KeyboardInterrupt))
                if other_errors is not None:
                    raise other_errors from None
            finally:
                await context.terminated.set()
                idle.stop()
                server_nursery.cancel_scope.deadline = trio.current_time() + config.graceful_timeout
        await lifespan.wait_for_shutdown()
        lifespan_nursery.cancel_scope.cancel()
