"""``EDGE_SMTP_URL``: where the node sends its e-mail (a password reset link), read once at
start. ``smtp://host[:25]`` sends in the clear (a relay on the node's own machine or network),
``smtp+starttls://user:password@host[:587]`` upgrades to TLS before logging in, and
``smtps://user:password@host[:465]`` speaks TLS from the start. A user name and password are
taken only over TLS, so they never cross a network in the clear.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import unquote, urlsplit

PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}


@dataclass(frozen=True)
class SmtpServer:
    scheme: str
    host: str
    port: int
    username: str | None = None
    password: str | None = field(default=None, repr=False)  # never in a log line


def parse(url: str) -> SmtpServer:
    """The server ``url`` names; ``ValueError`` saying what is wrong (never the password)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise ValueError("not a URL such as smtp+starttls://user:password@host:587") from None
    scheme = parts.scheme.lower()
    if scheme not in PORTS:
        raise ValueError(f"the scheme must be one of {', '.join(PORTS)}, not {scheme!r}")
    if not parts.hostname:
        raise ValueError("it names no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise ValueError("it takes no path, query or fragment")
    username = unquote(parts.username) if parts.username else None
    password = unquote(parts.password) if parts.password is not None else None
    if (username or password) and scheme == "smtp":
        raise ValueError("a user name and password go only over TLS: smtp+starttls or smtps")
    return SmtpServer(scheme, parts.hostname, port or PORTS[scheme], username, password)
