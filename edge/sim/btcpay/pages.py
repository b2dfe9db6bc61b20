"""The buyer's invoice page at the simulated BTCPay Server (``/i/{invoiceId}``).

It stands in for the wallet and the blockchain as well as the checkout: Pay in full, Pay part and
Let expire for a new invoice; Confirm (enough confirmations) or Mark invalid (they never came) for
one that is paid and waiting. Plain HTML forms, no script, every interpolated value escaped."""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

_STYLE = """
body{font:16px/1.5 system-ui,sans-serif;margin:0;background:#f2f5f4;color:#1a1a1a}
main{max-width:26rem;margin:3rem auto;background:#fff;border-radius:12px;padding:2rem;
box-shadow:0 2px 12px rgba(0,0,0,.08)}h1{font-size:1.3rem;margin:0 0 .25rem;color:#0f3b21}
.amount{font-size:1.8rem;margin:.5rem 0 1rem}.status{font-weight:600}
.badge{display:inline-block;background:#51b13e;color:#fff;border-radius:4px;padding:0 .4rem;
font-size:.8rem}form{margin:.5rem 0}button{width:100%;padding:.75rem;border-radius:8px;
border:1px solid #ccc;font-size:1rem;background:#fff;cursor:pointer}
button.pay{background:#51b13e;border-color:#51b13e;color:#fff;font-weight:600}.note{color:#555}
"""

# invoice status -> (note, [(action, label)])
_ACTIONS: Mapping[str, tuple[str, list[tuple[str, str]]]] = {
    "New": (
        "Send the amount from any wallet. Pay part sends half of it.",
        [("pay", "Pay in full"), ("pay-part", "Pay part"), ("expire", "Let expire")],
    ),
    "Processing": (
        "Paid: waiting for confirmations on the blockchain.",
        [("confirm", "Confirm"), ("invalidate", "Mark invalid")],
    ),
    "Expired": (
        "This invoice has expired. A payment now reaches the merchant late.",
        [("pay", "Pay in full")],
    ),
}


def invoice_page(invoice: Mapping[str, Any]) -> str:
    status = str(invoice["status"])
    note, buttons = _ACTIONS.get(status, (f"This invoice is {status.lower()}.", []))
    metadata = invoice.get("metadata") or {}
    title = str(metadata.get("itemDesc") or "Invoice")
    action = f"/i/{invoice['id']}"
    forms = "".join(
        f'<form method="post" action="{escape(action)}">'
        f'<button type="submit" name="action" value="{value}"'
        f"{' class=pay' if value == 'pay' else ''}>{label}</button></form>"
        for value, label in buttons
    )
    redirect = (invoice.get("checkout") or {}).get("redirectURL")
    back = (
        f'<p><a href="{escape(str(redirect))}">Return to store</a></p>'
        if redirect and status == "Settled"
        else ""
    )
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{escape(title)} - BTCPay Server (simulated)</title><style>{_STYLE}</style>"
        f'</head><body><main><span class="badge">Regtest (simulated)</span>'
        f"<h1>{escape(title)}</h1>"
        f'<p class="amount">{escape(str(invoice["amount"]))} {escape(str(invoice["currency"]))}'
        f'</p><p>Status: <span class="status">{escape(status)}</span>'
        f" ({escape(str(invoice['additionalStatus']))})</p>"
        f'<p class="note">{escape(note)}</p>{forms}{back}</main></body></html>'
    )
