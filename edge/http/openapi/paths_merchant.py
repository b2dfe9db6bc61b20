"""The merchant's server API (CONTRACT 4.5) and the subscription portal (4.4): a project key
(or the operator's token) on every call."""

from __future__ import annotations

from edge.http.openapi.common import (
    KEY_OR_OPERATOR,
    Operation,
    json_answer,
    json_body,
    operation,
    path_param,
    query_param,
)
from edge.http.openapi.paths_buyer import PROJECT
from edge.http.openapi.schemas import ref

TX = path_param("txId", ref("TxId"), "The transaction.")
_NOT_FOUND = ["project_not_found", "not_found"]


def paths() -> dict[str, dict[str, Operation]]:
    base = "/api/projects/{projectId}"
    return {
        f"{base}/transactions": {"get": _list()},
        f"{base}/transactions/{{txId}}": {"get": _get()},
        f"{base}/events": {"get": _events()},
        f"{base}/transactions/{{txId}}/mark-paid": {"post": _mark_paid()},
        f"{base}/transactions/{{txId}}/cancel": {"post": _cancel()},
        f"{base}/transactions/{{txId}}/refund": {"post": _refund()},
        f"{base}/transactions/{{txId}}/resolve": {"post": _resolve()},
        f"{base}/transactions/{{txId}}/sync": {"post": _sync()},
        f"{base}/reconcile": {"post": _reconcile()},
        "/api/subscriptions/{projectId}/{subscriptionId}/portal-url": {"post": _portal()},
    }


def _list() -> Operation:
    return operation(
        "listTransactions",
        "Merchant API",
        "Transactions, newest first",
        "A key sees only its own mode's transactions. A page reads at most 5,000 stored rows: "
        "with a sparse filter it may hold fewer than `limit` items while `next` is set; page "
        "on until `next` is null.",
        parameters=[
            PROJECT,
            query_param("status", ref("Status"), "Only transactions in this status."),
            query_param(
                "reference",
                {"type": "string", "examples": ["CM-7KQ2-9XMD-5"]},
                "A pay-by-mail code as the buyer wrote it (case, hyphens and prefix do not "
                "matter; the check character must be right).",
            ),
            query_param("after", ref("TxId"), "The page after this transaction."),
            query_param(
                "limit", {"type": "integer", "minimum": 1, "maximum": 100, "default": 50}, ""
            ),
        ],
        security=KEY_OR_OPERATOR,
        ok={200: json_answer("A page of transactions.", ref("TransactionPage"))},
        errors={
            400: ["invalid_request"],
            403: ["forbidden"],
            404: _NOT_FOUND,
            503: ["unavailable"],
        },
    )


def _get() -> Operation:
    return operation(
        "getTransaction",
        "Merchant API",
        "One transaction with its event history",
        "Its `events`, oldest first.",
        parameters=[PROJECT, TX],
        security=KEY_OR_OPERATOR,
        ok={200: json_answer("The transaction.", ref("TransactionWithEvents"))},
        errors={403: ["forbidden"], 404: _NOT_FOUND, 503: ["unavailable"]},
    )


def _events() -> Operation:
    return operation(
        "listEvents",
        "Merchant API",
        "The event feed, oldest first",
        "Page on with `after=next` while `hasMore`. With `wait`, when nothing comes after "
        "`after` the answer waits until something does, or is empty when the time is up (a "
        "long poll, as `edge listen` uses). Events are kept 90 days.",
        parameters=[
            PROJECT,
            query_param("after", ref("EventId"), "The page after this event."),
            query_param(
                "limit", {"type": "integer", "minimum": 1, "maximum": 500, "default": 100}, ""
            ),
            query_param(
                "wait", {"type": "integer", "minimum": 0, "maximum": 25}, "Seconds to wait."
            ),
        ],
        security=KEY_OR_OPERATOR,
        ok={200: json_answer("A page of events.", ref("EventPage"))},
        errors={
            400: ["invalid_request"],
            403: ["forbidden"],
            404: _NOT_FOUND,
            503: ["unavailable"],
        },
    )


def _mark_paid() -> Operation:
    return operation(
        "markPaid",
        "Merchant API",
        "Pay by mail: the money arrived",
        "pending → succeeded, stored as manual.marked_paid. The note (optional) is kept in the "
        "event's metadata.",
        parameters=[PROJECT, TX],
        body=json_body(ref("MarkPaidRequest"), required=False),
        security=KEY_OR_OPERATOR,
        ok={200: json_answer("The transaction.", ref("Transaction"))},
        errors={
            403: ["forbidden"],
            404: _NOT_FOUND,
            409: ["not_manual"],
            422: ["invalid_transition"],
            503: ["unavailable"],
        },
    )


