"""Fixtures of the HTTP layer's tests: the error envelope every failing answer must be
(CONTRACT 7), and a chunked upload over a raw socket."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
import trio

Envelope = Callable[[httpx.Response, int, str], dict[str, Any]]


def check_envelope(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    """The ``error`` object, once the answer is checked to be ``status`` with ``code`` in the
    envelope, with the headers every answer carries."""
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert response.headers["cm-request-id"].startswith("req_")
    assert response.headers["cm-version"] == "2026-11-21"
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["retryable"], bool)
    return error


@pytest.fixture
def envelope() -> Envelope:
    return check_envelope


async def send_chunked(url: str, path: str, chunk: bytes, count: int) -> bytes:
    """POST a body of ``count`` chunks with no Content-Length (chunked), stopping as soon as
    the node answers; the node's answer, raw. (Over a socket: an HTTP client left with a body it
    could not finish sending warns when it is collected.)"""
    host, port = url.removeprefix("http://").split(":")
    stream = await trio.open_tcp_stream(host, int(port))
    async with stream:
        await stream.send_all(
            f"POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            "Transfer-Encoding: chunked\r\n\r\n".encode()
        )
        answer = b""
        with trio.move_on_after(10):
            for _ in range(count):
                await stream.send_all(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                with trio.move_on_after(0.001):
                    answer += await stream.receive_some(65536)
                if answer:
                    break
            while b"\r\n\r\n" not in answer:
                answer += await stream.receive_some(65536)
        return answer


@pytest.fixture
def chunked() -> Callable[[str, str, bytes, int], Awaitable[bytes]]:
    return send_chunked
