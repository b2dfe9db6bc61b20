"""Connections (CONTRACT 8): one answered before its body was read never goes out of step (the
node closes it after the answer, so a client reusing connections opens a new one instead of
waiting on an answer that never comes); idle ones, slow headers and slow bodies are cut; the
node holds a bounded number of connections and refuses more at accept."""

from __future__ import annotations

from functools import partial
from urllib.parse import urlsplit

import httpx
import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve as hypercorn_serve
from support.nodes import node_settings
from support.raw_http import read_answer
from support.waits import bound, until

from edge.config import Settings
from edge.node import KEEP_ALIVE_S, run_node

HEADERS_S = 3.0  # the strict node's header time (the contract's 10 s is the default)

EARLY = [
    b"POST /nope HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n",
    b"POST /webhook/nope/prj_0000000000000000 HTTP/1.1\r\nHost: x\r\n",
    b"PUT /status/prj_0000000000000000/tx_01JD0000000000000000000001 HTTP/1.1\r\nHost: x\r\n",
]


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
        with trio.fail_after(bound(5)):  # closed, not hanging for a minute
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


async def test_idle_connections_are_closed_at_once_when_the_node_stops(tmp_path):
    settings = node_settings(tmp_path / "stopping")
    async with trio.open_nursery() as nursery:
        running = await nursery.start(partial(run_node, settings))
        url = urlsplit(running.url)
        fresh = await trio.open_tcp_stream(url.hostname, url.port)  # no request yet
        used = await trio.open_tcp_stream(url.hostname, url.port)
        async with fresh, used:
            await used.send_all(b"GET /status/x/y HTTP/1.1\r\nHost: x\r\n\r\n")
            assert (await read_answer(used)).startswith(b"HTTP/1.1 404")
            stopped = trio.current_time()
            running.stop.set()
            for stream in (fresh, used):
                with trio.fail_after(KEEP_ALIVE_S - 2):  # not left to their idle time
                    while await stream.receive_some(65536):
                        pass
            assert trio.current_time() - stopped < 2


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


@pytest.fixture
async def strict_node(tmp_path):  # type: ignore[no-untyped-def]
    settings = node_settings(
        tmp_path / "strict", max_connections=3, body_grace_s=0.5, header_timeout_s=HEADERS_S
    )
    async with trio.open_nursery() as nursery:
        running = await nursery.start(partial(run_node, settings))
        yield running
        running.stop.set()


async def _dribble(stream: trio.SocketStream, lines: list[bytes], every_s: float) -> None:
    for line in lines:
        await trio.sleep(every_s)  # the subject: a client's pace
        try:
            await stream.send_all(line)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return


def test_the_contract_gives_headers_ten_seconds():
    assert Settings.header_timeout_s == 10.0 and KEEP_ALIVE_S == 5.0


async def test_headers_dribbled_in_are_cut_at_their_time_and_answered_408(strict_node):
    # slowloris: each header line comes well within the idle timeout, the whole never does
    url = urlsplit(strict_node.url)
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream:
        await stream.send_all(b"GET /status/x/y HTTP/1.1\r\n")
        first_byte = trio.current_time()
        lines = [b"X-Slow-%d: 1\r\n" % n for n in range(20)]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_dribble, stream, lines, 1.0)
            answer = await _closed_within(stream, HEADERS_S + 1.5)  # not the 5 s idle timer
            nursery.cancel_scope.cancel()
        assert trio.current_time() - first_byte >= HEADERS_S - 0.5
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"connection: close" in answer.lower() and b'"request_timeout"' in answer


async def test_headers_after_a_pause_have_their_whole_time(strict_node):
    # idle for most of the keep-alive, then headers in under their time: served, although the
    # whole comes later than KEEP_ALIVE_S after the connection opened
    url = urlsplit(strict_node.url)
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream:
        await trio.sleep(KEEP_ALIVE_S - 1.5)  # the subject: idle for most of the keep-alive
        lines = [b"GET /status/x/y HTTP/1.1\r\n", b"Host: x\r\n", b"X-A: 1\r\n", b"\r\n"]
        await _dribble(stream, lines, 0.7)
        answer = await read_answer(stream)
    assert answer.startswith(b"HTTP/1.1 404"), answer


