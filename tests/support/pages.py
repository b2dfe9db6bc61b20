"""A buyer at a simulator's page (PayPal's approval, BTCPay's invoice) who presses its buttons
over plain HTTP: plain HTML forms, read with the standard library's parser."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx


class _Forms(HTMLParser):
    """The page's forms: action, method, named fields, and buttons as [text, name, value]."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: list[tuple[str, str, dict[str, str], list[list[str]]]] = []
        self._in_button = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.forms.append((found.get("action", ""), found.get("method") or "get", {}, []))
        elif tag == "button" and self.forms:
            self._in_button = True
            self.forms[-1][3].append(["", found.get("name", ""), found.get("value", "")])
        elif (
            tag == "input"
            and self.forms
            and found.get("name")
            and found.get("type", "text") not in ("submit", "button")
        ):
            self.forms[-1][2][found["name"]] = found.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "button":
            self._in_button = False

    def handle_data(self, data: str) -> None:
        if self._in_button and self.forms:
            self.forms[-1][3][-1][0] += data


async def press(http: httpx.AsyncClient, page_url: str, button: str) -> str:
    """Open the simulator's page and press ``button``; where it sends the buyer (not followed)."""
    page = await http.get(page_url)
    assert page.status_code == 200, page.text
    parser = _Forms()
    parser.feed(page.text)
    for action, method, fields, buttons in parser.forms:
        for text, name, value in buttons:
            if text.strip() != button:
                continue
            data = {**fields, **({name: value} if name else {})}
            target = urljoin(page_url, action or page_url)
            if method.lower() == "post":
                answer = await http.post(target, data=data, follow_redirects=False)
            else:
                answer = await http.get(target, params=data, follow_redirects=False)
            assert answer.status_code in (302, 303), answer.text
            return str(answer.headers["location"])
    raise AssertionError(f"no {button!r} button on {page_url}: {parser.forms}")
