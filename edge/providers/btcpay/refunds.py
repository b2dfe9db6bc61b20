"""BTCPay refunds: pull payments the buyer claims, made exactly once (CONTRACT 4.3a).

A refund is ``POST /api/v1/stores/{storeId}/invoices/{invoiceId}/refund``
(``GreenfieldInvoiceController.RefundInvoice``, btcpayserver@03345c28 Controllers/GreenField/
GreenfieldInvoiceController.cs:321-511): BTCPay makes a pull payment (``PullPaymentData``) of the
amount and answers it. The store-scoped route is the one every 2.x server has; the store-less
``/api/v1/invoices/{invoiceId}/refund`` only exists from v2.4.0 on (btcpayserver#7313).

- The request (``RefundInvoiceRequest``): ``name`` is the node's tag, ``Refund rf_... of tx_...``
  (``pull_payment_name``); ``description`` the merchant's reason; ``refundVariant`` ``Fiat`` for
  all of what was charged (BTCPay gives back what the buyer paid, in the invoice's currency, at
  the rate of the day it is paid out) and else ``Custom`` with ``customAmount`` and
  ``customCurrency`` the invoice's; ``payoutMethodId`` the payout method of the payment method
  the buyer paid with (``payout_method``). ``payoutMethodId`` is the field of v2.0 to v2.4.0's
  swagger; v2.4.1 still reads it (``[Obsolete]``, superseded by a ``payoutMethods`` array that
  older servers ignore), so every 2.x server takes the same request. Without one, BTCPay takes
  the invoice's default payment method, which may not be how the buyer paid.
- Pull payments have no idempotency key. So every attempt first asks what exists
  (``refunds_of``: the store's pull payments, archived ones included, ``GET .../pull-payments?
  includeArchived=true``) and adopts the one tagged with the node's refund id
  (``edge.providers.refunding``). BTCPay answers no "already pending" refusal: it makes as many
  pull payments for an invoice as it is asked.
- Greenfield does not say which invoice a pull payment refunds (``PullPaymentData`` has no
  invoice id; the link is BTCPay's own ``RefundData`` table). A pull payment is this
  transaction's when its name carries the transaction's id (the node's tag) or names the
  invoice: BTCPay's own default name is ``Refund {invoiceId}``, in its screens
  (``UIInvoiceController.UI.cs:421``, localized) and in Greenfield (``Name = request.Name ??
  $"Refund {invoice.Id}"``).

A pull payment as a refund (``as_refund``): its ``amount`` in its ``currency``, which is the
invoice's for ``Fiat`` and ``Custom`` and the payment method's (BTC) for the crypto variants
BTCPay's screens offer (``RateThen``, ``CurrentRate``, ``OverpaidAmount``), counted at the
invoice's own rate for that currency (``InvoicePaymentMethodDataModel.rate``); its state from
its payouts (``GET /api/v1/pull-payments/{id}/payouts?includeCancelled=true``): succeeded once
the completed payouts' ``originalAmount`` reach its amount, failed when archived before any was
completed, pending otherwise (``edge.providers.btcpay.events``: a refund offered counts as given
back). Refund pull payments have no end date (``CreateRefundPullPayment`` sets none), so their
expiry is not read.

The store's API key needs, besides the invoice permissions, ``btcpay.store.
cancreatenonapprovedpullpayments`` to refund (``RefundInvoice``'s policy; with
``btcpay.store.cancreatepullpayments`` the crypto variants approve their claims) and
``btcpay.store.canviewpullpayments`` to list the pull payments (``GetPullPayments``'s policy):
without the second, every refund is refused for good at its first look (403).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from urllib.parse import quote

from edge.domain.convergence import Refund
from edge.domain.events import EventType
from edge.domain.status import Status
from edge.providers import answers, calls
from edge.providers.base import (
    REFUND_FAILED,
    REFUND_PENDING,
    REFUND_SUCCEEDED,
    FollowUpRequest,
    FollowUpResult,
    NormalizedEvent,
    ProviderRefund,
)
from edge.providers.btcpay import money
from edge.providers.btcpay.api import API, Greenfield, PullPaymentMade
from edge.providers.reading import integer, refs, string

_REFUND_ID = re.compile(r"(?<![0-9A-Za-z_])rf_[0-7][0-9A-HJKMNP-TV-Z]{25}(?![0-9A-Za-z])")
_ONE_WORD = r"(?<![0-9A-Za-z_]){}(?![0-9A-Za-z_])"


def pull_payment_name(refund_id: str, tx_id: str) -> str:
    """The name the node gives a refund's pull payment: its tag (shown to the buyer too, on
    the claim page, as the pull payment's title)."""
    return f"Refund {refund_id} of {tx_id}"


