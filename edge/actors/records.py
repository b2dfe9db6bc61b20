"""Stored records and their wire shapes (CONTRACT 3, 4.5 and 6).

Stored money is integer minor units and stored times are integer ms; the wire gets major-unit
numbers and ISO 8601 strings. One place renders each shape so every endpoint agrees.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from edge.domain import attention
from edge.domain.money import to_wire
from edge.domain.timefmt import iso_ms
from edge.providers.offers import NAMES


def iso_or_none(ms: int | None) -> str | None:
    return None if ms is None else iso_ms(ms)


def status_record(tx: Mapping[str, Any]) -> dict[str, Any]:
    """The public status record: nothing about the buyer, ever."""
    record = {
        "id": tx["id"],
        "kind": tx["kind"],
        "status": tx["status"],
        "amount": to_wire(tx["amount"], tx["currency"]),
        "currency": tx["currency"],
        "isTest": tx["isTest"],
        "provider": tx["provider"],
        "version": tx["version"],
        "subscriptionId": tx.get("subscriptionId"),
        "createdAt": iso_ms(tx["createdAt"]),
        "updatedAt": iso_ms(tx["updatedAt"]),
    }
    if tx["id"].startswith("sub_"):
        record["interval"] = tx.get("interval")
        record["currentPeriodEnd"] = iso_or_none(tx.get("currentPeriodEnd"))
    return record


def status_body(record: Mapping[str, Any], cache: dict[str, tuple[int, int, bytes]]) -> bytes:
    """The status record as JSON bytes, rendered once per version of the record: pollers ask
    far more often than records change."""
    key = (record["version"], record["updatedAt"])
    cached = cache.get(record["id"])
    if cached is not None and cached[:2] == key:
        return cached[2]
    body = json.dumps(status_record(record), separators=(",", ":")).encode()
    cache[record["id"]] = (*key, body)
    return body


def transaction_view(tx: Mapping[str, Any]) -> dict[str, Any]:
    """What the merchant's own server sees: the status record plus metadata and references."""
    view = status_record(tx)
    view.update(
        {
            "productId": tx.get("productId"),
            # a subscription checkout's interval (the price is "9.00 EUR / month")
            "interval": tx.get("interval"),
            "quantity": tx.get("quantity", 1),
            "metadata": dict(tx.get("metadata") or {}),
            "customerRef": tx.get("customerRef"),
            "reference": tx.get("reference"),
            "providerRef": tx.get("providerRef"),
            "reason": tx.get("reason"),
            # the merchant must look (CONTRACT 2, 4.3): why, in ``attention``
            "needsAttention": bool(tx.get("needsAttention")),
            "attention": [attention_view(tx, flag) for flag in tx.get("attention") or ()],
            "handled": [handled_view(tx, done) for done in tx.get("handled") or ()],
            "asked": asked_view(tx.get("asked")),
            "refunds": [refund_view(tx, refund) for refund in tx.get("refunds") or ()],
        }
    )
    return view


def attention_view(tx: Mapping[str, Any], flag: Mapping[str, Any]) -> dict[str, Any]:
    """Why a transaction needs the merchant (``edge.domain.attention``): the flag's code, the
    event that raised it, the money concerned and the reason in words."""
    view: dict[str, Any] = {"code": flag["code"], "eventId": flag.get("eventId")}
    if flag["code"] == attention.AMOUNT_MISMATCH:
        view.update(_money_fields(flag))
    elif flag.get("amount") is not None and flag.get("currency"):
        view.update(amount=to_wire(flag["amount"], flag["currency"]), currency=flag["currency"])
    if flag.get("refundId"):
        view["refundId"] = flag["refundId"]
    provider = str(tx.get("provider"))
    view["reason"] = attention.in_words(flag, NAMES.get(provider, provider))
    return view


