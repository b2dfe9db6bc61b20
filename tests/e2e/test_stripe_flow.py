"""Card payments end to end: node + Stripe simulator speaking Stripe's wire format."""

from __future__ import annotations

import json
import sys

import trio
from support.client import bearer, post_checkout
from support.stripe_shop import stripe_shop


async def _checkout(http, shop, product="book", customer_ref="user-42"):
    response = await http.post(
        f"/api/checkout/stripe/{shop.project_id}",
        json={"productId": product, "metadata": {"customerRef": customer_ref}},
        headers=bearer(shop.test_key),
    )
    assert response.status_code == 201, response.text
    return response.json()


def _session_id(checkout) -> str:
    return checkout["url"].rsplit("/", 1)[-1]


async def _tx(http, shop, tx_id):
    return (
        await http.get(
            f"/api/projects/{shop.project_id}/transactions/{tx_id}", headers=bearer(shop.test_key)
        )
    ).json()


async def test_the_hosted_page_pays_the_session_the_node_made_and_returns_to_the_shop(
    admin, http, sim
):
    """What only Stripe's checkout shows: the hosted page of the session the node made, which
    carries the transaction id and customerRef, and the redirect back to the success URL (the
    rest of checkout -> pay -> succeeded is tests/contract, for every provider)."""
    shop = await stripe_shop(admin, sim)
    checkout = await _checkout(http, shop)
    assert checkout["url"].startswith(sim.url + "/c/pay/cs_test_")
    assert checkout["isTest"] is True and checkout["expiresAt"]
    session = sim.session(_session_id(checkout))
    assert session["client_reference_id"] == checkout["txId"]
    assert session["metadata"] == {"txId": checkout["txId"], "customerRef": "user-42"}
    # the buyer clicks Pay on the hosted page and is sent back to success_url
    page = await http.get(checkout["url"])
    assert page.status_code == 200 and b"Pay" in page.content
    paid = await http.post(f"{checkout['url']}/pay", follow_redirects=False)
    assert paid.status_code == 303 and paid.headers["location"].startswith(
        "https://shop.example/thanks"
    )
    status = (await http.get(f"/status/{shop.project_id}/{checkout['txId']}")).json()
    assert status["status"] == "succeeded" and status["version"] == 2


async def test_declined_attempt_leaves_pending_then_pay_and_refund(admin, http, sim):
    """A declined card is ``payment_intent.payment_failed`` on the session's payment intent,
    which names no session: Stripe ties the intent to the session only in the session's own
    events (``payment_intent`` of checkout.session.completed). Until the payment links it, the
    node keeps the attempt unmatched (metadata is never enough, CONTRACT 4.3), with the id it
    claims; the payment then folds it into the transaction's history."""
    shop = await stripe_shop(admin, sim)
    checkout = await _checkout(http, shop)
    await sim.decline(_session_id(checkout))
    assert (await http.get(f"/status/{shop.project_id}/{checkout['txId']}")).json()[
        "status"
    ] == "pending"
    feed = (
        await http.get(f"/api/projects/{shop.project_id}/events", headers=bearer(shop.test_key))
    ).json()["items"]
    (sent,) = [e for e, _ in sim.delivered if e["type"] == "payment_intent.payment_failed"]
    (declined,) = [e for e in feed if e["providerEventId"] == sent["id"]]
    assert (declined["type"], declined["claimedTxId"]) == ("unmatched", checkout["txId"])
    await sim.complete(_session_id(checkout))
    await sim.refund(_session_id(checkout), amount_minor=500)
    assert (await http.get(f"/status/{shop.project_id}/{checkout['txId']}")).json()[
        "status"
    ] == "partially_refunded"
    await sim.refund(_session_id(checkout))
    status = (await http.get(f"/status/{shop.project_id}/{checkout['txId']}")).json()
    assert status["status"] == "refunded"


