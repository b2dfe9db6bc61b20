"""The projects, a project's overview, its transactions and one transaction (CONTRACT 4.7)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from quart import Response, request

from edge.dashboard import chart, setup_steps
from edge.dashboard.api import Api, ApiRefused
from edge.dashboard.site import (
    SignedIn,
    api,
    blueprint,
    form_number,
    form_of,
    go,
    page,
    require,
    unconfirmed,
)
from edge.dashboard.words import (
    REFUND_STATES,
    attention_in_words,
    money,
    refused_grouped,
    stepped_aside_in_words,
)
from edge.domain.status import Status
from edge.providers.offers import NAMES

CHART_SCAN = 500  # transactions read for the chart: a month of a small shop, bounded


def _origins(text: str) -> list[str]:
    return [o.strip() for o in text.replace(",", " ").split() if o.strip()]


async def _projects(client: Api, who: SignedIn) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The projects the signed-in person sees (every one, for the operator, page after page)
    and, for the operator, who owns each (account id -> e-mail)."""
    found: list[dict[str, Any]] = []
    after: str | None = None
    while True:
        params = {"limit": "100", **({"after": after} if after else {})}
        listed = await client.get("/api/manage/projects", params)
        found += listed["items"]
        after = listed["next"]
        if not after or not who.session.operator:
            break
    owners: dict[str, str] = {}
    if who.session.operator:
        owners = {
            a["accountId"]: a["email"] for a in (await client.get("/api/manage/accounts"))["items"]
        }
    return found, owners


@blueprint.get("/")
async def projects() -> str:
    who = await require()
    async with api(who) as client:
        found, owners = await _projects(client, who)
    return await page("projects.html", who, projects=found, owners=owners, errors={}, values={})


@blueprint.post("/projects")
async def create_project() -> str | Response:
    who = await require()
    form = await form_of(who)
    body = {
        "name": form.get("name", ""),
        "successUrl": form.get("successUrl", ""),
        "cancelUrl": form.get("cancelUrl", ""),
        "allowedOrigins": _origins(form.get("allowedOrigins", "")),
    }
    async with api(who) as client:
        try:
            made = await client.send("POST", "/api/manage/projects", body)
        except ApiRefused as refused:
            found, owners = await _projects(client, who)
            html = await page(
                "projects.html",
                who,
                projects=found,
                owners=owners,
                errors={refused.field or "name": refused.message},
                values=form,
            )
            return Response(html, status=refused.status, content_type="text/html; charset=utf-8")
    return go(f"/dashboard/p/{made['id']}/")


async def _month(client: Api, pid: str, since: str) -> list[dict[str, Any]]:
    """The project's transactions made since ``since`` (ISO date), newest first."""
    found: list[dict[str, Any]] = []
    after: str | None = None
    while len(found) < CHART_SCAN:
        params = {"limit": "100", **({"after": after} if after else {})}
        listed = await client.get(f"/api/projects/{pid}/transactions", params)
        found += listed["items"]
        after = listed.get("next")
        if not after or not listed["items"] or listed["items"][-1]["createdAt"][:10] < since:
            break
    return found


@blueprint.get("/p/<pid>/")
async def overview(pid: str) -> str:
    who = await require()
    today = dt.datetime.now(dt.UTC).date()
    since = (today - dt.timedelta(days=chart.DAYS - 1)).isoformat()
    async with api(who) as client:
        project = await client.get(f"/api/manage/projects/{pid}")
        usage = await client.get(f"/api/manage/projects/{pid}/usage")
        month = await _month(client, pid, since)
        endpoints = (await client.get(f"/api/manage/projects/{pid}/endpoints"))["items"]
        refused = (await client.get(f"/api/manage/projects/{pid}/deliveries"))["items"]
        seen = await public_info(client, pid)
    bars, top = chart.bars(chart.daily_payments(month, today))
    secrets = _modes_with_webhook_secret(project)
    attention = {
        "late": [
            {**tx, "words": attention_in_words(tx)} for tx in month if tx.get("needsAttention")
        ],
        "asked": _learned_by_asking(month),
        "endpoints": [e for e in endpoints if not e["enabled"] or e["failingSince"]],
        "refused": refused_grouped(refused, secrets)[:5],
        "setup": setup_steps.problems(project),
        "aside": stepped_aside_in_words(seen),
    }
    paid_once = any(tx["status"] not in _NOT_PAID for tx in month)
    checklist = setup_steps.steps(project, endpoints, paid_once)
    return await page(
        "overview.html",
        who,
        project=project,
        checklist=checklist if not all(step.done for step in checklist) else [],
        usage=usage,
        bars=bars,
        top=top,
        width=chart.WIDTH,
        height=chart.HEIGHT,
        recent=month[:5],
        attention=attention,
    )


async def public_info(client: Api, pid: str) -> dict[str, list[dict[str, Any]]]:
    """Each mode's methods as buyers are offered them (the public info the button reads, which
    says ``"available": false`` of a method whose provider is failing on its side)."""
    return {
        mode: (await client.get(f"/api/projects/{pid}/public-info", {"mode": mode}))["providers"]
        for mode in ("test", "live")
    }


_NOT_PAID = frozenset({"pending", "canceled", "expired", "failed"})


