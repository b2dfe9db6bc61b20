"""Words a merchant can act on (CONTRACT 4.7): why a provider's webhook was refused (which
secret to check and where, or which clock), and why a transaction needs them. Pure: what the
API answered comes in, sentences go out."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edge.domain.money import EXPONENTS
from edge.providers.offers import NAMES

# What a buyer is offered with each kind of method, and each credential field, in words.
OFFERS = {
    "card": "card payments",
    "wallet": "PayPal",
    "form": "card payments",
    "crypto": "crypto payments",
    "manual": "pay by mail",
}
FIELDS = {
    "secretKey": "secret key",
    "publishableKey": "publishable key",
    "webhookSecret": "webhook secret",
    "clientId": "client id",
    "clientSecret": "client secret",
    "webhookId": "webhook id",
    "apiKey": "API key",
    "clientToken": "client-side token",
    "serverUrl": "server address",
    "storeId": "store id",
    "mailingAddress": "mailing address",
}
WHERE = {
    "stripe": "the endpoint's signing secret (whsec_...) in your Stripe dashboard, under "
    "Developers > Webhooks",
    "paypal": "the webhook id in your PayPal developer dashboard, under your app's webhooks",
    "paddle": "the notification destination's secret key in Paddle, under Developer tools > "
    "Notifications",
    "btcpay": "the webhook's secret in your BTCPay store, under Settings > Webhooks",
}
_SECONDS = re.compile(r"(\d+) seconds (old|in the future)")


def refused_in_words(item: Mapping[str, Any], modes_with_secret: Sequence[str]) -> str:
    provider = str(item.get("provider"))
    name = NAMES.get(provider, provider)
    reason, detail = str(item.get("reason")), str(item.get("detail") or "")
    if item.get("code") == "malformed_payload":
        return (
            f"{name} sent a body that is signed correctly but is not an event the node can read"
            f" ({detail or reason}): check the API version set on the {name} webhook."
        )
    if item.get("code") == "provider_not_enabled":
        return (
            f"{name} sent a webhook, but {name} is not turned on for this project: turn it on"
            f" (and set its webhook secret), or remove this address from {name}."
        )
    if reason == "missing_header":
        return (
            f"The delivery had no {name} signature: this address is for {name} webhooks only"
            " (a health check or a test sent by hand is refused this way)."
        )
    if reason == "malformed_header":
        return f"The {name} signature header could not be read: {detail or 'it is malformed'}."
    if reason == "timestamp_out_of_tolerance":
        found = _SECONDS.search(detail)
        if found:
            minutes = round(int(found.group(1)) / 60)
            age = f"{minutes} minutes {found.group(2)}" if minutes else found.group(0)
            return (
                f"The signature's timestamp was {age}: check your server's clock (a delivery"
                " replayed long after it was signed is refused the same way)."
            )
        return "The signature's timestamp is too far from now: check your server's clock."
    if reason == "no_matching_signature":
        modes = " and ".join(modes_with_secret) or "(none set)"
        where = WHERE.get(provider, f"the webhook secret in your {name} dashboard")
        return (
            f"Signed with a different secret than this project's {modes} webhook secret for"
            f" {name}: check {where}, and set the same one here."
        )
    return f"Refused: {reason}."


def not_offered_in_words(
    provider: str,
    kind: str,
    view: Mapping[str, Any] | None,
    product_names: Mapping[str, str],
) -> list[str]:
    """Why buyers are not offered a provider, one sentence per mode or product that it cannot
    serve (``view``: the provider's settings with their ``availability``; None when it was
    never set up). Nothing when it is offered everywhere."""
    name = NAMES.get(provider, provider)
    offer = OFFERS.get(kind, name)
    if view is None:
        return [f"{name} is not set up: buyers are not offered {offer}."]
    if not view.get("enabled"):
        return [f"{name} is off: buyers are not offered {offer}."]
    said = []
    availability = view.get("availability") or {}
    for mode in ("test", "live"):
        missing = (availability.get(mode) or {}).get("missing") or []
        if not missing:
            continue
        fields = [FIELDS.get(f, f) for f in missing]
        if not view.get(mode):
            lacks = f"no {mode} credentials yet"
        elif len(fields) == 1:
            lacks = f"no {fields[0]}"
        else:
            lacks = f"no {', '.join(fields[:-1])} or {fields[-1]}"
        said.append(
            f"{mode.capitalize()}: {name} has {lacks}, so {mode} buyers are not offered {offer}."
        )
    for product_id, rule in (availability.get("products") or {}).items():
        title = product_names.get(product_id, product_id)
        said.append(f"Not offered for {title} ({product_id}): {rule}.")
    return said


def attention_in_words(tx: Mapping[str, Any]) -> list[str]:
    """Why a transaction needs the merchant, one sentence per reason: the merchant API's own
    (``attention[].reason``, ``edge.domain.attention``); a transaction flagged before reasons
    were kept was flagged for money that came late."""
    said = [str(flag["reason"]) for flag in tx.get("attention") or () if flag.get("reason")]
    if tx.get("needsAttention") and not said:
        said.append("Money arrived after this checkout ended: fulfil or refund it.")
    return list(dict.fromkeys(said))


def money(amount: float, currency: str) -> str:
    """``1.00 EUR``, ``99,999,999.99 EUR``, ``1,500 JPY``: the currency's own decimals."""
    places = EXPONENTS.get(currency, 2)
    return f"{amount:,.{places}f} {currency}"


