"""The overview says when a method stepped aside (issue 37, part 4): a provider failing on its
own side (Stripe's simulator answering 500) is listed ``"available": false`` in the public info,
and the overview, a client of it, says so in words, apart from set-up errors; a key Stripe
refuses is a set-up error there, never "failing on Stripe's side"."""

from __future__ import annotations

import html

from support.client import Admin, post_checkout
from support.stripe_shop import SECRET_KEY, stripe_shop

from edge.dashboard.words import stepped_aside_in_words
from edge.domain.provider_health import FAILING_AFTER

ASIDE = (
    "Stripe (test) is failing on Stripe's side: buyers are offered your other methods until it"
    " answers again."
)


def test_the_words_live_first_and_when_nothing_else_is_offered():
    seen = {
        "test": [
            {"provider": "stripe", "available": False},
            {"provider": "manual", "available": True},
        ],
        "live": [{"provider": "paypal", "available": False}],
    }
    said = stepped_aside_in_words(seen)
    assert [(s.provider, s.mode) for s in said] == [("paypal", "live"), ("stripe", "test")]
    assert said[0].words == (
        "PayPal (live) is failing on PayPal's side: buyers have no other method to pay with"
        " until it answers again."
    )
    assert said[1].words == ASIDE
    assert stepped_aside_in_words({"test": [{"provider": "stripe", "available": True}]}) == []


async def _pages(node, sim, fail: bool) -> tuple[str, str]:  # type: ignore[no-untyped-def]
    """The overview and the payment methods page after three Stripe checkouts failed."""
    merchant = await Admin.account(node.url, "aside@example.com")
    shop = await stripe_shop(merchant, sim)  # pay by mail too, in both modes
    if fail:
        sim.fail_next_requests = 10_000  # Stripe down: every call answered 500
    else:
        sim.refused_keys.add(SECRET_KEY)  # the key rolled at Stripe: the merchant's to fix
    for _ in range(FAILING_AFTER):
        assert (await post_checkout(merchant.http, "stripe", shop, "book")).status_code == 502
    pages = []
    for path in ("", "methods"):
        answer = await merchant.http.get(f"/dashboard/p/{shop.project_id}/{path}")
        assert answer.status_code == 200
        pages.append(html.unescape(answer.text))
    await merchant.aclose()
    return pages[0], pages[1]


async def test_a_method_failing_on_its_providers_side_is_said_on_the_overview(node, sim):
    overview, methods = await _pages(node, sim, fail=True)
    assert f'<p class="warning stepped-aside">{ASIDE}' in overview
    assert "Nothing: every payment" not in overview
    # and in what buyers see, on the payment methods page
    assert "failing on Stripe's side: not offered until it answers again" in methods


async def test_refused_credentials_are_a_set_up_error_not_a_method_stepped_aside(node, sim):
    overview, methods = await _pages(node, sim, fail=False)
    assert "stepped-aside" not in overview and "failing on Stripe's side" not in overview
    assert '<p class="error">Test: ' in overview  # the set-up problem, with its own words
    assert "failing on Stripe's side" not in methods
