"""A method whose provider fails on its side steps aside (CONTRACT 4.7, issue 37): Stripe's
simulator answers 500 to everything, checkouts fail, and the public info lists Stripe
``"available": false`` (signed anew, its ETag moved) while pay by mail stays; when Stripe answers
again, a probe (the cheap call that tries credentials) brings it back. A refusal of the shop's
own credentials is a set-up error, never "unavailable"."""

from __future__ import annotations

import httpx
from support.client import post_checkout
from support.stripe_shop import stripe_shop
from support.waits import until

from edge.domain.provider_health import FAILING_AFTER, PROBE_S


async def _offered(http: httpx.AsyncClient, project_id: str) -> dict[str, bool]:
    answer = await http.get(
        f"/api/projects/{project_id}/public-info", params={"mode": "test", "productId": "book"}
    )
    assert answer.status_code == 200 and answer.headers["cm-signature"], answer.text
    return {entry["provider"]: entry["available"] for entry in answer.json()["providers"]}


async def test_a_provider_failing_on_its_side_steps_aside_and_comes_back(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    assert (await _offered(http, shop.project_id))["stripe"] is True
    sim.fail_next_requests = 10_000  # Stripe down: every call answered 500
    for _ in range(FAILING_AFTER):
        failed = await post_checkout(http, "stripe", shop, "book")
        assert failed.status_code == 502 and failed.json()["error"]["retryable"] is True
    offered = await _offered(http, shop.project_id)
    assert offered["stripe"] is False
    assert all(available for name, available in offered.items() if name != "stripe")
    sim.fail_next_requests = 0  # Stripe back: the next probe (due PROBE_S after) brings it back

    async def back() -> bool:
        return (await _offered(http, shop.project_id))["stripe"] is True

    await until(back, what="Stripe offered again after a probe", timeout_s=PROBE_S + 20, every=0.5)
    made = await post_checkout(http, "stripe", shop, "book")
    assert made.status_code == 201, made.text
    metrics = (await admin.http.get("/metrics")).text
    assert 'edge_methods_stepped_aside_total{mode="test",provider="stripe"} 1.0' in metrics
    assert 'edge_methods_back_total{mode="test",provider="stripe"} 1.0' in metrics


async def test_credentials_refused_are_a_set_up_error_not_an_outage(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    sim.refused_keys.add("sk_test_shop0123456789abcdefghij")  # the key rolled at Stripe
    for _ in range(FAILING_AFTER + 1):
        refused = await post_checkout(http, "stripe", shop, "book")
        assert refused.status_code == 502 and refused.json()["error"]["retryable"] is False
    assert (await _offered(http, shop.project_id))["stripe"] is True
