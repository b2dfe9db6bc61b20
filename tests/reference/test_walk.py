"""Every answer conforms to the API reference: a walk through every documented operation of a
real node (a Stripe checkout paid by its webhook, pay by mail marked paid, refunded and
canceled, every management call, accounts and sessions, operations), each answer checked
against the document: its status is one the operation lists, and a JSON body validates against
that answer's schema.
The walk must visit every operation, so a new route cannot go unchecked."""

from __future__ import annotations

import time
from typing import Any

import httpx
import jsonschema
from support.client import MAILING_ADDRESS, bearer
from support.stripe_events import event_body, signed, stripe_credentials, stripe_object

from edge.domain import totp
from edge.http.openapi.document import document

DOC = document()
_OPS = {
    op["operationId"]: (method.upper(), path, op)
    for path, item in DOC["paths"].items()
    for method, op in item.items()
    if isinstance(op, dict) and "operationId" in op
}


class Walk:
    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http, self.visited = http, set[str]()

    async def call(self, operation_id: str, path: str, **request: Any) -> httpx.Response:
        method, template, op = _OPS[operation_id]
        answer = await self.http.request(method, path, **request)
        where = f"{method} {template} answered {answer.status_code}"
        documented = op["responses"].get(str(answer.status_code))
        assert documented is not None, f"{where}, which it does not document: {answer.text}"
        media = answer.headers.get("content-type", "").split(";")[0]
        schema = documented.get("content", {}).get(media, {}).get("schema")
        if schema is not None and media == "application/json":
            root = {**schema, "components": DOC["components"]}
            problems = [
                f"{list(e.absolute_path)}: {e.message}"
                for e in jsonschema.Draft202012Validator(root).iter_errors(answer.json())
            ]
            assert problems == [], (where, problems, answer.json())
        self.visited.add(operation_id)
        return answer


