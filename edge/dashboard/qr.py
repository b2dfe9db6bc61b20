"""QR codes drawn as inline SVG on the node (segno, pure Python): the two-factor set-up's
``otpauth://`` address and a product's payment links. They show under the dashboard's strict
Content-Security-Policy with no script, no image address and nothing sent elsewhere."""

from __future__ import annotations

import html

import segno

AUTHENTICATOR = "QR code for your authenticator app"


def svg(text: str, label: str = AUTHENTICATOR) -> str:
    """``text`` as a QR code (error correction M), an ``<svg>`` element named ``label`` (its
    title, and its accessible name as an image)."""
    code = segno.make(text, error="m", micro=False)
    drawn: str = code.svg_inline(scale=4, title=label)
    return drawn.replace("<svg ", f'<svg role="img" aria-label="{html.escape(label)}" ', 1)