async def test_a_declined_attempt_joins_the_history_when_the_payment_links_its_intent(
    admin, http, sim
):
    """CONTRACT 2: a declined attempt inside an open checkout "is stored as an event and leaves
    the status pending", and an unmatched event is matched once a later event links the provider
    id it names (here the session's ``payment_intent``)."""
    shop = await stripe_shop(admin, sim)
    checkout = await _checkout(http, shop)
    await sim.decline(_session_id(checkout))
    (sent,) = [e for e, _ in sim.delivered if e["type"] == "payment_intent.payment_failed"]
    await sim.complete(_session_id(checkout))
    events = (await _tx(http, shop, checkout["txId"]))["events"]
    assert [e["type"] for e in events if e["providerEventId"] == sent["id"]] == [
        "payment.attempt_failed"
    ]


async def test_let_expire_moves_to_expired(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    checkout = await _checkout(http, shop)
    expired = await http.post(f"{checkout['url']}/expire", follow_redirects=False)
    assert expired.headers["location"].startswith("https://shop.example/cart")
    assert (await http.get(f"/status/{shop.project_id}/{checkout['txId']}")).json()[
        "status"
    ] == "expired"


async def test_subscription_past_due_and_portal(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    checkout = await _checkout(http, shop, product="pro-monthly")
    await sim.complete(_session_id(checkout))
    tx_status = (await http.get(f"/status/{shop.project_id}/{checkout['txId']}")).json()
    assert tx_status["status"] == "succeeded" and tx_status["kind"] == "subscription"
    sub_id = tx_status["subscriptionId"]
    assert sub_id.startswith("sub_")
    sub = (await http.get(f"/status/{shop.project_id}/{sub_id}")).json()
    assert (sub["status"], sub["interval"], sub["kind"]) == ("active", "month", "subscription")
    assert sub["currentPeriodEnd"] and sub["amount"] == 9
    stripe_sub = sim.session(_session_id(checkout))["subscription"]
    await sim.fail_invoice(stripe_sub)
    sub = (await http.get(f"/status/{shop.project_id}/{sub_id}")).json()
    assert sub["status"] == "past_due" and sub["version"] == 2
    portal = await http.post(
        f"/api/subscriptions/{shop.project_id}/{sub_id}/portal-url",
        json={"returnUrl": "https://shop.example/account"},
        headers=bearer(shop.test_key),
    )
    assert portal.status_code == 200, portal.text
    assert (
        portal.json()["url"].startswith(sim.url + "/p/session/")
        and portal.json()["provider"] == "stripe"
    )
    anonymous = await http.post(f"/api/subscriptions/{shop.project_id}/{sub_id}/portal-url")
    assert anonymous.status_code == 401
    bad_return = await http.post(
        f"/api/subscriptions/{shop.project_id}/{sub_id}/portal-url",
        json={"returnUrl": "https://evil.example/"},
        headers=bearer(shop.test_key),
    )
    assert bad_return.json()["error"]["code"] == "url_not_allowed"


async def test_manual_has_no_portal(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    response = await http.post(
        f"/api/subscriptions/{shop.project_id}/sub_01M7YS2H2CXEBWK64PPXXP5WHD/portal-url",
        headers=bearer(shop.test_key),
    )
    assert response.status_code == 404


async def test_out_of_order_events_never_move_backwards(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    checkout = await _checkout(http, shop)
    await sim.complete(_session_id(checkout))
    # a late "payment is processing" (async payment) arrives after success
    late = json.loads(
        json.dumps(next(e for e, _ in sim.delivered if e["type"] == "checkout.session.completed"))
    )
    late["id"] = "evt_late_processing"
    late["data"]["object"]["payment_status"] = "unpaid"
    assert await sim.send("sk_test_shop0123456789abcdefghij", late) == [200]
    status = (await http.get(f"/status/{shop.project_id}/{checkout['txId']}")).json()
    # where in-order delivery (processing, then succeeded, stamped the same second) ends
    assert (status["status"], status["version"]) == ("succeeded", 3)
    types = [e["type"] for e in (await _tx(http, shop, checkout["txId"]))["events"]]
    assert "payment.processing" in types and "payment.succeeded" in types


async def test_provider_failure_is_502_and_the_transaction_canceled(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    sim.fail_next_requests = 1
    response = await post_checkout(
        http, "stripe", shop, "book", txId="tx_01M7YS2H2CXEBWK64PPXXP5WHD"
    )
    assert response.status_code == 502
    error = response.json()["error"]
    assert (error["code"], error["retryable"]) == ("provider_error", True)
    assert "sk_test" not in response.text
    status = (await http.get(f"/status/{shop.project_id}/tx_01M7YS2H2CXEBWK64PPXXP5WHD")).json()
    assert status["status"] == "canceled"


async def test_unmatched_events_are_stored_and_acknowledged(admin, http, sim):
    shop = await stripe_shop(admin, sim)
    event = {
        "id": "evt_nobody",
        "object": "event",
        "type": "charge.refunded",
        "created": 1,
        "livemode": False,
        "data": {
            "object": {
                "id": "ch_nobody",
                "object": "charge",
                "amount": 100,
                "amount_refunded": 100,
                "currency": "eur",
                "metadata": {},
                "payment_intent": "pi_nobody",
            }
        },
    }
    assert await sim.send("sk_test_shop0123456789abcdefghij", event) == [200]
    feed = (
        await http.get(f"/api/projects/{shop.project_id}/events", headers=bearer(shop.test_key))
    ).json()
    unmatched = [e for e in feed["items"] if e["providerEventId"] == "evt_nobody"]
    assert (
        len(unmatched) == 1 and unmatched[0]["type"] == "unmatched" and unmatched[0]["txId"] is None
    )


async def test_edge_trigger_after_a_simulated_payment_names_the_same_objects(admin, http, sim):
    """``edge trigger`` builds its events on the transaction's own Stripe objects: the session
    the node created and the payment intent and charge Stripe tied to it, which the simulator
    names the same way (edge.sim.stripe.objects.derived_id). A dispute carries no metadata in
    Stripe: it matches by its payment intent alone."""
    shop = await stripe_shop(admin, sim)
    checkout = await _checkout(http, shop)
    await sim.complete(_session_id(checkout))
    for event_type, status in [
        ("payment.partially_refunded", "partially_refunded"),
        ("payment.disputed", "disputed"),
    ]:
        sent = await admin.ok(
            "POST",
            "/api/manage/trigger",
            {"provider": "stripe", "type": event_type, "txId": checkout["txId"]},
        )
        assert sent["status"] == 200 and sent["answer"]["duplicate"] is False
        now = (await http.get(f"/status/{shop.project_id}/{checkout['txId']}")).json()
        assert now["status"] == status
    feed = (
        await http.get(f"/api/projects/{shop.project_id}/events", headers=bearer(shop.test_key))
    ).json()["items"]
    assert [e for e in feed if e["type"] == "unmatched"] == []


async def test_edge_trigger_sends_a_signed_event_through_the_pipeline(node, admin, http, sim):
    shop = await stripe_shop(admin, sim)
    checkout = await _checkout(http, shop)
    result = await trio.run_process(
        [
            sys.executable,
            "-m",
            "edge",
            "trigger",
            "stripe",
            "payment.succeeded",
            "--tx",
            checkout["txId"],
            "--data",
            str(node.ctx.settings.data_dir),
            "--json",
        ],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    sent = json.loads(result.stdout)
    assert sent["status"] == 200 and sent["answer"]["duplicate"] is False
    assert (await http.get(f"/status/{shop.project_id}/{checkout['txId']}")).json()[
        "status"
    ] == "succeeded"
    # the refund names the payment intent that the triggered payment linked: it matches
    refunded = await admin.ok(
        "POST",
        "/api/manage/trigger",
        {"provider": "stripe", "type": "payment.refunded", "txId": checkout["txId"]},
    )
    assert refunded["status"] == 200 and refunded["providerType"] == "charge.refunded"
    status = (await http.get(f"/status/{shop.project_id}/{checkout['txId']}")).json()
    assert status["status"] == "refunded"
    unknown = await trio.run_process(
        [
            sys.executable,
            "-m",
            "edge",
            "trigger",
            "stripe",
            "payment.teleported",
            "--tx",
            checkout["txId"],
            "--data",
            str(node.ctx.settings.data_dir),
        ],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert unknown.returncode == 1 and b"sends no simulated payment.teleported" in unknown.stderr
