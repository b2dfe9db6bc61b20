"""The signed-in account's own page: its two-factor login, turned on (a secret for the app,
confirmed with a code, then the recovery codes shown once) and off. Every change is one call of
the account API (``edge.http.two_factor``)."""

from __future__ import annotations

from typing import Any

from quart import Response, request

from edge.dashboard import qr
from edge.dashboard.api import Api, ApiRefused
from edge.dashboard.site import SignedIn, api, blueprint, form_of, go, page, require
from edge.http import sessions
from edge.http.accounts import secure_cookies

HTML = "text/html; charset=utf-8"


async def _account_page(who: SignedIn, client: Api, status: int = 200, **shown: Any) -> Response:
    account = await client.get("/api/account")
    context = {
        "enrolment": None,
        "recovery_codes": None,
        "problem": None,
        "password_changed": False,
        **shown,
    }
    enrolment = context["enrolment"]
    if enrolment and str(enrolment.get("otpauthUri", "")).startswith("otpauth://"):
        context["qr"] = qr.svg(enrolment["otpauthUri"])
    html = await page("account.html", who, account=account, **context)
    return Response(html, status=status, content_type=HTML)


@blueprint.get("/account")
async def account() -> Response:
    who = await require()
    async with api(who) as client:
        changed = request.args.get("password") == "changed"
        return await _account_page(who, client, password_changed=changed)


@blueprint.post("/account/two-factor")
async def start_two_factor() -> Response:
    who = await require()
    form = await form_of(who)
    async with api(who) as client:
        try:
            enrolment = await client.send(
                "POST", "/api/account/two-factor", {"password": form.get("password", "")}
            )
        except ApiRefused as refused:
            return await _account_page(who, client, refused.status, problem=refused.message)
        return await _account_page(who, client, enrolment=enrolment)


@blueprint.post("/account/two-factor/confirm")
async def confirm_two_factor() -> Response:
    who = await require()
    form = await form_of(who)
    async with api(who) as client:
        try:
            confirmed = await client.send(
                "POST", "/api/account/two-factor/confirm", {"code": form.get("code", "")}
            )
        except ApiRefused as refused:
            # a mistyped code: the same secret again (the page showed it already), so the app
            # that has it need not be set up anew
            enrolment = {k: form.get(k, "") for k in ("secret", "otpauthUri")}
            return await _account_page(
                who, client, refused.status, problem=refused.message, enrolment=enrolment
            )
        return await _account_page(who, client, recovery_codes=confirmed["recoveryCodes"])


@blueprint.post("/account/two-factor/disable")
async def disable_two_factor() -> Response:
    who = await require()
    form = await form_of(who)
    async with api(who) as client:
        try:
            await client.send(
                "POST",
                "/api/account/two-factor/disable",
                {"code": form.get("code", ""), "password": form.get("password", "")},
            )
        except ApiRefused as refused:
            return await _account_page(who, client, refused.status, problem=refused.message)
    return go("/dashboard/account")


@blueprint.post("/account/password")
async def change_password() -> Response:
    """A new password, with the current one (and the app's code when two-factor login is on):
    every other session ends; this browser goes on with the new session the API opened."""
    who = await require()
    form = await form_of(who)
    body = {"password": form.get("password", ""), "newPassword": form.get("newPassword", "")}
    if form.get("code", "").strip():
        body["code"] = form["code"].strip()
    async with api(who) as client:
        try:
            answer, cookies = await client.send_for_cookies("POST", "/api/account/password", body)
        except ApiRefused as refused:
            return await _account_page(who, client, refused.status, problem=refused.message)
    moved = go("/dashboard/account?password=changed")
    sessions.set_cookies(moved, cookies[sessions.COOKIE], answer["csrfToken"], secure_cookies())
    return moved
