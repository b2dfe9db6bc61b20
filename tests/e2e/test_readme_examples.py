"""The README's examples, taken out of the README and run, so they cannot drift from the node:
the demo's command (its data apart from a real node's), the command-line setup against a
running node, the polling function against a paid checkout, the Standard Webhooks check against
a real notification, and in a real Chromium the page example "Without the button", the event
listeners and the Paddle card form hook (against a stand-in for Paddle.js)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from browser.harness import ShopSite, in_browser, require_browser, wait_until
from standardwebhooks.webhooks import WebhookVerificationError
from support.asgi import serve_asgi
from support.client import manual_shop
from support.merchant import Merchant, add_endpoint
from support.nodes import DemoProcess, NodeProcess
from support.paddle_shop import CLIENT_TOKEN, paddle_shop
from support.waits import bound

from edge.http import button
from edge.node import RunningNode

README = (Path(__file__).resolve().parents[2] / "README.md").read_text()


@pytest.fixture
def shop_site(node: RunningNode) -> Iterator[ShopSite]:
    """A merchant's page beside the node (as in tests/browser), for the README's page code."""
    require_browser()
    with ShopSite(node.url, button.sri_hash(node.ctx.signer)) as site:
        yield site


def example(after: str, language: str) -> str:
    """The first ``language`` code block after the line ``after``."""
    section = README[README.index(after) :]
    found = re.search(rf"^```{language}\n(.*?)^```", section, re.MULTILINE | re.DOTALL)
    assert found, f"no {language} block after {after!r}"
    return found.group(1)


def test_the_command_line_setup_runs_as_written(tmp_path):
    node = NodeProcess(tmp_path / "edge-data").start()  # `make run`'s data dir: ./edge-data
    try:
        bin_dir = tmp_path / ".venv" / "bin"
        bin_dir.mkdir(parents=True)
        (bin_dir / "edge").symlink_to(Path(sys.executable).parent / "edge")
        script = example("## Set up a shop with the command line", "sh")
        ran = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script + '\necho "P=$P"\n'],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=bound(120),
            env={
                **os.environ,
                "PATH": f"{bin_dir}:{os.environ['PATH']}",
                # the reader's own keys, as the README asks them exported
                "STRIPE_SECRET_KEY": "sk_test_51Hreadme0123456789abcdef",
                "STRIPE_PUBLISHABLE_KEY": "pk_test_51Hreadme0123456789abcdef",
                "STRIPE_WEBHOOK_SECRET": "whsec_readme0123456789abcdef",
            },
        )
        assert ran.returncode == 0, ran.stderr
        project = re.search(r"^P=(prj_\w+)$", ran.stdout, re.MULTILINE)
        assert project, ran.stdout
        pid = project.group(1)
        assert re.search(r"^cmk_test_\w+", ran.stdout, re.MULTILINE)  # the key, shown once
        assert f'project="{pid}"' in ran.stdout and 'mode="test"' in ran.stdout
        assert f'src="{node.url}/button.js"' in ran.stdout
        assert re.search(rf"^{pid}  free\s+Shop  manual, stripe$", ran.stdout, re.MULTILINE)
        info = httpx.get(
            f"{node.url}/api/projects/{pid}/public-info", params={"mode": "test"}
        ).json()
        assert {p["provider"] for p in info["providers"]} == {"stripe", "manual"}
    finally:
        node.terminate()


def test_the_polling_example_fulfils_every_paid_status_and_stops_at_the_others(tmp_path):
    node = NodeProcess(tmp_path / "data").start()
    try:
        admin = httpx.Client(
            base_url=node.url, headers={"Authorization": f"Bearer {node.admin_token}"}
        )
        with admin:
            pid = admin.post(
                "/api/manage/projects",
                json={
                    "name": "Shop",
                    "successUrl": "https://shop.example/ok",
                    "cancelUrl": "https://shop.example/no",
                    "allowedOrigins": ["https://shop.example"],
                },
            ).json()["id"]
            product = {"name": "Book", "kind": "payment", "amount": 5, "currency": "EUR"}
            admin.put(f"/api/manage/projects/{pid}/products/book", json=product)
            address = {"name": "Shop", "lines": ["1 Road"], "country": "GB"}
            admin.put(
                f"/api/manage/projects/{pid}/providers/manual",
                json={"enabled": True, "live": {"mailingAddress": address}},
            )
            key = admin.post(f"/api/manage/projects/{pid}/keys", json={"mode": "live"}).json()
        merchant = httpx.Client(
            base_url=f"{node.url}/api/projects/{pid}/transactions",
            headers={"Authorization": f"Bearer {key['key']}"},
        )

        def checkout() -> str:
            answer = httpx.post(f"{node.url}/api/checkout/manual/{pid}", json={"productId": "book"})
            return str(answer.json()["txId"])

        namespace: dict[str, Any] = {}
        exec(example("The polling pattern", "python"), namespace)  # noqa: S102 - our own README
        wait_for_payment = namespace["wait_for_payment"]
        with merchant:
            sold, left = checkout(), checkout()
            assert wait_for_payment(node.url, pid, sold, key["key"], timeout_s=0) == "timeout"
            merchant.post(f"/{sold}/mark-paid").raise_for_status()
            assert wait_for_payment(node.url, pid, sold, key["key"]) == "paid"
            # a sale partly refunded before the job looked is still one to fulfil
            merchant.post(f"/{sold}/refund", json={"amount": 1}).raise_for_status()
            assert merchant.get(f"/{sold}").json()["status"] == "partially_refunded"
            assert wait_for_payment(node.url, pid, sold, key["key"]) == "paid"
            merchant.post(f"/{left}/cancel").raise_for_status()
            assert wait_for_payment(node.url, pid, left, key["key"]) == "not paid"
            unknown = "tx_01JD0000000000000000000000"
            assert wait_for_payment(node.url, pid, unknown, key["key"]) == "unknown"
            with pytest.raises(httpx.HTTPStatusError):
                wait_for_payment(node.url, pid, sold, "cmk_live_" + "x" * 32)
    finally:
        node.terminate()


async def test_the_page_example_without_the_button_runs_against_the_demo(tmp_path):
    require_browser()
    demo = await trio.to_thread.run_sync(DemoProcess, tmp_path / "data")
    try:
        code = example("#### Without the button", "js")
        code = code.replace("'https://pay.example.com'", repr(demo.found["node"]))
        code = code.replace("'prj_...'", repr(demo.found["project"]))

        def page_runs(page: Any) -> Any:
            page.goto(demo.found["shop page"] + "/")  # an origin of the project
            return page.evaluate(f"async () => {{ {code}; return {{info, checkout, status}}; }}")

        ran = await in_browser(page_runs)
    finally:
        await trio.to_thread.run_sync(demo.stop)
    assert "manual" in [p["provider"] for p in ran["info"]["providers"]]
    assert (ran["checkout"]["type"], ran["checkout"]["isTest"]) == ("reference", True)
    assert ran["status"]["status"] == "pending" and ran["status"]["id"] == ran["checkout"]["txId"]


def test_the_demo_command_runs_as_written_with_its_data_apart(tmp_path):
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "edge").symlink_to(Path(sys.executable).parent / "edge")
    command = example("## Try it without any provider account", "sh").strip()
    assert command == ".venv/bin/edge serve --demo"
    # as written, on a free port; it runs in the directory a person runs it from
    demo = DemoProcess(None, command=["bash", "-c", f"exec {command} --port 0"], cwd=tmp_path)
    try:
        assert (tmp_path / "edge-demo-data" / "demo.json").exists()
        assert not (tmp_path / "edge-data").exists()  # a real node's data dir stays untouched
        info = httpx.get(f"{demo.found['node']}/api/projects/{demo.found['project']}/public-info")
        assert info.status_code == 200
    finally:
        assert demo.stop() == 0


async def test_the_standard_webhooks_check_verifies_a_real_notification(admin, http):
    server = Merchant()
    async with trio.open_nursery() as nursery:
        base = await nursery.start(serve_asgi, server)
        shop = await manual_shop(admin)
        endpoint = await add_endpoint(
            admin, shop.project_id, url=base.replace("127.0.0.1", "localhost") + "/hooks"
        )
        await http.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "book"})
        await server.wait_for(1)
        nursery.cancel_scope.cancel()
    headers, body = server.got[0]
    code = example("Verify with any Standard Webhooks", "python")
    namespace: dict[str, Any] = {
        "ENDPOINT_SECRET": endpoint["secret"],
        "request_body": body,
        "request_headers": headers,
    }
    exec(code, namespace)  # noqa: S102 - our own README
    assert namespace["event"]["type"] == "checkout.created"
    forged = {**namespace, "request_body": body.replace(b"checkout.created", b"payment.succeeded")}
    with pytest.raises(WebhookVerificationError):
        exec(code, forged)  # noqa: S102


async def test_the_event_listeners_run_as_written(admin, shop_site):
    shop = await manual_shop(admin)
    code = example("`txId` in `cm-checkout-started` is made by the button", "js")

    def page_runs(page: Any) -> dict[str, Any]:
        stand_ins = (
            "window.tracked = []; window.toasts = [];"
            "window.analytics = {track: (...args) => tracked.push(args)};"
            "window.myToast = (text) => toasts.push(text);"
        )
        seen = {}
        for product in ("book", "no-such-product"):
            page.goto(shop_site.page_url(project=shop.project_id, product=product))
            page.evaluate(f"() => {{ {stand_ins} {code} }}")
            page.get_by_role("button", name="Buy now").click()
            if product == "book":
                page.get_by_role("button", name=re.compile("Pay by mail")).click()
                wait_until(page, "tracked.length === 1")
            else:
                wait_until(page, "toasts.length === 1")
            seen[product] = page.evaluate("({tracked, toasts})")
        return seen

    seen = await in_browser(page_runs)
    [(name, tx_id)] = seen["book"]["tracked"]
    assert name == "checkout" and tx_id.startswith("tx_")
    assert seen["no-such-product"]["toasts"] == ["Payment could not start (product_not_found)"]


async def test_the_paddle_card_form_hook_runs_as_written(admin, shop_site, paddle):
    shop = await paddle_shop(admin, paddle)
    html = example("#### Hosted card forms (Paddle)", "html")
    hook = re.findall(r"<script>\n(.*?)</script>", html, re.DOTALL)[0]

    def page_runs(page: Any) -> dict[str, Any]:
        page.goto(shop_site.page_url(project=shop.project_id, product="ten", mode="test"))
        page.evaluate(
            """() => { window.calls = [];
              window.Paddle = {
                Environment: {set: (env) => calls.push(['environment', env])},
                Initialize: (options) => calls.push(['initialize', options]),
                Checkout: {open: (options) => calls.push(['open', options])},
              }; }"""
        )
        page.evaluate(f"() => {{ {hook} }}")
        page.get_by_role("button", name="Buy now").click()
        page.get_by_role("button", name=re.compile("Card")).click()
        wait_until(page, "calls.length === 3")
        return {"calls": page.evaluate("calls")}

    calls = (await in_browser(page_runs))["calls"]
    assert calls[0] == ["environment", "sandbox"]
    assert calls[1] == ["initialize", {"token": CLIENT_TOKEN}]
    assert calls[2][0] == "open" and calls[2][1]["transactionId"].startswith("txn_")