def _learned_by_asking(month: list[dict[str, Any]]) -> list[tuple[str, int]]:
    """(provider's name, how many payments) whose changes the node learned by asking and for
    which no webhook came after: the provider's webhooks are not reaching the node."""
    counts: dict[str, int] = {}
    for tx in month:
        asked = tx.get("asked") or {}
        if asked.get("learned") and not asked.get("webhookArrived"):
            name = NAMES.get(tx["provider"], tx["provider"])
            counts[name] = counts.get(name, 0) + 1
    return sorted(counts.items())


def _modes_with_webhook_secret(project: dict[str, Any]) -> dict[str, list[str]]:
    return {
        p["provider"]: [m for m in ("test", "live") if "webhookSecret" in p[m]]
        for p in project["providers"]
    }


@blueprint.get("/p/<pid>/transactions")
async def transactions(pid: str) -> str:
    who = await require()
    wanted = {k: request.args[k] for k in ("status", "reference", "after") if request.args.get(k)}
    async with api(who) as client:
        project = await client.get(f"/api/manage/projects/{pid}")
        try:
            listed = await client.get(
                f"/api/projects/{pid}/transactions", {"limit": "50", **wanted}
            )
            problem = None
        except ApiRefused as refused:
            listed, problem = {"items": [], "next": None}, refused.message
    return await page(
        "transactions.html",
        who,
        project=project,
        items=listed["items"],
        next=listed.get("next"),
        wanted=wanted,
        statuses=[s.value for s in Status],
        problem=problem,
    )


@blueprint.get("/p/<pid>/transactions/<tx_id>")
async def transaction(pid: str, tx_id: str) -> str:
    who = await require()
    async with api(who) as client:
        project = await client.get(f"/api/manage/projects/{pid}")
        tx = await client.get(f"/api/projects/{pid}/transactions/{tx_id}")
    return await page(
        "transaction.html",
        who,
        project=project,
        tx=tx,
        attention=attention_in_words(tx),
        refund_states=REFUND_STATES,
        provider_name=NAMES.get(tx["provider"], tx["provider"]),
        problem=None,
        asked=_asked_of(tx),
    )


# actions that move money or end a payment: the dashboard asks before it does them
_ASKED_FIRST = ("mark-paid", "refund", "cancel")


def _asked(action: str, tx: dict[str, Any], body: dict[str, Any] | None) -> dict[str, str]:
    """The confirmation page's words for ``action`` on ``tx``."""
    amount = money(tx["amount"], tx["currency"])
    if action == "mark-paid":
        return {
            "title": "Mark this payment paid?",
            "sentence": f"{tx['id']} becomes succeeded for {amount}, and your backend is told to"
            " fulfil it. Do this only once the money is in your account.",
            "verb": "Yes, mark it paid",
        }
    if action == "refund":
        given = (body or {}).get("amount")
        what = (
            f"{given} {tx['currency']}"
            if given is not None
            else f"all that is left ({money(tx.get('refundable') or 0, tx['currency'])})"
        )
        through = "through " + tx["provider"] if tx["provider"] != "manual" else "as sent by hand"
        return {
            "title": "Refund this payment?",
            "sentence": f"{what} of {tx['id']} goes back to the buyer, {through}. A refund"
            " cannot be taken back.",
            "verb": "Yes, refund",
        }
    return {
        "title": "Cancel this checkout?",
        "sentence": f"{tx['id']} ({amount}) is canceled: the buyer can no longer pay it.",
        "verb": "Yes, cancel it",
    }


def _asked_of(tx: dict[str, Any]) -> dict[str, dict[str, str]]:
    """What the transaction page's dialogs ask (the same words as the page that asks when
    there is no script): ``refund-amount`` is the refund's with ``{amount}`` for what is typed."""
    asked = {action: _asked(action, tx, None) for action in _ASKED_FIRST}
    asked["refund-amount"] = _asked("refund", tx, {"amount": "{amount}"})
    return asked


@blueprint.post("/p/<pid>/transactions/<tx_id>/<action>")
async def act_on_transaction(pid: str, tx_id: str, action: str) -> str | Response:
    who = await require()
    form = await form_of(who)
    body: dict[str, Any] | None = None
    if action in ("mark-paid", "resolve") and form.get("note", "").strip():
        body = {"note": form["note"]}
    elif action == "refund":  # no amount: all that is left
        body = {"reason": form["reason"]} if form.get("reason", "").strip() else {}
        if form.get("amount", "").strip():
            body["amount"] = form_number(form["amount"].strip())
    async with api(who) as client:
        if action in _ASKED_FIRST:
            tx = await client.get(f"/api/projects/{pid}/transactions/{tx_id}")
            asking = await unconfirmed(
                who,
                form,
                back=f"/dashboard/p/{pid}/transactions/{tx_id}",
                **_asked(action, tx, body),
            )
            if asking is not None:
                return asking
        try:
            await client.send("POST", f"/api/projects/{pid}/transactions/{tx_id}/{action}", body)
        except ApiRefused as refused:
            project = await client.get(f"/api/manage/projects/{pid}")
            tx = await client.get(f"/api/projects/{pid}/transactions/{tx_id}")
            html = await page(
                "transaction.html",
                who,
                project=project,
                tx=tx,
                attention=attention_in_words(tx),
                refund_states=REFUND_STATES,
                provider_name=NAMES.get(tx["provider"], tx["provider"]),
                problem=refused.message,
                asked=_asked_of(tx),
            )
            return Response(html, status=refused.status, content_type="text/html; charset=utf-8")
    return go(f"/dashboard/p/{pid}/transactions/{tx_id}")
