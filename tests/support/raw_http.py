"""HTTP spoken by hand on a socket, for the tests that need the bytes and the timing a client
library hides (a body at a chosen pace, a request on a connection held idle)."""

from __future__ import annotations

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
