"""The node's return page (edge.http.return_page), read as a browser's script reads it: the
outcome, where this window goes on to, and where the main window goes when it is the popup."""

from __future__ import annotations

import re
from dataclasses import dataclass
from html import unescape

import httpx

_SCRIPT = re.compile(r'<script src="/static/return/return\.js"([^>]*)>')
_DATA = re.compile(r'data-(\w+)="([^"]*)"')


@dataclass(frozen=True)
class ReturnPage:
    outcome: str
    succeeded: bool
    next: str  # where this window goes on to: the success address, or the cancel address's link
    main: str  # where the main window goes when this page is in the payment popup
    text: str


def read_return_page(answer: httpx.Response) -> ReturnPage:
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/html")
    found = _SCRIPT.search(answer.text)
    assert found is not None, answer.text
    data = {k: unescape(v) for k, v in _DATA.findall(found.group(1))}
    return ReturnPage(
        data["outcome"], data["succeeded"] == "true", data["next"], data["main"], answer.text
    )
