"""Sending the node's e-mail (a password reset link) through the operator's SMTP server
(``EDGE_SMTP_URL``, ``edge.domain.smtp``).

``smtplib`` blocks, so a message is sent on a worker thread, within ``TIMEOUT_S``. A message's
body may hold a secret (a reset link): nothing here logs a body, a recipient or the server's
password.
"""

from __future__ import annotations

import smtplib
import ssl
from email.message import EmailMessage

import trio

from edge.domain.smtp import SmtpServer

TIMEOUT_S = 30.0


class Mailer:
    def __init__(self, server: SmtpServer, sender: str) -> None:
        self.server = server
        self.sender = sender

    async def send(self, to: str, subject: str, body: str) -> None:
        """Hand the message to the server; an ``OSError`` or ``smtplib.SMTPException`` when it
        does not take it."""
        message = EmailMessage()
        message["From"] = self.sender
        message["To"] = to
        message["Subject"] = subject
        message.set_content(body)
        await trio.to_thread.run_sync(self._send, message)

    def _send(self, message: EmailMessage) -> None:
        server = self.server
        client: smtplib.SMTP
        if server.scheme == "smtps":
            context = ssl.create_default_context()
            client = smtplib.SMTP_SSL(server.host, server.port, timeout=TIMEOUT_S, context=context)
        else:
            client = smtplib.SMTP(server.host, server.port, timeout=TIMEOUT_S)
        with client:
            if server.scheme == "smtp+starttls":
                client.starttls(context=ssl.create_default_context())
            if server.username is not None:
                client.login(server.username, server.password or "")
            client.send_message(message)
