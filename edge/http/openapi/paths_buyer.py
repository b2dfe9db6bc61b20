"""What a buyer's browser and the providers call: status (with long poll), public-info, the
signing keys, the button script, the icons, checkout, the buyer's return, payment links and
webhooks."""

from __future__ import annotations

from edge.http.openapi.common import (
    ANONYMOUS,
    ANONYMOUS_OR_KEY,
    Operation,
    headers,
    json_answer,
    json_body,
    operation,
    path_param,
    query_param,
)
from edge.http.openapi.schemas import Schema, ref

PROJECT = path_param("projectId", ref("ProjectId"), "The project (public: it is in web pages).")
_TEXT = {"type": "string"}


def _header(name: str, description: str, required: bool = True) -> Schema:
    return {"description": description, "required": required, "schema": _TEXT}


def _redirect(description: str, **more: Schema) -> Schema:
    return {
        "description": description,
        "headers": headers({"Location": _header("Location", "Where to go."), **more}),
    }


def paths() -> dict[str, dict[str, Operation]]:
    return {
        "/status/{projectId}/{id}": {"get": _status()},
        "/api/projects/{projectId}/public-info": {"get": _public_info()},
        "/.well-known/cm-signing-keys": {"get": _signing_keys()},
        "/button.js": {"get": _button()},
        "/button/{name}": {"get": _button_file()},
        "/static/icons/{name}": {"get": _icon()},
        "/api/checkout/{provider}/{projectId}": {"post": _checkout()},
        "/return/{provider}/{projectId}/{txId}": {"get": _return()},
        "/return/{provider}/{projectId}/{txId}/cancel": {"get": _return_canceled()},
        "/static/return/{name}": {"get": _return_file()},
        "/pay/{projectId}/{productId}": {"get": _payment_link()},
        "/pay/{projectId}/done/{txId}": {"get": _link_done()},
        "/pay/{projectId}/canceled/{txId}": {"get": _link_canceled()},
        "/static/pay/{name}": {"get": _pay_file()},
        "/webhook/{provider}/{projectId}": {"post": _webhook()},
    }


def _status() -> Operation:
    return operation(
        "getStatus",
        "Status",
        "The status of a transaction or subscription",
        "The source of truth for fulfilment. Anonymous; with a key (or the operator's token) "
        "the call counts against the key's limit instead of the client address. HEAD answers "
        "the same headers; OPTIONS answers a CORS preflight.\n\n**Long poll**: "
        "`?wait=N&version=V` answers at once when the record's version is above V, else as "
        "soon as it changes, or after N seconds with the unchanged record; it counts once "
        "against the rate limit. Unknown, malformed and other projects' ids all answer the "
        "same 404 not_found, so ids cannot be probed.",
        parameters=[
            path_param("projectId", {"type": "string"}, "The project."),
            path_param(
                "id",
                {"type": "string", "examples": ["tx_01JD7K2Q9XMD4ABCDEFGHJKMNP"]},
                "A tx_ or sub_ id.",
            ),
            query_param(
                "wait", {"type": "integer", "minimum": 0, "maximum": 30}, "Seconds to wait."
            ),
            query_param(
                "version",
                {"type": "integer", "minimum": 0, "maximum": 2**31},
                "Answer at once when the record's version is above this one.",
            ),
        ],
        security=ANONYMOUS_OR_KEY,
        limited=True,
        ok={200: json_answer("The status record.", ref("StatusRecord"), limited=True)},
        errors={
            400: ["invalid_request"],
            403: ["forbidden"],
            404: ["not_found"],
            429: ["rate_limited"],
            503: ["unavailable"],
        },
    )


