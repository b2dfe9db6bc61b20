"""A product's payment links: the node's page where a buyer pays for it (``GET /pay/{projectId}/
{productId}``, with ``mode=test`` for test mode; ``customerRef`` and ``quantity`` are the
merchant's to add), for the dashboard to show with a copy button and a QR code to print."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import quote

from edge.dashboard import qr
from edge.domain.modes import LIVE, MODES

# the live link first: it is the one a merchant hands out
SHOWN = tuple(sorted(MODES, key=lambda mode: mode != LIVE))


@dataclass(frozen=True)
class PaymentLink:
    mode: str
    url: str
    element_id: str  # the page element holding the address (what the copy button copies)
    qr_svg: str


def payment_url(public_url: str, project_id: str, product_id: str, mode: str) -> str:
    """The payment page's address: live by default, ``?mode=test`` for test mode."""
    path = f"{public_url}/pay/{quote(project_id, safe='')}/{quote(product_id, safe='')}"
    return path if mode == LIVE else f"{path}?mode={mode}"


def payment_links(
    public_url: str, project_id: str, product_id: str, product_name: str
) -> list[PaymentLink]:
    """The live and the test link of one product, each with its QR code."""
    return [
        PaymentLink(
            mode,
            url := payment_url(public_url, project_id, product_id, mode),
            f"pay-link-{product_id}-{mode}",
            qr.svg(url, f"QR code of the {mode} payment link for {product_name}"),
        )
        for mode in SHOWN
    ]
