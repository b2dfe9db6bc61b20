"""An account signed in over the API, as a merchant's browser would be (two-factor tests)."""

from __future__ import annotations

import httpx

from support.waits import bound

PASSWORD = "a long enough password"


async def signed_in(url: str, email: str) -> tuple[httpx.AsyncClient, dict[str, str]]:
    """A client holding the session's cookie, and the CSRF header its changes carry."""
    client = httpx.AsyncClient(base_url=url, timeout=bound(30.0))
    await client.post("/api/accounts", json={"email": email, "password": PASSWORD})
    session = await client.post("/api/session", json={"email": email, "password": PASSWORD})
    assert session.status_code == 200
    return client, {"Cm-Csrf": session.json()["csrfToken"]}
