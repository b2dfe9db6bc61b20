"""Validation of request bodies into clean values. Unknown fields are refused, so a typo in a
merchant's integration fails loudly instead of being ignored."""

from __future__ import annotations

from collections.abc import Collection
from decimal import Decimal
from typing import Any

from edge.domain import ids
from edge.domain.errors import InvalidInput
from edge.domain.events import EventType
from edge.domain.metadata import validate_metadata
from edge.domain.modes import MODES
from edge.domain.money import exponent, to_minor
from edge.domain.status import Kind
from edge.domain.timefmt import parse_iso_ms
from edge.domain.urls import (
    first_disallowed_redirect,
    redirect_rule,
    validate_origin,
    with_own_origins,
)
from edge.providers.registry import PROVIDERS

INTERVALS = ("day", "week", "month", "year")
# as many evt_ ids as a 16 KiB JSON body holds, with room to spare
MAX_REPLAY_IDS = 400


def only(body: dict[str, Any], allowed: Collection[str]) -> None:
    for name in body:
        if name not in allowed:
            raise InvalidInput(f"unknown field {name!r}", name, "unknown_field")


def _string(
    body: dict[str, Any], name: str, *, max_len: int = 200, required: bool = True
) -> str | None:
    value = body.get(name)
    if value is None:
        if required:
            raise InvalidInput(f"{name} is required", name)
        return None
    if not isinstance(value, str) or not value.strip() or len(value) > max_len:
        raise InvalidInput(
            f"{name} must be a non-empty string of at most {max_len} characters", name
        )
    return value.strip()


def _int(
    body: dict[str, Any], name: str, low: int, high: int, default: int | None = None
) -> int | None:
    value = body.get(name, default)
    if value is None:
        return None
    # JSON has one number type: 21.0 is the integer 21 (JSON Schema agrees), not a fraction
    if isinstance(value, Decimal) and value.is_finite() and value == value.to_integral_value():
        value = int(value)
    if type(value) is not int or not low <= value <= high:
        raise InvalidInput(f"{name} must be an integer from {low} to {high}", name)
    return value


def _absolute_url(body: dict[str, Any], name: str, required: bool = True) -> str | None:
    """An address as given (never stripped: spaces around it are refused, as the API
    reference's pattern says)."""
    if _string(body, name, max_len=2000, required=required) is None:
        return None
    value: str = body[name]
    if not value.startswith(("https://", "http://")):
        raise InvalidInput(f"{name} must be an absolute http(s) address", name)
    return value


def _redirect(body: dict[str, Any], name: str) -> str | None:
    """A checkout's own ``successUrl`` or ``cancelUrl``, as given: the project's actor decides
    whether it may send the buyer there (``400 url_not_allowed``), and one with spaces around
    it is refused there like any address that is not clean, never trimmed into one that is."""
    if _string(body, name, max_len=2000, required=False) is None:
        return None
    value: str = body[name]
    return value


def mode(value: object, name: str = "mode") -> str:
    if value not in MODES:
        raise InvalidInput("mode must be live or test", name)
    return str(value)


def checkout(body: dict[str, Any]) -> dict[str, Any]:
    only(body, {"productId", "metadata", "quantity", "txId", "successUrl", "cancelUrl", "mode"})
    product_id = body.get("productId")
    if not ids.is_product_id(product_id):
        raise InvalidInput("productId is required: a product slug like pro-monthly", "productId")
    tx_id = body.get("txId")
    if tx_id is not None and not ids.is_tx_id(tx_id):
        raise InvalidInput("txId must be tx_ followed by a 26-character ULID", "txId")
    return {
        "product_id": product_id,
        "metadata": validate_metadata(body.get("metadata")),
        "quantity": _int(body, "quantity", 1, 100, default=1),
        "tx_id": tx_id,
        "success_url": _redirect(body, "successUrl"),
        "cancel_url": _redirect(body, "cancelUrl"),
        "mode": mode(body.get("mode", "live")),
    }


PROJECT_FIELDS = {"name", "successUrl", "cancelUrl", "allowedOrigins", "tier"}


