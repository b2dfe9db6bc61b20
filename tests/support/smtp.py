"""A real SMTP server on loopback for tests (aiosmtpd, in its own thread): what the node sends
lands in an ``Inbox``."""

from __future__ import annotations

import email
import email.policy
import socket
import threading
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from email.message import EmailMessage
from functools import partial
from pathlib import Path
from typing import Any

import trio
from aiosmtpd.controller import Controller

from edge.node import RunningNode, run_node
from support.nodes import node_settings
from support.waits import until_notified


class Inbox:
    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        # the messages come in on aiosmtpd's own thread and event loop: each one is announced
        self._arrived = threading.Condition()

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802 (aiosmtpd's name)
        message = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self._arrived:
            self.messages.append(message)  # type: ignore[arg-type]
            self._arrived.notify_all()
        return "250 OK"

    def to(self, address: str) -> list[EmailMessage]:
        with self._arrived:
            return [m for m in self.messages if m["To"] == address]

    async def wait_for(self, address: str, timeout_s: float = 10.0) -> EmailMessage:
        await until_notified(
            self._arrived,
            lambda: any(m["To"] == address for m in self.messages),
            what=f"an e-mail to {address}",
            timeout_s=timeout_s,
        )
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


@asynccontextmanager
async def mailing_node(data_dir: Path) -> AsyncIterator[tuple[RunningNode, Inbox]]:
    """A node in this process that e-mails through an SMTP server on loopback, and its
    inbox."""
    with smtp_server() as (url, inbox):
        async with trio.open_nursery() as nursery:
            running: RunningNode = await nursery.start(
                partial(run_node, node_settings(data_dir, smtp_url=url))
            )
            yield running, inbox
            running.stop.set()
