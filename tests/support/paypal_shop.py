"""A project wired to a running PayPal simulator, as ``edge serve --demo`` wires one, and a
buyer who presses the simulator's buttons over plain HTTP."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx

from edge.sim.paypal import PayPalSimulator
from support.client import Admin, manual_shop

CLIENT_ID = "sim-client-shop"
CLIENT_SECRET = "sim-secret-shop"


@dataclass
class PayPalShop:
    project_id: str
    live_key: str
    test_key: str
    sim: PayPalSimulator
    webhook_id: str


async def paypal_shop(
    admin: Admin, sim: PayPalSimulator, project_id: str | None = None, **credentials: object
) -> PayPalShop:
    """PayPal enabled (test mode, against ``sim``) on a new shop, or on ``project_id``."""
    if project_id is None:
        shop = await manual_shop(admin)
        pid, live_key, test_key = shop.project_id, shop.live_key, shop.test_key
    else:
        pid = project_id
        live_key, test_key = await admin.key(pid, "live"), await admin.key(pid, "test")
    await admin.product(
        pid, "pro-monthly", name="Pro", kind="subscription", amount=9, interval="month"
    )
    webhook_id = sim.register_webhook(CLIENT_ID, CLIENT_SECRET, f"{admin.url}/webhook/paypal/{pid}")
    test = {
        "clientId": CLIENT_ID,
        "clientSecret": CLIENT_SECRET,
        "webhookId": webhook_id,
        "apiBase": sim.url,
        "certHosts": ["127.0.0.1"],
        **credentials,
    }
    await admin.provider(pid, "paypal", {"enabled": True, "order": 1, "test": test})
    return PayPalShop(pid, live_key, test_key, sim, webhook_id)


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
