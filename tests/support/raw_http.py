"""HTTP spoken by hand on a socket, for the tests that need the bytes and the timing a client
library hides (a body at a chosen pace, a request on a connection held idle)."""

from __future__ import annotations

from functools import partial

import trio


async def read_answer(stream: trio.SocketStream, within_s: float = 5.0) -> bytes:
    """An answer's head (and whatever came with it), or what came before the socket closed."""
    data = b""
    with trio.fail_after(within_s):
        while b"\r\n\r\n" not in data:
            chunk = await stream.receive_some(65536)
            if not chunk:
                break
            data += chunk
    return data


async def endless_answer(
    status: int,
    sent: list[int],
    *,
    pause_s: float = 0.01,
    chunk: bytes = b"x" * 65536,
    task_status: trio.TaskStatus[int] = trio.TASK_STATUS_IGNORED,
) -> None:
    """A host on loopback (its port reported) that answers every request ``status`` at once,
    then a chunked body that never ends, a ``chunk`` every ``pause_s``, adding to ``sent`` the
    bytes it managed to send before its caller hung up. Its send buffer is small, so what it
    sent is close to what was read; paced, a client that reads it all fills its memory slowly
    enough to fail by its time limit."""
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)

    async def answer(stream: trio.SocketStream) -> None:
        stream.setsockopt(trio.socket.SOL_SOCKET, trio.socket.SO_SNDBUF, 16384)
        request = b""
        while b"\r\n\r\n" not in request:
            request += await stream.receive_some()
        head = f"HTTP/1.1 {status} Whatever\r\nTransfer-Encoding: chunked\r\n\r\n"
        try:
            await stream.send_all(head.encode())
            while True:
                await stream.send_all(framed)
                sent.append(len(framed))
                await trio.sleep(pause_s)
        except trio.BrokenResourceError:
            return

    async with trio.open_nursery() as nursery:
        (listener,) = await nursery.start(partial(trio.serve_tcp, answer, 0, host="127.0.0.1"))
        task_status.started(listener.socket.getsockname()[1])
