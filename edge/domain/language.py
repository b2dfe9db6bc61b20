"""The buyer's language (CONTRACT 4.1): which of the node's languages a buyer is spoken to in.

Pure. ``negotiate`` takes what is known of the buyer's language, most telling first: a page's
or an element's ``lang`` (a BCP 47 tag, ``de-AT``), a ``lang`` query parameter, a browser's
``Accept-Language`` header (``fr-CH, fr;q=0.9, en;q=0.8``). The first of them that names a
language the node speaks decides; within a header, the highest weight wins (ties in the
header's order). Only the primary subtag counts: ``pt-BR`` and ``pt-PT`` are both ``pt``.
"""

from __future__ import annotations

import math

LANGUAGES = ("en", "de", "fr", "es", "it", "nl", "pt", "pl")
DEFAULT = "en"

# a header longer than this is not a browser's: only its start is read
_MAX_CHARS = 2000
_MAX_ENTRIES = 50


def negotiate(*preferences: str | None) -> str:
    """The first supported language named by ``preferences`` (each a tag or an
    ``Accept-Language`` value; None or empty: nothing known), else ``DEFAULT``. Never raises."""
    for preference in preferences:
        if not isinstance(preference, str):
            continue
        for tag in ranked(preference):
            if tag in LANGUAGES:
                return tag
    return DEFAULT


def ranked(header: str) -> list[str]:
    """The primary subtags of an ``Accept-Language`` value (or of one tag), best first: by
    weight, the header's order among equal weights; ``q=0`` (refused), ``*`` and malformed
    entries left out."""
    weighted: list[tuple[float, int, str]] = []
    for position, entry in enumerate(header[:_MAX_CHARS].split(",")[:_MAX_ENTRIES]):
        tag, _, params = entry.partition(";")
        primary = primary_subtag(tag)
        weight = _weight(params)
        if primary and weight > 0:
            weighted.append((-weight, position, primary))
    weighted.sort()
    return [primary for _, _, primary in weighted]


def primary_subtag(tag: str) -> str:
    """``de`` of ``de-AT`` (or ``de_AT``, a locale's spelling), lower case; "" when it is not a
    language subtag (2 to 8 ASCII letters)."""
    primary = tag.strip().replace("_", "-").split("-", 1)[0].lower()
    if 2 <= len(primary) <= 8 and primary.isascii() and primary.isalpha():
        return primary
    return ""


def _weight(params: str) -> float:
    """The ``q`` of an entry's parameters: 1 without one; 0 (left out) when it is not a number
    between 0 and 1."""
    for param in params.split(";"):
        name, _, value = param.partition("=")
        if name.strip().lower() != "q":
            continue
        try:
            q = float(value.strip())
        except ValueError:
            return 0.0
        return q if math.isfinite(q) and 0 <= q <= 1 else 0.0
    return 1.0
