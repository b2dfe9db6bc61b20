"""Paddle's list operations as the simulator answers them: filters, order and pages. Pure: the
server hands in the entities and the query, and gets back the page and its ``meta``.

What Paddle documents (openapi.yaml, ``components.parameters`` and ``pagination``):

- ``order_by``: "Order returned entities by the specified field and direction ([ASC] or
  [DESC])", "Valid fields for ordering: id", default ``id[DESC]`` (``order_by_query``; for
  events, ``id`` is the ``event_id``). Paddle's own SDK sends the direction in lower case
  (paddle-python-sdk ``Resources/Shared/Operations/List/OrderBy.py``: ``id[asc]``), so the
  direction is read in either case.
- ``after``: "Return entities after the specified Paddle ID when working with paginated
  endpoints. Used in the meta.pagination.next URL" (``after_query``): after it in the list's
  own order.
- ``per_page``: "Paddle returns the maximum number of results if a number greater than the
  maximum is requested" (adjustments: default 10, at most 50, ``per_page_adjustment_query``;
  events: default 50, at most 200, ``per_page_query``).
- Filters that take "a comma-separated list" (``transaction_id_query``, ``status_adjustment_
  query``, the events' ``event_type``: developer.paddle.com/changelog/2025/filter-events-by-
  type) and ``action`` (one value, ``action_adjustment_query``).
- Dates (``created_at_query``): "Pass an RFC 3339 datetime string, or use [LT] (less than),
  [LTE] (less than or equal to), [GT] (greater than), or [GTE] (greater than or equal to)
  operators" (``dated``).
- ``meta.pagination``: ``per_page``, ``next`` ("Always returned, even if has_more is false"),
  ``has_more``, ``estimated_total``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

ORDERS = {"id[ASC]": False, "id[DESC]": True}  # -> newest first


class BadQuery(ValueError):
    """A query parameter Paddle would refuse: ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class Limits:
    default: int
    maximum: int


ADJUSTMENTS = Limits(10, 50)
TRANSACTIONS = Limits(30, 30)
EVENTS = Limits(50, 200)


def matching(
    entities: Sequence[Mapping[str, Any]],
    query: Mapping[str, str],
    filters: Mapping[str, Callable[[Mapping[str, Any]], Any]],
) -> list[Mapping[str, Any]]:
    """The entities every given filter lets through: each filter's query value is a
    comma-separated list of what the entity's value (read by the filter) may be."""
    kept = list(entities)
    for name, value_of in filters.items():
        given = query.get(name)
        if given:
            wanted = set(given.split(","))
            kept = [e for e in kept if value_of(e) in wanted]
    return kept


_OPERATORS: dict[str, Callable[[datetime, datetime], bool]] = {
    "": lambda at, given: at == given,
    "[LT]": lambda at, given: at < given,
    "[LTE]": lambda at, given: at <= given,
    "[GT]": lambda at, given: at > given,
    "[GTE]": lambda at, given: at >= given,
}


def dated(
    entities: Sequence[Mapping[str, Any]], query: Mapping[str, str], field: str
) -> list[Mapping[str, Any]]:
    """The entities whose ``field`` (an RFC 3339 time) meets every comparison the query makes
    of it (``field``, ``field[GTE]``...); ``BadQuery`` for a value that is not a time."""
    kept = list(entities)
    for operator, holds in _OPERATORS.items():
        given = query.get(field + operator)
        if given is None:
            continue
        try:
            when = datetime.fromisoformat(given)
        except ValueError:
            raise BadQuery(field + operator, "must be an RFC 3339 datetime string") from None
        if when.tzinfo is None:  # as openapi.yaml's own example (created_at_query) is: UTC
            when = when.replace(tzinfo=UTC)
        kept = [e for e in kept if holds(datetime.fromisoformat(e[field]), when)]
    return kept


def page(
    entities: Sequence[Mapping[str, Any]],
    query: Mapping[str, str],
    id_of: Callable[[Mapping[str, Any]], str],
    limits: Limits,
    url: str,
) -> tuple[list[Mapping[str, Any]], dict[str, Any]]:
    """One page of ``entities`` as ``query`` asks (``order_by``, ``after``, ``per_page``) and
    its ``meta.pagination``, whose ``next`` is ``url`` with the same query and the last id of
    the page as ``after``. ``BadQuery`` for an order or a size Paddle would refuse."""
    field, _, direction = (query.get("order_by") or "id[DESC]").partition("[")
    newest_first = ORDERS.get(f"{field}[{direction.upper()}")
    if newest_first is None:
        raise BadQuery("order_by", "id[ASC] or id[DESC]")
    size = _per_page(query.get("per_page"), limits)
    ordered = sorted(entities, key=id_of, reverse=newest_first)
    after = query.get("after")
    if after:
        ordered = [e for e in ordered if (id_of(e) < after if newest_first else id_of(e) > after)]
    taken = ordered[:size]
    last = id_of(taken[-1]) if taken else after
    following = {**query, **({"after": last} if last else {})}
    pagination = {
        "per_page": size,
        "next": f"{url}?{urlencode(following)}",
        "has_more": len(ordered) > size,
        "estimated_total": len(entities),
    }
    return taken, pagination


def _per_page(given: str | None, limits: Limits) -> int:
    if given is None:
        return limits.default
    if not given.isdigit() or int(given) < 1:
        raise BadQuery("per_page", "a whole number of 1 or more")
    return min(int(given), limits.maximum)