def _public_info() -> Operation:
    signature = _header(
        "Cm-Signature",
        "keyid=<id>, sig=<base64url ECDSA P-256 SHA-256 over the exact body bytes>; the key "
        "is at /.well-known/cm-signing-keys.",
    )
    etag = _header("ETag", "A strong ETag of the body.")
    return operation(
        "getPublicInfo",
        "Public",
        "The providers a buyer may pick, for a product",
        "Only fields safe to publish. `Cache-Control: public, max-age=60`, a strong ETag "
        "(304 on If-None-Match) and `Access-Control-Allow-Origin: *` on every answer. The body "
        "is signed (Cm-Signature, also on a 304).",
        parameters=[
            PROJECT,
            query_param("productId", ref("ProductId"), "With it, the product and its prices."),
            query_param("mode", {"type": "string", "enum": ["live", "test"]}, "Default live."),
            {
                "name": "If-None-Match",
                "in": "header",
                "required": False,
                "description": "ETags held; the current one answers 304.",
                "schema": _TEXT,
            },
        ],
        security=ANONYMOUS,
        limited=True,
        ok={
            200: json_answer(
                "The project's providers.",
                ref("PublicInfo"),
                limited=True,
                ETag=etag,
                **{"Cm-Signature": signature},
            ),
            304: {
                "description": "Unchanged since the ETag given.",
                "headers": headers({"ETag": etag, "Cm-Signature": signature}),
            },
        },
        errors={
            400: ["invalid_request"],
            404: ["project_not_found", "product_not_found"],
            429: ["rate_limited"],
            503: ["unavailable"],
        },
    )


def _signing_keys() -> Operation:
    return operation(
        "getSigningKeys",
        "Public",
        "The node's public signing keys",
        "A JWKS; the key that signs public-info. Cached an hour.",
        security=ANONYMOUS,
        ok={200: json_answer("The keys.", ref("Jwks"))},
        errors={},
    )


def _button() -> Operation:
    return operation(
        "getButtonScript",
        "Public",
        "The <cm-button> script, current version",
        "A 302 to /button/v1-<hash>.js, cached five minutes; CORS for any origin.",
        security=ANONYMOUS,
        ok={302: _redirect("The versioned script.")},
        errors={},
    )


def _button_file() -> Operation:
    return operation(
        "getButtonFile",
        "Public",
        "The <cm-button> script, one version",
        "The script with this node's public key built in, cached a year. Only the current "
        "version is served: any other name is 404 not_found.",
        parameters=[path_param("name", _TEXT, "v1-<hash>.js, as /button.js names it.")],
        security=ANONYMOUS,
        ok={
            200: {
                "description": "The script.",
                "headers": headers(),
                "content": {"text/javascript": {"schema": _TEXT}},
            }
        },
        errors={404: ["not_found"]},
    )


def _icon() -> Operation:
    return operation(
        "getIcon",
        "Public",
        "A payment method icon",
        "card.svg, mail.svg, wallet.svg, bitcoin.svg: the icons public-info names.",
        parameters=[
            path_param("name", {"type": "string", "examples": ["card.svg"]}, "The icon's file.")
        ],
        security=ANONYMOUS,
        ok={
            200: {
                "description": "The icon.",
                "headers": headers(),
                "content": {"image/svg+xml": {"schema": _TEXT}},
            }
        },
        errors={404: ["not_found"]},
    )


def _checkout() -> Operation:
    tx = "$response.body#/txId"
    project = "$request.path.projectId"
    return operation(
        "startCheckout",
        "Checkout",
        "Start a checkout",
        "No key needed (the button calls this from the buyer's browser); a key gets its own "
        "rate limit and a cmk_test_ key forces test mode. The transaction is stored pending "
        "before the provider is called; if the provider fails, the answer is 502 provider_error "
        "and the transaction becomes canceled. The answer's `type` says the hand-off: "
        "`redirect` (stripe, btcpay: go to url), `approval` (paypal: open url), `token` "
        "(paddle: Paddle.js with token and publishableKey), `reference` (manual: show reference "
        "and mailingAddress).",
        parameters=[
            path_param("provider", ref("Provider"), "The provider the buyer picked."),
            PROJECT,
            {"$ref": "#/components/parameters/IdempotencyKey"},
        ],
        body=json_body(ref("CheckoutRequest")),
        security=ANONYMOUS_OR_KEY,
        limited=True,
        ok={201: json_answer("The checkout and its hand-off.", ref("Checkout"), limited=True)},
        links={
            "GetStatus": {
                "operationId": "getStatus",
                "parameters": {"projectId": project, "id": tx, "wait": "0"},
                "description": "The checkout's status (the answer's txId).",
            },
            "GetTransaction": {
                "operationId": "getTransaction",
                "parameters": {"projectId": project, "txId": tx},
                "description": "The transaction with its history, for the merchant's server.",
            },
            "MarkPaid": {
                "operationId": "markPaid",
                "parameters": {"projectId": project, "txId": tx},
                "description": "Pay by mail: the money arrived.",
            },
            "CancelTransaction": {
                "operationId": "cancelTransaction",
                "parameters": {"projectId": project, "txId": tx},
                "description": "Abandon the checkout.",
            },
        },
        errors={
            400: ["invalid_request", "url_not_allowed"],
            402: ["quota_exceeded"],
            403: ["forbidden"],
            404: [
                "project_not_found",
                "product_not_found",
                "provider_not_enabled",
                "unknown_provider",
            ],
            409: [
                "tx_exists",
                "idempotency_conflict",
                "amount_not_supported",
                "subscription_not_supported",
                "quantity_not_allowed",
            ],
            429: ["rate_limited"],
            502: ["provider_error"],
            503: ["unavailable"],
        },
    )