def tag_of(name: object) -> str | None:
    """The node's refund id a pull payment's name carries, if any."""
    found = _REFUND_ID.search(name) if isinstance(name, str) else None
    return found.group(0) if found else None


def belongs(pull_payment: Mapping[str, Any], tx_id: str, invoice_id: str) -> bool:
    """Is ``pull_payment`` a refund of this transaction: named for it by the node, or for its
    invoice by BTCPay?"""
    name = pull_payment.get("name")
    if not isinstance(name, str):
        return False
    return any(
        re.search(_ONE_WORD.format(re.escape(word)), name) for word in (tx_id, invoice_id) if word
    )


def refund_body(
    tx: Mapping[str, Any], params: Mapping[str, Any], payout: str | None
) -> dict[str, Any]:
    """The ``RefundInvoiceRequest`` for a refund follow-up (params refundId, amount in the
    node's minor units, reason, whole)."""
    currency = str(tx["currency"])
    body: dict[str, Any] = {"name": pull_payment_name(str(params["refundId"]), str(tx["id"]))}
    if params.get("reason"):
        body["description"] = str(params["reason"])
    if params.get("whole"):
        body["refundVariant"] = "Fiat"
    else:
        body.update(
            refundVariant="Custom",
            customAmount=money.to_btcpay(int(params["amount"]), currency),
            customCurrency=currency,
        )
    if payout is not None:
        body["payoutMethodId"] = payout
    return body


def payout_method(methods: Any) -> str | None:
    """The payout method to give the money back by: that of the payment method the buyer paid
    with (``InvoicePaymentMethodDataModel.payments``; the one with the most payments if the buyer
    used several), as BTCPay's own screens propose the payout method closest to the invoice's
    payments (``InvoiceDataExtensions.GetClosestPayoutMethodId``). A payment method id is
    ``{crypto}-{CHAIN|LN|LNURL}`` and a payout method id ``{crypto}-{CHAIN|LN}``
    (``PaymentTypes``, ``PayoutTypes``): an LNURL payment is paid back over lightning. None
    when nothing was paid (an invoice marked settled): BTCPay then takes the invoice's default."""
    paid = [
        (len(m["payments"]), str(m["paymentMethodId"]))
        for m in _objects(methods)
        if isinstance(m.get("payments"), list)
        and m["payments"]
        and isinstance(m.get("paymentMethodId"), str)
    ]
    if not paid:
        return None
    method = max(paid)[1]
    return method[: -len("URL")] if method.upper().endswith("-LNURL") else method


def rates_of(methods: Any) -> dict[str, str]:
    """Each payment method currency's rate in the invoice currency (``rate``)."""
    return {
        str(m["currency"]): str(m["rate"])
        for m in _objects(methods)
        if isinstance(m.get("currency"), str) and isinstance(m.get("rate"), str)
    }


