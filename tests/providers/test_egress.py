"""The node's provider client (CONTRACT 4.6): names are resolved when the node connects and a
private answer is refused (DNS rebinding), redirects are not followed, proxies are ignored."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
import trio
from support.asgi import Answer, serve_asgi

from edge.providers.egress import provider_client, resolves_private


async def _answer(scope: dict[str, Any], body: bytes) -> Answer:
    if scope["path"] == "/moved":
        return 302, b"ok", [(b"location", b"http://169.254.169.254/latest/meta-data")]
    return 200, b"ok"


@pytest.fixture
async def upstream():  # type: ignore[no-untyped-def]
    async with trio.open_nursery() as nursery:
        yield await nursery.start(serve_asgi, _answer)
        nursery.cancel_scope.cancel()


def _resolving_to(address: str):  # type: ignore[no-untyped-def]
    async def resolve(host: str, port: int, **_: Any) -> list[tuple[Any, ...]]:
        return [(2, 1, 6, "", (address, port))]

    return resolve


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "::ffff:127.0.0.1",
        "64:ff9b::7f00:1",  # NAT64
        "64:ff9b::a9fe:a9fe",  # NAT64 for the cloud's metadata service
        "2002:7f00:1::1",  # 6to4
        "::7f00:1",  # IPv4-compatible
        "fec0::1",  # site-local
    ],
)
async def test_a_name_that_resolves_to_a_private_address_is_refused_when_connecting(
    upstream, address
):
    port = upstream.rsplit(":", 1)[1]
    async with provider_client(frozenset(), resolve=_resolving_to(address)) as http:
        with pytest.raises(httpx.ConnectError) as refused:
            await http.get(f"https://api.rebinding.example:{port}/")
    assert "does not call this host: it resolves to a private address" in str(refused.value)


async def test_a_literal_private_address_is_refused_without_resolving(upstream):
    async def never(*_: Any, **__: Any) -> list[tuple[Any, ...]]:
        raise AssertionError("resolved")

    async with provider_client(frozenset(), resolve=never) as http:
        for url in (
            "https://127.0.0.1:1/",
            "https://[::1]:1/",
            "https://localhost:1/",
            "https://[64:ff9b::7f00:1]:1/",
            "https://[2002:7f00:1::1]:1/",
        ):
            with pytest.raises(httpx.ConnectError):
                await http.get(url)


async def test_an_allowed_simulator_is_called_and_its_redirect_not_followed(upstream):
    async with provider_client(frozenset({"127.0.0.1"})) as http:
        assert (await http.get(upstream + "/")).text == "ok"
        moved = await http.get(upstream + "/moved")
    assert moved.status_code == 302  # answered as it came: the node never follows it


async def test_proxy_settings_of_the_environment_are_ignored(upstream, monkeypatch):
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    async with provider_client(frozenset({"127.0.0.1"})) as http:
        assert (await http.get(upstream + "/")).text == "ok"


async def test_an_address_whose_name_resolves_to_loopback_is_caught_when_saved():
    loopback, public = _resolving_to("127.0.0.1"), _resolving_to("93.184.215.14")
    assert await resolves_private("https://hooks.rebinding.example/x", frozenset(), loopback)
    assert not await resolves_private("https://hooks.merchant.example/x", frozenset(), public)
    # the operator's own allowances and addresses refused by the rules already are not asked
    assert not await resolves_private("http://localhost:3000/x", frozenset({"localhost"}), loopback)

    async def unresolvable(*_: Any, **__: Any) -> list[tuple[Any, ...]]:
        raise OSError("no such name")

    assert not await resolves_private("https://not-yet.example/x", frozenset(), unresolvable)