# Where a refund the merchant asked for stands (the merchant API's ``refunds[].state``).
REFUND_STATES = {
    "requested": "asked of the provider",
    "sent": "taken by the provider: the status moves once the money has moved",
    "succeeded": "given back, the provider says",
    "failed": "refused, or failed at the provider",
    "unknown": "the provider never answered: the amount stays held until it reports it",
    "done": "recorded (sent back by hand)",
}


def check_in_words(name: str, check: Mapping[str, Any]) -> str:
    """What trying a mode's credentials found (``ProviderSettings.checks``), in a sentence."""
    result, message = check.get("result"), str(check.get("message") or "")
    if check.get("during") == "checkout":
        if result == "refused":
            return f"{name} refused a checkout with these credentials: {message} Fix them here."
        return f"{name} took a checkout with these credentials."
    if result == "ok":
        return f"Tried with {name} when saved: accepted."
    if result == "refused":
        return f"{name} refused these credentials: {message}"
    if result == "unchecked":
        return message or f"Saved, but {name} could not be asked yet."
    return message or "Not complete yet."


def refused_grouped(
    items: Sequence[Mapping[str, Any]], secrets: Mapping[str, Sequence[str]]
) -> list[dict[str, Any]]:
    """Refused deliveries (newest first), one entry per provider and reason in words: how many,
    the latest and the first time, so a flood of one mistake reads as one line."""
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for item in items:
        provider = str(item.get("provider"))
        words = refused_in_words(item, secrets.get(provider, []))
        group = groups.setdefault(
            (provider, words),
            {"provider": provider, "words": words, "count": 0, "last": item.get("at")},
        )
        group["count"] += 1
        group["first"] = item.get("at")
    return list(groups.values())


@dataclass(frozen=True)
class SteppedAside:
    provider: str
    name: str  # the provider's own name (Stripe)
    mode: str
    words: str


def stepped_aside_in_words(seen: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[SteppedAside]:
    """Each method the public info lists ``"available": false`` (its provider kept failing
    checkouts on its own side: an outage there, not the merchant's set-up), in a sentence, live
    mode first; ``seen``: each mode's public-info ``providers``."""
    said = []
    for mode in ("live", "test"):
        offered = seen.get(mode) or ()
        for entry in offered:
            if entry.get("available", True):
                continue
            name = NAMES.get(entry["provider"], entry["provider"])
            others = any(e.get("available", True) for e in offered if e is not entry)
            then = (
                "buyers are offered your other methods"
                if others
                else "buyers have no other method to pay with"
            )
            words = f"{name} ({mode}) is failing on {name}'s side: {then} until it answers again."
            said.append(SteppedAside(entry["provider"], name, mode, words))
    return said
