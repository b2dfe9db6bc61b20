"""The component schemas: identifiers, records and bodies as the node reads and writes them.

Request bodies list exactly what the node accepts (``additionalProperties: false``: the node
refuses unknown fields); answers allow more properties, because a version may add fields
(CONTRACT 9) but never removes one."""

from __future__ import annotations

from typing import Any

from edge.domain import attention, credential_shapes, emails
from edge.domain import refunds as refund_states
from edge.domain.events import SIMULATED, SOURCES, EventType
from edge.domain.money import EXPONENTS
from edge.domain.quota import DEFAULT_TIERS
from edge.domain.status import Status
from edge.http.openapi import patterns
from edge.providers.base import CredentialField, Provider
from edge.providers.registry import PROVIDERS

Schema = dict[str, Any]

ULID = "[0-7][0-9A-HJKMNP-TV-Z]{25}"
TIME_EXAMPLE = "2026-11-21T09:48:00.000Z"
PROJECT_EXAMPLE = "prj_7kq29xmd4abcdefg"
TX_EXAMPLE = "tx_01JD7K2Q9XMD4ABCDEFGHJKMNP"
SUB_EXAMPLE = "sub_01JD7K2Q9XMD4ABCDEFGHJKMNP"
EVT_EXAMPLE = "evt_01JD7K2Q9XMD4ABCDEFGHJKMNP"


REFUND_ID = "^rf_[0-9A-HJKMNP-TV-Z]{26}$"


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def nullable(schema: Schema) -> Schema:
    return {"anyOf": [schema, {"type": "null"}]}


def _id(prefix: str, example: str, description: str) -> Schema:
    return {
        "type": "string",
        "pattern": f"^{prefix}{ULID}$",
        "description": description,
        "examples": [example],
    }


def object_schema(
    properties: dict[str, Schema], required: list[str] | None = None, **more: Any
) -> Schema:
    schema: Schema = {"type": "object", "properties": properties}
    schema["required"] = list(properties) if required is None else required
    schema.update(more)
    return schema


def body_schema(properties: dict[str, Schema], required: list[str], **more: Any) -> Schema:
    return object_schema(properties, required, additionalProperties=False, **more)


TIME: Schema = {
    "type": "string",
    "format": "date-time",
    "description": "ISO 8601 UTC with milliseconds.",
    "examples": [TIME_EXAMPLE],
}
AMOUNT: Schema = {
    "type": "number",
    "description": "Major units of the currency (19.99 EUR); whole for zero-decimal currencies.",
    "examples": [19.99],
}
AMOUNT_IN: Schema = {
    "type": "number",
    "exclusiveMinimum": 0,
    "maximum": 10**15,
    "multipleOf": 0.0001,
    "description": "Major units, with no more decimals than the currency has (400 "
    "invalid_amount); at most 10^15 minor units. The product's rules state it per currency.",
    "examples": [19.99],
}


def _amount_of(places: int) -> Schema:
    """An amount in a currency with ``places`` decimals: its steps and at most 10^15 minor
    units (edge.domain.money)."""
    return {"multipleOf": 10**-places if places else 1, "maximum": 10 ** (15 - places)}


def per_currency_amounts() -> list[Schema]:
    """One rule per number of decimals: when the product's currency has them, its amount and
    every override's amount are multiples of its smallest unit, up to 10^15 of them."""
    rules = []
    for places in sorted(set(EXPONENTS.values())):
        codes = sorted(code for code, exp in EXPONENTS.items() if exp == places)
        amount = _amount_of(places)
        rules.append(
            {
                "if": {"properties": {"currency": {"enum": codes}}, "required": ["currency"]},
                "then": {
                    "properties": {
                        "amount": amount,
                        "overrides": {
                            "additionalProperties": {
                                "properties": {"amount": {"anyOf": [{"type": "null"}, amount]}}
                            }
                        },
                    }
                },
            }
        )
    return rules


REDIRECT_IN: Schema = {
    "type": "string",
    "pattern": patterns.REDIRECT,
    "maxLength": 2000,
    "description": "Where the buyer is sent back to: https (http only on localhost), on one of "
    "the project's allowedOrigins (400 url_not_allowed). Every {TX_ID} in it (also "
    "percent-encoded, %7BTX_ID%7D) is replaced by the transaction id, wherever the node sends "
    "the buyer: the provider's success and cancel addresses and the node's own return.",
    "examples": ["https://shop.example/thanks?tx={TX_ID}"],
}
# a character the node does not strip: Python's whitespace also counts \x1c-\x1f and \x85,
# which ECMA's \s does not
NOT_BLANK = "[^\\s\\u001c-\\u001f\\u0085]"
MODE: Schema = {"type": "string", "enum": ["live", "test"]}
PROVIDER: Schema = {"type": "string", "enum": list(PROVIDERS)}


