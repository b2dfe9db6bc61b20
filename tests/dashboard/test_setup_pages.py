"""The dashboard tells a merchant a broken set-up before a buyer meets it: a provider's refusal
beside the field it names, what trying the credentials found, the provider's reason for a
refused checkout on the overview and the transaction, a "Finish setting up" checklist on a new
project, and a warning while no provider can reach the node's webhook address."""

from __future__ import annotations

import html
import re

from dashboard.test_pages import new_project, signed_in
from support.client import bearer, post_checkout
from support.paddle_shop import paddle_shop

from edge.sim.stripe.server import StripeSimulator

KEY = "sk_test_dash0123456789abcdefghij"


async def _save_stripe(client, csrf, pid, sim: StripeSimulator, key: str = KEY):  # type: ignore[no-untyped-def]
    return await client.post(
        f"/dashboard/p/{pid}/methods/stripe",
        data={
            "csrf": csrf,
            "mode": "test",
            "secretKey": key,
            "publishableKey": "pk_test_dash0123456789abcdefghij",
            "webhookSecret": "whsec_dash0123456789",
            "apiBase": sim.url,
        },
    )


async def test_a_refused_key_is_told_beside_its_field(node, sim):
    async with signed_in(node.url, "setup@example.com") as (client, csrf):
        pid = await new_project(client, csrf)
        sim.refused_keys.add(KEY)
        answer = await _save_stripe(client, csrf, pid, sim)
        assert answer.status_code == 400
        page = html.unescape(answer.text)
        field = re.search(r'<input id="stripe-test-secretKey"[^>]*>', page)
        assert field and 'aria-invalid="true"' in field.group(0)
        said = re.search(
            r'<p class="error field-error" id="stripe-test-secretKey-error">([^<]*)', page
        )
        assert said and "Invalid API Key provided" in said.group(1)
        assert KEY not in page
        sim.refused_keys.clear()
        assert (await _save_stripe(client, csrf, pid, sim)).status_code == 303
        methods = html.unescape((await client.get(f"/dashboard/p/{pid}/methods")).text)
        assert "Tried with Stripe when saved: accepted." in methods
        # the node listens on loopback with no EDGE_PUBLIC_URL: no provider can reach it
        assert "Stripe cannot reach this address" in methods and "EDGE_PUBLIC_URL" in methods


async def test_the_overview_lists_what_is_left_and_a_refused_checkout(node, sim, admin, http):
    async with signed_in(node.url, "overview@example.com") as (client, csrf):
        pid = await new_project(client, csrf)
        overview = html.unescape((await client.get(f"/dashboard/p/{pid}/")).text)
        assert "Finish setting up" in overview and "Add a product with its price." in overview
        assert "every payment, endpoint and webhook is in order" not in overview
        await client.post(
            f"/dashboard/p/{pid}/products",
            data={"csrf": csrf, "productId": "book", "name": "Book", "kind": "payment",
                  "amount": "19.99", "currency": "EUR"},
        )  # fmt: skip
        assert (await _save_stripe(client, csrf, pid, sim)).status_code == 303
        key = (await admin.ok("POST", f"/api/manage/projects/{pid}/keys", {"mode": "test"}, 201))[
            "key"
        ]
        sim.refused_keys.add(KEY)
        shop = type("Shop", (), {"project_id": pid, "test_key": key})
        assert (await post_checkout(http, "stripe", shop, "book")).status_code == 502
        overview = html.unescape((await client.get(f"/dashboard/p/{pid}/")).text)
        assert "Test: Stripe refused a checkout with these credentials" in overview
        assert "Invalid API Key provided" in overview
        listed = await http.get(f"/api/projects/{pid}/transactions", headers=bearer(key))
        tx_id = listed.json()["items"][0]["id"]
        page = html.unescape((await client.get(f"/dashboard/p/{pid}/transactions/{tx_id}")).text)
        assert re.search(r'id="tx-reason">Why: provider_error: Stripe answered 401', page)


async def test_the_button_snippet_carries_the_card_form_hook_when_paddle_is_on(node, admin, paddle):
    async with signed_in(node.url, "paddle@example.com") as (client, csrf):
        pid = await new_project(client, csrf)
        page = html.unescape((await client.get(f"/dashboard/p/{pid}/button")).text)
        assert "Add a" in page  # no product yet
        await paddle_shop(admin, paddle, project_id=pid)
        page = html.unescape((await client.get(f"/dashboard/p/{pid}/button?mode=test")).text)
        pasted = re.search(r'<pre id="snippet">(.*?)</pre>', page, re.DOTALL)
        assert pasted and "Paddle.Checkout.open({transactionId: token})" in pasted.group(1)
        assert "cdn.paddle.com/paddle/v2/paddle.js" in pasted.group(1)
        # nothing is offered in live mode yet: said before a buyer sees an empty window
        page = html.unescape((await client.get(f"/dashboard/p/{pid}/button?mode=live")).text)
        assert "No payment method is offered in live mode yet" in page
        pasted = re.search(r'<pre id="snippet">(.*?)</pre>', page, re.DOTALL)
        assert pasted and "paddle.js" not in pasted.group(1)
