"""edge.http.asgi: the bounded body reader and the whole-answer sender of the raw routes."""

from __future__ import annotations

from typing import Any

import pytest

from edge.errors import PayloadTooLarge
from edge.http.asgi import Disconnected, answer, encode, read_body


def receiving(*messages: dict[str, Any]) -> Any:
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    return receive


def part(body: bytes, more: bool) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


async def test_a_body_in_one_or_many_messages():
    assert await read_body(receiving(part(b"abc", False)), "3", 10) == b"abc"
    pieces = receiving(part(b"ab", True), part(b"", True), part(b"cd", False))
    assert await read_body(pieces, None, 10) == b"abcd"


async def test_a_declared_length_over_the_limit_is_refused_before_reading():
    nothing = receiving()  # reading at all would fail: the queue is empty
    for declared in ("11", "1" * 40, "²"):
        with pytest.raises(PayloadTooLarge):
            await read_body(nothing, declared, 10)


async def test_a_streamed_body_is_refused_as_it_passes_the_limit():
    stream = receiving(part(b"a" * 6, True), part(b"a" * 6, True), part(b"never read", False))
    with pytest.raises(PayloadTooLarge):
        await read_body(stream, None, 10)


async def test_a_client_leaving_mid_body():
    with pytest.raises(Disconnected):
        await read_body(receiving(part(b"ab", True), {"type": "http.disconnect"}), None, 10)


async def test_an_answer_has_its_length_and_head_drops_only_the_body():
    sent: list[dict[str, Any]] = []

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await answer(send, 200, b"{}", encode({"RateLimit-Limit": "60"}), head=True)
    start, body = sent
    assert start["headers"] == [
        (b"ratelimit-limit", b"60"),
        (b"content-type", b"application/json"),
        (b"content-length", b"2"),
    ]
    assert body["body"] == b""
