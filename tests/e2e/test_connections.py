"""A connection answered before its body was read never goes out of step (CONTRACT 8): the node
closes it after the answer, so a client reusing connections opens a new one instead of waiting
on an answer that never comes."""

from __future__ import annotations

from urllib.parse import urlsplit

import pytest
import trio

from edge.node import KEEP_ALIVE_S

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