async def test_every_operation_answers_as_the_document_says(node, admin, sim):
    async with httpx.AsyncClient(base_url=node.url, timeout=30.0) as http:
        walk = Walk(http)
        operator = bearer(node.ctx.settings.admin_token)
        for op, path in [
            ("healthz", "/healthz"),
            ("readyz", "/readyz"),
            ("openapi", "/openapi.json"),
            ("docs", "/docs"),
            ("docsStyle", "/static/docs.css"),
            ("getSigningKeys", "/.well-known/cm-signing-keys"),
            ("getIcon", "/static/icons/card.svg"),
        ]:
            await walk.call(op, path)
        await walk.call("metrics", "/metrics", headers=operator)
        moved = await walk.call("getButtonScript", "/button.js")
        await walk.call("getButtonFile", moved.headers["location"])

        # accounts and a session
        account = {"email": "walker@example.com", "password": "a long enough password"}
        await walk.call("createAccount", "/api/accounts", json=account)
        session = await walk.call("createSession", "/api/session", json=account)
        await walk.call("listProjects", "/api/manage/projects")  # as the account
        csrf = {"Cm-Csrf": session.json()["csrfToken"]}
        await walk.call("showAccount", "/api/account")
        secret = (
            await walk.call(
                "startTwoFactor",
                "/api/account/two-factor",
                json={"password": account["password"]},
                headers=csrf,
            )
        ).json()
        now = totp.step_at(time.time())
        confirm = {"code": totp.code_at(secret["secret"], now)}
        on = await walk.call(
            "confirmTwoFactor", "/api/account/two-factor/confirm", json=confirm, headers=csrf
        )
        await walk.call("deleteSession", "/api/session", headers=csrf)
        http.cookies.clear()
        due = (await walk.call("createSession", "/api/session", json=account)).json()
        second = {"challenge": due["challenge"], "code": totp.code_at(secret["secret"], now + 1)}
        session = await walk.call("completeLogin", "/api/session/two-factor", json=second)
        csrf = {"Cm-Csrf": session.json()["csrfToken"]}
        off = {"code": on.json()["recoveryCodes"][0], "password": account["password"]}
        await walk.call(
            "disableTwoFactor", "/api/account/two-factor/disable", json=off, headers=csrf
        )
        changed = {"password": account["password"], "newPassword": "a changed password 1"}
        session = await walk.call(
            "changePassword", "/api/account/password", json=changed, headers=csrf
        )
        csrf = {"Cm-Csrf": session.json()["csrfToken"]}
        await walk.call("deleteSession", "/api/session", headers=csrf)
        http.cookies.clear()

        # a password reset: by e-mail (this node sends none), and by the operator's link
        ask = {"email": account["email"]}
        await walk.call("requestPasswordReset", "/api/accounts/password-reset", json=ask)
        found = await walk.call(
            "listAccounts", f"/api/manage/accounts?email={account['email']}", headers=operator
        )
        account_path = f"/api/manage/accounts/{found.json()['items'][0]['accountId']}"
        link = await walk.call("makeResetLink", f"{account_path}/reset-link", headers=operator)
        reset = {"token": link.json()["url"].split("token=")[1], "password": "another password 2"}
        await walk.call(
            "completePasswordReset", "/api/accounts/password-reset/complete", json=reset
        )
        await walk.call("removeTwoFactor", f"{account_path}/two-factor", headers=operator)

        # the operator sets up a shop
        base = {
            "name": "Walk",
            "successUrl": "https://shop.example/ok",
            "cancelUrl": "https://shop.example/no",
            "allowedOrigins": ["https://shop.example"],
        }
        made = await walk.call("createProject", "/api/manage/projects", json=base, headers=operator)
        pid = made.json()["id"]
        project = f"/api/manage/projects/{pid}"
        await walk.call("listProjects", "/api/manage/projects", headers=operator)
        await walk.call("getProject", project, headers=operator)
        await walk.call("patchProject", project, json={"name": "Walked"}, headers=operator)
        book = {"name": "Book", "kind": "payment", "amount": 10, "currency": "EUR"}
        await walk.call("putProduct", f"{project}/products/book", json=book, headers=operator)
        await walk.call("putProduct", f"{project}/products/gone", json=book, headers=operator)
        await walk.call("deleteProduct", f"{project}/products/gone", headers=operator)
        stripe = stripe_credentials(sim.url)
        stripe["webhookSecret"] = sim.register_endpoint(stripe["secretKey"], "http://127.0.0.1:9")
        for provider, settings in [
            ("manual", {"enabled": True, "test": {"mailingAddress": MAILING_ADDRESS}}),
            ("stripe", {"enabled": True, "test": stripe}),
            ("paypal", {"enabled": False, "label": "PayPal", "order": 3}),
            ("paddle", {"enabled": False, "test": {"apiBase": "https://sandbox-api.paddle.com"}}),
            ("btcpay", {"enabled": False, "live": {"storeId": "s1", "apiKey": None}}),
        ]:
            await walk.call(
                f"putProvider{provider.capitalize()}",
                f"{project}/providers/{provider}",
                json=settings,
                headers=operator,
            )
        await walk.call(
            "putProvider", f"{project}/providers/bitpay", json={"enabled": True}, headers=operator
        )
        key = (
            await walk.call("createKey", f"{project}/keys", json={"mode": "test"}, headers=operator)
        ).json()["key"]
        spare = await walk.call(
            "createKey", f"{project}/keys", json={"mode": "live"}, headers=operator
        )
        await walk.call("listKeys", f"{project}/keys", headers=operator)
        await walk.call("revokeKey", f"{project}/keys/{spare.json()['keyId']}", headers=operator)
        hook = {"url": "http://localhost:9/hooks", "mode": "test"}
        endpoint = (
            await walk.call("createEndpoint", f"{project}/endpoints", json=hook, headers=operator)
        ).json()["endpointId"]
        await walk.call("listEndpoints", f"{project}/endpoints", headers=operator)
        await walk.call(
            "patchEndpoint",
            f"{project}/endpoints/{endpoint}",
            json={"enabled": False},
            headers=operator,
        )
        await walk.call(
            "listEndpointAttempts", f"{project}/endpoints/{endpoint}/attempts", headers=operator
        )

        # buyers
        mine = bearer(key)
        await walk.call("getPublicInfo", f"/api/projects/{pid}/public-info?mode=test")
        card = (
            await walk.call(
                "startCheckout",
                f"/api/checkout/stripe/{pid}",
                json={"productId": "book", "mode": "test"},
            )
        ).json()
        mails = [
            (
                await walk.call(
                    "startCheckout",
                    f"/api/checkout/manual/{pid}",
                    json={"productId": "book", "mode": "test"},
                )
            ).json()
            for _ in range(2)
        ]
        await walk.call("getStatus", f"/status/{pid}/{card['txId']}")
        await walk.call("buyerReturned", f"/return/stripe/{pid}/{card['txId']}")
        await walk.call("buyerCanceled", f"/return/stripe/{pid}/{card['txId']}/cancel")
        await walk.call("getReturnFile", "/static/return/return.js")
        await walk.call("paymentLink", f"/pay/{pid}/book?mode=test&quantity=2&customerRef=u-1")
        await walk.call("paymentLinkDone", f"/pay/{pid}/done/{card['txId']}")
        await walk.call("paymentLinkCanceled", f"/pay/{pid}/canceled/{card['txId']}")
        await walk.call("getPayFile", "/static/pay/pay.js")

        # Stripe's webhook: one forged, one genuine
        paid = stripe_object(
            "checkout_session",
            id=card["url"].rsplit("/", 1)[1],
            client_reference_id=card["txId"],
            payment_status="paid",
            status="complete",
            metadata={"txId": card["txId"]},
        )
        body = event_body("evt_walk_1", "checkout.session.completed", paid)
        webhook = f"/webhook/stripe/{pid}"
        await walk.call("receiveWebhook", webhook, content=body, headers=signed(body, "whsec_no"))
        await walk.call(
            "receiveWebhook", webhook, content=body, headers=signed(body, stripe["webhookSecret"])
        )
        await walk.call(
            "trigger",
            "/api/manage/trigger",
            json={"provider": "stripe", "type": "payment.refunded", "txId": card["txId"]},
            headers=operator,
        )

        # the merchant's server
        await walk.call("listTransactions", f"/api/projects/{pid}/transactions", headers=mine)
        await walk.call(
            "getTransaction", f"/api/projects/{pid}/transactions/{card['txId']}", headers=mine
        )
        await walk.call("listEvents", f"/api/projects/{pid}/events", headers=mine)
        await walk.call(
            "markPaid",
            f"/api/projects/{pid}/transactions/{mails[0]['txId']}/mark-paid",
            json={"note": "cheque"},
            headers=mine,
        )
        await walk.call(
            "refundTransaction",
            f"/api/projects/{pid}/transactions/{mails[0]['txId']}/refund",
            json={"amount": 1, "reason": "a scuffed corner"},
            headers=mine,
        )
        await walk.call(
            "cancelTransaction",
            f"/api/projects/{pid}/transactions/{mails[1]['txId']}/cancel",
            headers=mine,
        )
        await walk.call(
            "syncTransaction",
            f"/api/projects/{pid}/transactions/{card['txId']}/sync",
            headers=mine,
        )
        await walk.call(
            "syncTransaction",
            f"/api/projects/{pid}/transactions/{mails[0]['txId']}/sync",
            headers=mine,
        )  # pay by mail: nothing to ask
        await walk.call(
            "reconcileProject",
            f"/api/projects/{pid}/reconcile",
            json={"since": "2026-11-01T00:00:00.000Z"},
            headers=mine,
        )
        await walk.call(
            "resolveTransaction",
            f"/api/projects/{pid}/transactions/{card['txId']}/resolve",
            json={"note": "looked"},
            headers=mine,
        )  # nothing to resolve: 409
        await walk.call(
            "createPortalUrl",
            f"/api/subscriptions/{pid}/sub_01JD0000000000000000000000/portal-url",
            json={},
            headers=mine,
        )
        await walk.call(
            "replayEndpoint",
            f"{project}/endpoints/{endpoint}/replay",
            json={},
            headers=operator,
        )
        await walk.call("testEndpoint", f"{project}/endpoints/{endpoint}/test", headers=operator)
        await walk.call("deleteEndpoint", f"{project}/endpoints/{endpoint}", headers=operator)
        await walk.call("getUsage", f"{project}/usage", headers=operator)
        await walk.call("listDeliveries", f"{project}/deliveries", headers=operator)
        await walk.call("getStats", "/api/manage/stats", headers=operator)
        accounts = await walk.call("listAccounts", "/api/manage/accounts", headers=operator)
        walker = accounts.json()["items"][0]["accountId"]
        await walk.call(
            "patchAccount",
            f"/api/manage/accounts/{walker}",
            json={"operator": True},
            headers=operator,
        )
        await walk.call("listLogs", "/api/manage/logs?status=2xx,404", headers=operator)

    assert walk.visited == set(_OPS), f"not walked: {sorted(set(_OPS) - walk.visited)}"
