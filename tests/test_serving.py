"""The node's hold on a Hypercorn connection (edge.serving), on trio's own testing streams: an
answer's head goes out with what follows it in one write, an interim 100 Continue at once, and
idle connections are closed as the server stops."""

from __future__ import annotations

import socket
import struct

import pytest
import trio
import trio.testing
from hypercorn.config import Config
from hypercorn.events import RawData, Updated
from hypercorn.trio.worker_context import WorkerContext

from edge.domain.deadlines import RequestClock
from edge.domain.stalls import Stalls
from edge.serving import IdleConnections, _Connection, _Watched

HEAD = b"HTTP/1.1 200 \r\ncontent-type: application/json\r\ncontent-length: 8\r\n\r\n"


def connection(writes: list[bytes]) -> tuple[_Connection, trio.CancelScope, IdleConnections]:
    stream = trio.testing.MemorySendStream()

    async def noted() -> None:
        writes.append(bytes(await stream.get_data()))

    stream.send_all_hook = noted
    clock = RequestClock(5.0, 10.0, trio.current_time())
    scope, idle = trio.CancelScope(deadline=clock.deadline), IdleConnections()
    watched = _Watched(stream, clock, scope, Stalls(trio.current_time()))  # type: ignore[arg-type]
    made = _Connection(clock, scope, idle, watched, None, Config(), WorkerContext(None), {})
    return made, scope, idle


async def test_an_answers_head_is_written_with_its_body_in_one_write():
    writes: list[bytes] = []
    made, _, _ = connection(writes)
    for _ in range(2):  # two requests on one connection
        await made.protocol_send(Updated(idle=False))
        await made.protocol_send(RawData(HEAD))
        assert writes == [] or len(writes) == 1  # held for its body
        await made.protocol_send(RawData(b'{"a":12}'))
        await made.protocol_send(RawData(b""))  # the end of a sized body: nothing to write
        await made.protocol_send(Updated(idle=True))
    assert writes == [HEAD + b'{"a":12}'] * 2


async def test_a_head_with_no_body_goes_with_the_end_and_an_interim_one_at_once():
    writes: list[bytes] = []
    made, _, _ = connection(writes)
    await made.protocol_send(Updated(idle=False))
    await made.protocol_send(RawData(b"HTTP/1.1 100 \r\n\r\n"))
    assert writes == [b"HTTP/1.1 100 \r\n\r\n"]  # the client sends its body only after it
    await made.protocol_send(RawData(b"HTTP/1.1 204 \r\n\r\n"))
    await made.protocol_send(RawData(b"0\r\n\r\n"))  # a chunked body's end
    assert writes[1:] == [b"HTTP/1.1 204 \r\n\r\n0\r\n\r\n"]


async def test_idle_connections_are_closed_when_the_server_stops_and_busy_ones_are_not():
    made, scope, idle = connection([])
    other, other_scope, _ = connection([])
    await made.protocol_send(Updated(idle=True))
    idle.idle(other_scope)
    idle.busy(other_scope)  # a request came
    idle.stop()
    assert scope.cancel_called and not other_scope.cancel_called
    idle.idle(other_scope)  # its answer went out: nothing more to wait for
    assert other_scope.cancel_called


async def _past_its_keep_alive(sent: bytes) -> tuple[bytes | None, trio.CancelScope]:
    """A connection idle for 6 s of its 5, read once, with ``sent`` waiting on its socket."""
    ours, theirs = trio.socket.socketpair()
    with theirs:
        clock = RequestClock(5.0, 10.0, trio.current_time() - 6.0)
        stalls = Stalls(trio.current_time())
        stalls.pause()  # the node never stood still
        scope = trio.CancelScope()
        watched = _Watched(trio.SocketStream(ours), clock, scope, stalls)
        if sent:
            await theirs.send(sent)
        data = None
        with scope:
            data = bytes(await watched.receive_some(1024))
        await watched.aclose()
    return data, scope


