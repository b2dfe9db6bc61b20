"""The whole document, assembled once per process: the node serves these exact bytes at
``/openapi.json`` and ``docs/openapi.json`` is a copy of them (a test keeps the two equal)."""

from __future__ import annotations

import functools
import json
from typing import Any

from edge.http.jsonio import API_VERSION
from edge.http.openapi import (
    paths_account_security,
    paths_accounts,
    paths_buyer,
    paths_manage,
    paths_merchant,
    paths_operations,
)
from edge.http.openapi.common import HEADERS, PARAMETERS, SECURITY_SCHEMES
from edge.http.openapi.schemas import schemas
from edge.http.openapi.schemas_accounts import account_schemas

TAGS = [
    ("Status", "The source of truth for fulfilment (CONTRACT 3)."),
    ("Public", "What the button and a merchant's page call, anonymously."),
    ("Checkout", "Starting a checkout and the buyer's return."),
    ("Webhooks", "Providers' events."),
    ("Merchant API", "The merchant's server: transactions, events, pay by mail."),
    ("Portal", "Subscription management pages."),
    ("Management", "Projects, products, providers, keys: the operator's, or an account's own."),
    ("Accounts", "Sign-up, log in and out: the dashboard's sessions."),
    ("Notifications", "Pushing events to the merchant's server (Standard Webhooks)."),
    ("Operations", "Health, readiness, metrics and this reference."),
]

DESCRIPTION = (
    "The HTTP API of an edge node: every endpoint it serves, with its fields, answers and "
    "error codes. JSON everywhere (UTF-8, camelCase); amounts in major units, currencies ISO "
    "4217, times ISO 8601 UTC with milliseconds. Every answer carries Cm-Request-Id and "
    f"Cm-Version: {API_VERSION}. Every error is "
    '`{"error": {"code", "message", "field"?, "retryable"}}`; an unexpected fault is 500 '
    "internal with the request id, never a stack trace. Statuses: pending, processing, "
    "succeeded, failed, canceled, expired, refunded, partially_refunded, disputed, trialing, "
    "active, past_due, paused; a status never moves backwards and the final status does not "
    "depend on the order providers deliver events in."
)


def document() -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for module in (
        paths_buyer,
        paths_merchant,
        paths_manage,
        paths_accounts,
        paths_account_security,
        paths_operations,
    ):
        paths.update(module.paths())
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "edge payment node",
            "version": API_VERSION,
            "description": DESCRIPTION,
        },
        "tags": [{"name": name, "description": text} for name, text in TAGS],
        "paths": paths,
        "components": {
            "schemas": {**schemas(), **account_schemas()},
            "securitySchemes": SECURITY_SCHEMES,
            "headers": HEADERS,
            "parameters": PARAMETERS,
        },
    }


@functools.cache
def document_bytes() -> bytes:
    """Indented and key-ordered, so the checked-in copy diffs well."""
    return (json.dumps(document(), indent=2, sort_keys=False, ensure_ascii=False) + "\n").encode()