def schemas() -> dict[str, Schema]:
    statuses = [s.value for s in Status]
    return {
        "ProjectId": {
            "type": "string",
            "pattern": "^prj_[0-9a-hjkmnp-tv-z]{16}$",
            "description": "prj_ + 16 lowercase Crockford base32 characters; public.",
            "examples": [PROJECT_EXAMPLE],
        },
        "ProductId": {
            "type": "string",
            "pattern": "^[a-z0-9][a-z0-9_-]{0,63}$",
            "description": "Chosen by the merchant, unique in its project.",
            "examples": ["book"],
        },
        "TxId": _id("tx_", TX_EXAMPLE, "A transaction: tx_ + a ULID."),
        "SubscriptionId": _id("sub_", SUB_EXAMPLE, "A subscription: sub_ + a ULID."),
        "EventId": _id("evt_", EVT_EXAMPLE, "A stored event: evt_ + a ULID; the feed's cursor."),
        "KeyId": _id("key_", "key_01JD7K2Q9XMD4ABCDEFGHJKMNP", "An API key's id."),
        "EndpointId": _id("we_", "we_01JD7K2Q9XMD4ABCDEFGHJKMNP", "A notification endpoint."),
        "Status": {
            "type": "string",
            "enum": statuses,
            "description": "One set for status, feed and merchant API (CONTRACT 2).",
        },
        "EventType": {"type": "string", "enum": [t.value for t in EventType]},
        "Currency": {"type": "string", "enum": sorted(EXPONENTS), "examples": ["EUR"]},
        "Provider": PROVIDER,
        "Mode": MODE,
        "Error": object_schema(
            {
                "error": object_schema(
                    {
                        "code": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
                        "message": {"type": "string"},
                        "field": {"type": "string"},
                        "retryable": {"type": "boolean"},
                        "reason": {"type": "string"},
                        "status": ref("Status"),
                        "resetsAt": TIME,
                        "requestId": {"type": "string"},
                    },
                    ["code", "message", "retryable"],
                )
            },
            examples=[
                {
                    "error": {
                        "code": "product_not_found",
                        "message": "No product with this id in this project.",
                        "field": "productId",
                        "retryable": False,
                    }
                }
            ],
        ),
        "StatusRecord": object_schema(
            {
                "id": {"type": "string", "pattern": f"^(tx|sub)_{ULID}$"},
                "kind": {"type": "string", "enum": ["payment", "subscription"]},
                "status": ref("Status"),
                "amount": AMOUNT,
                "currency": ref("Currency"),
                "isTest": {"type": "boolean"},
                "provider": PROVIDER,
                "version": {"type": "integer", "minimum": 1},
                "subscriptionId": nullable(ref("SubscriptionId")),
                "createdAt": TIME,
                "updatedAt": TIME,
                "interval": nullable({"type": "string", "enum": ["day", "week", "month", "year"]}),
                "currentPeriodEnd": nullable(TIME),
            },
            [
                "id",
                "kind",
                "status",
                "amount",
                "currency",
                "isTest",
                "provider",
                "version",
                "subscriptionId",
                "createdAt",
                "updatedAt",
            ],  # fmt: skip
            description="A sub_ record adds interval and currentPeriodEnd; nothing about the "
            "buyer, ever.",
            examples=[
                {
                    "id": TX_EXAMPLE,
                    "kind": "payment",
                    "status": "succeeded",
                    "amount": 19.99,
                    "currency": "EUR",
                    "isTest": False,
                    "provider": "stripe",
                    "version": 3,
                    "subscriptionId": None,
                    "createdAt": TIME_EXAMPLE,
                    "updatedAt": "2026-11-21T09:49:12.345Z",
                }
            ],  # fmt: skip
        ),
        "Transaction": {
            "allOf": [
                ref("StatusRecord"),
                object_schema(
                    {
                        "productId": nullable(ref("ProductId")),
                        "interval": nullable(
                            {"type": "string", "enum": ["day", "week", "month", "year"]}
                        ),
                        "quantity": {"type": "integer", "minimum": 1},
                        "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                        "customerRef": nullable({"type": "string"}),
                        "reference": nullable({"type": "string", "examples": ["CM-7KQ2-9XMD-5"]}),
                        "providerRef": nullable({"type": "string"}),
                        "reason": nullable({"type": "string"}),
                        "needsAttention": {"type": "boolean"},
                        "attention": {"type": "array", "items": ref("Attention")},
                        "handled": {"type": "array", "items": ref("Handled")},
                        "asked": nullable(ref("Asked")),
                        "refunds": {"type": "array", "items": ref("Refund")},
                    }
                ),
            ],
            "description": "The status record plus what only the merchant's server sees.",
        },
        "Attention": object_schema(
            {
                "code": {"type": "string", "enum": list(attention.CODES)},
                "eventId": nullable(ref("EventId")),
                "amount": nullable(AMOUNT),
                "currency": nullable(ref("Currency")),
                "expectedAmount": AMOUNT,
                "expectedCurrency": ref("Currency"),
                "providerAmount": {"type": "string"},
                "refundId": {"type": "string", "pattern": REFUND_ID},
                "reason": {"type": "string", "minLength": 1},
            },
            ["code", "eventId", "reason"],
            description=(
                "Why a transaction needs the merchant, with the reason in words: money that is"
                " not what the checkout asked for (amount_mismatch, with both amounts), money for"
                " a checkout that had ended (paid_late), a provider reporting it both paid and"
                " ended (contradicted), PayPal refusing for good to capture the approved order"
                " (capture_refused), a refund that failed (refund_failed) or that the provider"
                " never answered (refund_unknown: its amount stays held), a warning before a"
                " chargeback (dispute_warning), a dispute opened, won or lost (disputed,"
                " dispute_won, dispute_lost). Money is the amount concerned."
            ),
        ),
        "Asked": object_schema(
            {
                "at": TIME,
                "found": {"type": "boolean"},
                "learned": {"type": "integer", "minimum": 0},
                "webhookArrived": {"type": "boolean"},
            },
            description=(
                "The node asked the provider about this transaction (sync): when, whether the"
                " provider knew the checkout, how many changes it learned that no webhook had"
                " brought, and whether a webhook for them came afterwards."
            ),
        ),
        "Handled": object_schema(
            {
                "at": TIME,
                "by": {"type": "string", "description": "A key id, an account id or operator."},
                "note": nullable({"type": "string"}),
                "eventId": ref("EventId"),
                "flags": {"type": "array", "items": ref("Attention")},
            },
            description="Flags the merchant marked handled (`.../resolve`): who, when, the note.",
        ),
        "TransactionWithEvents": {
            "allOf": [
                ref("Transaction"),
                object_schema(
                    {
                        "events": {"type": "array", "items": ref("Event")},
                        "refunded": AMOUNT,
                        "refundable": nullable(AMOUNT),
                        "providerRefunds": {"type": "array", "items": ref("ProviderRefund")},
                    }
                ),
            ]
        },
        "SyncedTransaction": {
            "allOf": [
                ref("TransactionWithEvents"),
                object_schema(
                    {
                        "sync": object_schema(
                            {
                                "found": {"type": "boolean"},
                                "learned": {"type": "integer", "minimum": 0},
                            }
                        )
                    }
                ),
            ]
        },
        "ReconcileRequest": body_schema(
            {
                "since": TIME,
                "provider": PROVIDER,
                "mode": {"type": "string", "enum": ["live", "test"]},
            },
            ["since"],
        ),
        "Reconciliation": object_schema(
            {
                "since": TIME,
                "providers": {
                    "type": "array",
                    "items": object_schema(
                        {
                            "provider": PROVIDER,
                            "mode": {"type": "string", "enum": ["live", "test"]},
                            "seen": {"type": "integer", "minimum": 0},
                            "learned": {"type": "integer", "minimum": 0},
                            "asked": {"type": "integer", "minimum": 0},
                        }
                    ),
                },
            }
        ),
        "ProviderRefund": object_schema(
            {
                "id": {"type": "string", "minLength": 1},
                "amount": AMOUNT,
                "currency": ref("Currency"),
                "refundId": nullable({"type": "string"}),
            },
            description=(
                "A refund the provider reports, by its own id: one the node asked for"
                " (`refundId`) or one made in the provider's own dashboard (`refundId` null)."
            ),
        ),
        "TransactionPage": object_schema(
            {
                "items": {"type": "array", "items": ref("Transaction")},
                "next": nullable(ref("TxId")),
            }
        ),
        "Event": object_schema(
            {
                "id": ref("EventId"),
                "projectId": ref("ProjectId"),
                "provider": PROVIDER,
                "providerEventId": nullable({"type": "string"}),
                "type": ref("EventType"),
                "txId": nullable(ref("TxId")),
                "subscriptionId": nullable(ref("SubscriptionId")),
                "status": nullable(ref("Status")),
                "version": nullable({"type": "integer", "minimum": 1}),
                "amount": nullable(AMOUNT),
                "currency": nullable(ref("Currency")),
                "isTest": {"type": "boolean"},
                "customerRef": nullable({"type": "string"}),
                "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                "occurredAt": nullable(TIME),
                "receivedAt": TIME,
                "appliedAt": nullable(TIME),
                "duplicateOf": ref("EventId"),
                "expectedAmount": AMOUNT,
                "expectedCurrency": ref("Currency"),
                "providerAmount": {"type": "string"},
                "claimedTxId": ref("TxId"),
                "source": {"type": "string", "enum": list(SOURCES)},
                "note": {"type": "string"},
                "resolvedBy": {"type": "string"},
                "refundId": {"type": "string", "pattern": REFUND_ID},
                "refundedAmount": {
                    **AMOUNT,
                    "description": "A refund's event: all given back so far, this refund"
                    " counted, beside the refund's own amount.",
                },
            },
            [
                "id",
                "projectId",
                "provider",
                "providerEventId",
                "type",
                "txId",
                "subscriptionId",
                "status",
                "version",
                "amount",
                "currency",
                "isTest",
                "customerRef",
                "metadata",
                "occurredAt",
                "receivedAt",
                "appliedAt",
                "source",
            ],  # fmt: skip
            description=(
                "A normalized event (CONTRACT 6); the provider's body is never kept. `source`:"
                " a webhook, learned by asking the provider (sync), or the node's own act."
                " `duplicateOf`: a provider's second report of a change already told, kept as"
                " history and never notified."
            ),
        ),
        "EventPage": object_schema(
            {
                "items": {"type": "array", "items": ref("Event")},
                "next": nullable(ref("EventId")),
                "hasMore": {"type": "boolean"},
            }
        ),
        "MailingAddress": object_schema(
            {
                "name": {"type": "string"},
                "lines": {"type": "array", "items": {"type": "string"}},
                "country": {"type": "string", "pattern": "^[A-Z]{2}$"},
            }
        ),
        "PublicInfo": object_schema(
            {
                "projectId": ref("ProjectId"),
                "mode": MODE,
                "product": nullable(
                    object_schema(
                        {
                            "id": ref("ProductId"),
                            "name": {"type": "string"},
                            "kind": {"type": "string", "enum": ["payment", "subscription"]},
                            "interval": nullable(
                                {"type": "string", "enum": ["day", "week", "month", "year"]}
                            ),
                            "amount": AMOUNT,
                            "currency": ref("Currency"),
                        }
                    )
                ),
                "providers": {
                    "type": "array",
                    "items": object_schema(
                        {
                            "provider": PROVIDER,
                            "kind": {
                                "type": "string",
                                "enum": ["card", "wallet", "form", "crypto", "manual"],
                            },
                            "label": {"type": "string"},
                            "icon": {"type": "string"},
                            "publishableKey": nullable({"type": "string"}),
                            "mailingAddress": nullable(ref("MailingAddress")),
                            "amount": AMOUNT,
                            "currency": ref("Currency"),
                            "order": {"type": "integer"},
                            "available": {
                                "type": "boolean",
                                "description": "false while the provider fails checkouts on"
                                " its side (5xx, no answer): the button does not offer it",
                            },
                        },
                        [
                            "provider",
                            "kind",
                            "label",
                            "icon",
                            "publishableKey",
                            "mailingAddress",
                            "order",
                            "available",
                        ],
                    ),  # fmt: skip
                },
            }
        ),
        "Jwks": object_schema(
            {
                "keys": {
                    "type": "array",
                    "items": object_schema(
                        {
                            "kty": {"const": "EC"},
                            "crv": {"const": "P-256"},
                            "x": {"type": "string"},
                            "y": {"type": "string"},
                            "kid": {"type": "string"},
                            "alg": {"const": "ES256"},
                            "use": {"const": "sig"},
                        }
                    ),
                }
            }
        ),
        "CheckoutRequest": body_schema(
            {
                "productId": ref("ProductId"),
                "metadata": {
                    "type": "object",
                    "maxProperties": 20,
                    "propertyNames": {"pattern": "^[A-Za-z0-9_.-]{1,40}$"},
                    "additionalProperties": {"type": "string", "maxLength": 500},
                    "description": "customerRef is the merchant's buyer reference; it comes back "
                    "on every event of this checkout.",
                    "examples": [{"customerRef": "user-42"}],
                },
                "quantity": {"type": "integer", "minimum": 1, "maximum": 100, "default": 1},
                "txId": ref("TxId"),
                "successUrl": REDIRECT_IN,
                "cancelUrl": REDIRECT_IN,
                "mode": {**MODE, "default": "live"},
            },
            ["productId"],
            examples=[{"productId": "book", "metadata": {"customerRef": "user-42"}}],
        ),
        "Checkout": object_schema(
            {
                "txId": ref("TxId"),
                "provider": PROVIDER,
                "kind": {"type": "string", "enum": ["card", "wallet", "form", "crypto", "manual"]},
                "type": {"type": "string", "enum": ["redirect", "approval", "token", "reference"]},
                "url": {"type": "string", "format": "uri"},
                "token": {"type": "string"},
                "publishableKey": {"type": "string"},
                "reference": {"type": "string", "examples": ["CM-7KQ2-9XMD-5"]},
                "mailingAddress": ref("MailingAddress"),
                "amount": AMOUNT,
                "currency": ref("Currency"),
                "isTest": {"type": "boolean"},
                "expiresAt": nullable(TIME),
            },
            ["txId", "provider", "kind", "type", "amount", "currency", "isTest", "expiresAt"],
            description="redirect and approval carry url; token carries token and "
            "publishableKey; reference carries reference and mailingAddress.",
            examples=[
                {
                    "txId": TX_EXAMPLE,
                    "provider": "stripe",
                    "kind": "card",
                    "type": "redirect",
                    "url": "https://checkout.stripe.com/c/pay/cs_test_a1",
                    "amount": 19.99,
                    "currency": "EUR",
                    "isTest": True,
                    "expiresAt": "2026-11-22T09:48:00.000Z",
                }
            ],  # fmt: skip
        ),
        "WebhookReceived": object_schema(
            {
                "received": {"const": True},
                "eventId": ref("EventId"),
                "duplicate": {"type": "boolean"},
            }
        ),
        "PortalRequest": body_schema(
            {"returnUrl": {**REDIRECT_IN, "examples": ["https://shop.example/account"]}}, []
        ),
        "Portal": object_schema(
            {
                "url": {"type": "string", "format": "uri"},
                "provider": PROVIDER,
                "expiresAt": nullable(TIME),
            }
        ),
        "ResolveRequest": body_schema(
            {"note": {"type": "string", "minLength": 1, "maxLength": 500, "pattern": NOT_BLANK}}, []
        ),
        "MarkPaidRequest": body_schema(
            {"note": {"type": "string", "minLength": 1, "maxLength": 500, "pattern": NOT_BLANK}}, []
        ),
        "CancelRequest": body_schema({}, []),
        "RefundRequest": body_schema(
            {
                "amount": AMOUNT_IN,
                "reason": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 500,
                    "pattern": NOT_BLANK,
                },
            },
            [],
            description="Without an amount, all that is left to refund.",
        ),
        "Refund": object_schema(
            {
                "id": {"type": "string", "pattern": REFUND_ID},
                "txId": ref("TxId"),
                "amount": AMOUNT,
                "currency": ref("Currency"),
                "reason": nullable({"type": "string"}),
                "state": {"type": "string", "enum": list(refund_states.STATES)},
                "detail": nullable({"type": "string"}),
                "providerRefundId": nullable({"type": "string"}),
                "requestedAt": TIME,
            },
            description=(
                "A refund the merchant asked for: requested (owed to the provider from the node's"
                " durable queue), sent (the provider took it; the money has not moved yet),"
                " succeeded (the provider says the money went back), failed (refused for good,"
                " or failed after it was taken: detail says why), unknown (the provider never"
                " answered: its amount stays held until the provider reports it) or done (pay by"
                " mail: recorded at once). Made exactly once at the provider, whatever answer is"
                " lost: the provider's idempotency key, or the provider asked what exists first."
            ),
        ),
        **_manage_schemas(),
    }


