"""PayPal end to end through a real node and the PayPal simulator (CONTRACT 4.2, 4.3): the
approval address, the capture the node owes on the buyer's return or the approval webhook
(whichever is first, once), a declined funding source, refunds, disputes, subscriptions."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
import trio
from support.client import ORIGIN, bearer, manual_shop, post_checkout
from support.pages import press
from support.paypal_shop import CLIENT_ID, CLIENT_SECRET, PayPalShop, paypal_shop
from support.returns import read_return_page
from support.waits import bound, follow_ups_settled

from edge.sim.paypal import PayPalSimulator


@pytest.fixture
async def buyer() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=bound(30.0)) as client:
        yield client


async def checkout(
    http: httpx.AsyncClient, shop: PayPalShop, product: str = "book"
) -> dict[str, Any]:
    answer = await http.post(
        f"/api/checkout/paypal/{shop.project_id}",
        json={"productId": product, "metadata": {"customerRef": "user-42"}},
        headers=bearer(shop.test_key),
    )
    assert answer.status_code == 201, answer.text
    return dict(answer.json())


async def status(
    http: httpx.AsyncClient, shop: PayPalShop, item: str, version: int = 0
) -> dict[str, Any]:
    params = {"wait": 10, "version": version} if version else {}
    answer = await http.get(
        f"/status/{shop.project_id}/{item}", params=params, headers=bearer(shop.test_key)
    )
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


async def history(http: httpx.AsyncClient, shop: PayPalShop, tx_id: str) -> list[str]:
    answer = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
    )
    return [e["type"] for e in answer.json()["events"]]


async def until(
    http: httpx.AsyncClient, shop: PayPalShop, item: str, wanted: str
) -> dict[str, Any]:
    with trio.fail_after(bound(15)):
        seen = await status(http, shop, item)
        while seen["status"] != wanted:
            seen = await status(http, shop, item, seen["version"])
    return seen


async def api_token(sim: PayPalSimulator) -> str:
    async with httpx.AsyncClient() as client:
        answer = await client.post(
            f"{sim.url}/v1/oauth2/token",
            auth=(CLIENT_ID, CLIENT_SECRET),
            data={"grant_type": "client_credentials"},
        )
    return str(answer.json()["access_token"])


async def sim_api(sim: PayPalSimulator, method: str, path: str, body: Any = None) -> dict[str, Any]:
    token = await api_token(sim)
    async with httpx.AsyncClient() as client:
        answer = await client.request(
            method, f"{sim.url}{path}", json=body, headers={"Authorization": f"Bearer {token}"}
        )
    assert answer.is_success, answer.text
    return dict(answer.json()) if answer.content else {}


def order_of(answer: dict[str, Any]) -> str:
    return parse_qs(urlsplit(answer["url"]).query)["token"][0]


async def test_an_approved_order_is_captured_once_and_the_buyer_returns_to_the_shop(
    admin, http, node, paypal, buyer
):
    shop = await paypal_shop(admin, paypal)
    answer = await checkout(http, shop)
    tx_id, order_id = answer["txId"], order_of(answer)
    assert (answer["provider"], answer["kind"], answer["type"]) == ("paypal", "wallet", "approval")
    assert answer["url"].startswith(f"{paypal.url}/checkoutnow?token=")
    expires = time.mktime(time.strptime(answer["expiresAt"][:19], "%Y-%m-%dT%H:%M:%S"))
    assert abs(expires - time.mktime(time.gmtime()) - 3 * 3600) < 120

    back = await press(buyer, answer["url"], "Approve")
    assert back.startswith(f"{node.url}/return/paypal/{shop.project_id}/{tx_id}?")
    await until(http, shop, tx_id, "succeeded")

    page = read_return_page(await buyer.get(back))
    assert (page.outcome, page.succeeded, page.next) == ("paid", True, f"{ORIGIN}/thanks")
    assert page.main == page.next  # from the popup, the main window goes to the success page
    await follow_ups_settled(node, tx_id)  # the return owes nothing more: the order is captured
    assert paypal.capture_count(order_id) == 1
    events = await history(http, shop, tx_id)
    assert events.count("payment.succeeded") == 1 and events.count("payment.processing") == 1
    feed = await http.get(f"/api/projects/{shop.project_id}/events", headers=bearer(shop.test_key))
    mine = [e for e in feed.json()["items"] if e["txId"] == tx_id]
    assert {e["customerRef"] for e in mine} == {"user-42"}


async def test_the_buyer_returning_before_the_webhook_is_captured_and_the_webhook_then_counts_once(
    admin, http, node, paypal, buyer
):
    shop = await paypal_shop(admin, paypal)
    answer = await checkout(http, shop)
    tx_id, order_id = answer["txId"], order_of(answer)
    paypal.deliveries_paused = True
    back = await press(buyer, answer["url"], "Approve")
    # the return waits for the capture it owed: the buyer is told it is paid
    page = read_return_page(await buyer.get(back))
    assert (page.outcome, page.next) == ("paid", f"{ORIGIN}/thanks")
    await until(http, shop, tx_id, "succeeded")

    paypal.deliveries_paused = False
    await paypal.release_held()  # the approval, then the capture's own webhook
    # the approval owes a capture again: PayPal-Request-Id makes it one
    await follow_ups_settled(node, tx_id)
    assert paypal.capture_count(order_id) == 1
    events = await history(http, shop, tx_id)
    assert events.count("payment.succeeded") == 1, events
    final = await status(http, shop, tx_id)
    assert (final["status"], final["version"]) == ("succeeded", 2)


async def test_a_declined_funding_source_is_an_attempt_and_the_checkout_stays_open(
    admin, http, paypal, buyer
):
    shop = await paypal_shop(admin, paypal)
    answer = await checkout(http, shop)
    tx_id = answer["txId"]
    back = await press(buyer, answer["url"], "Decline")
    page = read_return_page(await buyer.get(back))
    # never a "thank you" for a payment that will not come: the page says it was declined
    assert (page.outcome, page.succeeded, page.next) == ("declined", False, f"{ORIGIN}/cart")
    assert "Payment declined" in page.text and "not been charged" in page.text
    assert page.main == urlsplit(back).path + "?shown=1&lang=en"
    assert "payment.attempt_failed" in await history(http, shop, tx_id)
    assert (await status(http, shop, tx_id))["status"] == "pending"
    assert paypal.capture_count(order_of(answer)) == 0
    again = read_return_page(await http.get(f"{urlsplit(back).path}?shown=1"))
    assert (again.outcome, again.next) == ("declined", f"{ORIGIN}/cart")


async def test_cancel_on_paypal_cancels_the_checkout_and_says_so(admin, http, node, paypal, buyer):
    shop = await paypal_shop(admin, paypal)
    answer = await checkout(http, shop)
    tx_id = answer["txId"]
    back = await press(buyer, answer["url"], "Cancel")
    cancel = f"{node.url}/return/paypal/{shop.project_id}/{tx_id}/cancel"
    assert back == f"{cancel}?token={order_of(answer)}"
    page = read_return_page(await buyer.get(back))
    assert (page.outcome, page.succeeded, page.next) == ("canceled", False, f"{ORIGIN}/cart")
    assert "Payment canceled" in page.text
    done = await status(http, shop, tx_id)
    assert done["status"] == "canceled"
    tx = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
    )
    assert tx.json()["reason"] == "canceled by the buyer at PayPal"


async def test_the_cancel_address_without_the_order_cancels_nothing(admin, http, paypal, buyer):
    # a transaction id alone (it may be on a page) never cancels someone's checkout
    shop = await paypal_shop(admin, paypal)
    answer = await checkout(http, shop)
    path = f"/return/paypal/{shop.project_id}/{answer['txId']}/cancel"
    for query in ("", "?token=5O190127TN364715T"):
        page = read_return_page(await buyer.get(f"{http.base_url}{path}{query}"))
        assert page.outcome == "canceled"  # what the buyer asked for is said ...
    assert (await status(http, shop, answer["txId"]))["status"] == "pending"  # ... not done
    approved = await press(buyer, answer["url"], "Approve")
    assert read_return_page(await buyer.get(approved)).outcome == "paid"


async def test_an_ended_checkout_says_it_has_ended(admin, http, paypal, buyer):
    shop = await paypal_shop(admin, paypal)
    answer = await checkout(http, shop)
    canceled = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{answer['txId']}/cancel",
        headers=bearer(shop.test_key),
    )
    assert canceled.status_code == 200
    back = f"{http.base_url}/return/paypal/{shop.project_id}/{answer['txId']}?token=x"
    page = read_return_page(await buyer.get(back))
    assert (page.outcome, page.succeeded, page.next) == ("canceled", False, f"{ORIGIN}/cart")
    assert paypal.capture_count(order_of(answer)) == 0


async def test_a_subscription_is_approved_renewed_fails_and_is_cancelled(
    admin, http, node, paypal, buyer
):
    shop = await paypal_shop(admin, paypal)
    answer = await checkout(http, shop, "pro-monthly")
    tx_id, sub_ref = answer["txId"], answer["url"]
    assert "/webapps/billing/subscriptions?ba_token=" in sub_ref
    back = await press(buyer, answer["url"], "Approve")
    assert back.startswith(f"{node.url}/return/paypal/{shop.project_id}/{tx_id}?")
    page = read_return_page(await buyer.get(back))
    assert page.succeeded and page.next == f"{ORIGIN}/thanks"
    paid = await until(http, shop, tx_id, "succeeded")
    sub_id = paid["subscriptionId"]
    assert sub_id and (await status(http, shop, sub_id))["status"] == "active"

    subscription_ref = paypal.subscription_of(tx_id)
    await paypal.renew(subscription_ref)
    await paypal.fail_payment(subscription_ref)
    await until(http, shop, sub_id, "past_due")
    await sim_api(
        paypal, "POST", f"/v1/billing/subscriptions/{subscription_ref}/cancel", {"reason": "test"}
    )
    await until(http, shop, sub_id, "canceled")
    assert (await status(http, shop, tx_id))["status"] == "succeeded"
    events = await history(http, shop, tx_id)
    assert events.count("subscription.payment_succeeded") == 2, events

    # the plan made for this price is remembered: a second buyer subscribes to the same one
    second = await checkout(http, shop, "pro-monthly")
    first_plan = (await sim_api(paypal, "GET", f"/v1/billing/subscriptions/{subscription_ref}"))[
        "plan_id"
    ]
    second_ref = paypal.subscription_of(second["txId"])
    second_plan = (await sim_api(paypal, "GET", f"/v1/billing/subscriptions/{second_ref}"))[
        "plan_id"
    ]
    assert first_plan == second_plan

    portal = await http.post(
        f"/api/subscriptions/{shop.project_id}/{sub_id}/portal-url", headers=bearer(shop.test_key)
    )
    assert (portal.status_code, portal.json()["error"]["code"]) == (409, "portal_unsupported")


async def _told(http: httpx.AsyncClient, shop: PayPalShop, tx_id: str) -> list[str]:
    """The transaction's events told to the merchant (a repeat of a change is not)."""
    answer = await http.get(
        f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
    )
    return [e["type"] for e in answer.json()["events"] if not e.get("duplicateOf")]