_RETURN_PARAMETERS = [
    path_param("provider", ref("Provider"), "The checkout's provider."),
    PROJECT,
    path_param("txId", ref("TxId"), "The checkout's transaction."),
    query_param(
        "shown",
        {"type": "string", "maxLength": 200},
        "The page again, acting on nothing (the popup sends the main window here).",
    ),
]


def _html_page(description: str, *, limited: bool = False) -> Schema:
    return {
        "description": description,
        "headers": headers(limited=limited),
        "content": {"text/html": {"schema": _TEXT}},
    }


def _return() -> Operation:
    return operation(
        "buyerReturned",
        "Checkout",
        "The buyer's way back from the provider",
        "PayPal sends the buyer here after approval. The capture the node owes PayPal is "
        "durable first; the node then waits a few seconds at most for PayPal's answer, and "
        "answers a page that says the outcome and sends the buyer on: to the checkout's success "
        "address (its {TX_ID} filled in) when the payment went through or is on its way; "
        "otherwise (declined, canceled, expired) it says what happened, with a link to the "
        "cancel address. In the payment popup the button opened, the main window goes on and "
        "the popup closes. The provider's own query parameters (token, PayerID) are accepted.",
        parameters=_RETURN_PARAMETERS,
        security=ANONYMOUS,
        ok={200: _html_page("The outcome, and where the buyer goes on to.")},
        errors={
            404: ["not_found", "project_not_found"],
            429: ["rate_limited"],
            503: ["unavailable"],
        },
    )


def _return_canceled() -> Operation:
    return operation(
        "buyerCanceled",
        "Checkout",
        "The buyer's way back after canceling at the provider",
        "PayPal's cancel address: the pending checkout is canceled when PayPal's `token` in the "
        "address is the checkout's order (a transaction id alone never cancels one), and the "
        "page says so, with a link to the checkout's cancel address.",
        parameters=_RETURN_PARAMETERS,
        security=ANONYMOUS,
        ok={200: _html_page("The outcome, and the way back to the shop.")},
        errors={
            404: ["not_found", "project_not_found"],
            429: ["rate_limited"],
            503: ["unavailable"],
        },
    )


def _return_file() -> Operation:
    return _page_files(
        "getReturnFile", "The return page's script and style sheet", ("return.js", "return.css")
    )


_LANG = query_param(
    "lang",
    {"type": "string", "examples": ["de"]},
    "The page's language (en, de, fr, es, it, nl, pt, pl); any other value, or none: the "
    "browser's Accept-Language, else English.",
)


def _payment_link() -> Operation:
    return operation(
        "paymentLink",
        "Checkout",
        "A payment link: the node's page for one product",
        "For a merchant with no website: a page that shows the product and its price (the "
        "total, with a quantity; per its interval, for a subscription) and the <cm-button> "
        "that opens the payment window, loaded from this node with its SRI hash, so the "
        "checkout is the button's own, under its checks and limits. The name and price come "
        "from the project's public-info, charged to its limit. The link's parameters are "
        "checked as the checkout checks the same fields; other query parameters are ignored. "
        "The page speaks the buyer's language and writes amounts as it does. "
        "`Cache-Control: no-store`, `Referrer-Policy: no-referrer`.",
        parameters=[
            PROJECT,
            path_param("productId", ref("ProductId"), "The product sold."),
            query_param(
                "customerRef",
                {"type": "string", "maxLength": 500},
                "The merchant's buyer reference: metadata.customerRef of the checkout.",
            ),
            query_param(
                "quantity",
                {"type": "integer", "minimum": 1, "maximum": 100},
                "How many (payments only; a subscription is 409 quantity_not_allowed above 1).",
            ),
            query_param("mode", {"type": "string", "enum": ["live", "test"]}, "Default live."),
            _LANG,
        ],
        security=ANONYMOUS,
        limited=True,
        ok={200: _html_page("The payment link's page.", limited=True)},
        errors={
            400: ["invalid_request"],
            404: ["project_not_found", "product_not_found"],
            409: ["quantity_not_allowed"],
            429: ["rate_limited"],
            503: ["unavailable"],
        },
    )


