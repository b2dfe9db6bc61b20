"""The serving fast lane (edge.fast_lane) beside Hypercorn's own path, on a real socket pair:
a request that comes whole is answered in the connection's task, one that comes in parts goes
through h11 and a task of its own; the app sees the same scope and body and the client gets
the same bytes either way (but the date)."""

from __future__ import annotations

import json
import re
from typing import Any

import trio
import trio.testing
from hypercorn.app_wrappers import ASGIWrapper
from hypercorn.config import Config
from hypercorn.trio.worker_context import WorkerContext
from support.waits import bound

from edge.domain.deadlines import RequestClock
from edge.domain.stalls import Stalls
from edge.serving import IdleConnections, _Connection, _Watched

STATUS = (
    b"GET /status/prj_a/tx_b?v=2 HTTP/1.1\r\nHost: edge.test\r\nAuthorization: Bearer k\r\n\r\n"
)
HOOK = (
    b"POST /webhook/stripe/prj_a HTTP/1.1\r\nHost: edge.test\r\nContent-Length: 11\r\n\r\n"
    b'{"id":"e"}\n'
)
DATE = re.compile(rb"date: [^\r]*\r\n")


class App:
    """Answers with what it was given; records the task each request ran in."""

    def __init__(self) -> None:
        self.seen: list[tuple[trio.lowlevel.Task, dict[str, Any], bytes]] = []
        self.disconnected: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        kept = {k: v for k, v in scope.items() if k != "state"}
        self.seen.append((trio.lowlevel.current_task(), kept, body))
        if scope["path"].endswith("/boom"):
            raise RuntimeError("the app failed")
        if scope["path"].endswith(("/late-boom", "/unended")):  # an answer begun, never ended
            start = [(b"content-length", b"10")]
            await send({"type": "http.response.start", "status": 200, "headers": start})
            if scope["path"].endswith("/late-boom"):
                raise RuntimeError("the app failed after it began answering")
            return
        if b"wait=" in scope["query_string"]:  # a long poll: until its client leaves
            self.disconnected.append((await receive())["type"])
            return
        out = json.dumps({"path": scope["path"], "body": body.decode()}).encode()
        headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(out))]
        await send({"type": "http.response.start", "status": 201, "headers": headers})
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else out}
        )


async def served(app: App, config: Config | None = None) -> tuple[trio.SocketStream, Any]:
    """One connection of the node's, served in a task of its own; the client's end."""
    ours, theirs = trio.socket.socketpair()
    clock = RequestClock(30.0, 30.0, trio.current_time())
    scope = trio.CancelScope()
    watched = _Watched(trio.SocketStream(ours), clock, scope, Stalls(trio.current_time()))
    connection = _Connection(
        clock,
        scope,
        IdleConnections(),
        watched,
        ASGIWrapper(app),
        config or Config(),
        WorkerContext(None),
        {},  # type: ignore[arg-type]
    )

    async def run() -> None:
        with scope:
            await connection.run()

    return trio.SocketStream(theirs), run


async def answers(client: trio.SocketStream, count: int, head: bool = False) -> list[bytes]:
    """``count`` answers of known length (none for HEAD), read off the client's end."""
    data, out = b"", list[bytes]()
    while len(out) < count:
        end = data.find(b"\r\n\r\n")
        if end >= 0:
            found = re.search(rb"content-length: (\d+)", data[:end])
            length = 0 if head or found is None else int(found[1])
            if len(data) >= end + 4 + length:
                out.append(data[: end + 4 + length])
                data = data[end + 4 + length :]
                continue
        more = await client.receive_some(65536)
        assert more, f"closed after {len(out)} answers"
        data += more
    return out


async def feed(client: trio.SocketStream, parts: list[bytes]) -> None:
    """Send ``parts`` one by one, each read by the node before the next."""
    for part in parts:
        await client.send_all(part)
        await trio.testing.wait_all_tasks_blocked()


async def until_closed(client: trio.SocketStream) -> bytes:
    """All the node writes until it closes the connection."""
    data = b""
    while more := await client.receive_some(65536):
        data += more
    await client.aclose()
    return data


async def exchange(
    parts: list[bytes], count: int = 1, head: bool = False
) -> tuple[list[bytes], App]:
    app = App()
    client, run = await served(app)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await feed(client, parts)
        got = await answers(client, count, head)
        await client.aclose()
    return [DATE.sub(b"", one) for one in got], app


