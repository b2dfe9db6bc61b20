"""Signing up, in and out of the dashboard. These call the account functions in-process rather
than over loopback, so the login limit counts the person's own address, not the node's."""

from __future__ import annotations

from quart import Response, request

from edge.dashboard.site import blueprint, form_of, go, page, require, signed_in
from edge.domain.errors import InvalidInput
from edge.errors import ContractError
from edge.http import sessions
from edge.http.accounts import (
    create_account,
    email_of,
    log_in,
    log_out,
    password_of,
    secure_cookies,
)
from edge.http.context import node
from edge.http.errors import STATUS


@blueprint.get("/login")
async def login_page() -> str | Response:
    if signed_in() is not None:
        return go("/dashboard/")
    return await page("login.html", None, errors={}, email="")


@blueprint.post("/login")
async def login() -> str | Response:
    sessions.refuse_cross_site(node())
    form = await request.form
    return await _sign_in(form.get("email", ""), form.get("password", ""), sign_up=False)


@blueprint.post("/signup")
async def signup() -> str | Response:
    sessions.refuse_cross_site(node())
    form = await request.form
    return await _sign_in(form.get("email", ""), form.get("password", ""), sign_up=True)


async def _sign_in(email: str, password: str, *, sign_up: bool) -> str | Response:
    form = "signup" if sign_up else "login"
    try:
        if sign_up:
            body = {"email": email, "password": password}
            await create_account(email_of(body), password_of(body))
        _, token, csrf = await log_in(email.lower(), password)
    except (ContractError, InvalidInput) as refused:
        field = refused.field if refused.field in ("email", "password") else "password"
        errors = {form: {field: refused.message}}
        html = await page("login.html", None, errors=errors, email=email)
        status = STATUS.get(type(refused), 400) if isinstance(refused, ContractError) else 400
        return Response(html, status=status, content_type="text/html; charset=utf-8")
    response = go("/dashboard/")
    sessions.set_cookies(response, token, csrf, secure_cookies())
    return response


@blueprint.post("/logout")
async def logout() -> Response:
    who = require()
    await form_of(who)
    await log_out(who.session)
    response = go("/dashboard/login")
    sessions.clear_cookies(response, secure_cookies())
    return response
