"""The serving fast lane's reading of a request (edge.serving): one whole, plain HTTP/1.1
request that came in one read, or ``None`` for Hypercorn's h11 to read as before.

Merchant backends poll ``/status/`` and providers post ``/webhook/`` far more than anything
else, and nearly always as one plain request in one segment. Reading those here, without h11's
state machine and Hypercorn's per-request task and queues, is most of what a status read cost
(issue 35). So the lane takes only what it reads exactly as h11 would (tests/http check it
against h11 itself, for every input hypothesis finds): a stricter grammar than HTTP's, and
anything else at all (another version, a folded or odd header, chunks, ``Expect``,
``Connection``, a body that is not all there, a second request behind the first, a ``%`` in the
path, a long poll) goes to h11, which answers it, or refuses it, as it always has. A long poll
(``wait=``) goes there because the lane does not read the socket while the app works, so it
would not see the client leave, and the poll would hold its connection to its end.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# what h11 itself would take in one event, with room to spare (Hypercorn allows 16 KiB)
MAX_HEAD = 8192
_END = b"\r\n\r\n"
# No "%" (the path would need decoding), no fragment, nothing h11 might read otherwise.
_REQUEST_LINE = re.compile(
    rb"(GET|HEAD|POST) (/(?:status|webhook)/[A-Za-z0-9._~/-]*)(?:\?([A-Za-z0-9._~=&+,:-]*))?"
    rb" HTTP/1\.1"
)
# A token, a colon, and a value of visible ASCII with inner spaces; no space before the colon.
_FIELD = re.compile(
    rb"([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*((?:[\x21-\x7e](?:[\x20-\x7e\t]*[\x21-\x7e])?)?)[ \t]*"
)
# Fields that change how the message is framed or what the connection does next: h11's.
_DECLINED = frozenset(
    (b"transfer-encoding", b"expect", b"connection", b"upgrade", b"http2-settings", b"te")
)


@dataclass(slots=True)  # not frozen: made per request (docs/architecture.md)
class PlainRequest:
    method: str
    path: bytes
    query_string: bytes
    headers: list[tuple[bytes, bytes]]  # names in lower case, values stripped, as h11 gives
    body: bytes


def read(data: bytes) -> PlainRequest | None:
    """``data`` as one whole request, or None when it is anything else."""
    end = data.find(_END)
    if end < 0 or end > MAX_HEAD:
        return None
    lines = data[:end].split(b"\r\n")
    line = _REQUEST_LINE.fullmatch(lines[0])
    if line is None:
        return None
    method, path, query = line.groups()
    if query and b"wait=" in query:
        return None  # a long poll ends when its client leaves, which only h11's reading sees
    headers: list[tuple[bytes, bytes]] = []
    hosts = 0
    length: bytes | None = None
    for raw in lines[1:]:
        field = _FIELD.fullmatch(raw)
        if field is None:
            return None
        name = field[1].lower()
        value = field[2]
        if name == b"host":
            hosts += 1
        elif name == b"content-length":
            if length is not None or not value.isdigit() or len(value) > 9:
                return None
            length = value
        elif name in _DECLINED:
            return None
        headers.append((name, value))
    if hosts != 1:
        return None
    body = data[end + 4 :]
    if method == b"POST":
        if length is None or int(length) != len(body):
            return None
    elif body or (length is not None and int(length) != 0):
        return None
    return PlainRequest(method.decode(), path, query or b"", headers, body)