_TEXT_200: Schema = {"type": "string", "minLength": 1, "maxLength": 200, "pattern": NOT_BLANK}
_CREDENTIAL_SHAPES: dict[str, Schema] = {
    "string": {"type": "string", "minLength": 1, "maxLength": 1000, "pattern": NOT_BLANK},
    "url": {"type": "string", "pattern": patterns.CALLED, "maxLength": 1000},
    "hosts": {
        "type": "array",
        "minItems": 1,
        "maxItems": 10,
        "items": {"type": "string", "pattern": patterns.HOST},
    },
    "address": ref("MailingAddressRequest"),
}


def provider_request(provider: Provider) -> Schema:
    """``PUT .../providers/{provider}``'s body for one provider: its own credential fields per
    mode, each given (replaces), null (removes) or left out (kept)."""

    def field(f: CredentialField, mode: str) -> Schema:
        schema: Schema = {
            **_CREDENTIAL_SHAPES[f.shape],
            "description": ("A secret: write-only. " if f.secret else "")
            + ("Optional." if not f.required else "Required for the mode to be offered."),
        }
        if f.shape == "string":  # what the provider documents of it (400 invalid_credential)
            shape = credential_shapes.FieldShape(f.name, f.secret, f.kinds, f.strict)
            schema.update(credential_shapes.schema_of(shape, mode))
            if f.pattern:  # around the value the node strips white space
                schema["pattern"] = f"^\\s*(?:{f.pattern})\\s*$"
        return nullable(schema)

    def credentials(mode: str) -> Schema:
        return {
            "type": "object",
            "properties": {f.name: field(f, mode) for f in provider.credential_fields},
            "additionalProperties": False,
            "description": f"The {mode} mode's credentials.",
        }

    return body_schema(
        {
            "enabled": {"type": "boolean"},
            "label": nullable(
                {"type": "string", "minLength": 1, "maxLength": 40, "pattern": NOT_BLANK}
            ),
            "order": nullable({"type": "integer", "minimum": 1, "maximum": 1000}),
            "test": credentials("test"),
            "live": credentials("live"),
        },
        ["enabled"],
        description="A given field replaces, null removes (label and order: back to the "
        "default), an omitted field is kept.",
        examples=[{"enabled": True, "label": provider.default_label, "order": 1}],
    )


