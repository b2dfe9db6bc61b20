"""The buyer's pages at the simulated PayPal: approve an order, approve a subscription.

Plain HTML forms, no script, every interpolated value escaped. Each button posts its own
``action``; the page's token travels as a hidden field."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

_STYLE = """
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f5f7fa;color:#1a1a1a}
main{max-width:26rem;margin:3rem auto;background:#fff;border-radius:12px;padding:2rem;
box-shadow:0 2px 12px rgba(0,0,0,.08)}
h1{font-size:1.4rem;margin:0 0 .25rem;color:#003087}.amount{font-size:1.8rem;margin:.5rem 0 1.5rem}
.badge{display:inline-block;background:#ffc439;border-radius:4px;padding:0 .4rem;font-size:.8rem}
form{margin:.5rem 0}button{width:100%;padding:.75rem;border-radius:24px;border:1px solid #ccc;
font-size:1rem;background:#fff;cursor:pointer}button.approve{background:#ffc439;border-color:#ffc439;
font-weight:600}.note{color:#555}
"""


def _page(
    title: str,
    amount: str,
    note: str,
    action: str,
    hidden: Mapping[str, str],
    buttons: list[tuple[str, str]],
) -> str:
    fields = "".join(
        f'<input type="hidden" name="{escape(k)}" value="{escape(v)}">' for k, v in hidden.items()
    )
    forms = "".join(
        f'<form method="post" action="{escape(action)}">{fields}'
        f'<button type="submit" name="action" value="{value}"'
        f"{' class=approve' if value == 'approve' else ''}>{label}</button></form>"
        for value, label in buttons
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)} - PayPal (simulated)</title><style>{_STYLE}</style></head>"
        f'<body><main><span class="badge">Sandbox (simulated)</span><h1>{escape(title)}</h1>'
        f'<p class="amount">{escape(amount)}</p><p class="note">{escape(note)}</p>{forms}'
        "</main></body></html>"
    )


def approval_page(order: Mapping[str, Any]) -> str:
    unit = order["purchase_units"][0]
    amount = f"{unit['amount']['value']} {unit['amount']['currency_code']}"
    title = str(unit.get("description") or "Pay with PayPal")
    if order["status"] in ("CREATED", "PAYER_ACTION_REQUIRED"):
        note = "Decline approves with a funding source the capture will refuse."
        buttons = [("approve", "Approve"), ("decline", "Decline"), ("cancel", "Cancel")]
    else:
        note = f"This order is {order['status'].lower()}."
        buttons = []
    return _page(title, amount, note, "/checkoutnow", {"token": order["id"]}, buttons)


def subscription_page(subscription: Mapping[str, Any], plan: Mapping[str, Any], token: str) -> str:
    cycle = plan["billing_cycles"][0]
    price = cycle["pricing_scheme"]["fixed_price"]
    unit = str(cycle["frequency"]["interval_unit"]).lower()
    amount = f"{price['value']} {price['currency_code']} / {unit}"
    pending = subscription["status"] == "APPROVAL_PENDING"
    note = (
        "Approve starts the subscription and pays its first cycle."
        if pending
        else (f"This subscription is {subscription['status'].lower()}.")
    )
    buttons = [("approve", "Approve"), ("cancel", "Cancel")] if pending else []
    return _page(
        str(plan["name"]),
        amount,
        note,
        "/webapps/billing/subscriptions",
        {"ba_token": token},
        buttons,
    )


def closed_page(what: str) -> str:
    """What the JS SDK's popup shows as it closes: the buyer's page carries on (``onApprove``
    or ``onCancel``)."""
    return _page(what, "", "You can close this window.", "/checkoutnow", {}, [])
