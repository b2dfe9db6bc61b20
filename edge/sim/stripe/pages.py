"""The simulator's hosted pages: Checkout and the customer portal.

Plain HTML forms, no script, every interpolated value escaped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from importlib import resources
from string import Template
from typing import Any

from edge.domain.money import EXPONENTS, to_major

_CHECKOUT = Template(resources.files(__package__).joinpath("checkout.html").read_text("utf-8"))
_PORTAL = Template(resources.files(__package__).joinpath("portal.html").read_text("utf-8"))
_TEST_BADGE = '<span class="badge">Test mode</span>'


def format_amount(minor: int, currency: str) -> str:
    code = currency.upper()
    if code not in EXPONENTS:
        return f"{minor} {code} (minor units)"
    return f"{to_major(minor, code)} {code}"


def checkout_page(
    session: Mapping[str, Any], product: str, quantity: int, interval: str | None, note: str
) -> str:
    """The page for one session in any state; ``note`` is shown above the buttons."""
    amount = format_amount(session["amount_total"], session["currency"])
    if interval:
        amount += f" / {interval}"
    action = f"/c/pay/{escape(session['id'])}"
    if session["status"] == "complete":
        body = '<p class="done">Paid. Thank you!</p>'
    elif session["status"] == "expired":
        body = '<p class="note">This checkout has expired.</p>'
    else:
        body = (f'<p class="note">{escape(note)}</p>' if note else "") + "".join(
            f'<form method="post" action="{action}/{verb}">'
            f'<button type="submit"{cls}>{label}</button></form>'
            for verb, label, cls in (
                ("pay", f"Pay {escape(amount)}", ' class="pay"'),
                ("decline", "Decline (card_declined)", ""),
                ("expire", "Let it expire", ""),
            )
        )
    return _CHECKOUT.substitute(
        badge="" if session["livemode"] else _TEST_BADGE,
        product=escape(f"{quantity} × {product}" if quantity > 1 else product),
        amount=escape(amount),
        body=body,
        session_id=escape(session["id"]),
    )


def portal_page(
    portal_session: Mapping[str, Any], subscriptions: Iterable[Mapping[str, Any]]
) -> str:
    action = f"/p/session/{escape(portal_session['id'])}/cancel"
    rows = []
    for sub in subscriptions:
        item = sub["items"]["data"][0]
        price = format_amount(item["price"]["unit_amount"], sub["currency"])
        line = f"{escape(item['price']['nickname'] or sub['id'])}: {escape(price)} / " + escape(
            item["price"]["recurring"]["interval"]
        )
        if sub["status"] == "canceled":
            rows.append(f"<li>{line} — canceled</li>")
        else:
            rows.append(
                f"<li>{line} — {escape(sub['status'])} "
                f'<form method="post" action="{action}">'
                f'<input type="hidden" name="subscription" value="{escape(sub["id"])}">'
                '<button type="submit">Cancel subscription</button></form></li>'
            )
    return_url = portal_session.get("return_url")
    return _PORTAL.substitute(
        badge="" if portal_session["livemode"] else _TEST_BADGE,
        subscriptions="".join(rows) or "<li>No subscriptions.</li>",
        return_link=f'<p><a href="{escape(return_url)}">Return to the shop</a></p>'
        if return_url
        else "",
        customer=escape(portal_session["customer"]),
    )
