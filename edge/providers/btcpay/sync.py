"""Asking BTCPay what became of a checkout (CONTRACT 4.3a): ``sync`` reads the invoice the node
made and answers the events its webhooks would have given; ``list_events`` lists the store's
invoices since a time, for the node to sync each.

``sync`` reads ``GET /api/v1/stores/{storeId}/invoices/{invoiceId}`` (``InvoiceData``: 404
``invoice-not-found`` is ``found=False``), its payment methods (``GET .../payment-methods``:
what was paid, when, at what rate) and its refunds (``edge.providers.btcpay.refunds``). The
invoice's ``status`` is read as the webhook event that set it, through the same table
(``events.row_of``), so the event's type, target, flag and change are the webhook's:
- New: nothing (not paid yet, or an RBF replacement that sent no event);
- Processing: as InvoiceProcessing, payment.processing;
- Settled (Marked included): as InvoiceSettled, payment.succeeded (after an expiry the fold
  makes it money paid late);
- Invalid: as InvoiceInvalid, payment.failed;
- Expired: as InvoiceExpired, checkout.expired, flagged paid_late when part was paid by the
  expiry (``partiallyPaid``: additionalStatus PaidPartial, or a payment received by
  ``expirationTime``);
- Expired with PaidLate or PaidOver: also as InvoicePaidAfterExpiration, payment.paid_late.

No invoice event states an amount: BTCPay's webhooks carry none, and an overpaid invoice is
still settled (``PaidOver``), so stating ``paidAmount`` would make a success a mismatch.
Deduplication: ``sync:{invoiceId}:{status}`` (``sync:{invoiceId}:PaidLate`` for the money paid
late), so asking twice stores nothing twice; a webhook that comes later is the same change.

``list_events``: BTCPay keeps no event list. Its invoice list (``GET /api/v1/stores/{storeId}/
invoices``, ``GreenfieldInvoiceController.GetInvoices``: ``startDate``/``endDate`` in unix
seconds on the creation time, ``skip``/``take``, newest first, ``InvoiceRepository``
``OrderByDesc`` by default) gives the invoices created since the time, archived ones included;
the node syncs each. The first page's newest creation time becomes ``endDate`` of the next
pages, so invoices made meanwhile do not shift the pages (skip counts from the newest). Only
invoices whose ``metadata.orderId`` is a transaction id can be the node's; the rest (Point of
Sale, other apps) are left out. An invoice created before the time and paid after it is not
listed: reconcile from a time before the checkouts in question.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from edge.providers.base import (
    EventsPage,
    EventsRequest,
    NormalizedEvent,
    SyncRequest,
    SyncResult,
)
from edge.providers.btcpay import events, refunds
from edge.providers.btcpay.api import Greenfield
from edge.providers.reading import integer, mapping, refs, string, tx_id

PAGE = 100  # invoices a page of ``list_events``

# an invoice status -> the webhook type that sets it
_SET_BY = {
    "Processing": "InvoiceProcessing",
    "Settled": "InvoiceSettled",
    "Invalid": "InvoiceInvalid",
    "Expired": "InvoiceExpired",
}
_PAID_LATE = ("PaidLate", "PaidOver")


async def sync(request: SyncRequest) -> SyncResult:
    """What BTCPay holds for the transaction's invoice, as events and refunds."""
    tx = request.tx
    invoice_id = tx.get("providerRef")
    if not isinstance(invoice_id, str) or not invoice_id:
        return SyncResult(found=False, detail="No BTCPay invoice was made for this checkout.")
    api = Greenfield.of(request.http, request.credentials)
    path = f"/invoices/{quote(invoice_id, safe='')}"
    answer = await api.get(api.store_url(path))
    if answer.status == 404:
        return SyncResult(
            found=False, body=answer.raw, detail=f"BTCPay has no invoice {invoice_id}."
        )
    invoice = api.json_of(answer)
    if not isinstance(invoice, dict):
        return SyncResult(found=False, body=answer.raw, detail="BTCPay answered no invoice.")
    methods = await api.get(api.store_url(f"{path}/payment-methods"))
    paid_by = api.json_of(methods)
    read = await refunds.of_transaction(api, tx, paid_by)
    found = invoice_events(invoice, paid_by) + tuple(
        event for refund in read.refunds for event in refunds.refund_events(refund, invoice_id, tx)
    )
    return SyncResult(
        found=True,
        events=found,
        refunds=read.refunds,
        body=b"\n".join((answer.raw, methods.raw, read.raw)),
        detail=f"BTCPay's invoice {invoice_id} is {invoice.get('status')}"
        f" ({invoice.get('additionalStatus')}).",
    )


