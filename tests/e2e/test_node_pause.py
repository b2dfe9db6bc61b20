"""A pause of the node is never the client's fault (issue 35): an ``edge serve`` process
stopped with SIGSTOP for longer than a deadline it keeps on clients, while a client sends on
time. A body sent at its pace is read whole and the checkout made, not refused 408; a request
sent on a keep-alive connection before it had been idle for its 5 s is answered, not dropped."""

from __future__ import annotations

import json
import signal
from urllib.parse import urlsplit

import trio
from support.client import Admin, manual_shop
from support.nodes import NodeProcess
from support.raw_http import read_answer

PAUSE_S = 3.0  # longer than a body's free first 2 s (CONTRACT 8)


def _paused(node: NodeProcess) -> None:
    assert node.proc is not None
    node.proc.send_signal(signal.SIGSTOP)


def _woken(node: NodeProcess) -> None:
    assert node.proc is not None
    node.proc.send_signal(signal.SIGCONT)


async def test_a_body_sent_on_time_while_the_node_stood_still_is_read(tmp_path) -> None:
    node = NodeProcess(tmp_path / "data").start()
    try:
        admin = Admin(node.url, node.admin_token)
        shop = await manual_shop(admin)
        await admin.aclose()
        url = urlsplit(node.url)
        body = json.dumps({"productId": "book"}).encode().replace(b"{", b"{" + b" " * 40)
        head = (
            f"POST /api/checkout/manual/{shop.project_id} HTTP/1.1\r\nHost: x\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        ).encode()
        async with await trio.open_tcp_stream(url.hostname, url.port) as stream:
            await stream.send_all(head + body[:10])
            await trio.sleep(0.2)  # the node has the headers: the body's pace is kept now
            _paused(node)
            await stream.send_all(body[10:])  # on time: well within the pace
            await trio.sleep(PAUSE_S)
            _woken(node)
            answer = await read_answer(stream, 20)
        assert answer.startswith(b"HTTP/1.1 201"), answer
    finally:
        _woken(node)
        node.terminate()


async def test_a_request_sent_on_an_idle_connection_while_the_node_stood_still_is_answered(
    tmp_path,
) -> None:
    node = NodeProcess(tmp_path / "data").start()
    try:
        url = urlsplit(node.url)
        ask = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
        async with await trio.open_tcp_stream(url.hostname, url.port) as stream:
            await stream.send_all(ask)
            assert (await read_answer(stream, 20)).startswith(b"HTTP/1.1 200")
            await trio.sleep(1.0)  # idle for a while, then the node stops
            _paused(node)
            await trio.sleep(0.5)
            await stream.send_all(ask)  # 1.5 s into the 5 s: on time
            await trio.sleep(5.0)  # the 5 s run out while the node stands still
            _woken(node)
            answer = await read_answer(stream, 20)
        assert answer.startswith(b"HTTP/1.1 200"), answer
    finally:
        _woken(node)
        node.terminate()
