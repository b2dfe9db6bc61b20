"""PayPal's webhook signature (PROVIDERS.md "PayPal", paypalrestsdk ``notifications.py``).

PayPal signs ``"{transmission id}|{transmission time}|{webhook id}|{crc32 of the raw body}"``
with SHA256withRSA; the public key is in the certificate at ``PAYPAL-CERT-URL``. The webhook id
is the merchant's subscription id (credential ``webhookId``), never read from the delivery, so a
delivery meant for another subscription does not verify. Retries resend the first signature, so
there is no timestamp window: the event ``id`` deduplicates replays (CONTRACT 4.3).
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Mapping

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from edge.providers.base import SignatureInvalid
from edge.providers.verifying import Signed

ALGORITHM = "SHA256withRSA"
TRANSMISSION_ID = "paypal-transmission-id"
TRANSMISSION_TIME = "paypal-transmission-time"
TRANSMISSION_SIG = "paypal-transmission-sig"
CERT_URL = "paypal-cert-url"
AUTH_ALGO = "paypal-auth-algo"
HEADERS = (TRANSMISSION_ID, TRANSMISSION_TIME, TRANSMISSION_SIG, CERT_URL, AUTH_ALGO)


def signed_message(
    transmission_id: str, transmission_time: str, webhook_id: str, body: bytes
) -> bytes:
    """The exact bytes PayPal signs for one delivery to one webhook subscription."""
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return f"{transmission_id}|{transmission_time}|{webhook_id}|{crc}".encode()


def decode_signature(value: str) -> bytes | None:
    """The raw signature of a ``PAYPAL-TRANSMISSION-SIG`` header; None when it is not base64."""
    try:
        return base64.b64decode(value.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError, ValueError):
        return None


def read(headers: Mapping[str, str]) -> Signed:
    """The transmission's headers (lower-case names): ``missing_header`` when one is absent,
    ``malformed_header`` for another algorithm or a signature that is not base64."""
    missing = [name for name in HEADERS if not headers.get(name)]
    if missing:
        raise SignatureInvalid("missing_header", f"No {missing[0].upper()} header.")
    if headers[AUTH_ALGO] != ALGORITHM:
        raise SignatureInvalid("malformed_header", f"PAYPAL-AUTH-ALGO must be {ALGORITHM}.")
    if decode_signature(headers[TRANSMISSION_SIG]) is None:
        raise SignatureInvalid("malformed_header", "PAYPAL-TRANSMISSION-SIG is not base64.")
    return Signed((headers[TRANSMISSION_SIG],), values={name: headers[name] for name in HEADERS})


def load_public_key(cert_pem: bytes) -> rsa.RSAPublicKey | None:
    """The RSA key of a PEM certificate; None when it is not one."""
    try:
        key = x509.load_pem_x509_certificate(cert_pem).public_key()
    except ValueError:
        return None
    return key if isinstance(key, rsa.RSAPublicKey) else None


def signature_matches(
    key: rsa.RSAPublicKey, headers: Mapping[str, str], body: bytes, webhook_id: str
) -> bool:
    """Does the delivery's signature verify for ``webhook_id``? ``headers`` have lower-case
    names and all of ``HEADERS`` (the caller checks they are there)."""
    signature = decode_signature(headers[TRANSMISSION_SIG])
    if signature is None:
        return False
    message = signed_message(headers[TRANSMISSION_ID], headers[TRANSMISSION_TIME], webhook_id, body)
    try:
        key.verify(signature, message, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True


def sign(
    key: rsa.RSAPrivateKey,
    transmission_id: str,
    transmission_time: str,
    webhook_id: str,
    body: bytes,
) -> str:
    """The ``PAYPAL-TRANSMISSION-SIG`` value: what PayPal's side does (the simulator signs
    with it)."""
    message = signed_message(transmission_id, transmission_time, webhook_id, body)
    return base64.b64encode(key.sign(message, padding.PKCS1v15(), hashes.SHA256())).decode()
