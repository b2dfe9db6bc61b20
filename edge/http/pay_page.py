"""The HTML of the payment link's pages (``edge.http.pay_link``), in the buyer's language.

No inline script or style (the node's CSP runs neither): the style sheet and the script are
``/static/pay/pay.css`` and ``pay.js``. Amounts are written here as plain numbers with their
currency code, inside ``<data class="money">`` elements; ``pay.js`` writes them as the page's
language does with the browser's ``Intl.NumberFormat``, the formatter the button's window uses,
so the page and the window show a price the same way. The ``<html lang>`` is the buyer's
language, which the ``<cm-button>`` follows.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

from edge.domain.money import to_major
from edge.domain.returns import Outcome
from edge.i18n import say

STYLE = "/static/pay/pay.css"
SCRIPT = "/static/pay/pay.js"
# where a price goes in a sentence: filled in after the sentence is escaped, with its element
_PRICE = "\ue000"


@dataclass(frozen=True)
class Money:
    minor: int  # minor units of the currency (CONTRACT 1)
    currency: str

    def times(self, quantity: int) -> Money:
        return Money(self.minor * quantity, self.currency)

    @property
    def major(self) -> str:
        """The amount in major units, with as many decimals as the currency has: ``19.99``."""
        return str(to_major(self.minor, self.currency))


@dataclass(frozen=True)
class Link:
    """What a payment link shows and what its button starts."""

    project_id: str
    product_id: str
    name: str
    kind: str  # payment or subscription
    interval: str | None  # a subscription's
    price: Money  # one unit's
    quantity: int
    customer_ref: str | None
    mode: str
    # methods the page cannot hand off to: a hosted card form (Paddle.js) is opened by the
    # merchant's own page, and this page's CSP loads no script from elsewhere
    without: tuple[str, ...] = ()


@dataclass(frozen=True)
class ButtonScript:
    path: str
    integrity: str


@dataclass(frozen=True)
class Landing:
    """What the node's own page at the end of a checkout says (from its status record)."""

    outcome: Outcome
    tx_id: str
    amount: Money
    is_test: bool
    status_url: str | None  # asked again while the outcome may still change
    version: int


def link_page(lang: str, link: Link, button: ButtonScript) -> str:
    """The payment link: the product, its price (the total, for more than one), the
    subscription's renewal, and the ``<cm-button>`` that opens the payment window."""
    total = link.price.times(link.quantity)
    subscription = link.kind == "subscription"
    price = _priced(lang, total, link.interval)
    lines = ""
    if link.quantity > 1:
        lines = (
            '<dl class="lines">'
            f"<dt>{_t(lang, 'pay.quantity')}</dt><dd>{link.quantity}</dd>"
            f"<dt>{_t(lang, 'pay.each')}</dt><dd>{_money(link.price)}</dd>"
            f"<dt>{_t(lang, 'pay.total')}</dt><dd>{_money(total)}</dd>"
            "</dl>"
        )
    renews = (
        f'<p class="renews">{_t(lang, f"pay.renews.{link.interval}")}</p>' if subscription else ""
    )
    label = (
        _t(lang, "pay.action.subscribe")
        if subscription
        else _with_price(say(lang, "pay.action.pay", price=_PRICE), _money(total))
    )
    attributes = {
        "project": link.project_id,
        "product": link.product_id,
        "customer-ref": link.customer_ref,
        "quantity": str(link.quantity) if link.quantity > 1 else None,
        "mode": link.mode if link.mode != "live" else None,
        "without": ",".join(link.without) or None,
    }
    element = "".join(f' {name}="{escape(value)}"' for name, value in attributes.items() if value)
    test = link.mode == "test"
    head = (
        f"<title>{_t(lang, 'pay.title', product=link.name)}</title>"
        '<meta name="robots" content="noindex">'
        f'<meta property="og:title" content="{escape(link.name)}">'
        f'<meta property="og:description" content="{escape(_plain_priced(lang, total, link))}">'
        f'<script src="{SCRIPT}" defer></script>'
        f'<script src="{escape(button.path)}" integrity="{escape(button.integrity)}"'
        ' crossorigin="anonymous" defer></script>'
    )
    body = (
        '<main class="card" aria-labelledby="product">'
        f'<p class="eyebrow">{_t(lang, "pay.eyebrow")}{_badge(lang) if test else ""}</p>'
        f'<h1 id="product">{escape(link.name)}</h1>'
        f'<p class="price">{price}</p>{renews}{lines}'
        f'<cm-button class="pay"{element}>{label}</cm-button>'
        f'<p class="note">{_t(lang, "pay.next_step")}</p>'
        + (f'<p class="note test">{_t(lang, "pay.test_note")}</p>' if test else "")
        + f'<noscript><p class="note">{_t(lang, "pay.needs_script")}</p></noscript>'
        "</main>"
    )
    return _document(lang, head, body)


