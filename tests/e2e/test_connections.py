"""Connections (CONTRACT 8): one answered before its body was read never goes out of step (the
node closes it after the answer, so a client reusing connections opens a new one instead of
waiting on an answer that never comes); idle ones, slow headers and slow bodies are cut; the
node holds a bounded number of connections and refuses more at accept."""

from __future__ import annotations

from functools import partial
from urllib.parse import urlsplit

import pytest
import trio
from support.nodes import node_settings

from edge.node import KEEP_ALIVE_S, run_node

EARLY = [
    b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
    b"POST /webhook/nope/prj_0000000000000000 HTTP/1.1\r\nHost: x\r\n",
    b"PUT /status/prj_0000000000000000/tx_01JD0000000000000000000001 HTTP/1.1\r\nHost: x\r\n",
]


async def read_answer(stream: trio.SocketStream) -> bytes:
    data = b""
    with trio.fail_after(5):
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            data += chunk
    return data


@pytest.mark.parametrize("head", EARLY)
async def test_an_early_answer_closes_its_connection(node, head):
    url = urlsplit(node.url)
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream:
        body = b'{"id":"evt_late_body"}'
        await stream.send_all(head + b"Content-Length: %d\r\n\r\n" % len(body))
        answer = await read_answer(stream)
        assert answer.startswith(b"HTTP/1.1 4") and b"connection: close" in answer.lower()
        # the body arrives after the answer, then the next request on the same connection
        try:
            await stream.send_all(body + b"GET /status/x/y HTTP/1.1\r\nHost: x\r\n\r\n")
        except trio.BrokenResourceError:
            return  # already closed: the client learns it at once
        rest = b""
        with trio.fail_after(5):  # closed, not hanging for a minute
            while chunk := await stream.receive_some(65536):
                rest += chunk
        assert (answer + rest).count(b"HTTP/1.1 ") == 1  # the GET was never taken as a request


async def test_an_idle_keep_alive_connection_is_closed(node):
    url = urlsplit(node.url)
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream:
        await stream.send_all(b"GET /status/x/y HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await read_answer(stream)).startswith(b"HTTP/1.1 404")
        started = trio.current_time()
        with trio.fail_after(KEEP_ALIVE_S + 5):  # closed, not held for a minute or more
            while await stream.receive_some(65536):
                pass
        assert trio.current_time() - started >= KEEP_ALIVE_S - 1


async def _closed_within(stream: trio.SocketStream, seconds: float) -> bytes:
    """Everything the node sends until it closes the connection, which it must within
    ``seconds``."""
    got = b""
    with trio.fail_after(seconds):
        while True:
            try:
                chunk = await stream.receive_some(65536)
            except trio.BrokenResourceError:
                break
            if not chunk:
                break
            got += chunk
    return got


async def test_headers_dribbled_in_are_cut_before_ten_seconds(node):
    # slowloris: each header line comes well within the idle timeout, the whole never does
    url = urlsplit(node.url)
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream:
        started = trio.current_time()
        await stream.send_all(b"GET /status/x/y HTTP/1.1\r\n")

        async def dribble() -> None:
            for n in range(20):
                await trio.sleep(1)
                try:
                    await stream.send_all(b"X-Slow-%d: 1\r\n" % n)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(dribble)
            answer = await _closed_within(stream, 12)
            nursery.cancel_scope.cancel()
        assert b"HTTP/1.1 2" not in answer
        assert trio.current_time() - started <= 10


@pytest.fixture
async def strict_node(tmp_path):  # type: ignore[no-untyped-def]
    settings = node_settings(tmp_path / "strict", max_connections=3, body_grace_s=0.5)
    async with trio.open_nursery() as nursery:
        running = await nursery.start(partial(run_node, settings))
        yield running
        running.stop.set()


async def test_a_body_slower_than_the_least_rate_is_answered_408_and_closed(strict_node):
    url = urlsplit(strict_node.url)
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream:
        head = b"POST /webhook/stripe/prj_0000000000000000 HTTP/1.1\r\nHost: x\r\n"
        await stream.send_all(head + b"Content-Length: 100000\r\n\r\n")

        async def dribble() -> None:  # 100 bytes a second: a tenth of the least rate
            for _ in range(30):
                try:
                    await stream.send_all(b"x" * 100)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    return
                await trio.sleep(1)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(dribble)
            answer = await _closed_within(stream, 10)
            nursery.cancel_scope.cancel()
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"connection: close" in answer.lower() and b'"request_timeout"' in answer


async def test_a_body_at_a_fair_rate_is_taken(strict_node):
    url = urlsplit(strict_node.url)
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream:
        body = b'{"id": "evt_1"}'.ljust(6000)
        head = b"POST /webhook/stripe/prj_0000000000000000 HTTP/1.1\r\nHost: x\r\n"
        await stream.send_all(head + b"Content-Length: %d\r\n\r\n" % len(body))
        for start in range(0, len(body), 2000):  # 2 KiB a second
            await stream.send_all(body[start : start + 2000])
            await trio.sleep(1)
        answer = await read_answer(stream)
    assert answer.startswith(b"HTTP/1.1 404")  # read to its end, then answered: no such project


async def test_connections_beyond_the_cap_are_refused_at_accept(strict_node):
    url = urlsplit(strict_node.url)
    held = [await trio.open_tcp_stream(url.hostname, url.port) for _ in range(3)]
    try:
        extra = await trio.open_tcp_stream(url.hostname, url.port)
        async with extra:  # accepted by the kernel, then closed by the node at once
            with trio.fail_after(5):
                try:
                    await extra.send_all(b"GET /status/x/y HTTP/1.1\r\nHost: x\r\n\r\n")
                    assert await extra.receive_some(65536) == b""
                except trio.BrokenResourceError:
                    pass
        # the connections held are still served
        await held[0].send_all(b"GET /status/x/y HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await read_answer(held[0])).startswith(b"HTTP/1.1 404")
    finally:
        for stream in held:
            await stream.aclose()
    await trio.sleep(0.2)  # the node sees the closes
    again = await trio.open_tcp_stream(url.hostname, url.port)
    async with again:  # places were given back
        await again.send_all(b"GET /status/x/y HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await read_answer(again)).startswith(b"HTTP/1.1 404")
