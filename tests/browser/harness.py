"""Headless Chromium against a real node.

The node runs in the test's trio loop; Playwright's sync API (it brings its own asyncio loop)
drives the browser from a worker thread, one browser per test. The merchant's page is served by
``ShopSite`` from another origin than the node, with a strict Content-Security-Policy, and loads
the button exactly as the snippet says: from the node, with its SRI hash.
"""

from __future__ import annotations

import html
import json
import logging
import os
import threading
import time
from collections.abc import Callable
from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import trio
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import sync_playwright

T = TypeVar("T")

CHROMIUM = Path(os.environ.get("EDGE_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
EVENTS = ("cm-busy", "cm-load-providers", "cm-checkout-started", "cm-error", "cm-idle")

# Records every button event as it reaches document (so it bubbled), and cancels those the page
# address names in ?prevent=.
RECORDER_JS = """
window.cmEvents = [];
const prevent = new URLSearchParams(location.search).getAll('prevent');
for (const type of EVENTS_JSON) {
  document.addEventListener(type, (event) => {
    if (prevent.includes(type)) event.preventDefault();
    const error = event.detail.error;
    cmEvents.push({
      type, bubbles: event.bubbles, cancelable: event.cancelable, composed: event.composed,
      target: event.target.localName,
      detail: error ? {code: error.code, isError: error instanceof Error} : event.detail,
    });
  });
}
""".replace("EVENTS_JSON", json.dumps(list(EVENTS)))


# Sets the card form hook on the element before the button script has defined it.
EARLY_CARD_FORM_JS = """
window.cardForms = [];
document.querySelector('cm-button').cardForm = (handoff) => cardForms.push(handoff);
"""


def wait_until(page: Any, expression: str, timeout_s: float = 10.0) -> None:
    """Waits for ``expression`` to be true in the page, polling from here. Playwright's own
    ``wait_for_function`` evaluates a string predicate inside the page, which the test pages'
    strict CSP (no 'unsafe-eval', as a merchant's would be) refuses whenever it has to poll;
    ``page.evaluate`` runs outside the page's CSP."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(expression):
        if time.monotonic() > deadline:
            raise AssertionError(f"still false after {timeout_s} s: {expression}")
        page.wait_for_timeout(25)


def require_browser() -> None:
    """Skips without Chromium, unless EDGE_REQUIRE_BROWSER=1 (CI), where that is a failure.
    ``EDGE_CHROMIUM`` names another Chromium build (the default is Debian's)."""
    if CHROMIUM.exists():
        return
    if os.environ.get("EDGE_REQUIRE_BROWSER") == "1":
        pytest.fail(f"browser tests required but there is no Chromium at {CHROMIUM}")
    pytest.skip(f"no Chromium at {CHROMIUM}")


async def in_browser(scenario: Callable[[Any], T], **context_options: Any) -> T:
    """Runs ``scenario(page)`` in a fresh headless Chromium, off the trio thread."""
    return await trio.to_thread.run_sync(partial(_run, scenario, context_options))


def _run(scenario: Callable[[Any], T], context_options: dict[str, Any]) -> T:
    """One retry, and only for a browser that died before it had loaded a single page (seen
    once in CI, in Chromium's first navigation): then nothing of the scenario has reached the
    node yet, so a fresh browser is the same test. Any later death is the test's failure."""
    try:
        return _run_once(scenario, context_options)
    except _DiedBeforeFirstPage as died:
        logging.getLogger(__name__).warning("Chromium died before its first page (%s); again", died)
        return _run_once(scenario, context_options)


class _DiedBeforeFirstPage(Exception):
    pass


def _run_once(scenario: Callable[[Any], T], context_options: dict[str, Any]) -> T:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        loaded: list[str] = []
        try:
            options = {"viewport": {"width": 960, "height": 720}, **context_options}
            context = browser.new_context(**options)
            context.set_default_timeout(10_000)
            page = context.new_page()
            page.on("load", lambda p: loaded.append(p.url))
            try:
                return scenario(page)
            except PlaywrightError as error:
                if not loaded and "has been closed" in error.message:
                    raise _DiedBeforeFirstPage(error.message.splitlines()[0]) from error
                raise
        finally:
            browser.close()


class ShopSite:
    """A merchant's page on its own origin: ``page_url(...)`` renders one ``<cm-button>``."""

    def __init__(self, node_url: str, integrity: str) -> None:
        self.node_url = node_url
        self.integrity = integrity
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 (http.server's name)
                site._answer(self)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def __enter__(self) -> ShopSite:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()

    def page_url(self, path: str = "/", **params: Any) -> str:
        """``params``: element attributes (``customer_ref`` -> ``customer-ref``, ``lang``),
        ``prevent`` (a list of event names), ``button=False`` for a page with no button at all,
        and ``page_lang``: the page's ``<html lang>`` (``en-GB`` unless said; ``none``: none)."""
        return f"{self.url}{path}?{urlencode(params, doseq=True)}"

    def _answer(self, handler: BaseHTTPRequestHandler) -> None:
        url = urlsplit(handler.path)
        query = {name: values[-1] for name, values in parse_qs(url.query).items()}
        if url.path == "/recorder.js":
            body, content_type = RECORDER_JS, "text/javascript"
        elif url.path == "/early-card-form.js":
            body, content_type = EARLY_CARD_FORM_JS, "text/javascript"
        else:
            body, content_type = self._page(url.path, query), "text/html; charset=utf-8"
        data = body.encode()
        handler.send_response(200)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(data)))
        handler.send_header("Content-Security-Policy", self._csp(query.get("base_url")))
        handler.end_headers()
        handler.wfile.write(data)

    def _csp(self, base_url: str | None) -> str:
        # What INTEGRATION.md asks of a merchant: the node's origin for script, fetch and icons.
        # No inline script or style: the element must not need them.
        nodes = " ".join(filter(None, [self.node_url, base_url]))
        return (
            f"default-src 'none'; script-src 'self' {self.node_url}; connect-src {nodes}; "
            f"img-src {self.node_url}; style-src 'self'"
        )

    def _page(self, path: str, query: dict[str, str]) -> str:
        if path != "/":
            return f"<!doctype html><title>{html.escape(path)}</title><h1>{html.escape(path)}</h1>"
        element = ""
        if query.get("button") != "False":
            attrs = "".join(
                f' {name.replace("_", "-")}="{html.escape(value)}"'
                for name, value in query.items()
                if name in ("project", "product", "customer_ref", "mode", "base_url", "lang")
            )
            element = (
                f"<cm-button{attrs}>Buy now</cm-button>\n"
                f'<script src="{self.node_url}/button.js" integrity="{self.integrity}"'
                ' crossorigin="anonymous"></script>'
            )
        early = (
            '<script src="/early-card-form.js"></script>' if query.get("early_card_form") else ""
        )
        element = (
            element.replace("</cm-button>\n", "</cm-button>\n" + early + "\n", 1)
            if early
            else element
        )
        page_lang = query.get("page_lang", "en-GB")
        html_lang = "" if page_lang == "none" else f' lang="{html.escape(page_lang)}"'
        return f"""<!doctype html>
<html{html_lang}><head><meta charset="utf-8"><title>Shop</title>
<script src="/recorder.js"></script></head>
<body><main><h1>A book</h1>
{element}
<p><a href="/elsewhere">Something after the button</a></p>
</main></body></html>"""
