"""Signing up, in and out of the dashboard, the second factor of a login, and a forgotten
password. These call the account functions in-process rather than over loopback, so the login
limit counts the person's own address, not the node's; each refuses a post sent from another
site (login CSRF), as the JSON endpoints do."""

from __future__ import annotations

from typing import Any

from quart import Response, request

from edge.dashboard.site import blueprint, form_of, go, page, require, signed_in
from edge.domain.errors import InvalidInput
from edge.errors import ContractError
from edge.http import sessions
from edge.http.accounts import (
    SecondFactorDue,
    SignedIn,
    create_account,
    email_of,
    log_in,
    log_in_operator,
    log_out,
    password_of,
    secure_cookies,
)
from edge.http.context import node
from edge.http.errors import STATUS
from edge.http.password_reset import (
    REQUESTED,
    request_reset,
    reset_by_mail,
    reset_password,
    usable_link,
)
from edge.http.two_factor import complete_login

HTML = "text/html; charset=utf-8"


def _status(refused: ContractError | InvalidInput) -> int:
    return STATUS.get(type(refused), 400) if isinstance(refused, ContractError) else 400


async def _html(template: str, status: int = 200, **context: Any) -> Response:
    return Response(await page(template, None, **context), status=status, content_type=HTML)


def _signed_in(signed: SignedIn) -> Response:
    response = go("/dashboard/")
    sessions.set_cookies(response, signed.token, signed.csrf, secure_cookies())
    return response


@blueprint.get("/login")
async def login_page() -> str | Response:
    if await signed_in() is not None:
        return go("/dashboard/")
    notice = "Your password is set: log in with it." if request.args.get("reset") else None
    return await page("login.html", None, errors={}, email="", notice=notice)


@blueprint.post("/login")
async def login() -> str | Response:
    sessions.refuse_cross_site(node())
    form = await request.form
    return await _sign_in(form.get("email", ""), form.get("password", ""), sign_up=False)


@blueprint.post("/login/operator")
async def login_operator() -> str | Response:
    """The node's operator signs in with the admin token: a session that sees every project,
    those made with the command line included."""
    form = await request.form
    try:
        token, csrf = await log_in_operator(form.get("token", "").strip())
    except ContractError as refused:
        errors = {"operator": {"token": refused.message}}
        html = await page("login.html", None, errors=errors, email="")
        status = STATUS.get(type(refused), 400)
        return Response(html, status=status, content_type="text/html; charset=utf-8")
    response = go("/dashboard/")
    sessions.set_cookies(response, token, csrf, secure_cookies())
    return response


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
        outcome = await log_in(email.lower(), password)
    except (ContractError, InvalidInput) as refused:
        field = refused.field if refused.field in ("email", "password") else "password"
        errors = {form: {field: refused.message}}
        return await _html("login.html", _status(refused), errors=errors, email=email, notice=None)
    if isinstance(outcome, SecondFactorDue):
        return await _html("two_factor.html", challenge=outcome.challenge, error=None)
    return _signed_in(outcome)


@blueprint.post("/login/two-factor")
async def login_second_step() -> Response:
    sessions.refuse_cross_site(node())
    form = await request.form
    challenge = form.get("challenge", "")
    try:
        signed = await complete_login(challenge, form.get("code", ""))
    except ContractError as refused:
        if refused.code == "challenge_expired":
            errors = {"login": {"password": refused.message}}
            return await _html("login.html", 401, errors=errors, email="", notice=None)
        return await _html(
            "two_factor.html", _status(refused), challenge=challenge, error=refused.message
        )
    return _signed_in(signed)


@blueprint.post("/logout")
async def logout() -> Response:
    who = await require()
    await form_of(who)
    await log_out(who.session)
    response = go("/dashboard/login")
    sessions.clear_cookies(response, secure_cookies())
    return response


# -- a forgotten password ---------------------------------------------------------------------


@blueprint.get("/forgot")
async def forgot_page() -> Response:
    return await _html("forgot.html", by_mail=reset_by_mail(), sent=None, error=None, email="")


@blueprint.post("/forgot")
async def forgot() -> Response:
    sessions.refuse_cross_site(node())
    form = await request.form
    email = form.get("email", "")
    try:
        await request_reset(email_of({"email": email}))
    except (ContractError, InvalidInput) as refused:
        return await _html(
            "forgot.html",
            _status(refused),
            by_mail=reset_by_mail(),
            sent=None,
            error=refused.message,
            email=email,
        )
    return await _html("forgot.html", by_mail=True, sent=REQUESTED, error=None, email="")


@blueprint.get("/reset")
async def reset_page() -> Response:
    token = request.args.get("token", "")
    try:
        await usable_link(token)
    except ContractError as refused:
        return await _html("reset.html", _status(refused), token=None, error=refused.message)
    return await _html("reset.html", token=token, error=None)


@blueprint.post("/reset")
async def reset() -> Response:
    sessions.refuse_cross_site(node())
    form = await request.form
    token = form.get("token", "")
    try:
        await reset_password(token, password_of({"password": form.get("password", "")}))
    except (ContractError, InvalidInput) as refused:
        still = refused.code != "reset_link_invalid"
        return await _html(
            "reset.html", _status(refused), token=token if still else None, error=refused.message
        )
    return go("/dashboard/login?reset=done")
