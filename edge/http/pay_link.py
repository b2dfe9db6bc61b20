"""Payment links (CONTRACT 4.1): a page the node serves per product, for a merchant with no
website of their own, and the node's own pages a buyer comes back to.

``GET /pay/{projectId}/{productId}`` (optional ``customerRef``, ``quantity``, ``mode``, ``lang``)
shows the product and its price and holds a ``<cm-button>``, loaded from this node with its SRI
hash: the payment window, its check of the signed payment options, the checkout and every
hand-off are the button's own, so a link is under the button's checks and limits, and there is
no second way into a checkout. The product's name and price come from the project's public-info,
the same cached answer the window verifies, charged to the same limit; nothing about the buyer is
stored. The link's own parameters are checked as the checkout checks them (CONTRACT 4.2): a
``customerRef`` is a metadata value (at most 500 characters), ``quantity`` an integer from 1 to
100 (1 for a subscription: ``409 quantity_not_allowed``), ``mode`` live or test; an unknown
project or product is the public-info's 404. Other query parameters (a chat app's tracking tag)
are ignored. The page speaks the buyer's language (``lang``, then ``Accept-Language``).

``GET /pay/{projectId}/done/{txId}`` and ``.../canceled/{txId}``: the node's own pages at the end
of a checkout. A merchant with no website sets them, with ``{TX_ID}`` for the id, as the
project's success and cancel addresses; they say the checkout's outcome from its status record
(the status endpoint's read, charged to its limit), and follow it while it is being confirmed.
"""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

from quart import Blueprint, Response, request
from werkzeug.datastructures import MultiDict

from edge.actors.messages import GetPublicInfo, GetStatus
from edge.actors.project import PublicInfo
from edge.domain import ids
from edge.domain.errors import InvalidInput
from edge.domain.inputs import bounded_int
from edge.domain.language import negotiate
from edge.domain.metadata import MAX_VALUE_CHARS
from edge.domain.money import to_minor
from edge.domain.returns import Outcome, outcome
from edge.domain.status import Kind
from edge.errors import Conflict, ContractError, NotFound, project_not_found, tx_not_found
from edge.http import bodies, button
from edge.http.assets import answer
from edge.http.clients import charge
from edge.http.context import ask, node
from edge.http.pay_page import ButtonScript, Landing, Link, Money, link_page, outcome_page
from edge.providers.registry import PROVIDERS

blueprint = Blueprint("pay_link", __name__)

STATIC = Path(__file__).resolve().parent.parent / "static" / "pay"
FILES = ("pay.js", "pay.css")
# the methods whose checkout hands a token to a hosted card form the shop's own page opens
# (Paddle.js): this page opens none, so its window does not offer them
CARD_FORM_PROVIDERS = tuple(name for name, p in PROVIDERS.items() if p.checkout_type == "token")
# the checkout's bounds of a quantity (CONTRACT 4.2)
MIN_QUANTITY, MAX_QUANTITY = 1, 100
# outcomes that may still change: the node's page follows the status while it shows one
_UNSETTLED = frozenset({Outcome.PENDING, Outcome.PROCESSING})


@blueprint.get("/pay/<project_id>/<product_id>")
async def payment_link(project_id: str, product_id: str) -> Response:
    if not ids.is_project_id(project_id):
        raise project_not_found()
    customer_ref, quantity, mode = link_options(request.args)
    info: PublicInfo = await ask(
        project_id, GetPublicInfo(product_id, mode, charge=charge("public"))
    )
    product = json.loads(info.body, parse_float=Decimal)["product"]
    if product["kind"] == Kind.SUBSCRIPTION and quantity != 1:
        raise Conflict(
            "quantity_not_allowed", "A subscription is bought one at a time.", field="quantity"
        )
    link = Link(
        project_id=project_id,
        product_id=product_id,
        name=product["name"],
        kind=product["kind"],
        interval=product["interval"],
        price=_money(product["amount"], product["currency"]),
        quantity=quantity,
        customer_ref=customer_ref,
        mode=mode,
        without=CARD_FORM_PROVIDERS,
    )
    script = button.current(node().signer)
    lang = _language()
    return _page(link_page(lang, link, ButtonScript(script.path, script.integrity)), lang)