def invoice_events(invoice: Mapping[str, Any], methods: Any) -> tuple[NormalizedEvent, ...]:
    """The events an invoice's status stands for (the module's table)."""
    invoice_id, status = string(invoice, "id"), string(invoice, "status")
    set_by = _SET_BY.get(status or "")
    if invoice_id is None or status is None or set_by is None:
        return ()
    metadata = mapping(invoice, "metadata")
    expires = integer(invoice, "expirationTime")
    common: dict[str, Any] = {
        "tx_id": tx_id(metadata.get("orderId")),
        "refs": refs(invoice_id),
        "customer_ref": string(metadata, "customerRef"),
    }

    def read_as(btcpay_type: str, seen: str, flags: Mapping[str, Any]) -> NormalizedEvent:
        kind, target, flag = events.row_of(btcpay_type, flags)
        dedup = f"sync:{invoice_id}:{seen}"
        return NormalizedEvent(
            provider_event_id=dedup,
            type=kind,
            provider_type=f"invoice:{seen}",
            payment_status=target,
            attention=flag,
            change=invoice_id if btcpay_type in events.EXPIRY_TYPES else None,
            occurred_at_ms=expires * 1000
            if btcpay_type == "InvoiceExpired" and expires is not None
            else None,
            **common,
        )

    additional = string(invoice, "additionalStatus") or "None"
    flags = {
        "manuallyMarked": additional == "Marked",
        "partiallyPaid": status == "Expired" and _part_paid_by_expiry(additional, expires, methods),
    }
    found = [read_as(set_by, status, flags)]
    if status == "Expired" and _paid_after_expiry(expires, methods):
        # a payment after the end, whole or part (its webhook: InvoiceReceivedPayment's
        # afterExpiration): money for an ended checkout
        found.append(
            read_as("InvoiceReceivedPayment", "PaidAfterExpiry", {"afterExpiration": True})
        )
    if status == "Expired" and additional in _PAID_LATE:
        found.append(read_as("InvoicePaidAfterExpiration", "PaidLate", {}))
    return tuple(found)


async def list_events(request: EventsRequest) -> EventsPage:
    """One page of the store's invoices created since ``since_ms`` (the module's rules): the ids
    of those that can be the node's, for it to sync."""
    api = Greenfield.of(request.http, request.credentials)
    end, skip = _cursor(request.cursor)
    page = await api.read(
        api.store_url(
            "/invoices",
            startDate=max(request.since_ms, 0) // 1000,
            endDate=end,
            includeArchived=True,
            skip=skip,
            take=PAGE,
        )
    )
    invoices = [i for i in page if isinstance(i, dict)] if isinstance(page, list) else []
    if end is None:
        created = [c for c in (integer(i, "createdTime") for i in invoices) if c is not None]
        end = max(created) if created else None
    ours = tuple(
        str(i["id"])
        for i in invoices
        if isinstance(i.get("id"), str) and tx_id(mapping(i, "metadata").get("orderId"))
    )
    if len(invoices) < PAGE:
        return EventsPage(objects=ours)
    return EventsPage(objects=ours, cursor=f"{'' if end is None else end}:{skip + len(invoices)}")


def _cursor(cursor: str | None) -> tuple[int | None, int]:
    """(endDate, skip) of a ``list_events`` cursor (``"{endDate}:{skip}"``)."""
    if not cursor:
        return None, 0
    end, _, skip = cursor.partition(":")
    return (int(end) if end.isdigit() else None), (int(skip) if skip.isdigit() else 0)


def _paid_after_expiry(expires: int | None, methods: Any) -> bool:
    """Did a payment (not invalid) come after the expiry?"""
    return expires is not None and any(
        (integer(payment, "receivedDate") or 0) > expires for payment in _payments(methods)
    )


def _payments(methods: Any) -> list[Mapping[str, Any]]:
    """Every payment of an invoice's payment methods (``/payment-methods``), but invalid ones."""
    return [
        payment
        for method in (methods if isinstance(methods, list) else [])
        if isinstance(method, dict) and isinstance(method.get("payments"), list)
        for payment in method["payments"]
        if isinstance(payment, dict) and payment.get("status") != "Invalid"
    ]


def _part_paid_by_expiry(additional: str, expires: int | None, methods: Any) -> bool:
    """Had the buyer paid part by the expiry (``InvoiceExpired``'s ``partiallyPaid``)?"""
    if additional == "PaidPartial":
        return True
    if expires is None:
        return False
    return any(
        (integer(payment, "receivedDate") or expires + 1) <= expires
        for payment in _payments(methods)
    )