async def _ask(http: httpx.AsyncClient, shop: PayPalShop, tx_id: str) -> dict[str, Any]:
    synced = await http.post(
        f"/api/projects/{shop.project_id}/transactions/{tx_id}/sync",
        headers=bearer(shop.test_key),
    )
    assert synced.status_code == 200, synced.text
    return dict(synced.json())


@pytest.mark.parametrize("asked", ["before the webhooks", "after them"])
async def test_a_subscriptions_activation_is_told_once_whether_asked_or_not(
    admin, http, paypal, buyer, asked
):
    """PayPal tells a subscription ACTIVATED before the sale that starts it; asking PayPal
    reads the same status. One change: told once, whichever the node heard first."""
    shop = await paypal_shop(admin, paypal)
    answer = await checkout(http, shop, "pro-monthly")
    tx_id = answer["txId"]
    if asked == "before the webhooks":
        paypal.webhook_faults.hold()
    await press(buyer, answer["url"], "Approve")
    if asked == "before the webhooks":
        await _ask(http, shop, tx_id)
        paypal.webhook_faults.clear()
        await paypal.release_held()
    await until(http, shop, tx_id, "succeeded")
    if asked == "after them":
        assert (await _ask(http, shop, tx_id))["sync"]["learned"] == 0
    told = await _told(http, shop, tx_id)
    assert told.count("subscription.updated") == 1, told


