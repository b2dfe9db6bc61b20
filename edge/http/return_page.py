"""The page a buyer coming back from a provider sees (``edge.http.returns``): what happened,
in words, and where they go on to.

It carries no inline script or style (the node's CSP runs neither): its script,
``/static/return/return.js``, reads what to do from its own ``data-`` attributes. In the payment
popup the button opened, it sends the main window on (to the success address, or to this page
shown again with ``?shown=1``, which only says what happened) and closes the popup; anywhere
else it sends this window to the success address, or stays to say what went wrong. Without
script, a success moves on by a refresh and every page has its link.

It speaks the buyer's language (CONTRACT 4.1; ``edge.i18n``, part ``buyer``), chosen by
``language``: a ``lang`` query parameter, then the browser's ``Accept-Language``. The return
address is the node's, made when the checkout was created and handed to the provider, so the
shop page's ``lang`` cannot ride on it; the browser coming back is the buyer's own, whose
``Accept-Language`` is what CONTRACT 4.1 falls back to. ``lang`` is for the page shown again:
the popup sends the main window to it with the language it was shown in, so both say the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape

from edge.actors.messages import Returned
from edge.domain.language import negotiate
from edge.domain.returns import said
from edge.i18n import say

SHOWN = "shown"  # the query parameter of the page shown again, acting on nothing
LANG = "lang"  # the query parameter naming the buyer's language


def language(query: Mapping[str, str], accept_language: str | None) -> str:
    """The language the page speaks: the ``lang`` query parameter, then ``Accept-Language``."""
    return negotiate(query.get(LANG), accept_language)


def render(returned: Returned, tx_id: str, path: str, lang: str = "en") -> str:
    """The page in ``lang`` (one of the node's languages; another is English)."""
    lang = negotiate(lang)
    heading_key, sentence_key = said(returned.outcome)
    heading = say(lang, heading_key)
    sentence = say(lang, sentence_key, provider=returned.provider_name)
    ok = returned.outcome.succeeded
    onward = returned.success_url if ok else returned.cancel_url
    # where the main window goes when this page is in the popup: shown again in this language
    main = returned.success_url if ok else f"{path}?{SHOWN}=1&{LANG}={lang}"
    refresh = f'<meta http-equiv="refresh" content="0;url={escape(onward)}">' if ok else ""
    link = say(lang, "return.continue" if ok else "return.back")
    reference = say(lang, "return.reference")
    return (
        f'<!doctype html><html lang="{lang}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(heading)}</title>"
        '<link rel="stylesheet" href="/static/return/return.css">'
        f'<script src="/static/return/return.js" data-outcome="{returned.outcome}"'
        f' data-succeeded="{str(ok).lower()}" data-next="{escape(onward)}"'
        f' data-main="{escape(main)}"></script>{refresh}</head>'
        f'<body><main class="{"ok" if ok else "failed"}">'
        f'<h1>{escape(heading)}</h1><p role="{"status" if ok else "alert"}">{escape(sentence)}</p>'
        f'<p class="reference">{escape(reference)} <code>{escape(tx_id)}</code></p>'
        f'<p><a class="onward" href="{escape(onward)}">{escape(link)}</a></p>'
        "</main></body></html>"
    )