def project(body: dict[str, Any], tiers: set[str], *, partial: bool = False) -> dict[str, Any]:
    only(body, PROJECT_FIELDS)
    out: dict[str, Any] = {}
    # a field a patch names must hold a value: null is not "leave it as it is"
    if not partial or "name" in body:
        out["name"] = _string(body, "name", max_len=100, required=True)
    for name in ("successUrl", "cancelUrl"):
        if not partial or name in body:
            out[name] = _absolute_url(body, name, required=True)
    if not partial or "allowedOrigins" in body:
        origins = body.get("allowedOrigins", [])
        if not isinstance(origins, list) or len(origins) > 20:
            raise InvalidInput(
                "allowedOrigins must be a list of at most 20 origins", "allowedOrigins"
            )
        out["allowedOrigins"] = [validate_origin(o) for o in origins]
    if not partial or "tier" in body:
        tier = body.get("tier", "free")
        if not isinstance(tier, str) or tier not in tiers:
            raise InvalidInput(f"tier must be one of {', '.join(sorted(tiers))}", "tier")
        out["tier"] = tier
    if not partial:  # a patch is checked against the project it changes (the actor's settings)
        out["allowedOrigins"] = with_own_origins(out)
        refused = first_disallowed_redirect(out)
        if refused is not None:
            raise InvalidInput(redirect_rule(refused), refused, "url_not_allowed")
    return {k: v for k, v in out.items() if v is not None or k == "tier"}


def _amount(value: object, currency: str, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, Decimal)):
        raise InvalidInput(f"{name} must be a number", name, "invalid_amount")
    minor = to_minor(value, currency, field=name)
    if minor <= 0:
        raise InvalidInput(f"{name} must be above zero", name, "invalid_amount")
    return minor


def product(product_id: str, body: dict[str, Any]) -> dict[str, Any]:
    if not ids.is_product_id(product_id):
        raise InvalidInput("product ids match ^[a-z0-9][a-z0-9_-]{0,63}$", "productId")
    only(body, {"name", "kind", "amount", "currency", "interval", "overrides"})
    name = _string(body, "name", max_len=100)
    kind = body.get("kind")
    if kind not in (Kind.PAYMENT, Kind.SUBSCRIPTION):
        raise InvalidInput("kind must be payment or subscription", "kind")
    currency = body.get("currency")
    if not isinstance(currency, str):
        raise InvalidInput("currency must be an ISO 4217 code like EUR", "currency")
    exponent(currency)
    interval = body.get("interval")
    if kind == Kind.SUBSCRIPTION and interval not in INTERVALS:
        raise InvalidInput("a subscription needs interval: day, week, month or year", "interval")
    if kind == Kind.PAYMENT and interval is not None:
        raise InvalidInput("a one-off payment has no interval", "interval")
    overrides = body.get("overrides")
    if overrides is None:
        overrides = {}
    if not isinstance(overrides, dict):
        raise InvalidInput("overrides must be an object keyed by provider", "overrides")
    clean_overrides: dict[str, dict[str, Any]] = {}
    for provider, override in overrides.items():
        path = f"overrides.{provider}"
        if not isinstance(override, dict):
            raise InvalidInput("must be an object {label?, order?, amount?}", path)
        only(override, {"label", "order", "amount"})
        clean: dict[str, Any] = {}
        if override.get("label") is not None:
            clean["label"] = _string(override, "label", max_len=40)
        if override.get("order") is not None:
            clean["order"] = _int(override, "order", 1, 1000)
        if override.get("amount") is not None:
            clean["amount"] = _amount(override["amount"], currency, f"{path}.amount")
        clean_overrides[provider] = clean
    return {
        "id": product_id,
        "name": name,
        "kind": str(kind),
        "amount": _amount(body.get("amount"), currency, "amount"),
        "currency": currency,
        "interval": interval,
        "overrides": clean_overrides,
    }


def provider_settings(body: dict[str, Any]) -> dict[str, Any]:
    """``{enabled, label?, order?, test?, live?}``; each mode's credential fields are checked by
    the provider they belong to, in the actor. ``label`` and ``order`` are in the result only
    when given (None: back to the default), so a PUT that omits them keeps the merchant's."""
    only(body, {"enabled", "label", "order", "test", "live"})
    if not isinstance(body.get("enabled"), bool):
        raise InvalidInput("enabled must be true or false", "enabled")
    settings: dict[str, Any] = {"enabled": body["enabled"]}
    if "label" in body:
        settings["label"] = _string(body, "label", max_len=40, required=False)
    if "order" in body:
        settings["order"] = _int(body, "order", 1, 1000)
    for name in MODES:
        if name in body:
            settings[name] = body[name]
    return settings