async def test_hypercorn_alone_cuts_partial_headers_on_its_idle_timer():
    # Why the node keeps its own clock: Hypercorn's keep-alive timer does cut a slowloris (bytes
    # do not stop it, only a complete request does), but it runs from the moment the connection
    # fell idle, so it also cuts headers that came after a pause well within their own time.
    async def app(scope, receive, send):  # type: ignore[no-untyped-def]
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.keep_alive_timeout = 1.0
    stop = trio.Event()
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(
            partial(hypercorn_serve, app, config, shutdown_trigger=stop.wait)
        )
        url = urlsplit(binds[0])
        stream = await trio.open_tcp_stream(url.hostname, url.port)
        async with stream:
            await stream.send_all(b"GET / HTTP/1.1\r\n")
            lines = [b"X-Slow-%d: 1\r\n" % n for n in range(20)]
            async with trio.open_nursery() as dribbling:
                dribbling.start_soon(_dribble, stream, lines, 0.2)
                answer = await _closed_within(stream, 3.0)  # bytes every 0.2 s did not stop it
                dribbling.cancel_scope.cancel()
        assert answer == b""
        stream = await trio.open_tcp_stream(url.hostname, url.port)
        async with stream:
            await trio.sleep(0.6)  # the subject: idle, then a whole request within 0.6 s
            lines = [b"GET / HTTP/1.1\r\n", b"Host: x\r\n", b"\r\n"]
            async with trio.open_nursery() as dribbling:
                dribbling.start_soon(_dribble, stream, lines, 0.3)
                answer = await _closed_within(stream, 3.0)
                dribbling.cancel_scope.cancel()
        assert answer == b""  # cut all the same: 1 s after the connection opened
        stop.set()


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
                await trio.sleep(1)  # the subject: the body's pace

        async with trio.open_nursery() as nursery:
            nursery.start_soon(dribble)
            answer = await _closed_within(stream, 10)
            nursery.cancel_scope.cancel()
    assert answer.startswith(b"HTTP/1.1 408"), answer
    assert b"connection: close" in answer.lower() and b'"request_timeout"' in answer
    assert b'"retryable":true' in answer  # sent again at a client's pace, it is served


async def test_a_body_at_a_fair_rate_is_taken(strict_node):
    url = urlsplit(strict_node.url)
    stream = await trio.open_tcp_stream(url.hostname, url.port)
    async with stream:
        body = b'{"id": "evt_1"}'.ljust(6000)
        head = b"POST /webhook/stripe/prj_0000000000000000 HTTP/1.1\r\nHost: x\r\n"
        await stream.send_all(head + b"Content-Length: %d\r\n\r\n" % len(body))
        for start in range(0, len(body), 2000):  # 2 KiB a second
            await stream.send_all(body[start : start + 2000])
            await trio.sleep(1)  # the subject: the body's pace
        answer = await read_answer(stream)
    assert answer.startswith(b"HTTP/1.1 404")  # read to its end, then answered: no such project


async def test_connections_beyond_the_cap_are_refused_at_accept(strict_node):
    url = urlsplit(strict_node.url)
    held = [await trio.open_tcp_stream(url.hostname, url.port) for _ in range(3)]
    try:
        extra = await trio.open_tcp_stream(url.hostname, url.port)
        async with extra:  # accepted by the kernel, then closed by the node at once
            with trio.fail_after(bound(5)):
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

    async def served() -> bool:
        again = await trio.open_tcp_stream(url.hostname, url.port)
        async with again:  # refused at accept, closed at once, until the node saw the closes
            try:
                await again.send_all(b"GET /status/x/y HTTP/1.1\r\nHost: x\r\n\r\n")
                return (await read_answer(again)).startswith(b"HTTP/1.1 404")
            except trio.BrokenResourceError:
                return False

    # nothing announces the node has seen the closes: a new connection is asked again
    await until(served, what="a new connection served: the places were given back")


async def test_places_come_back_when_the_node_cuts_connections(strict_node):
    # three silent connections fill the node; it cuts them when idle, and serves again
    url = urlsplit(strict_node.url)
    held = [await trio.open_tcp_stream(url.hostname, url.port) for _ in range(3)]
    try:
        for stream in held:
            await _closed_within(stream, KEEP_ALIVE_S + 2)
    finally:
        for stream in held:
            await stream.aclose()
    again = await trio.open_tcp_stream(url.hostname, url.port)
    async with again:
        await again.send_all(b"GET /status/x/y HTTP/1.1\r\nHost: x\r\n\r\n")
        assert (await read_answer(again)).startswith(b"HTTP/1.1 404")


async def test_a_request_whose_body_came_whole_is_not_cut_however_long_its_handling(tmp_path):
    # The body's pace is watched until its end only: a login that waits for its turn in the
    # hashing pool after its body came is answered, not cut with a 408 (or a 500 beside it).
    settings = node_settings(tmp_path / "slow", body_grace_s=0.05, hashing_workers=1)
    async with trio.open_nursery() as nursery:
        running = await nursery.start(partial(run_node, settings))
        answers: list[int] = []
        async with httpx.AsyncClient(base_url=running.url, timeout=bound(30.0)) as http:

            async def log_in(n: int) -> None:
                body = {"email": f"nobody{n}@example.com", "password": "not the password"}
                answers.append((await http.post("/api/session", json=body)).status_code)

            async with trio.open_nursery() as logins:
                for n in range(8):  # one hash at a time: the last waits several times the grace
                    logins.start_soon(log_in, n)
        running.stop.set()
    assert answers == [401] * 8