async def test_an_expired_token_is_fetched_again_once(admin, http, paypal):
    shop = await paypal_shop(admin, paypal)
    await checkout(http, shop)
    calls = paypal.token_calls
    paypal.expire_tokens()
    await checkout(http, shop)
    assert paypal.token_calls == calls + 1


async def test_an_amount_paypal_cannot_charge_is_refused_and_nothing_stays_pending(
    admin, http, paypal
):
    """PayPal does not take BHD (developer.paypal.com/docs/api/reference/currency-codes/): the
    product is refused when saved with PayPal enabled (400 provider_limit); one saved before
    PayPal was enabled is refused at checkout before anything is stored (409)."""
    shop = await paypal_shop(admin, paypal)
    body = {"name": "Dinar", "kind": "payment", "amount": 10.5, "currency": "BHD"}
    saved = await admin.http.put(
        f"/api/manage/projects/{shop.project_id}/products/dinar", json=body
    )
    assert (saved.status_code, saved.json()["error"]["code"]) == (400, "provider_limit")
    assert saved.json()["error"]["field"] == "currency"

    earlier = await manual_shop(admin, {"amount": 10.5, "currency": "BHD"})
    await paypal_shop(admin, paypal, project_id=earlier.project_id)
    answer = await post_checkout(
        http, "paypal", earlier, "book", txId="tx_01JD0000000000000000000BHD"
    )
    assert (answer.status_code, answer.json()["error"]["code"]) == (409, "amount_not_supported")
    missing = await http.get(f"/status/{earlier.project_id}/tx_01JD0000000000000000000BHD")
    assert missing.status_code == 404


