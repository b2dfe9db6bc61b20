"""What a BTCPay Server API key may do, read from its permissions (``GET
/api/v1/api-keys/current``), against what the node asks of it. Pure: no I/O.

A permission is a policy name, scoped to one store (``name:storeId``) or to every store of its
user (no scope); a policy includes others (BTCPayServerServices' policy definitions: modifying
a store's settings includes managing its invoices and pull payments, and so on down).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

UNRESTRICTED = "unrestricted"
_P = "btcpay.store."

# each policy and the ones it includes directly
INCLUDES: Mapping[str, tuple[str, ...]] = {
    _P + "canmodifystoresettings": (
        _P + "canmanagepullpayments",
        _P + "canmodifyinvoices",
        _P + "canviewstoresettings",
    ),
    _P + "canmodifyinvoices": (_P + "canviewinvoices", _P + "cancreateinvoice"),
    _P + "canviewstoresettings": (_P + "canviewinvoices", _P + "canviewpullpayments"),
    _P + "canmanagepullpayments": (_P + "cancreatepullpayments",),
    _P + "cancreatepullpayments": (_P + "cancreatenonapprovedpullpayments",),
    _P + "cancreatenonapprovedpullpayments": (_P + "canviewpullpayments",),
}

# what the node does with the key, by the policy it needs
NEEDED: Mapping[str, str] = {
    _P + "cancreateinvoice": "create invoices (checkouts)",
    _P + "canviewinvoices": "read invoices (asking what became of a payment)",
    _P + "cancreatenonapprovedpullpayments": "create refunds",
}


def granted(permissions: Iterable[object], store_id: str) -> frozenset[str]:
    """Every policy ``permissions`` grant on ``store_id``, included ones too; ``UNRESTRICTED``
    alone stands for all of them."""
    direct: set[str] = set()
    for permission in permissions:
        if not isinstance(permission, str):
            continue
        name, _, scope = permission.partition(":")
        if name == UNRESTRICTED:
            return frozenset({UNRESTRICTED})
        if scope in ("", store_id):
            direct.add(name)
    found, todo = set(direct), list(direct)
    while todo:
        for included in INCLUDES.get(todo.pop(), ()):
            if included not in found:
                found.add(included)
                todo.append(included)
    return frozenset(found)


def missing(permissions: Iterable[object], store_id: str) -> list[str]:
    """The policies the node needs on ``store_id`` that ``permissions`` do not grant."""
    have = granted(permissions, store_id)
    if UNRESTRICTED in have:
        return []
    return [policy for policy in NEEDED if policy not in have]


def stores_named(permissions: Iterable[object]) -> list[str]:
    """The stores ``permissions`` are scoped to, in order (to tell a wrong store id)."""
    stores: list[str] = []
    for permission in permissions:
        if isinstance(permission, str) and ":" in permission:
            scope = permission.partition(":")[2]
            if scope and scope not in stores:
                stores.append(scope)
    return stores
