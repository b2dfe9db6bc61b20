"""The two-factor set-up's QR code: the ``otpauth://`` address drawn as inline SVG on the node
(segno, pure Python), so it shows under the dashboard's strict Content-Security-Policy with no
script, no image address and nothing sent elsewhere."""

from __future__ import annotations

import segno


def svg(text: str) -> str:
    """``text`` as a QR code (error correction M), an ``<svg>`` element with a title."""
    code = segno.make(text, error="m", micro=False)
    drawn: str = code.svg_inline(scale=4, title="QR code for your authenticator app")
    return drawn.replace(
        "<svg ", '<svg role="img" aria-label="QR code for your authenticator app" ', 1
    )
