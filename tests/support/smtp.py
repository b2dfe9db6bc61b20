"""A real SMTP server on loopback for tests (aiosmtpd, in its own thread): what the node sends
lands in an ``Inbox``."""

from __future__ import annotations

import email
import email.policy
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from email.message import EmailMessage
from typing import Any

import trio
from aiosmtpd.controller import Controller


class Inbox:
    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self._lock = threading.Lock()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._lock:
            self.messages.append(message)  # type: ignore[arg-type]
        return "250 OK"

    def to(self, address: str) -> list[EmailMessage]:
        with self._lock:
            return [m for m in self.messages if m["To"] == address]

    async def wait_for(self, address: str, timeout_s: float = 10.0) -> EmailMessage:
        with trio.fail_after(timeout_s):
            # the messages come in on aiosmtpd's own thread and event loop: polled from here
            while not self.to(address):  # noqa: ASYNC110
                await trio.sleep(0.02)
        return self.to(address)[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def smtp_server() -> Iterator[tuple[str, Inbox]]:
    """``(EDGE_SMTP_URL for it, its inbox)``."""
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=_free_port())
    controller.start()
    try:
        yield f"smtp://127.0.0.1:{controller.port}", inbox
    finally:
        controller.stop()
