"""The node's own small files (the provider icons, the dashboard's and the return page's script
and style sheet), served from memory: read from the package once, each with its ETag, a 304
when the browser has it already.

Not Quart's file streaming: it opens the file in a worker thread, and a request cancelled
meanwhile (a browser dropping a style sheet it no longer needs) left the file open until it was
collected. These files are a few kilobytes; holding them costs nothing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from quart import Response, request

from edge.errors import NotFound

TYPES = {
    ".svg": "image/svg+xml",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
}


@dataclass(frozen=True)
class Asset:
    body: bytes
    content_type: str
    etag: str


_read: dict[Path, Asset] = {}


def asset(folder: Path, name: str) -> Asset:
    """The file ``name`` of ``folder`` (a plain name of a type above, nothing else), read once;
    ``404 not_found`` otherwise."""
    path = folder / name
    known = _read.get(path)
    if known is not None:
        return known
    kind = TYPES.get(Path(name).suffix)
    if kind is None or "/" in name or "\\" in name or name.startswith(".") or not path.is_file():
        raise NotFound("not_found", "No such file.")
    body = path.read_bytes()
    made = Asset(body, kind, '"' + hashlib.sha256(body).hexdigest()[:32] + '"')
    _read[path] = made
    return made


def etags(header: str) -> set[str]:
    """The ETags an ``If-None-Match`` header names."""
    return {part.strip() for part in header.split(",") if part.strip()}


def answer(folder: Path, name: str, cache_control: str) -> Response:
    """The file as an answer: 200 with it, or 304 when ``If-None-Match`` names its ETag."""
    found = asset(folder, name)
    headers = {"ETag": found.etag, "Cache-Control": cache_control}
    if found.etag in etags(request.headers.get("If-None-Match", "")):
        return not_modified(headers)
    return Response(found.body, status=200, content_type=found.content_type, headers=headers)


def not_modified(headers: dict[str, str]) -> Response:
    """``304`` with ``headers`` and nothing about a body: no Content-Type (Quart's default is
    HTML) and no Content-Length (the stored body's is not 0). A cache merges a 304's headers
    into the answer it kept (RFC 9111 4.3.4), which must stay the script, style or JSON it was."""
    unchanged = Response(b"", status=304, headers=headers)
    for name in ("Content-Type", "Content-Length"):
        del unchanged.headers[name]
    return unchanged