def outcome_page(lang: str, shown: Landing, path: str) -> str:
    """The node's own page at the end of a checkout: what happened, the amount and the
    reference; while the payment is being confirmed, ``pay.js`` asks the status again and shows
    the new outcome (without script, a link checks again: ``path``, in the same language)."""
    heading = _t(lang, f"pay.outcome.{shown.outcome}.heading")
    watching = (
        f' data-status-url="{escape(shown.status_url)}" data-version="{shown.version}"'
        if shown.status_url
        else ""
    )
    again = (
        f'<p><a class="again" href="{escape(path)}">{_t(lang, "pay.check_again")}</a></p>'
        if shown.status_url
        else ""
    )
    role = "status" if shown.outcome.succeeded else "alert"
    body = (
        f'<main class="card outcome {"ok" if shown.outcome.succeeded else "failed"}"{watching}>'
        f'<p class="eyebrow">{_t(lang, "pay.eyebrow")}{_badge(lang) if shown.is_test else ""}</p>'
        f"<h1>{heading}</h1>"
        f'<p role="{role}">{_t(lang, f"pay.outcome.{shown.outcome}.text")}</p>'
        '<dl class="lines">'
        f"<dt>{_t(lang, 'pay.amount')}</dt><dd>{_money(shown.amount)}</dd>"
        f"<dt>{_t(lang, 'pay.reference')}</dt><dd><code>{escape(shown.tx_id)}</code></dd>"
        f"</dl>{again}</main>"
    )
    head = f'<title>{heading}</title><script src="{SCRIPT}" defer></script>'
    return _document(lang, head, body)


def _document(lang: str, head: str, body: str) -> str:
    return (
        f'<!doctype html><html lang="{escape(lang)}"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="stylesheet" href="{STYLE}">{head}</head><body>{body}</body></html>'
    )


def _t(lang: str, key: str, **params: object) -> str:
    return escape(say(lang, key, **params))


def _badge(lang: str) -> str:
    return f' <span class="badge">{_t(lang, "pay.test_mode")}</span>'


def _priced(lang: str, money: Money, interval: str | None) -> str:
    """The price as HTML: the amount, per its interval for a subscription."""
    if interval is None:
        return _money(money)
    return _with_price(say(lang, f"pay.price.per.{interval}", price=_PRICE), _money(money))


def _plain_priced(lang: str, money: Money, link: Link) -> str:
    """The price as text, for a link's preview (a chat app reads the page without script)."""
    plain = _plain(money)
    if link.interval is None:
        return plain
    return say(lang, f"pay.price.per.{link.interval}", price=plain)


def _with_price(sentence: str, price_html: str) -> str:
    return escape(sentence).replace(_PRICE, price_html)


def _money(money: Money) -> str:
    """An amount ``pay.js`` writes in the page's language; its text until then, or without
    script, is the plain amount and the currency code."""
    return (
        f'<data class="money" value="{money.major}" data-currency="{escape(money.currency)}">'
        f"{escape(_plain(money))}</data>"
    )


def _plain(money: Money) -> str:
    return f"{money.major} {money.currency}"
