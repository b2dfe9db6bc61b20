"""An account's e-mail address (CONTRACT 4.7): ASCII letters, digits and the usual marks, at
most 254 characters, compared in lower case. One rule that Python and the API reference's JSON
Schema (ECMA regular expressions) read the same way, character for character."""

from __future__ import annotations

import re

MAX_LENGTH = 254
PATTERN = r"^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]{1,64}@[A-Za-z0-9-]{1,63}(\.[A-Za-z0-9-]{1,63})+$"
_ADDRESS = re.compile(PATTERN)


def normalized(value: object) -> str | None:
    """The address in lower case, or None when ``value`` is not one."""
    if not isinstance(value, str) or len(value) > MAX_LENGTH or not _ADDRESS.fullmatch(value):
        return None
    return value.lower()