def cut(data: bytes) -> list[bytes]:
    return [data[:20], data[20:]]


async def test_a_whole_status_read_is_answered_in_the_connections_task_as_h11_would():
    whole, lane = await exchange([STATUS])
    parts, h11 = await exchange(cut(STATUS))
    assert whole == parts
    assert whole[0].startswith(b"HTTP/1.1 201 \r\ncontent-type: application/json\r\n")
    assert b"server: hypercorn-h11\r\n" in whole[0]
    (lane_task, lane_scope, _), (h11_task, h11_scope, _) = lane.seen[0], h11.seen[0]
    assert lane_scope.pop("extensions") == {"edge.whole_body": {}}  # the lane's one addition
    assert h11_scope.pop("extensions") == {}
    assert lane_scope == h11_scope
    assert lane_task.name != h11_task.name  # h11's path runs the app in a task of its own
    assert "run" in lane_task.name


async def test_a_webhook_body_whole_or_in_parts_reaches_the_app_the_same():
    whole, lane = await exchange([HOOK])
    parts, h11 = await exchange([HOOK[:-5], HOOK[-5:]])
    assert whole == parts and lane.seen[0][2] == h11.seen[0][2]
    assert lane.seen[0][2] == b'{"id":"e"}\n'


async def test_keep_alive_answers_in_turn_and_pipelined_ones_go_to_h11():
    got, app = await exchange([STATUS, HOOK, STATUS + STATUS], count=4)
    assert [one.split(b"\r\n")[0] for one in got] == [b"HTTP/1.1 201 "] * 4
    tasks = [task.name for task, _, _ in app.seen]
    assert tasks[0] == tasks[1] != tasks[2]  # the two that came together went through h11


async def test_head_gets_the_length_and_no_body():
    head = STATUS.replace(b"GET", b"HEAD", 1)
    whole, _ = await exchange([head], head=True)
    parts, _ = await exchange(cut(head), head=True)
    assert whole == parts and whole[0].endswith(b"\r\n\r\n")


async def test_a_bad_header_is_h11s_to_refuse():
    bad = b"GET /status/prj_a/tx_b HTTP/1.1\r\nHost: edge.test\r\nBad Name: x\r\n\r\n"
    got, app = await exchange([bad])
    assert got[0].startswith(b"HTTP/1.1 400 ") and app.seen == []


async def test_an_app_that_fails_gets_a_500_and_the_connection_ends_on_both_paths():
    boom = STATUS.replace(b"/tx_b?v=2", b"/boom", 1)
    for parts in ([boom], cut(boom)):
        app = App()
        client, run = await served(app)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await feed(client, parts)
            data = await until_closed(client)
        assert data.startswith(b"HTTP/1.1 500 ") and b"connection: close\r\n" in data


async def test_the_last_request_a_connection_may_carry_closes_it():
    config = Config()
    config.keep_alive_max_requests = 2
    app = App()
    client, run = await served(app, config)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(run)
        await feed(client, [STATUS, STATUS])
        data = await until_closed(client)
    first, second = data.split(b"HTTP/1.1 201 ")[1:]
    assert b"connection: close" not in first and b"connection: close\r\n" in second


async def test_an_answer_begun_and_never_ended_ends_its_connection_and_only_it():
    for end in (b"/late-boom", b"/unended"):
        request = STATUS.replace(b"/tx_b?v=2", end, 1)
        for parts in ([request], cut(request)):
            app = App()
            client, run = await served(app)
            async with trio.open_nursery() as nursery:  # an error escaping it fails the test
                nursery.start_soon(run)
                await feed(client, parts)
                data = await until_closed(client)
            assert data.startswith(b"HTTP/1.1 200 ") and b"content-length: 10\r\n" in data


async def test_a_long_poll_goes_to_h11_which_sees_its_client_leave():
    poll = STATUS.replace(b"?v=2", b"?wait=30&version=2", 1)
    app = App()
    client, run = await served(app)
    with trio.fail_after(bound(10)):  # on the lane, the poll would never hear of it
        async with trio.open_nursery() as nursery:
            nursery.start_soon(run)
            await feed(client, [poll])
            await client.aclose()  # the client leaves while the poll waits
    assert app.disconnected == ["http.disconnect"]
    assert "run" not in app.seen[0][0].name  # h11's task of its own, not the lane's