async def test_a_request_come_as_the_keep_alive_ran_out_is_read_not_dropped():
    # its bytes and the deadline are due in the same turn of the loop: the bytes win
    data, scope = await _past_its_keep_alive(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    assert data is not None and data.startswith(b"GET /healthz") and not scope.cancel_called


async def test_an_idle_connection_past_its_keep_alive_with_nothing_sent_is_closed():
    data, scope = await _past_its_keep_alive(b"")
    assert data is None and scope.cancel_called


def watched_pair() -> tuple[_Watched, trio.SocketStream, trio.CancelScope]:
    """A ``_Watched`` over one end of a real connected socket pair, and the other end."""
    ours, theirs = trio.socket.socketpair()
    clock = RequestClock(5.0, 10.0, trio.current_time())
    scope = trio.CancelScope(deadline=clock.deadline)
    stream = trio.SocketStream(ours)
    watched = _Watched(stream, clock, scope, Stalls(trio.current_time()))
    return watched, trio.SocketStream(theirs), scope


async def test_a_write_larger_than_the_sockets_buffer_arrives_whole_and_in_order():
    watched, peer, _ = watched_pair()
    data = bytes(range(256)) * 16384  # 4 MiB: the first write goes in part, trio's stream the rest
    got = bytearray()

    async def read_all() -> None:
        while len(got) < len(data):
            got.extend(await peer.receive_some(1 << 16))

    async with watched, peer, trio.open_nursery() as nursery:
        nursery.start_soon(read_all)
        await watched.send_all(data)
        await watched.send_all(b"")  # nothing to write: no error
    assert bytes(got) == data


async def test_a_socket_error_is_the_stream_error_trio_documents():
    watched, peer, _ = watched_pair()
    await peer.aclose()
    with pytest.raises(trio.BrokenResourceError):
        for _ in range(64):  # the first writes may still be taken before the end is known
            await watched.send_all(b"x" * 65536)
    await watched.aclose()
    with pytest.raises(trio.ClosedResourceError):
        await watched.receive_some(10)
    with pytest.raises(trio.ClosedResourceError):
        await watched.send_all(b"x")


async def test_a_read_waits_for_bytes_and_one_that_finds_them_waiting_still_yields():
    watched, peer, _ = watched_pair()
    async with watched, peer, trio.open_nursery() as nursery:
        nursery.start_soon(peer.send_all, b"late")
        assert await watched.receive_some(100) == b"late"  # waited for them
        await trio.testing.wait_all_tasks_blocked()
        await peer.send_all(b"waiting")
        # a client that keeps its socket full never holds the loop: the read still yields
        with trio.testing.assert_checkpoints():
            assert await watched.receive_some(100) == b"waiting"
        await peer.send_eof()
        assert await watched.receive_some(100) == b""  # the client's end


async def test_a_read_past_the_deadline_closes_the_connection():
    watched, peer, scope = watched_pair()
    watched._clock.idle(trio.current_time() - 4.95)  # keep-alive of 5 s: 50 ms left
    async with watched, peer:
        with scope:
            await watched.receive_some(100)
            raise AssertionError("the read came back with no bytes sent")
    assert scope.cancelled_caught


async def test_a_reset_connection_is_a_broken_stream_not_an_ended_one():
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    client = await trio.open_tcp_stream("127.0.0.1", listener.socket.getsockname()[1])
    served = await listener.accept()
    clock = RequestClock(5.0, 10.0, trio.current_time())
    scope = trio.CancelScope(deadline=clock.deadline)
    watched = _Watched(served, clock, scope, Stalls(trio.current_time()))
    client.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    await client.aclose()  # a reset, not an end
    async with watched, listener:
        with pytest.raises(trio.BrokenResourceError):
            await watched.receive_some(100)


async def test_headers_already_late_are_cut_though_their_bytes_wait():
    watched, peer, scope = watched_pair()
    watched._clock.received(trio.current_time() - 20.0)  # headers begun 20 s ago, 10 s allowed
    async with watched, peer:
        await peer.send_all(b"GET /status/")
        with scope:
            await watched.receive_some(100)
            raise AssertionError("late header bytes were read")
    assert scope.cancelled_caught
