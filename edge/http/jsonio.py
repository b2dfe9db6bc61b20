"""JSON in and out. Numbers are parsed as Decimal, so floating point never touches money."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson
from quart import Response, request

from edge.domain.inputs import bounded_json_decimal, bounded_json_int, first_flaw
from edge.errors import InvalidRequest, UnsupportedMediaType, invalid

API_VERSION = "2026-11-21"
JSON_TYPE = "application/json"
NO_STORE = {"Cache-Control": "no-store"}  # answers for one merchant or the operator: never cached


# a date or a dataclass goes to ``default`` (str), as the standard library sends it
_PLAIN = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS
_SORTED = _PLAIN | orjson.OPT_SORT_KEYS


def dumps(value: Any, sort_keys: bool = False) -> bytes:
    """Compact UTF-8 JSON; a value orjson declines (a key that is no string, an integer past
    64 bits) is written by the standard library instead, to the same text."""
    try:
        return orjson.dumps(value, default=str, option=_SORTED if sort_keys else _PLAIN)
    except TypeError:
        return json.dumps(
            value, separators=(",", ":"), ensure_ascii=False, sort_keys=sort_keys, default=str
        ).encode()


def unknown_version() -> InvalidRequest:
    """A request may pin ``Cm-Version``; this node speaks one."""
    return InvalidRequest(
        "unknown_version", f"This node speaks Cm-Version {API_VERSION}.", field="Cm-Version"
    )


def json_response(
    value: Any, status: int = 200, headers: Mapping[str, str] | None = None
) -> Response:
    return Response(
        dumps(value), status=status, content_type=JSON_TYPE, headers=dict(headers or {})
    )


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(raw: bytes) -> Any:
    """The body's JSON, with numbers bounded and text valid Unicode (CONTRACT 8); else 400."""
    try:
        value = json.loads(
            raw,
            parse_float=bounded_json_decimal,
            parse_int=bounded_json_int,
            parse_constant=_refuse_constant,
        )
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        reason = "nesting too deep" if isinstance(exc, RecursionError) else str(exc)
        raise invalid(f"The body is not valid JSON: {reason}", code="invalid_json") from None
    flaw = first_flaw(value)
    if flaw is not None:
        raise invalid(f"The body holds {flaw}.", code="invalid_json")
    return value


async def read_json_object(*, optional: bool = False) -> dict[str, Any]:
    """The request body as a JSON object. ``optional``: an empty body reads as ``{}``."""
    raw = await request.get_data(cache=False, as_text=False, parse_form_data=False)
    if not raw and optional:
        return {}
    content_type = (request.mimetype or "").lower()
    if content_type != JSON_TYPE:
        raise UnsupportedMediaType("unsupported_media_type", "Send the body as application/json.")
    body = parse_json(raw)
    if not isinstance(body, dict):
        raise invalid("The body must be a JSON object.", code="invalid_json")
    return body
