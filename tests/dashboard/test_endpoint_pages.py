"""The Notifications page: an endpoint is added in test mode unless live is chosen, its signing
secret is shown once by the page after the POST (a reload adds no second endpoint), the secret
is rolled after a confirmation and the new one shown once, and a delivered event is sent again
with one click."""

from __future__ import annotations

import html
import re

import trio
from dashboard.test_pages import new_project, signed_in
from standardwebhooks.webhooks import Webhook
from support.asgi import serve_asgi
from support.client import MAILING_ADDRESS
from support.merchant import Merchant


def _secret(page: str) -> str | None:
    found = re.search(r'<code id="new-secret">(whsec_[^<]+)</code>', page)
    return found.group(1) if found else None


async def test_add_roll_and_send_again(node):
    merchant = Merchant()
    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_asgi, merchant)
        url = base.replace("127.0.0.1", "localhost") + "/hooks"
        async with signed_in(node.url, "hooks@example.com") as (client, csrf):
            pid = await new_project(client, csrf)
            api = {"Cm-Csrf": csrf}
            endpoints = f"/dashboard/p/{pid}/endpoints"
            added = await client.post(endpoints, data={"csrf": csrf, "url": url})
            assert added.status_code == 303
            page = html.unescape((await client.get(added.headers["location"])).text)
            first = _secret(page)
            assert first and "Endpoint added" in page
            again = html.unescape((await client.get(endpoints)).text)
            assert _secret(again) is None  # shown once
            (endpoint,) = (await client.get(f"/api/manage/projects/{pid}/endpoints")).json()[
                "items"
            ]
            assert endpoint["mode"] == "test"  # as keys: test unless live is chosen

            roll = f"{endpoints}/{endpoint['endpointId']}/roll"
            asked = await client.post(roll, data={"csrf": csrf})
            assert asked.status_code == 200 and "Roll this endpoint" in asked.text
            rolled = await client.post(roll, data={"csrf": csrf, "confirmed": "yes"})
            page = html.unescape((await client.get(rolled.headers["location"])).text)
            second = _secret(page)
            assert second and second != first and "New signing secret" in page

            # a test event: posted now, signed with the endpoint's secret, what it answered
            tested = await client.post(
                f"{endpoints}/{endpoint['endpointId']}/test", data={"csrf": csrf}
            )
            page = html.unescape((await client.get(tested.headers["location"])).text)
            assert "Test event sent" in page and "your server answered HTTP 200" in page
            await merchant.wait_for(1)
            headers, body = merchant.got[0]
            sample = Webhook(second).verify(body, headers)
            assert (sample["type"], sample["metadata"]) == (
                "checkout.created",
                {"edgeTest": "true"},
            )
            feed = await client.get(f"/api/manage/projects/{pid}")  # nothing stored of it
            assert feed.status_code == 200
            merchant.got.clear()

            # a test checkout is told to the endpoint, then sent again from the page
            manual = {"enabled": True, "test": {"mailingAddress": MAILING_ADDRESS}}
            product = {"name": "Ten", "kind": "payment", "amount": 10, "currency": "EUR"}
            await client.put(f"/api/manage/projects/{pid}/products/ten", json=product, headers=api)
            await client.put(
                f"/api/manage/projects/{pid}/providers/manual", json=manual, headers=api
            )
            made = await client.post(
                f"/api/checkout/manual/{pid}", json={"productId": "ten", "mode": "test"}
            )
            assert made.status_code == 201, made.text
            await merchant.wait_for(1)
            event_id = merchant.events()[0]["id"]
            for _ in range(100):  # the attempt's record follows the delivery
                page = html.unescape((await client.get(endpoints)).text)
                if "Send again" in page:
                    break
                await trio.sleep(0.05)
            assert f'aria-label="Send again: {event_id}"' in page
            sent = await client.post(
                f"{endpoints}/{endpoint['endpointId']}/resend",
                data={"csrf": csrf, "eventId": event_id},
            )
            assert sent.status_code == 303
            await merchant.wait_for(2)
            assert [e["id"] for e in merchant.events()] == [event_id, event_id]
        nursery.cancel_scope.cancel()