async def test_the_return_address_of_another_transaction_or_provider_is_not_found(
    admin, http, paypal
):
    shop = await paypal_shop(admin, paypal)
    answer = await checkout(http, shop)
    for path in [
        f"/return/paypal/{shop.project_id}/tx_01JD0000000000000000000000",
        f"/return/stripe/{shop.project_id}/{answer['txId']}",
        f"/return/paypal/{shop.project_id}/not-a-tx",
    ]:
        missing = await http.get(path, follow_redirects=False)
        assert (missing.status_code, missing.json()["error"]["code"]) == (404, "not_found"), path


async def _edge(*args: str) -> trio.CompletedProcess[bytes]:
    return await trio.run_process(
        [sys.executable, "-m", "edge", *args], capture_stdout=True, capture_stderr=True, check=False
    )


async def test_edge_trigger_paypal_sends_a_simulator_signed_event_through_the_pipeline(
    admin, http, node, paypal
):
    shop = await paypal_shop(admin, paypal)
    answer = await checkout(http, shop)
    data = str(node.ctx.settings.data_dir)
    sent = await _edge(
        "trigger", "paypal", "payment.succeeded", "--tx", answer["txId"], "--data", data, "--json"
    )
    assert sent.returncode == 0, sent.stderr
    result = json.loads(sent.stdout)
    assert (result["status"], result["providerType"]) == (200, "PAYMENT.CAPTURE.COMPLETED")
    assert (await status(http, shop, answer["txId"]))["status"] == "succeeded"
    refunded = await _edge(
        "trigger", "paypal", "payment.partially_refunded", "--tx", answer["txId"], "--data", data
    )
    assert refunded.returncode == 0, refunded.stderr
    assert (await status(http, shop, answer["txId"]))["status"] == "partially_refunded"


async def test_edge_provider_set_takes_cert_hosts_as_a_list(admin, node, paypal):
    shop = await paypal_shop(admin, paypal)
    data = str(node.ctx.settings.data_dir)
    hosts = "certHosts=api.sandbox.paypal.com, api-m.sandbox.paypal.com"
    done = await _edge(
        "provider", "set", shop.project_id, "paypal", "--mode", "test",
        "--set", hosts, "--data", data, "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    stored = json.loads(done.stdout)["test"]["certHosts"]
    assert stored == ["api.sandbox.paypal.com", "api-m.sandbox.paypal.com"]
    refused = await _edge(
        "provider", "set", shop.project_id, "paypal", "--mode", "test",
        "--set", "certHosts=169.254.169.254", "--data", data,
    )  # fmt: skip
    assert refused.returncode == 1 and b"url_not_allowed" in refused.stderr + refused.stdout
