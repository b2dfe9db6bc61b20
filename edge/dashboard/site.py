"""What every dashboard page shares: the blueprint, who is signed in, the API client acting as
them, the form's CSRF check, and the headers of every page (never cached)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape
from quart import Blueprint, Response, redirect, render_template, request

from edge.dashboard.api import Api, ApiRefused, api_for
from edge.dashboard.paths import wrong_part
from edge.dashboard.words import money
from edge.http import sessions
from edge.http.assets import answer
from edge.http.context import node
from edge.sealing import SealError

blueprint = Blueprint(
    "dashboard",
    __name__,
    url_prefix="/dashboard",
    template_folder="templates",
)
STATIC = Path(__file__).resolve().parent / "static"


@blueprint.get("/static/<name>")
async def _static(name: str) -> Response:
    """The dashboard's style sheet and script, never kept, as every dashboard answer (a node's
    upgrade reaches every open dashboard at its next page)."""
    return answer(STATIC, name, "no-store")


# the node's own root: a person who opens the node's address lands on the dashboard
root = Blueprint("root", __name__)


@root.get("/")
async def _home() -> Response:
    return redirect("/dashboard/", 302)  # type: ignore[return-value]


@dataclass(frozen=True)
class SignedIn:
    session: sessions.Session
    csrf: str


async def signed_in() -> SignedIn | None:
    session = await sessions.current(node())
    csrf = request.cookies.get(sessions.CSRF_COOKIE)
    if session is None or not csrf or not session.csrf_matches(csrf):
        return None
    return SignedIn(session, csrf)


class NotSignedIn(Exception):
    """Sends the browser to the login page."""


async def require() -> SignedIn:
    who = await signed_in()
    if who is None:
        raise NotSignedIn()
    return who


async def form_of(who: SignedIn) -> dict[str, str]:
    """The posted form, once its CSRF field proves the page it came from was ours."""
    form = await request.form
    sessions.check_csrf(who.session, form.get("csrf"))
    return {k: v for k, v in form.items() if k != "csrf"}


@asynccontextmanager
async def api(who: SignedIn) -> AsyncIterator[Api]:
    async with api_for(node(), who.session.token, who.csrf) as client:
        yield client


async def page(template: str, who: SignedIn | None, **context: Any) -> str:
    operator = bool(who and who.session.operator)
    # the admin token's session has no account of its own: no Account page to offer
    operator_token = bool(who and who.session.account_id is None)
    return await render_template(
        template,
        csrf=who.csrf if who else "",
        operator=operator,
        operator_token=operator_token,
        **context,
    )


def go(location: str) -> Response:
    return redirect(location, 303)  # type: ignore[return-value]


# What a POST made that is shown once (a new key, an endpoint's signing secret) reaches the page
# after its redirect (post/redirect/get: a reload neither shows it again nor makes another) in a
# cookie sealed with the node's key for this session, which that page deletes: never stored on
# the node, never readable by a script, gone within a couple of minutes.
SHOWN_COOKIE = "edge_shown_once"
SHOWN_FOR_S = 120


def show_once(who: SignedIn, redirect_to: Response, shown: dict[str, Any]) -> Response:
    sealed = node().sealer.seal(
        json.dumps({**shown, "at": node().clock_ms() / 1000}), _shown_place(who)
    )
    redirect_to.set_cookie(
        SHOWN_COOKIE,
        base64.urlsafe_b64encode(sealed).decode(),
        max_age=SHOWN_FOR_S,
        path="/dashboard/",
        secure=node().public_url.startswith("https:"),
        httponly=True,
        samesite="Strict",
    )
    return redirect_to


def shown_once(who: SignedIn) -> dict[str, Any] | None:
    """What the POST before this page made to show once; None when nothing (or it is stale,
    or of another session)."""
    cookie = request.cookies.get(SHOWN_COOKIE)
    if not cookie:
        return None
    try:
        opened = node().sealer.open(base64.urlsafe_b64decode(cookie), _shown_place(who))
        shown = json.loads(opened)
    except (SealError, ValueError, binascii.Error):
        return None
    if (
        not isinstance(shown, dict)
        or node().clock_ms() / 1000 - float(shown.get("at", 0)) > SHOWN_FOR_S
    ):
        return None
    return shown


def forget_shown(answer: Response) -> Response:
    if SHOWN_COOKIE in request.cookies:
        answer.delete_cookie(SHOWN_COOKIE, path="/dashboard/")
    return answer


def _shown_place(who: SignedIn) -> str:
    # bound to this session: another session's cookie does not open here
    return f"dashboard-shown-once/{hashlib.sha256(who.session.token.encode()).hexdigest()}"


async def unconfirmed(
    who: SignedIn, form: dict[str, str], *, title: str, sentence: str, verb: str, back: str
) -> Response | None:
    """None when ``form`` was confirmed; else the page that asks first (money moves and what
    cannot be undone never happen on one click): the same form, posted again with
    ``confirmed``. The page is for a browser without the script: with it, the form asks in a
    dialog first (``confirm_attrs``) and comes confirmed."""
    if form.get("confirmed") == "yes":
        return None
    kept = {name: value for name, value in form.items() if name != "confirmed"}
    html = await page(
        "confirm.html",
        who,
        title=title,
        sentence=sentence,
        verb=verb,
        action=request.path,
        fields=kept,
        back=back,
    )
    return Response(html, content_type="text/html; charset=utf-8")


@blueprint.app_template_global("confirm_attrs")
def confirm_attrs(asked: Mapping[str, str], amount_sentence: str | None = None) -> Markup:
    """The attributes that make a form ask first in a dialog (dashboard.js) with the words
    ``unconfirmed`` would ask on its page (which a browser without the script still gets):
    ``asked``'s title, sentence and verb; ``amount_sentence``: the sentence when the form's
    amount field is filled, ``{amount}`` standing for what was typed."""
    attrs = {
        "data-confirm-title": asked["title"],
        "data-confirm-sentence": asked["sentence"],
        "data-confirm-verb": asked["verb"],
    }
    if amount_sentence is not None:
        attrs["data-confirm-amount-sentence"] = amount_sentence
    return Markup(" ".join(f'{name}="{escape(value)}"' for name, value in attrs.items()))


@blueprint.app_template_filter("money")
def _money(amount: float, currency: str) -> str:
    """``9.00 EUR``: the currency's own decimals, as a merchant reads a price."""
    return money(amount, currency)


