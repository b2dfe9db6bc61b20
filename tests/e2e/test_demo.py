"""`edge serve --demo`: simulators and a demo shop wired to a test project, no provider account."""

from __future__ import annotations

import re

import httpx
from support.nodes import DemoProcess
from support.returns import read_return_page
from support.waits import bound


def test_demo_shop_buys_with_simulated_card_and_reaches_succeeded(tmp_path):
    process = DemoProcess(tmp_path / "data")
    demo = process.found
    try:
        node, project, key = demo["node"], demo["project"], demo["test key"]
        page = httpx.get(demo["shop page"] + "/")
        assert page.status_code == 200
        assert f'project="{project}"' in page.text and "<cm-button" in page.text
        assert re.search(
            r'<script src="[^"]+/button\.js" integrity="sha384-[^"]+" crossorigin="anonymous">',
            page.text,
        )
        info = httpx.get(
            f"{node}/api/projects/{project}/public-info",
            params={"productId": "book", "mode": "test"},
        ).json()
        assert [p["provider"] for p in info["providers"]] == [
            "stripe",
            "paypal",
            "paddle",
            "btcpay",
            "manual",
        ]
        # a subscription is offered only where it can work: no crypto, no pay by mail
        monthly = httpx.get(
            f"{node}/api/projects/{project}/public-info",
            params={"productId": "pro-monthly", "mode": "test"},
        ).json()
        assert [p["provider"] for p in monthly["providers"]] == ["stripe", "paypal", "paddle"]
        # what the button does after the buyer picks "Card"
        checkout = httpx.post(
            f"{node}/api/checkout/stripe/{project}",
            json={"productId": "book", "mode": "test", "metadata": {"customerRef": "demo-buyer"}},
        ).json()
        paid = httpx.post(checkout["url"] + "/pay", follow_redirects=False)
        assert paid.headers["location"].startswith(demo["shop page"] + "/thanks")
        assert httpx.get(paid.headers["location"]).status_code == 200
        status = httpx.get(f"{node}/status/{project}/{checkout['txId']}").json()
        assert status["status"] == "succeeded"
        events = httpx.get(
            f"{node}/api/projects/{project}/events", headers={"Authorization": f"Bearer {key}"}
        ).json()
        assert any(
            e["type"] == "payment.succeeded" and e["customerRef"] == "demo-buyer"
            for e in events["items"]
        )
        # and what it does after the buyer picks PayPal and approves in the popup
        wallet = httpx.post(
            f"{node}/api/checkout/paypal/{project}", json={"productId": "book", "mode": "test"}
        ).json()
        assert wallet["type"] == "approval"
        page = httpx.get(wallet["url"])
        assert page.status_code == 200 and "Approve" in page.text
        order = wallet["url"].rsplit("token=", 1)[1]
        approved = httpx.post(
            wallet["url"].split("?")[0],
            data={"token": order, "action": "approve"},
            follow_redirects=False,
        )
        back = read_return_page(httpx.get(approved.headers["location"]))
        assert back.succeeded and back.next.startswith(demo["shop page"] + "/thanks")
        status = httpx.get(
            f"{node}/status/{project}/{wallet['txId']}", params={"wait": 10, "version": 1}
        ).json()
        assert status["status"] == "succeeded"
        # and after the buyer picks Crypto: BTCPay's invoice page, paid and confirmed
        crypto = httpx.post(
            f"{node}/api/checkout/btcpay/{project}", json={"productId": "book", "mode": "test"}
        ).json()
        assert (crypto["kind"], crypto["type"]) == ("crypto", "redirect")
        httpx.post(crypto["url"], data={"action": "pay"})
        confirmed = httpx.post(crypto["url"], data={"action": "confirm"}, follow_redirects=False)
        assert confirmed.headers["location"].startswith(demo["shop page"] + "/thanks")
        assert _settles(f"{node}/status/{project}/{crypto['txId']}") == "succeeded"
    finally:
        assert process.stop() == 0

    # a second start keeps the project and rewires it to the new simulator
    process = DemoProcess(tmp_path / "data")
    again = process.found
    try:
        assert again["project"] == demo["project"] and again["test key"] != demo["test key"]
        old_key = httpx.get(
            f"{again['node']}/api/projects/{project}/transactions",
            headers={"Authorization": f"Bearer {demo['test key']}"},
        )
        assert old_key.status_code == 401  # the previous demo key was revoked
        checkout = httpx.post(
            f"{again['node']}/api/checkout/stripe/{project}",
            json={"productId": "book", "mode": "test"},
        ).json()
        httpx.post(checkout["url"] + "/pay", follow_redirects=False)
        assert (
            httpx.get(f"{again['node']}/status/{project}/{checkout['txId']}").json()["status"]
            == "succeeded"
        )
    finally:
        process.stop()


def _settles(status_url: str) -> str:
    """The status once it stops moving (long polls while it changes, for at most a minute)."""
    status = httpx.get(status_url).json()
    for _ in range(6):
        if status["status"] not in ("pending", "processing"):
            break
        status = httpx.get(
            status_url, params={"wait": 10, "version": status["version"]}, timeout=bound(15)
        ).json()
    return str(status["status"])