_LANDING_PARAMETERS = [
    PROJECT,
    path_param("txId", ref("TxId"), "The checkout's transaction (the address's {TX_ID})."),
    _LANG,
]


def _landing(operation_id: str, summary: str, description: str) -> Operation:
    return operation(
        operation_id,
        "Checkout",
        summary,
        "For a merchant with no website: set `{base_url}/pay/{projectId}/done/{TX_ID}` and "
        "`.../canceled/{TX_ID}` as the project's success and cancel addresses. The page says "
        "the checkout's outcome, its amount and its reference, in the buyer's language, from "
        "its status record (charged as a status read). "
        + description
        + " Unknown, malformed and other projects' ids all answer the same 404 not_found.",
        parameters=_LANDING_PARAMETERS,
        security=ANONYMOUS,
        limited=True,
        ok={200: _html_page("The checkout's outcome.", limited=True)},
        errors={404: ["not_found"], 429: ["rate_limited"], 503: ["unavailable"]},
    )


def _link_done() -> Operation:
    return _landing(
        "paymentLinkDone",
        "The node's success page",
        "Paid, or on its way; while the provider is confirming, the page follows the status "
        "(a long poll) and shows the outcome once it changes.",
    )


def _link_canceled() -> Operation:
    return _landing(
        "paymentLinkCanceled",
        "The node's cancel page",
        "A checkout the buyer left unpaid is said canceled (nothing charged); one paid after "
        "all is said paid.",
    )


def _pay_file() -> Operation:
    return _page_files(
        "getPayFile", "The payment link pages' script and style sheet", ("pay.js", "pay.css")
    )


def _page_files(operation_id: str, summary: str, names: tuple[str, str]) -> Operation:
    """A page's own script and style sheet (the node's CSP runs no inline script or style)."""
    return operation(
        operation_id,
        "Checkout",
        summary,
        f"{names[0]} and {names[1]} (the node's CSP runs no inline script or style).",
        parameters=[path_param("name", {"type": "string", "enum": list(names)}, "The file.")],
        security=ANONYMOUS,
        ok={
            200: {
                "description": "The file.",
                "headers": headers(),
                "content": {"text/javascript": {"schema": _TEXT}, "text/css": {"schema": _TEXT}},
            }
        },
        errors={404: ["not_found"]},
    )


def _webhook() -> Operation:
    return operation(
        "receiveWebhook",
        "Webhooks",
        "A provider's event, byte for byte",
        "Set this address as the webhook endpoint in the provider's dashboard. The node checks "
        "the provider's signature over the raw bytes (Stripe-Signature; PayPal's "
        "PAYPAL-TRANSMISSION-* headers; Paddle-Signature; BTCPay-Sig), normalizes the event, "
        "deduplicates it by the provider's event id, applies it and commits it durably before "
        "it answers. A duplicate answers 200 with duplicate: true and the first eventId; an "
        "event that matches no transaction is stored as unmatched and answered 200. Bodies up "
        "to 1 MiB.",
        parameters=[path_param("provider", ref("Provider"), "The provider sending."), PROJECT],
        body={
            "required": True,
            "description": "The provider's own body, signed.",
            "content": {"application/json": {"schema": {}}},
        },
        security=ANONYMOUS,
        limited=True,
        ok={200: json_answer("Stored (or a duplicate).", ref("WebhookReceived"))},
        errors={
            400: ["malformed_payload"],
            401: ["signature_invalid"],
            404: ["project_not_found", "provider_not_enabled", "unknown_provider"],
            429: ["rate_limited"],
            503: ["unavailable"],
        },
    )