@blueprint.before_request
async def _check_address() -> None:
    wrong = wrong_part(request.view_args or {})
    if wrong is not None:
        name, what = wrong
        raise ApiRefused(
            400,
            {
                "code": "invalid_request",
                "message": f"This address needs {what} here.",
                "field": name,
            },
        )


@blueprint.after_request
async def _headers(response: Response) -> Response:
    # the strict Content-Security-Policy of every HTML answer is the middleware's
    response.headers["Cache-Control"] = "no-store"  # a change shows at the next read
    response.headers["Referrer-Policy"] = "same-origin"
    return response


@blueprint.errorhandler(NotSignedIn)
async def _to_login(_: NotSignedIn) -> Response:
    return go("/dashboard/login")


@blueprint.errorhandler(ApiRefused)
async def _refused(refused: ApiRefused) -> Response:
    """A read the API refused (another account's project is not found, as an unknown one)."""
    html = await page("error.html", await signed_in(), refused=refused)
    return Response(html, status=refused.status, content_type="text/html; charset=utf-8")


_DECIMAL_COMMA = re.compile(r"\d{1,12},\d{1,3}")


def form_number(text: str) -> Any:
    """A form's amount as the API takes it: a JSON number, or the text itself (which the API
    refuses with its own words)."""
    if _DECIMAL_COMMA.fullmatch(text):
        text = text.replace(",", ".")  # 19,99 as most of Europe writes it
    try:
        value = float(text)
    except ValueError:
        return text
    return int(value) if value.is_integer() and "." not in text else value
