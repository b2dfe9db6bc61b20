"""Each credential field as the methods page shows it: a plain label, and where in the
provider's own dashboard the value is found. Pure data."""

from __future__ import annotations

from collections.abc import Mapping

# (provider, field) -> (label, where to find it)
HELP: Mapping[tuple[str, str], tuple[str, str]] = {
    ("stripe", "secretKey"): (
        "Secret key",
        "Stripe dashboard > Developers > API keys: the secret key (sk_test_ in test mode,"
        " sk_live_ in live), or a restricted key (rk_) with Checkout Sessions write.",
    ),
    ("stripe", "publishableKey"): (
        "Publishable key",
        "Stripe dashboard > Developers > API keys: the publishable key (pk_test_ or pk_live_).",
    ),
    ("stripe", "webhookSecret"): (
        "Webhook signing secret",
        "Stripe dashboard > Developers > Webhooks > the endpoint for the address above:"
        " Signing secret (whsec_).",
    ),
    ("stripe", "previousWebhookSecret"): (
        "Previous webhook signing secret",
        "Only while you roll the endpoint's secret in Stripe: the old one, until it expires.",
    ),
    ("stripe", "apiBase"): ("API address", "Leave empty: https://api.stripe.com."),
    ("paypal", "clientId"): (
        "Client ID",
        "PayPal Developer Dashboard > Apps & Credentials > your app (Sandbox for test, Live for"
        " live): Client ID.",
    ),
    ("paypal", "clientSecret"): ("Client secret", "The same app: Secret key 1 (Show)."),
    ("paypal", "webhookId"): (
        "Webhook ID",
        "The same app > Webhooks > the webhook for the address above: Webhook ID.",
    ),
    ("paypal", "apiBase"): (
        "API address",
        "Leave empty: PayPal's sandbox in test mode, its live API in live mode.",
    ),
    ("paypal", "certHosts"): (
        "Certificate hosts",
        "Leave empty: api.paypal.com and api.sandbox.paypal.com.",
    ),
    ("paddle", "apiKey"): (
        "API key",
        "Paddle > Developer tools > Authentication > API keys (pdl_sdbx_apikey_ in the sandbox,"
        " pdl_live_apikey_ live), with the transaction and adjustment permissions.",
    ),
    ("paddle", "clientToken"): (
        "Client-side token",
        "Paddle > Developer tools > Authentication > Client-side tokens (test_ or live_).",
    ),
    ("paddle", "webhookSecret"): (
        "Notification secret key",
        "Paddle > Developer tools > Notifications > the destination for the address above:"
        " Secret key (pdl_ntfset_).",
    ),
    ("paddle", "apiBase"): (
        "API address",
        "Leave empty in live mode; https://sandbox-api.paddle.com for the sandbox.",
    ),
    ("btcpay", "serverUrl"): ("Server address", "Your BTCPay Server's https address."),
    ("btcpay", "apiKey"): (
        "API key",
        "BTCPay > Account > Manage Account > API Keys: a key with create and view invoices,"
        " and create non-approved pull payments (refunds), on this store.",
    ),
    ("btcpay", "storeId"): ("Store ID", "BTCPay > Store Settings > General: Store Id."),
    ("btcpay", "webhookSecret"): (
        "Webhook secret",
        "BTCPay > Store Settings > Webhooks > the webhook for the address above, sending every"
        " event: its secret.",
    ),
}


def label_of(provider: str, field: str) -> str:
    return HELP.get((provider, field), (field, ""))[0]


def where_of(provider: str, field: str) -> str:
    return HELP.get((provider, field), (field, ""))[1]
