"""The merchant's free-form checkout metadata (CONTRACT §4.2)."""

from __future__ import annotations

import re

from .errors import InvalidInput

MAX_KEYS = 20
MAX_VALUE_CHARS = 500
_KEY_RE = re.compile(r"[A-Za-z0-9_.-]{1,40}")


def validate_metadata(value: object, field: str = "metadata") -> dict[str, str]:
    """A fresh ``dict[str, str]`` that satisfies the rules, or InvalidInput.

    None means no metadata. At most 20 keys matching ``^[A-Za-z0-9_.-]{1,40}$``,
    string values of at most 500 characters. A bad key is reported against
    ``field`` itself (the key may be unprintable); a bad value against
    ``field.key``.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInput(f"{field} must be a JSON object of strings.", field=field)
    if len(value) > MAX_KEYS:
        raise InvalidInput(f"{field} has at most {MAX_KEYS} keys.", field=field)
    out: dict[str, str] = {}
    for key, item in value.items():
        if not isinstance(key, str) or _KEY_RE.fullmatch(key) is None:
            raise InvalidInput(
                f"{field} keys are 1 to 40 characters of A-Z, a-z, 0-9, '_', '.' and '-'.",
                field=field,
            )
        if not isinstance(item, str):
            raise InvalidInput(f"{field}.{key} must be a string.", field=f"{field}.{key}")
        if len(item) > MAX_VALUE_CHARS:
            raise InvalidInput(
                f"{field}.{key} is longer than {MAX_VALUE_CHARS} characters.",
                field=f"{field}.{key}",
            )
        out[key] = item
    return out
