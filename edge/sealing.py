"""Provider secrets at rest: AES-256-GCM with the node's secret key.

The associated data binds a sealed value to its place (project, provider, mode, field), so a
sealed secret copied into another project's record does not open there.
"""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

_NONCE_LEN = 12


class SealError(Exception):
    pass


class Sealer:
    def __init__(self, key: bytes) -> None:
        self._aead = AESGCM(key)

    def seal(self, plaintext: str, place: str) -> bytes:
        nonce = os.urandom(_NONCE_LEN)
        return nonce + self._aead.encrypt(nonce, plaintext.encode(), place.encode())

    def open(self, sealed: bytes, place: str) -> str:
        try:
            return self._aead.decrypt(
                sealed[:_NONCE_LEN], sealed[_NONCE_LEN:], place.encode()
            ).decode()
        except (InvalidTag, ValueError) as exc:
            raise SealError(f"sealed value for {place} does not open with this key") from exc