def as_refund(
    pull_payment: Mapping[str, Any],
    payouts: Sequence[Mapping[str, Any]],
    currency: str,
    rates: Mapping[str, str],
) -> ProviderRefund:
    """A pull payment as a refund of a transaction in ``currency`` (the module's rules)."""
    pp_currency = string(pull_payment, "currency") or ""
    amount = _minor(pull_payment.get("amount"), pp_currency, currency, rates)
    limit = money.decimal_of(pull_payment.get("amount"))
    completed = sum(
        (
            money.decimal_of(p.get("originalAmount")) or Decimal(0)
            for p in payouts
            if p.get("state") == "Completed"
        ),
        Decimal(0),
    )
    link = string(pull_payment, "viewLink")
    withdrawn: int | None = None
    if limit is not None and 0 < limit <= completed:
        state, detail = REFUND_SUCCEEDED, "paid out to the buyer"
    elif pull_payment.get("archived") is True and completed > 0:
        # withdrawn after part was paid out: what was paid out went back, the rest never will
        state, detail = REFUND_SUCCEEDED, "part paid out to the buyer, then withdrawn"
        offered, amount = amount, _minor(str(completed), pp_currency, currency, rates)
        if offered is not None and amount is not None and offered > amount:
            withdrawn = offered - amount
    elif pull_payment.get("archived") is True:
        state, detail = REFUND_FAILED, "withdrawn (archived) in BTCPay before it was paid out"
    else:
        state = REFUND_PENDING
        detail = f"the buyer claims it at {link}" if link else "offered to the buyer to claim"
    starts = integer(pull_payment, "startsAt")
    return ProviderRefund(
        id=str(pull_payment.get("id")),
        amount_minor=amount,
        state=state,
        created_ms=starts * 1000 if starts is not None and starts > 0 else None,
        tag=tag_of(pull_payment.get("name")),
        detail=detail,
        withdrawn_minor=withdrawn,
    )


def refund_events(
    refund: ProviderRefund, invoice_id: str, tx: Mapping[str, Any]
) -> tuple[NormalizedEvent, ...]:
    """What a refund's pull payment says, as the events a sync (or the read an
    ``InvoiceRefund`` asks for) gives: the refund, counted under the pull payment's id, while it
    is pending or paid out; ``payment.refund_failed`` once withdrawn. Deduplicated by the pull
    payment and the state seen (``sync:{pullPaymentId}:{state}``): reading it twice stores
    nothing twice; each state is the same change (``refund:{pullPaymentId}``), told once."""
    dedup = f"sync:{refund.id}:{refund.state}"
    common: dict[str, Any] = {
        "provider_event_id": dedup,
        "provider_type": f"pullPayment:{refund.state}",
        "occurred_at_ms": refund.created_ms,
        "refs": refs(invoice_id),
        "link_refs": (refund.id,),
        "provider_refund": refund,
        "amount_minor": refund.amount_minor,
        "currency": str(tx["currency"]) if refund.amount_minor is not None else None,
        "refund": Refund(refund.amount_minor, refund.id)
        if refund.amount_minor is not None
        else None,
    }
    if refund.amount_minor is None:
        # an amount the node cannot count (no rate for its currency): named, not summed
        kind, target = EventType.UNMATCHED, None
    elif refund.state == REFUND_FAILED:
        kind, target = EventType.PAYMENT_REFUND_FAILED, None
    else:
        kind, target = EventType.PAYMENT_PARTIALLY_REFUNDED, Status.PARTIALLY_REFUNDED
    told = (NormalizedEvent(type=kind, payment_status=target, **common),)
    if refund.withdrawn_minor is None:
        return told
    # the part withdrawn before it was paid out no longer counts: a failure of that much of
    # the refund (``edge.domain.refunds.reported``), told once
    withdrawn = f"sync:{refund.id}:withdrawn"
    return (
        *told,
        NormalizedEvent(
            provider_event_id=withdrawn,
            type=EventType.PAYMENT_REFUND_FAILED,
            provider_type="pullPayment:withdrawn",
            occurred_at_ms=refund.created_ms,
            refs=refs(invoice_id),
            link_refs=(refund.id,),
            amount_minor=refund.withdrawn_minor,
            currency=str(tx["currency"]),
            refund=Refund(refund.withdrawn_minor, refund.id),
        ),
    )


@dataclass(frozen=True)
class Read:
    """Refunds of one transaction as read: each pull payment with its refund, and the bytes."""

    refunds: tuple[ProviderRefund, ...]
    raw: bytes