def asked_view(asked: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """When the node last asked the provider about the transaction, whether the provider knew
    it, how many changes asking learned that no webhook had brought, and whether a webhook for
    them came after (the provider's webhooks do reach the node, late)."""
    if not asked:
        return None
    return {
        "at": iso_ms(asked["at"]),
        "found": bool(asked.get("found")),
        "learned": int(asked.get("learned") or 0),
        "webhookArrived": asked.get("webhookAt") is not None,
    }


def handled_view(tx: Mapping[str, Any], handled: Mapping[str, Any]) -> dict[str, Any]:
    """Flags the merchant marked handled: who, when, the note, and the flags as they were."""
    return {
        "at": iso_ms(handled["at"]),
        "by": handled.get("by"),
        "note": handled.get("note"),
        "eventId": handled.get("eventId"),
        "flags": [attention_view(tx, flag) for flag in handled.get("flags") or ()],
    }


def _money_fields(source: Mapping[str, Any]) -> dict[str, Any]:
    """What an amount mismatch reported and what was expected, on the wire."""
    amount, currency = source.get("amount"), source.get("currency")
    fields: dict[str, Any] = {
        "amount": to_wire(amount, currency) if amount is not None and currency else None,
        "currency": currency,
        "expectedAmount": to_wire(source["expectedAmount"], source["expectedCurrency"]),
        "expectedCurrency": source["expectedCurrency"],
    }
    if source.get("providerAmount"):
        fields["providerAmount"] = source["providerAmount"]  # not readable as money
    return fields


def event_view(event: Mapping[str, Any]) -> dict[str, Any]:
    amount = event.get("amount")
    currency = event.get("currency")
    view = {
        "id": event["id"],
        "projectId": event["projectId"],
        "provider": event["provider"],
        "providerEventId": event.get("providerEventId"),
        "type": event["type"],
        "txId": event.get("txId"),
        "subscriptionId": event.get("subscriptionId"),
        "status": event.get("status"),
        "version": event.get("version"),
        "amount": to_wire(amount, currency) if amount is not None and currency else None,
        "currency": currency,
        "isTest": event["isTest"],
        "customerRef": event.get("customerRef"),
        "metadata": dict(event.get("metadata") or {}),
        "occurredAt": iso_or_none(event.get("occurredAt")),
        "receivedAt": iso_ms(event["receivedAt"]),
        # when it took effect: null while it is held (CONTRACT 2) or when it changed nothing
        "appliedAt": iso_or_none(event.get("appliedAt")),
    }
    if event.get("refunded") is not None and currency:
        # a refund's event: all given back so far, beside the refund's own amount
        view["refundedAmount"] = to_wire(event["refunded"], currency)
    if event.get("duplicateOf"):
        view["duplicateOf"] = event["duplicateOf"]
    if event.get("expectedAmount") is not None:
        view.update(_money_fields(event))
    elif event.get("providerAmount"):
        # what the provider says was paid, in a unit not the transaction's (a crypto payment)
        view["providerAmount"] = event["providerAmount"]
    if event.get("claimedTxId"):
        # an event on a provider object the node did not create, naming one of its checkouts
        view["claimedTxId"] = event["claimedTxId"]
    # how the node learned it: a webhook, by asking the provider, or its own act
    view["source"] = event.get("source") or ("webhook" if event.get("providerEventId") else "node")
    for extra in ("note", "resolvedBy", "refundId"):
        if event.get(extra):
            view[extra] = event[extra]
    return view


def refund_view(tx: Mapping[str, Any], refund: Mapping[str, Any]) -> dict[str, Any]:
    """A refund the merchant asked for (``edge.domain.refunds`` states): ``requested`` (owed
    to the provider, from the durable queue), ``sent`` (the provider took it; the money has not
    moved yet), ``succeeded`` (the provider says it went back), ``failed`` (refused for good,
    or failed after it was taken: ``detail`` says why), ``unknown`` (the provider never
    answered: its amount stays held) or ``done`` (pay by mail: recorded). ``providerRefundId``
    is the provider's own id for it, once known."""
    return {
        "id": refund["id"],
        "txId": tx["id"],
        "amount": to_wire(refund["amount"], tx["currency"]),
        "currency": tx["currency"],
        "reason": refund.get("reason"),
        "state": refund.get("state", "requested"),
        "detail": refund.get("detail"),
        "providerRefundId": refund.get("providerRefundId"),
        "requestedAt": iso_ms(refund["requestedAt"]),
    }