def new_key(body: dict[str, Any]) -> dict[str, str]:
    only(body, {"mode", "name"})
    return {
        "mode": mode(body.get("mode")),
        "name": _string(body, "name", max_len=60, required=False) or "default",
    }


def mark_paid(body: dict[str, Any]) -> str | None:
    only(body, {"note"})
    return _string(body, "note", max_len=500, required=False)


def resolve(body: dict[str, Any]) -> str | None:
    """``{note?}``: what the merchant did about what the transaction needed them for."""
    only(body, {"note"})
    return _string(body, "note", max_len=500, required=False)


def reconcile(body: dict[str, Any]) -> tuple[int, str | None, str | None]:
    """``{since, provider?, mode?}``: from when (ISO 8601), which provider (all that keep a
    list, when absent), which mode (the key's, or live)."""
    only(body, {"since", "provider", "mode"})
    if "since" not in body:
        raise InvalidInput(
            "since is required: an ISO 8601 time like 2026-11-21T09:48:00.000Z", "since"
        )
    since = parse_iso_ms(body["since"], "since")
    provider = body.get("provider")
    if "provider" in body and not (isinstance(provider, str) and provider in PROVIDERS):
        raise InvalidInput(f"provider must be one of {', '.join(PROVIDERS)}", "provider")
    return since, provider, mode(body["mode"]) if "mode" in body else None


def refund(body: dict[str, Any]) -> tuple[Decimal | int | None, str | None]:
    """``{amount?, reason?}``: the amount in major units (checked against the transaction's
    currency by its actor), and a reason for the merchant's records."""
    only(body, {"amount", "reason"})
    amount = body.get("amount")
    if amount is not None and (
        isinstance(amount, bool) or not isinstance(amount, (int, Decimal)) or amount <= 0
    ):
        raise InvalidInput("amount must be a number above zero", "amount", "invalid_amount")
    return amount, _string(body, "reason", max_len=500, required=False)


def _event_types(body: dict[str, Any]) -> tuple[str, ...]:
    value = body.get("types", [])
    known = {str(t) for t in EventType}
    if not isinstance(value, list) or len(value) > len(known):
        raise InvalidInput("types must be a list of event types", "types")
    for item in value:
        if not isinstance(item, str) or item not in known:
            raise InvalidInput(f"unknown event type {item!r}", "types")
    return tuple(dict.fromkeys(value))


def endpoint(body: dict[str, Any], *, partial: bool = False) -> dict[str, Any]:
    """A notification endpoint (CONTRACT 4.8): a new one, or the changes to one."""
    if partial:
        only(body, {"url", "description", "types", "enabled", "rotateSecret"})
    else:
        only(body, {"url", "description", "types", "mode"})
    clean: dict[str, Any] = {}
    if "url" in body or not partial:
        clean["url"] = _absolute_url(body, "url")
    if "description" in body:
        clean["description"] = body["description"] if body["description"] is not None else ""
        if not isinstance(clean["description"], str) or len(clean["description"]) > 200:
            raise InvalidInput(
                "description must be a string of at most 200 characters", "description"
            )
    elif not partial:
        clean["description"] = ""
    if "types" in body or not partial:
        clean["types"] = _event_types(body)
    if not partial:
        clean["mode"] = mode(body.get("mode", "live"))
    for name in ("enabled", "rotateSecret"):
        if name in body:
            if not isinstance(body[name], bool):
                raise InvalidInput(f"{name} must be true or false", name)
            clean[name] = body[name]
    return clean


def replay(body: dict[str, Any]) -> tuple[str | None, tuple[str, ...]]:
    """``since`` (an evt_ id) or ``eventIds`` (at most MAX_REPLAY_IDS), not both."""
    only(body, {"since", "eventIds"})
    since, event_ids = body.get("since"), body.get("eventIds")
    # a field that is named holds a value: null is not "not given"
    if "since" in body and not ids.is_evt_id(since):
        raise InvalidInput("since must be an evt_ id", "since")
    if "eventIds" in body:
        if since is not None:
            raise InvalidInput("give since or eventIds, not both", "eventIds")
        if (
            not isinstance(event_ids, list)
            or not 1 <= len(event_ids) <= MAX_REPLAY_IDS
            or not all(ids.is_evt_id(e) for e in event_ids)
        ):
            raise InvalidInput(
                f"eventIds must be a list of 1 to {MAX_REPLAY_IDS} evt_ ids", "eventIds"
            )
        return None, tuple(dict.fromkeys(event_ids))
    return since, ()
