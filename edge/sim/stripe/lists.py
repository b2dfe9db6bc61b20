"""Stripe's list answers, as the simulator's ``GET`` list routes give them.

A list is ``{"object": "list", "data": [...], "has_more": bool, "url": "/v1/..."}``, newest
first ("sorted in order, with the most recent ... appearing first", the list methods of
stripe-python 16.1.0, e.g. ``_refund.py`` ``list``), cut by the parameters every list takes
(``...ListParams`` of the same release): ``limit`` ("Limit can range between 1 and 100, and the
default is 10"), ``starting_after`` (the objects after that one, older), ``ending_before`` (the
objects before it, newer), and ``created`` (a timestamp, or ``gt``/``gte``/``lt``/``lte``).
Objects are filtered by the caller (by payment intent, charge, type).

``ListError`` is a refused parameter: the server answers it as Stripe's 400
``invalid_request_error`` naming it. A cursor the list does not hold is refused too (Stripe's
answer to an unknown cursor is not verified here).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

DEFAULT_LIMIT = 10
MAX_LIMIT = 100
_BOUNDS: Mapping[str, Callable[[int, int], bool]] = {
    "gt": lambda value, bound: value > bound,
    "gte": lambda value, bound: value >= bound,
    "lt": lambda value, bound: value < bound,
    "lte": lambda value, bound: value <= bound,
}


class ListError(Exception):
    """A list parameter Stripe would refuse: ``param`` names it."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.message, self.param = message, param


def page(
    newest_first: Sequence[Mapping[str, Any]], query: Mapping[str, Any], url: str
) -> dict[str, Any]:
    """One page of ``newest_first`` (objects with ``id`` and ``created``) as ``query`` asks."""
    items = [o for o in newest_first if created_matches(o.get("created"), query.get("created"))]
    limit = _limit(query.get("limit"))
    after, before = query.get("starting_after"), query.get("ending_before")
    if after is not None:
        start = _index(items, after, "starting_after") + 1
        chosen, more = items[start : start + limit], start + limit < len(items)
    elif before is not None:
        end = _index(items, before, "ending_before")
        chosen, more = items[max(0, end - limit) : end], end - limit > 0
    else:
        chosen, more = items[:limit], len(items) > limit
    return {"object": "list", "data": list(chosen), "has_more": more, "url": url}


def created_matches(created: Any, bounds: Any) -> bool:
    """Does a ``created`` time pass the list's ``created`` parameter (absent: every time)?"""
    if bounds is None:
        return True
    if not isinstance(bounds, dict):
        return created == _integer(bounds, "created")
    unknown = set(bounds) - set(_BOUNDS)
    if unknown:
        raise ListError(f"Received unknown parameter: created[{sorted(unknown)[0]}].", "created")
    return all(
        _BOUNDS[name](created, _integer(value, f"created[{name}]"))
        for name, value in bounds.items()
    )


def _limit(value: Any) -> int:
    if value is None:
        return DEFAULT_LIMIT
    limit = _integer(value, "limit")
    if not 1 <= limit <= MAX_LIMIT:
        raise ListError(
            f"This value must be between 1 and {MAX_LIMIT} (it currently is {limit}).", "limit"
        )
    return limit


def _index(items: Sequence[Mapping[str, Any]], object_id: Any, param: str) -> int:
    for index, item in enumerate(items):
        if item.get("id") == object_id:
            return index
    raise ListError(f"No such object: '{object_id}'", param)


def _integer(value: Any, param: str) -> int:
    if isinstance(value, str) and value.lstrip("-").isdigit() and len(value) <= 18:
        return int(value)
    raise ListError(f"Invalid integer: {value!r}.", param)