def _refund() -> Operation:
    return operation(
        "refundTransaction",
        "Merchant API",
        "Give money back for a paid transaction",
        "All that is left, or `amount` of it. The node asks the provider from its durable queue "
        "(Stripe's refund of the payment intent, PayPal's refund of the capture, Paddle's "
        "refund adjustment, which Paddle approves first, BTCPay's pull payment for the buyer to "
        "claim) and answers 202 with the refund `requested`; the provider's own webhook moves "
        "the transaction once the money has moved, refunds summed by amount. Exactly once at the "
        "provider whatever answer is lost. What is left to refund: what was charged, less what "
        "the provider reports refunded (its own dashboard's refunds included), less refunds "
        "asked and not yet reported. PayPal shows the reason to the buyer: one line of at most "
        "255 characters. Pay by mail records the refund at once (200, `done`): the merchant "
        "sent the money back by hand. A request repeated with its Idempotency-Key gets the "
        "first refund, never a second one.",
        parameters=[PROJECT, TX, {"$ref": "#/components/parameters/IdempotencyKey"}],
        body=json_body(ref("RefundRequest"), required=False),
        security=KEY_OR_OPERATOR,
        ok={
            200: json_answer("Pay by mail: recorded.", ref("Refund")),
            202: json_answer("Owed to the provider.", ref("Refund")),
        },
        errors={
            400: ["invalid_amount", "unknown_field", "invalid_request"],
            403: ["forbidden"],
            404: [*_NOT_FOUND, "provider_not_enabled"],
            409: ["refund_too_large", "refund_unsupported", "idempotency_conflict"],
            422: ["invalid_transition", "invalid_amount"],
            503: ["unavailable"],
        },
    )


def _resolve() -> Operation:
    return operation(
        "resolveTransaction",
        "Merchant API",
        "Mark what a transaction needed you for handled",
        "The open flags (`attention`) move to `handled` with who (the key, the account or the "
        "operator), when and the note; `needsAttention` clears, and the act is stored as "
        "payment.resolved (and notified). A flag raised later opens it again.",
        parameters=[PROJECT, TX],
        body=json_body(ref("ResolveRequest"), required=False),
        security=KEY_OR_OPERATOR,
        ok={200: json_answer("The transaction.", ref("Transaction"))},
        errors={
            400: ["unknown_field", "invalid_request"],
            403: ["forbidden"],
            404: _NOT_FOUND,
            409: ["nothing_to_resolve"],
            503: ["unavailable"],
        },
    )


def _sync() -> Operation:
    return operation(
        "syncTransaction",
        "Merchant API",
        "Ask the provider what became of a transaction",
        "The node reads the transaction's objects with the provider's own API (Stripe's "
        "Checkout Session with its payment, refunds and disputes; PayPal's order with its "
        "captures and refunds; Paddle's transaction with its adjustments; BTCPay's invoice "
        "with its payments and refunds) and applies what they say as webhooks would have been: "
        "matched, checked, deduplicated, each change told once (`source: sync`; a webhook "
        "that comes later for the same change is its repeat). The node also does this by "
        "itself for a checkout still open past its provider's usual time, paced per provider "
        "account. The answer is the transaction with its history and `sync`: whether the "
        "provider knew the checkout and how many changes no webhook had brought. Pay by mail "
        "has no provider to ask: 409 sync_unsupported.",
        parameters=[PROJECT, TX],
        body=json_body(ref("CancelRequest"), required=False),
        security=KEY_OR_OPERATOR,
        ok={200: json_answer("The transaction after asking.", ref("SyncedTransaction"))},
        errors={
            403: ["forbidden"],
            404: [*_NOT_FOUND, "provider_not_enabled"],
            409: ["sync_unsupported"],
            502: ["provider_error"],
            503: ["unavailable"],
        },
    )


def _reconcile() -> Operation:
    return operation(
        "reconcileProject",
        "Merchant API",
        "Apply what the providers hold that the node missed",
        "After an outage or a fixed webhook secret: the node walks each provider's own list "
        "since `since` (Stripe's events, Paddle's events, PayPal's webhook events, BTCPay's "
        "invoices by date) and applies what it missed, as webhooks would have been; a key "
        "walks its own mode. Events the node has already are duplicates and change nothing.",
        parameters=[PROJECT],
        body=json_body(ref("ReconcileRequest")),
        security=KEY_OR_OPERATOR,
        ok={200: json_answer("What each provider's walk saw.", ref("Reconciliation"))},
        errors={
            400: ["invalid_request", "unknown_field"],
            403: ["forbidden"],
            404: _NOT_FOUND,
            409: ["reconcile_unsupported"],
            502: ["provider_error"],
            503: ["unavailable"],
        },
    )


def _cancel() -> Operation:
    return operation(
        "cancelTransaction",
        "Merchant API",
        "Abandon a pending transaction",
        "→ canceled with reason `canceled by the merchant`, stored as checkout.canceled. The "
        "body is optional and empty.",
        parameters=[PROJECT, TX],
        body=json_body(ref("CancelRequest"), required=False),
        security=KEY_OR_OPERATOR,
        ok={200: json_answer("The transaction.", ref("Transaction"))},
        errors={
            403: ["forbidden"],
            404: _NOT_FOUND,
            422: ["invalid_transition"],
            503: ["unavailable"],
        },
    )


def _portal() -> Operation:
    return operation(
        "createPortalUrl",
        "Portal",
        "A provider-hosted page where the buyer manages the subscription",
        "Never anonymous. Stripe's billing portal and Paddle's customer portal; PayPal, BTCPay, "
        "pay by mail and a subscription without a customer on record answer 409 "
        "portal_unsupported. `returnUrl` defaults to the project's successUrl and must be on "
        "one of its allowed origins.",
        parameters=[
            PROJECT,
            path_param("subscriptionId", ref("SubscriptionId"), "The subscription."),
        ],
        body=json_body(ref("PortalRequest"), required=False),
        security=KEY_OR_OPERATOR,
        ok={200: json_answer("The portal's address.", ref("Portal"))},
        errors={
            400: ["url_not_allowed"],
            403: ["forbidden"],
            404: _NOT_FOUND,
            409: ["portal_unsupported"],
            502: ["provider_error"],
            503: ["unavailable"],
        },
    )