TIER: Schema = {
    "type": "string",
    "enum": sorted(DEFAULT_TIERS),
    "description": "free by default; a node's configuration file may add tiers.",
}


def _manage_schemas() -> dict[str, Schema]:
    name = {"type": "string", "minLength": 1, "maxLength": 100, "pattern": NOT_BLANK}
    origin = {
        "type": "string",
        "pattern": patterns.ORIGIN,
        "maxLength": 2048,
        "description": "Scheme, host and port only: https, or http on localhost, 127.0.0.1, [::1].",
        "examples": ["https://shop.example"],
    }
    endpoint_url = {
        "type": "string",
        "pattern": patterns.ENDPOINT,
        "maxLength": 1000,
        "description": "https on a public host name (one that resolves to a private address "
        "is refused, unless the operator allows it with EDGE_NOTIFY_ALLOW), or "
        "http://localhost; a query is kept and sent, no fragment or credentials.",
        "examples": ["https://shop.example/edge-hooks"],
    }
    override = body_schema(
        {
            "label": nullable(
                {"type": "string", "minLength": 1, "maxLength": 40, "pattern": NOT_BLANK}
            ),
            "order": nullable({"type": "integer", "minimum": 1, "maximum": 1000}),
            "amount": nullable(AMOUNT_IN),
        },
        [],
    )
    offered = object_schema(
        {
            "offered": {"type": "boolean"},
            "missing": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Required credential fields this mode lacks.",
            },
        }
    )
    credential = {
        "type": ["string", "array", "object"],
        "description": "A credential as stored; a secret reads as {set: true, last4}.",
    }
    return {
        "ProjectRequest": body_schema(
            {
                "name": name,
                "successUrl": REDIRECT_IN,
                "cancelUrl": REDIRECT_IN,
                "allowedOrigins": {"type": "array", "maxItems": 20, "items": origin},
                "tier": TIER,
            },
            ["name", "successUrl", "cancelUrl"],
            examples=[
                {
                    "name": "Shop",
                    "successUrl": "https://shop.example/thanks",
                    "cancelUrl": "https://shop.example/cart",
                    "allowedOrigins": ["https://shop.example"],
                }
            ],
        ),
        "ProjectPatch": body_schema(
            {
                "name": name,
                "successUrl": REDIRECT_IN,
                "cancelUrl": REDIRECT_IN,
                "allowedOrigins": {"type": "array", "maxItems": 20, "items": origin},
                "tier": TIER,
            },
            [],
            examples=[{"name": "Shop"}],
        ),
        "Project": object_schema(
            {
                "id": ref("ProjectId"),
                "name": {"type": "string"},
                "successUrl": {"type": "string"},
                "cancelUrl": {"type": "string"},
                "allowedOrigins": {"type": "array", "items": {"type": "string"}},
                "tier": {"type": "string"},
                "owner": nullable(
                    {
                        "type": "string",
                        "description": "The account that made it; null: the operator's.",
                    }
                ),
                "createdAt": nullable(TIME),
                "updatedAt": nullable(TIME),
                "products": {"type": "array", "items": ref("Product")},
                "providers": {"type": "array", "items": ref("ProviderSettings")},
                "keys": {"type": "array", "items": ref("Key")},
            }
        ),
        "ProductRequest": body_schema(
            {
                "name": name,
                "kind": {"type": "string", "enum": ["payment", "subscription"]},
                "amount": AMOUNT_IN,
                "currency": ref("Currency"),
                "interval": nullable({"type": "string", "enum": ["day", "week", "month", "year"]}),
                "overrides": nullable(
                    {"type": "object", "propertyNames": PROVIDER, "additionalProperties": override}
                ),
            },
            ["name", "kind", "amount", "currency"],
            allOf=[
                {
                    "if": {"properties": {"kind": {"const": "subscription"}}},
                    "then": {
                        "required": ["interval"],
                        "properties": {"interval": {"enum": ["day", "week", "month", "year"]}},
                    },
                    "else": {"properties": {"interval": {"type": "null"}}},
                },
                *per_currency_amounts(),
            ],
            description="A subscription needs interval; a one-off payment has none. Amounts, "
            "the overrides' too, have at most the currency's decimals (EUR 0.01, JPY 1, BHD "
            "0.001) and at most 10^15 of its smallest unit. A price an enabled provider cannot "
            "charge is 400 provider_limit.",
            examples=[{"name": "A book", "kind": "payment", "amount": 19.99, "currency": "EUR"}],
        ),
        "Product": object_schema(
            {
                "id": ref("ProductId"),
                "name": {"type": "string"},
                "kind": {"type": "string", "enum": ["payment", "subscription"]},
                "interval": nullable({"type": "string", "enum": ["day", "week", "month", "year"]}),
                "amount": AMOUNT,
                "currency": ref("Currency"),
                "overrides": {"type": "object"},
            }
        ),
        "ProjectList": object_schema(
            {
                "items": {"type": "array", "items": ref("Project")},
                "next": nullable(ref("ProjectId")),
            },
            ["items", "next"],
        ),
        "AccountRequest": body_schema(
            {
                "email": {
                    "type": "string",
                    "maxLength": emails.MAX_LENGTH,
                    "pattern": emails.PATTERN,
                },
                "password": {"type": "string", "minLength": 10, "maxLength": 1024},
            },
            ["email", "password"],
        ),
        "SignUpRequest": body_schema(
            {
                "email": {
                    "type": "string",
                    "maxLength": emails.MAX_LENGTH,
                    "pattern": emails.PATTERN,
                },
                "password": {"type": "string", "minLength": 10, "maxLength": 1024},
                "operator": {
                    "type": "boolean",
                    "description": "The operator's token only: an operator account.",
                },
            },
            ["email", "password"],
        ),
        "Account": object_schema(
            {
                "accountId": {"type": "string", "pattern": "^acc_[0-9A-HJKMNP-TV-Z]{26}$"},
                "email": {"type": "string"},
                "tier": {"type": "string"},
                "operator": {"type": "boolean"},
            },
            ["accountId", "email", "tier"],
        ),
        "AccountPatch": body_schema({"operator": {"type": "boolean"}}, ["operator"]),
        "LogPage": object_schema(
            {
                "items": {
                    "type": "array",
                    "items": object_schema(
                        {
                            "seq": {"type": "integer", "minimum": 1},
                            "at": TIME,
                            "kind": {"type": "string", "enum": ["request", "notification"]},
                            "projectId": nullable(ref("ProjectId")),
                            "method": {"type": "string"},
                            "path": {"type": "string"},
                            "status": nullable({"type": "integer"}),
                            "durationMs": {"type": "number"},
                            "requestId": {"type": "string"},
                            "endpointId": ref("EndpointId"),
                            "eventId": ref("EventId"),
                            "attempt": {"type": "integer"},
                            "outcome": {"type": "string"},
                            "error": nullable({"type": "string"}),
                        },
                        ["seq", "at", "kind", "projectId", "status", "durationMs"],
                    ),
                },
                "next": {"type": "integer", "minimum": 0},
            }
        ),
        "Session": object_schema(
            {
                "accountId": {"type": "string", "pattern": "^acc_[0-9A-HJKMNP-TV-Z]{26}$"},
                "csrfToken": {"type": "string"},
            },
            ["accountId", "csrfToken"],
        ),
        "LoggedOut": object_schema({"loggedOut": {"const": True}}, ["loggedOut"]),
        "ProductDeleted": object_schema({"deleted": {"const": True}, "id": ref("ProductId")}),
        **{
            f"ProviderRequest{name.capitalize()}": provider_request(provider)
            for name, provider in PROVIDERS.items()
        },
        "MailingAddressRequest": body_schema(
            {
                "name": {**_TEXT_200},
                "lines": {"type": "array", "minItems": 1, "maxItems": 6, "items": _TEXT_200},
                "country": {"type": "string", "pattern": "^[A-Z]{2}$", "examples": ["GB"]},
            },
            ["name", "lines", "country"],
            examples=[{"name": "Shop Ltd", "lines": ["1 Main St"], "country": "GB"}],
        ),
        "ProviderSettings": object_schema(
            {
                "provider": PROVIDER,
                "enabled": {"type": "boolean"},
                "label": nullable({"type": "string"}),
                "order": nullable({"type": "integer"}),
                "test": {"type": "object", "additionalProperties": credential},
                "live": {"type": "object", "additionalProperties": credential},
                "availability": object_schema(
                    {
                        "test": offered,
                        "live": offered,
                        "products": {
                            "type": "object",
                            "additionalProperties": {"type": "string"},
                            "description": "Products it is never offered for, with the rule.",
                        },
                    },
                    description="Where buyers are offered this provider.",
                ),
                "checks": {
                    "type": "object",
                    "description": "What trying each mode's credentials with the provider"
                    " found: when they were saved, or when a checkout was refused since.",
                    "additionalProperties": object_schema(
                        {
                            "result": {"enum": ["ok", "refused", "unchecked", "incomplete"]},
                            "field": {"type": "string", "examples": ["test.secretKey"]},
                            "message": {"type": "string"},
                            "during": {
                                "const": "checkout",
                                "description": "Learnt from a checkout the provider refused"
                                " (or took, after one it refused), not from a save.",
                            },
                            "at": nullable(TIME),
                        },
                        ["result", "at"],
                    ),
                },
            },
            ["provider", "enabled", "label", "order", "test", "live"],
        ),
        "KeyRequest": body_schema(
            {
                "mode": MODE,
                "name": nullable(
                    {"type": "string", "minLength": 1, "maxLength": 60, "pattern": NOT_BLANK}
                ),
            },
            ["mode"],
            examples=[{"mode": "test", "name": "backend"}],
        ),
        "Key": object_schema(
            {
                "keyId": ref("KeyId"),
                "mode": MODE,
                "name": {"type": "string"},
                "last4": {"type": "string"},
                "createdAt": nullable(TIME),
            }
        ),
        "NewKey": object_schema(
            {
                "keyId": ref("KeyId"),
                "key": {"type": "string", "pattern": "^cmk_(live|test)_[0-9A-Za-z]{32}$"},
                "last4": {"type": "string"},
                "mode": MODE,
                "name": {"type": "string"},
            },
            description="The only time the key itself is shown.",
        ),
        "KeyList": object_schema({"items": {"type": "array", "items": ref("Key")}}),
        "KeyRevoked": object_schema({"revoked": {"const": True}, "keyId": ref("KeyId")}),
        "Usage": object_schema(
            {
                "period": {"type": "string", "examples": ["2026-11"]},
                "tier": {"type": "string"},
                "resetsAt": TIME,
                "live": ref("ModeUsage"),
                "test": ref("ModeUsage"),
            }
        ),
        "ModeUsage": object_schema(
            {
                "used": {"type": "integer"},
                "limit": {"type": "integer"},
                "left": {"type": "integer"},
                "overQuota": {"type": "boolean"},
            }
        ),
        "Deliveries": object_schema(
            {
                "items": {
                    "type": "array",
                    "items": object_schema(
                        {
                            "at": TIME,
                            "provider": {"type": "string"},
                            "code": {"type": "string"},
                            "reason": nullable({"type": "string"}),
                            "bodySha256": {"type": "string"},
                            "bodyBytes": {"type": "integer"},
                        }
                    ),
                }
            }
        ),
        "EndpointRequest": body_schema(
            {
                "url": endpoint_url,
                "description": nullable({"type": "string", "maxLength": 200}),
                "types": {"type": "array", "items": ref("EventType"), "maxItems": 20},
                "mode": MODE,
            },
            ["url"],
            examples=[{"url": "http://localhost:9000/hooks", "mode": "test"}],
        ),
        "EndpointPatch": body_schema(
            {
                "url": endpoint_url,
                "description": nullable({"type": "string", "maxLength": 200}),
                "types": {"type": "array", "items": ref("EventType"), "maxItems": 20},
                "enabled": {"type": "boolean"},
                "rotateSecret": {"type": "boolean"},
            },
            [],
            examples=[{"enabled": True}],
        ),
        "Endpoint": object_schema(
            {
                "endpointId": ref("EndpointId"),
                "url": {"type": "string"},
                "description": {"type": "string"},
                "mode": MODE,
                "types": {"type": "array", "items": ref("EventType")},
                "enabled": {"type": "boolean"},
                "disabledReason": nullable({"type": "string"}),
                "failingSince": nullable(TIME),
                "secretRotatedUntil": nullable(TIME),
                "createdAt": TIME,
                "updatedAt": TIME,
                "secret": {"type": "string", "pattern": "^whsec_"},
            },
            [
                "endpointId",
                "url",
                "description",
                "mode",
                "types",
                "enabled",
                "disabledReason",
                "failingSince",
                "secretRotatedUntil",
                "createdAt",
                "updatedAt",
            ],  # fmt: skip
            description="secret only when it is created or rotated.",
        ),
        "EndpointList": object_schema({"items": {"type": "array", "items": ref("Endpoint")}}),
        "EndpointDeleted": object_schema(
            {"deleted": {"const": True}, "endpointId": ref("EndpointId")}
        ),
        "Attempts": object_schema(
            {
                "items": {
                    "type": "array",
                    "items": object_schema(
                        {
                            "at": nullable(TIME),
                            "eventId": ref("EventId"),
                            "attempt": {"type": "integer"},
                            "status": nullable({"type": "integer"}),
                            "outcome": {
                                "type": "string",
                                "enum": ["done", "retry", "failed", "dropped"],
                            },
                            "error": nullable({"type": "string"}),
                            "durationMs": nullable({"type": "number"}),
                            "nextAttemptAt": nullable(TIME),
                        }
                    ),
                }
            }
        ),
        "ReplayRequest": body_schema(
            {
                "since": ref("EventId"),
                "eventIds": {
                    "type": "array",
                    "items": ref("EventId"),
                    "minItems": 1,
                    "maxItems": 400,
                },
            },
            [],
            # eventIds: what fits in the JSON API's 16 KiB body
            **{"not": {"required": ["since", "eventIds"]}},
            description="since or eventIds, not both.",
            examples=[{"since": EVT_EXAMPLE}],
        ),
        "Replay": object_schema(
            {
                "queued": {"type": "integer"},
                "last": nullable(ref("EventId")),
                "hasMore": {"type": "boolean"},
            }
        ),
        "EndpointTest": object_schema(
            {
                "eventId": ref("EventId"),
                "status": nullable({"type": "integer"}),
                "error": nullable({"type": "string"}),
                "durationMs": {"type": "integer", "minimum": 0},
                "delivered": {"type": "boolean"},
            }
        ),
        "TriggerRequest": body_schema(
            {
                "provider": PROVIDER,
                "type": {
                    "type": "string",
                    "enum": sorted(SIMULATED),
                    "description": "An event type a provider's simulator can send; one this "
                    "provider's cannot is 409 not_simulated.",
                },
                "txId": ref("TxId"),
            },
            ["provider", "type", "txId"],
            examples=[{"provider": "stripe", "type": "payment.succeeded", "txId": TX_EXAMPLE}],
        ),
        "Triggered": object_schema(
            {
                "projectId": ref("ProjectId"),
                "txId": ref("TxId"),
                "providerEventId": {"type": "string"},
                "providerType": {"type": "string"},
                "status": {"type": "integer"},
                "answer": {},
            }
        ),
        "Stats": object_schema(
            {
                "commits": {"type": "integer"},
                "ticketsCommitted": {"type": "integer"},
                "ticketsPerCommit": {"type": "number"},
                "commitFailures": {"type": "integer"},
                "commitMs": {
                    "type": "number",
                    "description": "The engine's commits' mean time in the writer's thread,"
                    " writes and syncs (ms)",
                },
                "commitRoundTripMs": {
                    "type": "number",
                    "description": "The commits' mean time from the writer's hand-off to the"
                    " thread until the event loop had each back (ms)",
                },
                "actors": {"type": "integer"},
                "actorRestarts": {"type": "integer"},
            }
        ),
        "Health": object_schema({"status": {"type": "string", "enum": ["ok", "ready"]}}),
    }
