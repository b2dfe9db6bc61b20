"""Signed PayPal webhook deliveries, as PayPal sends them: the one builder the simulator and the
tests use (tests/conformance checks the signature against a delivery PayPal signed).

PayPal signs with a private key only it holds; a simulator or a test signs with its own, whose
certificate it serves at ``cert_url`` on loopback (a project allows it with ``certHosts``)."""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric import rsa

from edge.providers.paypal import signature
from edge.sim.paypal import objects


def signed(
    body: bytes,
    webhook_id: str,
    key: rsa.RSAPrivateKey,
    cert_url: str,
    transmission: tuple[str, str] | None = None,
) -> dict[str, str]:
    """The headers of ``body`` sent to the webhook subscription ``webhook_id``; ``transmission``
    is its id and time (a new id, now, by default; a retry resends the first)."""
    transmission_id, at = transmission or objects.transmission()
    return {
        "Content-Type": "application/json",
        "PAYPAL-TRANSMISSION-ID": transmission_id,
        "PAYPAL-TRANSMISSION-TIME": at,
        "PAYPAL-TRANSMISSION-SIG": signature.sign(key, transmission_id, at, webhook_id, body),
        "PAYPAL-CERT-URL": cert_url,
        "PAYPAL-AUTH-ALGO": signature.ALGORITHM,
    }
