"""The parts of a dashboard address (a project id, a transaction id, a product id ...), checked
before any page uses them: each becomes part of an API path, where a control character would
fail the call and a ``?`` or ``/`` would send it elsewhere (a typed product id ``x?y=1`` would
have saved product ``x``). A part that is not what its name says is answered ``400`` with a
page that says which, never a ``500``."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from edge.domain import ids
from edge.providers.registry import PROVIDERS

TX_ACTIONS = frozenset({"mark-paid", "cancel", "refund", "resolve", "sync"})

_PARTS: Mapping[str, tuple[Callable[[str], bool], str]] = {
    "pid": (ids.is_project_id, "a project id (prj_ and 16 letters or digits)"),
    "tx_id": (ids.is_tx_id, "a transaction id (tx_ and 26 letters or digits)"),
    "product_id": (ids.is_product_id, "a product id"),
    "key_id": (ids.is_key_id, "a key id (key_ and 26 letters or digits)"),
    "endpoint_id": (ids.is_endpoint_id, "an endpoint id (we_ and 26 letters or digits)"),
    "provider": (PROVIDERS.__contains__, "a payment provider"),
    "action": (TX_ACTIONS.__contains__, "an action on a transaction"),
}

PRODUCT_ID_RULE = (
    "An id is 1 to 64 lower-case letters, digits, - and _, starting with a letter or digit."
)


def wrong_part(parts: Mapping[str, object]) -> tuple[str, str] | None:
    """(the part's name, what it should be) of the first part of an address that is not what
    its name says, or None."""
    for name, value in parts.items():
        rule = _PARTS.get(name)
        if rule is not None and not (isinstance(value, str) and rule[0](value)):
            return name, rule[1]
    return None
