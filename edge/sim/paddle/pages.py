"""The buyer's pages at the simulated Paddle: the card form that stands in for Paddle.js's
overlay checkout, and the customer portal.

Plain HTML forms, no script, every interpolated value escaped. Each button posts its own
``action``; the addresses to send the buyer on to travel as hidden fields."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from typing import Any

from edge.domain.money import EXPONENTS

_STYLE = """
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f4f4f8;color:#1a1a1a}
main{max-width:26rem;margin:3rem auto;background:#fff;border-radius:12px;padding:2rem;
box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:1.4rem;margin:0 0 .25rem}.amount{font-size:1.8rem;margin:.5rem 0 1rem}
.badge{display:inline-block;background:#fddd35;border-radius:4px;padding:0 .4rem;font-size:.8rem}
label{display:block;font-size:.85rem;color:#555;margin-top:.5rem}
input[readonly]{box-sizing:border-box;width:100%;padding:.5rem;border:1px solid #ccc;
border-radius:6px;background:#fafafa}
form{margin:.5rem 0}button{width:100%;padding:.75rem;border-radius:8px;border:1px solid #ccc;
font-size:1rem;background:#fff;cursor:pointer}button.pay{background:#2a2a7a;color:#fff;
border-color:#2a2a7a;font-weight:600}.note{color:#555}.error{color:#b00020}
"""


def amount_text(minor: int, currency: str) -> str:
    places = EXPONENTS.get(currency, 2)
    whole, part = divmod(minor, 10**places)
    return f"{whole}.{part:0{places}d} {currency}" if places else f"{whole} {currency}"


def _page(title: str, content: str) -> str:
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)} - Paddle (simulated)</title><style>{_STYLE}</style></head>"
        f'<body><main><span class="badge">Sandbox (simulated)</span>{content}</main></body></html>'
    )


def _forms(action: str, hidden: Mapping[str, str], buttons: Sequence[tuple[str, str]]) -> str:
    fields = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in hidden.items()
    )
    return "".join(
        f'<form method="post" action="{escape(action)}">{fields}'
        f'<button type="submit" name="action" value="{escape(value)}"'
        f"{' class=pay' if value == 'pay' else ''}>{escape(label)}</button></form>"
        for value, label in buttons
    )


def checkout_page(txn: Mapping[str, Any], hidden: Mapping[str, str], error: str = "") -> str:
    """The card form of a transaction: Pay, Decline (the card is refused; the form stays
    open) and Close (nothing happens, as when the buyer closes the overlay)."""
    item = txn["items"][0]["price"]
    total = amount_text(int(txn["details"]["totals"]["grand_total"]), txn["currency_code"])
    cycle = item.get("billing_cycle")
    if cycle:
        total += f" / {cycle['interval']}"
    title = str(item.get("name") or item["description"])
    open_ = txn["status"] in ("draft", "ready")
    body = f'<h1>{escape(title)}</h1><p class="amount">{escape(total)}</p>'
    if error:
        body += f'<p class="error" role="alert">{escape(error)}</p>'
    if open_:
        body += (
            '<label>Card number<input readonly value="4242 4242 4242 4242"></label>'
            '<label>Expiry<input readonly value="12 / 30"></label>'
        )
        buttons = [("pay", "Pay"), ("decline", "Decline"), ("close", "Close")]
    else:
        body += f'<p class="note">This transaction is {escape(txn["status"])}.</p>'
        buttons = [("close", "Close")]
    return _page(title, body + _forms(f"/checkout/{txn['id']}", hidden, buttons))


def done_page(txn: Mapping[str, Any]) -> str:
    return _page(
        "Payment complete",
        f"<h1>Payment complete</h1><p class=note>Transaction {escape(txn['id'])} is"
        f" {escape(txn['status'])}.</p>",
    )


def closed_page() -> str:
    return _page("Checkout closed", "<h1>Checkout closed</h1><p class=note>Nothing was paid.</p>")


def portal_page(session_id: str, subscriptions: Sequence[Mapping[str, Any]]) -> str:
    """A customer's subscriptions, each active one with a Cancel button."""
    rows = []
    for sub in subscriptions:
        price = sub["items"][0]["price"]
        text = (
            f"<p><strong>{escape(str(price.get('name') or price['description']))}</strong>"
            f" ({escape(sub['id'])}): {escape(sub['status'])}</p>"
        )
        if sub["status"] not in ("canceled",):
            text += _forms(
                f"/portal/{session_id}",
                {"subscription_id": sub["id"]},
                [("cancel_subscription", "Cancel subscription")],
            )
        rows.append(text)
    return _page("Customer portal", "<h1>Your subscriptions</h1>" + "".join(rows))