def link_options(args: MultiDict[str, str]) -> tuple[str | None, int, str]:
    """``(customerRef, quantity, mode)`` of a link's query, checked as the checkout checks the
    same fields; InvalidInput (``400 invalid_request``) naming the parameter otherwise. An empty
    ``customerRef`` is none, as the button sends none for an empty attribute."""
    customer_ref = args.get("customerRef") or None
    if customer_ref is not None and len(customer_ref) > MAX_VALUE_CHARS:
        raise InvalidInput(
            f"customerRef is longer than {MAX_VALUE_CHARS} characters.", field="customerRef"
        )
    quantity = MIN_QUANTITY
    raw_quantity = args.get("quantity")
    if raw_quantity is not None:
        parsed = bounded_int(raw_quantity, MIN_QUANTITY, MAX_QUANTITY)
        if parsed is None:
            raise InvalidInput(
                f"quantity must be an integer from {MIN_QUANTITY} to {MAX_QUANTITY}", "quantity"
            )
        quantity = parsed
    return customer_ref, quantity, bodies.mode(args.get("mode", "live"))


@blueprint.get("/pay/<project_id>/done/<tx_id>")
async def checkout_done(project_id: str, tx_id: str) -> Response:
    return await _landing(project_id, tx_id, canceled=False)


@blueprint.get("/pay/<project_id>/canceled/<tx_id>")
async def checkout_canceled(project_id: str, tx_id: str) -> Response:
    return await _landing(project_id, tx_id, canceled=True)


async def _landing(project_id: str, tx_id: str, *, canceled: bool) -> Response:
    """The checkout's outcome, from its status record; an unknown or malformed project or
    transaction, or another project's, all answer the same 404 (ids cannot be probed)."""
    if not ids.is_project_id(project_id) or not ids.is_tx_id(tx_id):
        raise tx_not_found()
    try:
        body: bytes = await ask(project_id, GetStatus(tx_id, charge=charge("status")))
    except ContractError as failure:
        if failure.code == "project_not_found":
            raise tx_not_found() from None
        raise
    record: dict[str, Any] = json.loads(body, parse_float=Decimal)
    result = outcome(record["status"], None, canceled_by_buyer=canceled)
    status_url = f"/status/{project_id}/{tx_id}" if result in _UNSETTLED else None
    shown = Landing(
        outcome=result,
        tx_id=tx_id,
        amount=_money(record["amount"], record["currency"]),
        is_test=record["isTest"],
        status_url=status_url,
        version=record["version"],
    )
    lang = _language()
    return _page(outcome_page(lang, shown, f"{request.path}?lang={lang}"), lang)


@blueprint.get("/static/pay/<name>")
async def static_file(name: str) -> Response:
    """The pages' script and style sheet (the node's CSP runs no inline ones)."""
    if name not in FILES:
        raise NotFound("not_found", "No such file.")
    return answer(STATIC, name, "public, max-age=300")


def _language() -> str:
    """The buyer's language: the link's ``lang``, then the browser's."""
    return negotiate(request.args.get("lang"), request.headers.get("Accept-Language"))


def _money(amount: Decimal | int, currency: str) -> Money:
    return Money(to_minor(amount, currency), currency)


def _page(html: str, lang: str) -> Response:
    response = Response(html, status=200, content_type="text/html; charset=utf-8")
    response.headers["Content-Language"] = lang
    response.headers["Vary"] = "Accept-Language"
    # never kept: a price changed by the merchant shows at once, and the page a buyer comes
    # back to from a provider's page is loaded afresh rather than restored mid-hand-off
    response.headers["Cache-Control"] = "no-store"
    # the address may carry the merchant's customerRef: it goes to no other site
    response.headers["Referrer-Policy"] = "no-referrer"
    return response
