"""The page a buyer coming back from a provider sees (``edge.http.returns``): what happened,
in words, and where they go on to.

It carries no inline script or style (the node's CSP runs neither): its script,
``/static/return/return.js``, reads what to do from its own ``data-`` attributes. In the payment
popup the button opened, it sends the main window on (to the success address, or to this page
shown again with ``?shown=1``, which only says what happened) and closes the popup; anywhere
else it sends this window to the success address, or stays to say what went wrong. Without
script, a success moves on by a refresh and every page has its link.
"""

from __future__ import annotations

from html import escape

from edge.actors.messages import Returned
from edge.domain.returns import said

SHOWN = "shown"  # the query parameter of the page shown again, acting on nothing


def render(returned: Returned, tx_id: str, path: str) -> str:
    heading, sentence = said(returned.outcome, returned.provider_name)
    ok = returned.outcome.succeeded
    onward = returned.success_url if ok else returned.cancel_url
    # where the main window goes when this page is in the popup
    main = returned.success_url if ok else f"{path}?{SHOWN}=1"
    refresh = f'<meta http-equiv="refresh" content="0;url={escape(onward)}">' if ok else ""
    link = "Continue" if ok else "Back to the shop"
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(heading)}</title>"
        '<link rel="stylesheet" href="/static/return/return.css">'
        f'<script src="/static/return/return.js" data-outcome="{returned.outcome}"'
        f' data-succeeded="{str(ok).lower()}" data-next="{escape(onward)}"'
        f' data-main="{escape(main)}"></script>{refresh}</head>'
        f'<body><main class="{"ok" if ok else "failed"}">'
        f'<h1>{escape(heading)}</h1><p role="{"status" if ok else "alert"}">{escape(sentence)}</p>'
        f'<p class="reference">Reference <code>{escape(tx_id)}</code></p>'
        f'<p><a class="onward" href="{escape(onward)}">{link}</a></p>'
        "</main></body></html>"
    )
