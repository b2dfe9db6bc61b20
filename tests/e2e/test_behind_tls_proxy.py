"""Going to production as docs/operations.md writes it down: deploy/haproxy-tls.cfg (Debian's
HAProxy ending TLS) in front of a node told its public https address and to trust the proxy.
The test runs that very file on loopback, with a certificate made here, and a buyer pays
through it: the button's public-info, a checkout, the merchant marking it paid, the status;
plain http is sent to https and the dashboard's session cookie is Secure."""

from __future__ import annotations

import datetime as dt
import socket
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from support.haproxy import HAPROXY, require_haproxy
from support.nodes import NodeProcess
from support.waits import bound

CONFIG = Path(__file__).resolve().parents[2] / "deploy" / "haproxy-tls.cfg"
MAILING = {"name": "Shop Ltd", "lines": ["1 Main St"], "country": "GB"}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _certificate(where: Path) -> tuple[Path, Path]:
    """A self-signed certificate for localhost: (the proxy's PEM of chain and key, the CA)."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    chain = cert.public_bytes(serialization.Encoding.PEM)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    pem, ca = where / "pay.pem", where / "ca.pem"
    pem.write_bytes(chain + private)
    pem.chmod(0o600)
    ca.write_bytes(chain)
    return pem, ca


def _ours(config: str, https: int, http: int, pem: Path, node_port: int) -> str:
    """The file with the three lines marked "yours" set for loopback; each must be there."""
    swaps = {
        "bind :443 ssl crt /etc/haproxy/certs/pay.example.com.pem alpn http/1.1  # yours": (
            f"bind 127.0.0.1:{https} ssl crt {pem} alpn http/1.1"
        ),
        "bind :80  # yours": f"bind 127.0.0.1:{http}",
        "server edge 127.0.0.1:8080 check  # yours": f"server edge 127.0.0.1:{node_port} check",
    }
    for line, ours in swaps.items():
        assert line in config, f"deploy/haproxy-tls.cfg no longer has {line!r}"
        config = config.replace(line, ours)
    return config


def test_a_buyer_pays_through_the_tls_proxy(tmp_path):
    require_haproxy()
    https, http_port, node_port = _port(), _port(), _port()
    public = f"https://localhost:{https}"
    node = NodeProcess(
        tmp_path / "data",
        env={"EDGE_PUBLIC_URL": public, "EDGE_TRUSTED_PROXIES": "127.0.0.1"},
        args=("--port", str(node_port)),
    ).start()
    pem, ca = _certificate(tmp_path)
    config = tmp_path / "haproxy.cfg"
    config.write_text(_ours(CONFIG.read_text(), https, http_port, pem, node_port))
    checked = subprocess.run([HAPROXY, "-c", "-f", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    log = (tmp_path / "haproxy.log").open("wb")
    proxy = subprocess.Popen([HAPROXY, "-db", "-f", str(config)], stdout=log, stderr=log)
    trusted = ssl.create_default_context(cafile=str(ca))
    try:
        with httpx.Client(base_url=public, verify=trusted, timeout=bound(10)) as web:
            for _ in range(200):
                try:
                    if web.get("/healthz").status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                subprocess.run(["sleep", "0.05"], check=True)
            else:
                pytest.fail((tmp_path / "haproxy.log").read_text())
            admin = {"Authorization": f"Bearer {node.admin_token}"}
            pid = web.post(
                "/api/manage/projects",
                json={
                    "name": "Shop",
                    "successUrl": "https://shop.example/ok",
                    "cancelUrl": "https://shop.example/no",
                    "allowedOrigins": ["https://shop.example"],
                },
                headers=admin,
            ).json()["id"]
            product = {"name": "Book", "kind": "payment", "amount": 19.99, "currency": "EUR"}
            web.put(f"/api/manage/projects/{pid}/products/book", json=product, headers=admin)
            manual = {"enabled": True, "live": {"mailingAddress": MAILING}}
            web.put(f"/api/manage/projects/{pid}/providers/manual", json=manual, headers=admin)
            key = web.post(
                f"/api/manage/projects/{pid}/keys", json={"mode": "live"}, headers=admin
            ).json()["key"]

            # the buyer: the button's list of methods, with the public https address in it
            info = web.get(f"/api/projects/{pid}/public-info", params={"productId": "book"})
            assert info.status_code == 200
            (offered,) = info.json()["providers"]
            assert offered["icon"].startswith(f"{public}/static/icons/")
            checkout = web.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
            assert checkout.status_code == 201, checkout.text
            tx = checkout.json()["txId"]
            merchant = {"Authorization": f"Bearer {key}"}
            paid = web.post(f"/api/projects/{pid}/transactions/{tx}/mark-paid", headers=merchant)
            assert paid.status_code == 200, paid.text
            status = web.get(f"/status/{pid}/{tx}", headers=merchant).json()
            assert (status["status"], status["version"]) == ("succeeded", 2)

            # the dashboard's session cookie is Secure behind https
            signed = web.post(
                "/api/accounts", json={"email": "m@example.com", "password": "a long password"}
            )
            assert signed.status_code == 201
            session = web.post(
                "/api/session", json={"email": "m@example.com", "password": "a long password"}
            )
            assert "secure" in session.headers["set-cookie"].lower()
            assert "max-age=31536000" in session.headers["strict-transport-security"]

        # plain http is sent to https
        plain = httpx.get(f"http://127.0.0.1:{http_port}/dashboard/", follow_redirects=False)
        assert plain.status_code == 301 and plain.headers["location"].startswith("https://")
    finally:
        proxy.terminate()
        proxy.wait(timeout=bound(10))
        log.close()
        node.terminate()
