"""Signed BTCPay Server webhook deliveries, as ``WebhookSender.cs`` sends them: the one builder
the simulator, ``edge trigger`` and the tests use."""

from __future__ import annotations

from edge.providers.btcpay.signature import sign_header


def signed(body: bytes, secret: str) -> dict[str, str]:
    """The headers of ``body`` signed with the webhook's ``secret``. No timestamp: a retry
    resends the first delivery as it was."""
    return {
        "Content-Type": "application/json",
        "User-Agent": "BTCPayServer",
        "BTCPay-Sig": sign_header(secret, body),
    }
