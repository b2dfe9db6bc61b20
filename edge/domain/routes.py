"""A request path as a route template for metrics (``/status/{id}/{id}``), so their labels
stay few whatever ids and names callers send."""

from __future__ import annotations

import re

_ID = re.compile(r"(prj|tx|sub|evt|we|key|acc)_[0-9a-zA-Z]+")
# every literal segment of the node's routes; anything else is a name ({x})
_LITERALS = frozenset(
    {
        "api", "status", "webhook", "checkout", "return", "projects", "manage", "transactions",
        "events", "mark-paid", "cancel", "subscriptions", "portal-url", "products",
        "providers", "keys", "usage", "deliveries", "endpoints", "attempts", "replay",
        "trigger", "stats", "public-info", "healthz", "readyz", "metrics", "button.js",
        "button", "static", "icons", ".well-known", "cm-signing-keys", "stripe", "paypal",
        "paddle", "btcpay", "manual", "openapi.json", "docs", "accounts", "session",
        "dashboard", "login", "signup", "logout", "p", "methods", "revoke", "remove", "delete",
        "dashboard.css", "dashboard.js", "account", "two-factor", "confirm", "disable",
        "password-reset", "complete", "reset-link", "forgot", "reset",
    }
)  # fmt: skip


def route_of(path: str) -> str:
    parts = []
    for segment in path.split("/")[1:12]:
        if segment in _LITERALS:
            parts.append(segment)
        elif _ID.fullmatch(segment):
            parts.append("{id}")
        else:
            parts.append("{x}")
    return "/" + "/".join(parts)
