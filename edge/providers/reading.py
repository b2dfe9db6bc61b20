"""Reading a provider's event: what every adapter's ``events`` module does the same way.

A verified body is still the provider's JSON, shaped as the provider pleases: every value is
read for what it must be (a non-empty string, an integer that is not a boolean, an object, a
list), and anything else counts as absent, so that ``normalize`` never raises on a value of an
unexpected shape. ``json_object`` is the start of every ``normalize``; ``look_up`` reads an
event table keyed by ``(provider type, variant)``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import orjson

from edge.domain import ids
from edge.providers.base import MalformedPayload

Row = TypeVar("Row")
# a body's digits as b"1", everything else as b"0": a run of 19 is found by a plain search,
# ten times faster than a regular expression
_DIGITS = bytes(0x31 if 0x30 <= byte <= 0x39 else 0x30 for byte in range(256))
_LONG_RUN = b"1" * 19


def json_object(body: bytes) -> dict[str, Any]:
    """The event a verified body holds; ``MalformedPayload`` when it is no JSON object.

    orjson reads an integer past 64 bits as a float, which the readers below would take for
    an absent value: a body with a run of 19 digits or more is read by the standard library,
    whose integers are exact (and which ``bounded`` refuses)."""
    try:
        exact = _LONG_RUN in body.translate(_DIGITS)
        event = json.loads(body) if exact else orjson.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise MalformedPayload("The body is not JSON.") from None
    if not isinstance(event, dict):
        raise MalformedPayload("The body is not a JSON object.")
    return event


def look_up(
    table: Mapping[tuple[str, str], Row],
    variants: Mapping[str, Callable[[Mapping[str, Any]], str]],
    provider_type: str,
    obj: Mapping[str, Any],
) -> tuple[str, Row | None]:
    """The variant of an event of ``provider_type`` about ``obj`` (read by its ``variants``
    function, "" when it has none) and its row of ``table``: the variant's, else the type's
    "" row, else None (a type the node does not act on)."""
    read = variants.get(provider_type)
    variant = read(obj) if read is not None else ""
    return variant, table.get((provider_type, variant)) or table.get((provider_type, ""))


def string(o: Mapping[str, Any], key: str) -> str | None:
    value = o.get(key)
    return value if isinstance(value, str) and value else None


def integer(o: Mapping[str, Any], key: str) -> int | None:
    value = o.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def mapping(o: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = o.get(key)
    return value if isinstance(value, dict) else {}


def first(items: Any) -> Mapping[str, Any]:
    """The first element of a JSON list, when it is an object."""
    return items[0] if isinstance(items, list) and items and isinstance(items[0], dict) else {}


def refs(*values: Any) -> tuple[str, ...]:
    """The non-empty strings among ``values``, each once, in order: provider ids to match."""
    return tuple(dict.fromkeys(v for v in values if isinstance(v, str) and v))


def tx_id(value: Any) -> str | None:
    """A transaction id the body echoes (the provider's metadata): one of the node's, or None."""
    return value if ids.is_tx_id(value) else None


def strings(value: Any) -> dict[str, str]:
    """The string entries of a JSON object (metadata the node wrote; anything else in it is not
    the node's)."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


def node_money(stated: Any, currency: Any, minor: int | None) -> dict[str, Any]:
    """What an event says was paid, in the node's terms: ``amount`` (``minor``: the node's minor
    units, as the provider's money module read ``stated``) and ``currency``; all three None when
    the event states no amount, and ``unreadable`` the provider's own figure when it stated one
    the node cannot read exactly (never a match for a checkout's amount)."""
    if stated is None:
        return {"amount": None, "currency": None, "unreadable": None}
    if minor is None:
        return {"amount": None, "currency": None, "unreadable": f"{stated} {currency}"[:40]}
    return {"amount": minor, "currency": currency, "unreadable": None}