async def send_refund(request: FollowUpRequest) -> ProviderRefund:
    """Make the refund the follow-up asks for: read how the buyer paid, then ask BTCPay for the
    pull payment. ``ProviderError`` as every call (``calls``: 5xx retryable, a 400
    ``non-refundable`` or a 422 not)."""
    tx, api = request.tx, Greenfield.of(request.http, request.credentials)
    invoice = _invoice_path(tx)
    methods = await api.read(api.store_url(f"{invoice}/payment-methods"))
    body = refund_body(tx, request.follow_up.params, payout_method(methods))
    made = await api.post(api.store_url(f"{invoice}/refund"), body)
    answers.read(API, made, PullPaymentMade)
    return as_refund(made, (), str(tx["currency"]), rates_of(methods))


async def refunds_of(request: FollowUpRequest) -> tuple[ProviderRefund, ...]:
    """The refunds BTCPay holds for the transaction's invoice (the module's rules)."""
    api = Greenfield.of(request.http, request.credentials)
    return (await of_transaction(api, request.tx)).refunds


async def of_transaction(api: Greenfield, tx: Mapping[str, Any], methods: Any = None) -> Read:
    """The transaction's refunds: the store's pull payments that are its (``belongs``), each
    with its payouts; ``methods`` (the invoice's payment methods) when already read, for the
    rates of pull payments in another currency than the invoice's."""
    listed = await api.get(api.store_url("/pull-payments", includeArchived=True))
    found = [
        pp
        for pp in _objects(api.json_of(listed))
        if isinstance(pp.get("id"), str) and belongs(pp, str(tx["id"]), str(tx["providerRef"]))
    ]
    raws, refunds = [listed.raw], []
    if methods is None and any(pp.get("currency") != tx["currency"] for pp in found):
        methods = await api.read(api.store_url(f"{_invoice_path(tx)}/payment-methods"))
    rates = rates_of(methods)
    for pp in found:
        payouts = await api.get(_payouts_url(api, str(pp["id"])))
        raws.append(payouts.raw)
        refunds.append(as_refund(pp, _objects(api.json_of(payouts)), str(tx["currency"]), rates))
    return Read(tuple(refunds), b"\n".join(raws))


async def read_offered(request: FollowUpRequest) -> FollowUpResult:
    """The follow-up an ``InvoiceRefund`` asks for (``events.READ_REFUND``): read the pull
    payment it names (``GET /api/v1/pull-payments/{id}``, ``PullPayments_GetPullPayment``) and
    its payouts, and report it as ``refund_events`` say. A pull payment BTCPay no longer has is
    done with, nothing reported."""
    tx, api = request.tx, Greenfield.of(request.http, request.credentials)
    pull_payment = str(request.follow_up.params["pullPaymentId"])
    answer = await api.get(api.url(f"/api/v1/pull-payments/{quote(pull_payment, safe='')}"))
    if answer.status == 404:
        return FollowUpResult(detail=f"BTCPay has no pull payment {pull_payment}")
    made = api.json_of(answer)
    if not isinstance(made, dict):
        raise calls.not_an_object(API)
    payouts = await api.get(_payouts_url(api, pull_payment))
    methods: Any = None
    if made.get("currency") != tx["currency"]:
        methods = await api.read(api.store_url(f"{_invoice_path(tx)}/payment-methods"))
    refund = as_refund(made, _objects(api.json_of(payouts)), str(tx["currency"]), rates_of(methods))
    return FollowUpResult(
        detail=f"BTCPay's pull payment {refund.id} is {refund.state}: {refund.detail}",
        events=refund_events(refund, str(tx["providerRef"]), tx),
        body=answer.raw + b"\n" + payouts.raw,
    )


def _payouts_url(api: Greenfield, pull_payment: str) -> str:
    return api.url(
        f"/api/v1/pull-payments/{quote(pull_payment, safe='')}/payouts", includeCancelled=True
    )


def _invoice_path(tx: Mapping[str, Any]) -> str:
    return f"/invoices/{quote(str(tx['providerRef']), safe='')}"


def _minor(value: object, pp_currency: str, currency: str, rates: Mapping[str, str]) -> int | None:
    """Minor units of ``currency`` for a pull payment's amount: as it is in the invoice's own
    currency, at the invoice's rate in a payment method's."""
    if pp_currency == currency:
        return money.from_btcpay(value, currency)
    return money.at_rate(value, rates.get(pp_currency), currency)


def _objects(value: Any) -> list[Mapping[str, Any]]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []
