"""The node's public-info signature (CONTRACT 4.1): ECDSA P-256 over SHA-256 of the exact body
bytes, in the raw ``r || s`` form WebCrypto verifies, base64url in a ``Cm-Signature`` header.

The key is made on first start and kept in the data dir (mode 0600), so signatures, the JWKS at
``/.well-known/cm-signing-keys`` and the key built into the served button script stay the same
across restarts. ``EDGE_SIGNING_KEY`` (the PEM itself) gives it instead, so that every node of a
cluster signs with one key without copying files between data dirs. Signing is deterministic
(RFC 6979): one body always gets one signature, so a cache that mixes a stored 200 with a later
304's headers still holds a matching pair.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from edge.config import ConfigError

SIGNING_KEY_FILE = "signing-key.pem"
HEADER = "Cm-Signature"
_COORD_BYTES = 32  # P-256
_MEMO_SIZE = 4096


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Signer:
    """Signs public-info bodies with the node's key; ``load`` it from the data dir."""

    def __init__(self, key: ec.EllipticCurvePrivateKey) -> None:
        self._key = key
        numbers = key.public_key().public_numbers()
        self.public_jwk: dict[str, str] = {
            "kty": "EC",
            "crv": "P-256",
            "x": b64url(numbers.x.to_bytes(_COORD_BYTES, "big")),
            "y": b64url(numbers.y.to_bytes(_COORD_BYTES, "big")),
        }
        self.kid = _thumbprint(self.public_jwk)
        self._memo: OrderedDict[str, str] = OrderedDict()

    @classmethod
    def load(cls, data_dir: Path, pem: str | None = None) -> Signer:
        """The key ``pem`` (``EDGE_SIGNING_KEY``) when given, else the data dir's, made now if
        this is the node's first start."""
        if pem is not None:
            if "\n" not in pem:  # an env file that holds one line a variable: \n for newlines
                pem = pem.replace("\\n", "\n")
            return cls(
                _private_key(
                    pem.encode(),
                    "EDGE_SIGNING_KEY",
                    'give the cluster\'s key, e.g. EDGE_SIGNING_KEY="$(cat signing-key.pem)"',
                )
            )
        path = data_dir / SIGNING_KEY_FILE
        try:
            # O_EXCL: two processes starting at once must not each write a different key.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            return cls(
                _private_key(
                    path.read_bytes(),
                    str(path),
                    "restore it from a backup (a new key changes the button script's integrity "
                    "hash)",
                )
            )
        signer = cls(ec.generate_private_key(ec.SECP256R1()))
        with os.fdopen(fd, "w") as handle:
            handle.write(signer.pem())
        return signer

    def pem(self) -> str:
        """The private key as ``signing-key.pem`` holds it (PKCS 8): for a backup only."""
        return self._key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        ).decode("ascii")

    def jwks(self) -> dict[str, Any]:
        return {"keys": [{**self.public_jwk, "kid": self.kid, "alg": "ES256", "use": "sig"}]}

    def sign(self, body: bytes) -> str:
        """The ``Cm-Signature`` header value for ``body``."""
        der = self._key.sign(body, ec.ECDSA(hashes.SHA256(), deterministic_signing=True))
        r, s = decode_dss_signature(der)
        raw = r.to_bytes(_COORD_BYTES, "big") + s.to_bytes(_COORD_BYTES, "big")
        return f"keyid={self.kid}, sig={b64url(raw)}"

    def sign_once(self, tag: str, body: bytes) -> str:
        """``sign(body)``, remembered under ``tag`` (a strong ETag of ``body``): the actors
        render a body once per configuration change and serve it many times."""
        header = self._memo.get(tag)
        if header is None:
            header = self.sign(body)
            self._memo[tag] = header
            if len(self._memo) > _MEMO_SIZE:
                self._memo.popitem(last=False)
        else:
            self._memo.move_to_end(tag)
        return header


def _private_key(pem: bytes, where: str, fix: str) -> ec.EllipticCurvePrivateKey:
    """The P-256 private key in ``pem``; else ``ConfigError`` naming ``where`` it came from and
    the ``fix`` (never the key's text: it is a secret)."""
    try:
        key = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError):  # not a key, or one sealed with a password
        key = None
    if not isinstance(key, ec.EllipticCurvePrivateKey) or key.curve.name != "secp256r1":
        raise ConfigError(
            f"{where} does not hold a P-256 private key (PEM, no password): {fix}"
        ) from None
    return key


def _thumbprint(jwk: dict[str, str]) -> str:
    """RFC 7638 JWK thumbprint: the key's id is derived from the key, never chosen."""
    canonical = json.dumps(
        {name: jwk[name] for name in ("crv", "kty", "x", "y")}, separators=(",", ":")
    )
    return b64url(hashlib.sha256(canonical.encode()).digest())
