"""The public-info signer on its own: key file, header format, and that a verifier holding only
the published JWKS accepts exactly the signed bytes."""

from __future__ import annotations

import base64
import stat

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from edge.config import ConfigError
from edge.signing import SIGNING_KEY_FILE, Signer


def _unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verify_with_jwks(jwks: dict, header: str, body: bytes) -> None:
    """What a verifier outside the node does: raises InvalidSignature on any mismatch."""
    fields = dict(part.strip().split("=", 1) for part in header.split(","))
    [jwk] = [k for k in jwks["keys"] if k["kid"] == fields["keyid"]]
    public = ec.EllipticCurvePublicNumbers(
        int.from_bytes(_unb64url(jwk["x"]), "big"),
        int.from_bytes(_unb64url(jwk["y"]), "big"),
        ec.SECP256R1(),
    ).public_key()
    raw = _unb64url(fields["sig"])
    assert len(raw) == 64  # IEEE P1363 r || s, the form WebCrypto verifies
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    public.verify(der, body, ec.ECDSA(hashes.SHA256()))


def test_key_is_made_once_with_mode_0600_and_kept(tmp_path):
    first = Signer.load(tmp_path)
    mode = stat.S_IMODE((tmp_path / SIGNING_KEY_FILE).stat().st_mode)
    assert mode == 0o600
    again = Signer.load(tmp_path)
    assert again.kid == first.kid and again.jwks() == first.jwks()
    other = tmp_path / "other-node"
    other.mkdir()
    assert Signer.load(other).kid != first.kid


def test_signature_verifies_over_the_exact_bytes_only(tmp_path):
    signer = Signer.load(tmp_path)
    body = b'{"projectId":"prj_x","providers":[]}'
    header = signer.sign(body)
    assert header.startswith(f"keyid={signer.kid}, sig=")
    verify_with_jwks(signer.jwks(), header, body)
    with pytest.raises(InvalidSignature):
        verify_with_jwks(signer.jwks(), header, body.replace(b"[]", b"[ ]"))


def test_one_body_one_signature(tmp_path):
    signer = Signer.load(tmp_path)
    assert signer.sign(b"a") == signer.sign(b"a") == signer.sign_once('"tag"', b"a")
    assert signer.sign(b"a") != signer.sign(b"b")


def test_jwks_names_the_key_by_its_thumbprint(tmp_path):
    [key] = Signer.load(tmp_path).jwks()["keys"]
    assert key["kty"] == "EC" and key["crv"] == "P-256" and key["alg"] == "ES256"
    # RFC 7638: base64url SHA-256, 43 chars, and never a secret field
    assert len(key["kid"]) == 43 and "d" not in key


def test_a_key_given_in_the_environment_is_used_and_no_file_is_made(tmp_path):
    pem = Signer.load(tmp_path).pem()
    other = tmp_path / "other-node"
    other.mkdir()
    given = Signer.load(other, pem)
    assert given.kid == Signer.load(tmp_path).kid and not (other / SIGNING_KEY_FILE).exists()
    # an env file holds one line a variable: the PEM's newlines written as \n
    assert Signer.load(other, pem.strip().replace("\n", "\\n")).kid == given.kid


def test_a_bad_key_in_the_environment_is_named_never_shown(tmp_path):
    p384 = ec.generate_private_key(ec.SECP384R1())
    wrong_curve = p384.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    for bad in ("not a key", wrong_curve):
        with pytest.raises(ConfigError) as refused:
            Signer.load(tmp_path, bad)
        said = str(refused.value)
        assert said.startswith("EDGE_SIGNING_KEY does not hold a P-256 private key"), said
        assert bad.splitlines()[1 if "\n" in bad else 0] not in said
    assert not (tmp_path / SIGNING_KEY_FILE).exists()
