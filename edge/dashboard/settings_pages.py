"""A project's settings pages (CONTRACT 4.7): products, payment methods with their credentials
(secrets write-only), API keys (shown once), notification endpoints, and the button snippet
with a live preview. Every change is one call of the management API."""

from __future__ import annotations

from typing import Any

from quart import Response, request

from edge.dashboard import credential_help
from edge.dashboard.api import Api, ApiRefused
from edge.dashboard.links import MODES, payment_links
from edge.dashboard.paths import PRODUCT_ID_RULE
from edge.dashboard.project_pages import public_info
from edge.dashboard.site import (
    SignedIn,
    api,
    blueprint,
    forget_shown,
    form_number,
    form_of,
    go,
    page,
    require,
    show_once,
    shown_once,
    unconfirmed,
)
from edge.dashboard.words import check_in_words, not_offered_in_words, refused_grouped
from edge.domain import ids
from edge.domain.egress import unreachable_reason
from edge.http.button import current, snippet
from edge.http.context import node
from edge.providers.offers import NAMES
from edge.providers.registry import PROVIDERS

HTML = "text/html; charset=utf-8"


# -- products --------------------------------------------------------------------------------


async def _products_page(
    who: SignedIn, client: Api, pid: str, errors: dict[str, str], values: dict[str, str]
) -> str:
    project = await client.get(f"/api/manage/projects/{pid}")
    public_url = node().public_url
    links = {
        p["id"]: payment_links(public_url, pid, p["id"], p["name"]) for p in project["products"]
    }
    return await page(
        "products.html",
        who,
        project=project,
        errors=errors,
        values=values,
        links=links,
        asked_delete=lambda product_id: _delete_product_asked(pid, product_id),
        offered={mode: any(_offered(p, mode) for p in project["providers"]) for mode in MODES},
    )


@blueprint.get("/p/<pid>/products")
async def products(pid: str) -> str:
    who = await require()
    async with api(who) as client:
        return await _products_page(who, client, pid, {}, {})


@blueprint.post("/p/<pid>/products")
async def save_product(pid: str) -> str | Response:
    who = await require()
    form = await form_of(who)
    body: dict[str, Any] = {
        "name": form.get("name", ""),
        "kind": form.get("kind", "payment"),
        "amount": form_number(form.get("amount", "")),
        "currency": form.get("currency", "").upper(),
    }
    if body["kind"] == "subscription":
        body["interval"] = form.get("interval") or "month"
    product_id = form.get("productId", "")
    async with api(who) as client:
        try:
            if not ids.is_product_id(product_id):  # checked before it becomes part of a path
                raise ApiRefused(
                    400,
                    {"code": "invalid_request", "message": PRODUCT_ID_RULE, "field": "productId"},
                )
            await client.send("PUT", f"/api/manage/projects/{pid}/products/{product_id}", body)
        except ApiRefused as refused:
            errors = {refused.field or "productId": refused.message}
            html = await _products_page(who, client, pid, errors, form)
            return Response(html, status=refused.status, content_type=HTML)
    return go(f"/dashboard/p/{pid}/products")


@blueprint.post("/p/<pid>/products/<product_id>/delete")
async def delete_product(pid: str, product_id: str) -> Response:
    who = await require()
    return await _deleted_when_confirmed(
        who,
        await form_of(who),
        f"/api/manage/projects/{pid}/products/{product_id}",
        **_delete_product_asked(pid, product_id),
    )


def _delete_product_asked(pid: str, product_id: str) -> dict[str, str]:
    return {
        "title": "Delete this product?",
        "sentence": f"{product_id} is no longer sold: a button or link for it stops working."
        " Payments already made keep it.",
        "verb": "Yes, delete it",
        "back": f"/dashboard/p/{pid}/products",
    }


async def _deleted_when_confirmed(
    who: SignedIn, form: dict[str, str], path: str, **asked: str
) -> Response:
    """``DELETE path`` once the merchant confirmed it (``unconfirmed``), then back."""
    asking = await unconfirmed(who, form, **asked)
    if asking is not None:
        return asking
    async with api(who) as client:
        await client.send("DELETE", path)
    return go(asked["back"])


# -- payment methods ------------------------------------------------------------------------


def _webhook_address(provider: str, pid: str) -> str:
    return f"{node().public_url}/webhook/{provider}/{pid}"


async def _methods_page(
    who: SignedIn, client: Api, pid: str, errors: dict[str, dict[str, str]]
) -> str:
    project = await client.get(f"/api/manage/projects/{pid}")
    refused = (await client.get(f"/api/manage/projects/{pid}/deliveries"))["items"]
    configured = {p["provider"]: p for p in project["providers"]}
    secrets = {
        name: [m for m in ("test", "live") if "webhookSecret" in view[m]]
        for name, view in configured.items()
    }
    product_names = {p["id"]: p["name"] for p in project["products"]}
    methods = [
        {
            "name": name,
            "title": NAMES.get(name, name),
            "adapter": adapter,
            "view": configured.get(name),
            "not_offered": not_offered_in_words(
                name, adapter.kind, configured.get(name), product_names
            ),
            "webhook": _webhook_address(name, pid) if name != "manual" else None,
            "refused": refused_grouped([r for r in refused if r["provider"] == name], secrets)[:5],
            "checks": {
                mode: {**check, "words": check_in_words(NAMES.get(name, name), check)}
                for mode, check in (configured.get(name) or {}).get("checks", {}).items()
            },
        }
        for name, adapter in PROVIDERS.items()
    ]
    # what buyers are shown, in order, as the button lists it: the public-info of each mode
    seen = await public_info(client, pid)
    return await page(
        "methods.html",
        who,
        label_of=credential_help.label_of,
        where_of=credential_help.where_of,
        project=project,
        names=NAMES,
        methods=methods,
        errors=errors,
        seen=seen,
        unreachable=unreachable_reason(node().public_url),
    )


@blueprint.get("/p/<pid>/methods")
async def methods(pid: str) -> str:
    who = await require()
    async with api(who) as client:
        return await _methods_page(who, client, pid, {})


@blueprint.post("/p/<pid>/methods/<provider>")
async def save_method(pid: str, provider: str) -> str | Response:
    who = await require()
    form = await form_of(who)
    adapter = PROVIDERS[provider]  # a known one (edge.dashboard.paths)
    mode = "live" if form.get("mode") == "live" else "test"
    credentials: dict[str, Any] = {}
    for field in adapter.credential_fields:
        if field.shape == "address":
            lines = [ln.strip() for ln in form.get("addressLines", "").splitlines() if ln.strip()]
            if form.get("addressName") or lines:
                credentials[field.name] = {
                    "name": form.get("addressName", ""),
                    "lines": lines,
                    "country": form.get("addressCountry", "").upper(),
                }
            continue
        value = form.get(field.name, "").strip()
        if not value:
            continue  # a secret left blank stays as it is
        credentials[field.name] = _origins_list(value) if field.shape == "hosts" else value
    async with api(who) as client:
        project = await client.get(f"/api/manage/projects/{pid}")
        current = next((p for p in project["providers"] if p["provider"] == provider), None)
        # saving credentials leaves on or off as it was; a first save turns the method on
        body: dict[str, Any] = {"enabled": current["enabled"] if current else True}
        if credentials or form.get("tryOnly") == "yes":
            # "Try with ...": the mode given with nothing changed is tried again as it is
            body[mode] = {} if form.get("tryOnly") == "yes" else credentials
        return await _put_provider(who, client, pid, provider, body)


@blueprint.post("/p/<pid>/methods/<provider>/display")
async def save_display(pid: str, provider: str) -> str | Response:
    """On or off, and the merchant's label and order (empty: the provider's default)."""
    who = await require()
    form = await form_of(who)
    if provider not in PROVIDERS:
        return go(f"/dashboard/p/{pid}/methods")
    order = form.get("order", "").strip()
    body = {
        "enabled": form.get("enabled") == "on",
        "label": form.get("label", "").strip() or None,
        "order": (int(order) if order.isdigit() else order) or None,
    }
    async with api(who) as client:
        return await _put_provider(who, client, pid, provider, body)


async def _put_provider(
    who: SignedIn, client: Api, pid: str, provider: str, body: dict[str, Any]
) -> str | Response:
    try:
        await client.send("PUT", f"/api/manage/projects/{pid}/providers/{provider}", body)
    except ApiRefused as refused:
        errors = {provider: {"message": refused.message, "field": refused.field or ""}}
        html = await _methods_page(who, client, pid, errors)
        return Response(html, status=refused.status, content_type=HTML)
    return go(f"/dashboard/p/{pid}/methods#{provider}")


def _offered(view: dict[str, Any], mode: str) -> bool:
    """Is a provider (its ``ProviderSettings``) offered to buyers in ``mode``?"""
    return bool(((view.get("availability") or {}).get(mode) or {}).get("offered"))


def _origins_list(text: str) -> list[str]:
    return [h.strip() for h in text.replace(",", " ").split() if h.strip()]


# -- API keys -------------------------------------------------------------------------------


async def _keys_page(
    who: SignedIn, client: Api, pid: str, created: dict[str, Any] | None, problem: str | None
) -> str:
    project = await client.get(f"/api/manage/projects/{pid}")
    return await page(
        "keys.html",
        who,
        project=project,
        created=created,
        problem=problem,
        asked_revoke=lambda key_id: _revoke_asked(pid, key_id),
    )


@blueprint.get("/p/<pid>/keys")
async def keys(pid: str) -> Response:
    who = await require()
    # a key made by the POST before this page (post/redirect/get): shown once
    created = shown_once(who)
    async with api(who) as client:
        html = await _keys_page(who, client, pid, created, None)
    return forget_shown(Response(html, content_type=HTML))


@blueprint.post("/p/<pid>/keys")
async def create_key(pid: str) -> str | Response:
    who = await require()
    form = await form_of(who)
    body = {"mode": form.get("mode", "test"), "name": form.get("name", "")}
    async with api(who) as client:
        try:
            created = await client.send("POST", f"/api/manage/projects/{pid}/keys", body)
        except ApiRefused as refused:
            html = await _keys_page(who, client, pid, None, refused.message)
            return Response(html, status=refused.status, content_type=HTML)
    # the only time the key is shown: the page after this POST
    shown = {k: created[k] for k in ("key", "mode", "name", "keyId")}
    return show_once(who, go(f"/dashboard/p/{pid}/keys"), shown)


@blueprint.post("/p/<pid>/keys/<key_id>/revoke")
async def revoke_key(pid: str, key_id: str) -> Response:
    who = await require()
    return await _deleted_when_confirmed(
        who,
        await form_of(who),
        f"/api/manage/projects/{pid}/keys/{key_id}",
        **_revoke_asked(pid, key_id),
    )


def _revoke_asked(pid: str, key_id: str) -> dict[str, str]:
    return {
        "title": "Revoke this key?",
        "sentence": f"Key {key_id} stops working at once: a backend that still uses it is"
        " refused from now on. This cannot be undone.",
        "verb": "Yes, revoke it",
        "back": f"/dashboard/p/{pid}/keys",
    }


# -- notification endpoints ------------------------------------------------------------------


async def _endpoints_page(
    who: SignedIn, client: Api, pid: str, created: dict[str, Any] | None, problem: str | None
) -> str:
    project = await client.get(f"/api/manage/projects/{pid}")
    listed = await client.get(f"/api/manage/projects/{pid}/endpoints")
    base = f"/api/manage/projects/{pid}/endpoints"
    attempts = {
        e["endpointId"]: (await client.get(f"{base}/{e['endpointId']}/attempts"))["items"]
        for e in listed["items"]
    }
    return await page(
        "endpoints.html",
        who,
        project=project,
        endpoints=listed["items"],
        attempts=attempts,
        created=created,
        problem=problem,
        asked_roll=_roll_asked(pid),
        asked_remove=lambda endpoint_id: _remove_asked(pid, endpoint_id),
    )


@blueprint.get("/p/<pid>/endpoints")
async def endpoints(pid: str) -> Response:
    who = await require()
    created = shown_once(who)  # a new endpoint's, or a rolled, signing secret: shown once
    async with api(who) as client:
        html = await _endpoints_page(who, client, pid, created, None)
    return forget_shown(Response(html, content_type=HTML))


@blueprint.post("/p/<pid>/endpoints")
async def add_endpoint(pid: str) -> str | Response:
    who = await require()
    form = await form_of(who)
    # test unless live is chosen, as for keys: a mistake then costs no live notification
    body = {"url": form.get("url", ""), "mode": "live" if form.get("mode") == "live" else "test"}
    if form.get("description"):
        body["description"] = form["description"]
    async with api(who) as client:
        try:
            created = await client.send("POST", f"/api/manage/projects/{pid}/endpoints", body)
        except ApiRefused as refused:
            html = await _endpoints_page(who, client, pid, None, refused.message)
            return Response(html, status=refused.status, content_type=HTML)
    shown = {"secret": created["secret"], "url": created["url"], "what": "added"}
    return show_once(who, go(f"/dashboard/p/{pid}/endpoints"), shown)


@blueprint.post("/p/<pid>/endpoints/<endpoint_id>/roll")
async def roll_secret(pid: str, endpoint_id: str) -> Response:
    """A new signing secret; the old one signs too for 24 hours, while the server changes."""
    who = await require()
    form = await form_of(who)
    asking = await unconfirmed(who, form, **_roll_asked(pid))
    if asking is not None:
        return asking
    path = f"/api/manage/projects/{pid}/endpoints/{endpoint_id}"
    async with api(who) as client:
        rolled = await client.send("PATCH", path, {"rotateSecret": True})
    shown = {"secret": rolled["secret"], "url": rolled["url"], "what": "rolled"}
    return show_once(who, go(f"/dashboard/p/{pid}/endpoints"), shown)


@blueprint.post("/p/<pid>/endpoints/<endpoint_id>/test")
async def send_test(pid: str, endpoint_id: str) -> Response:
    """A sample event posted to the endpoint now: what its server answered, shown once."""
    who = await require()
    await form_of(who)
    path = f"/api/manage/projects/{pid}/endpoints/{endpoint_id}/test"
    async with api(who) as client:
        sent = await client.send("POST", path)
    shown = {"what": "tested", "endpointId": endpoint_id, **sent}
    return show_once(who, go(f"/dashboard/p/{pid}/endpoints"), shown)


@blueprint.post("/p/<pid>/endpoints/<endpoint_id>/resend")
async def resend(pid: str, endpoint_id: str) -> Response:
    """One event sent to the endpoint again (a server that lost or refused it)."""
    who = await require()
    form = await form_of(who)
    event_id = form.get("eventId", "")
    path = f"/api/manage/projects/{pid}/endpoints/{endpoint_id}/replay"
    async with api(who) as client:
        await client.send("POST", path, {"eventIds": [event_id]})
    return go(f"/dashboard/p/{pid}/endpoints#attempts-{endpoint_id}")


@blueprint.post("/p/<pid>/endpoints/<endpoint_id>/remove")
async def remove_endpoint(pid: str, endpoint_id: str) -> Response:
    who = await require()
    return await _deleted_when_confirmed(
        who,
        await form_of(who),
        f"/api/manage/projects/{pid}/endpoints/{endpoint_id}",
        **_remove_asked(pid, endpoint_id),
    )


def _roll_asked(pid: str) -> dict[str, str]:
    return {
        "title": "Roll this endpoint's signing secret?",
        "sentence": "A new secret is made and shown once. Deliveries are signed with both for 24"
        " hours: put the new one on your server within that time.",
        "verb": "Yes, roll it",
        "back": f"/dashboard/p/{pid}/endpoints",
    }


def _remove_asked(pid: str, endpoint_id: str) -> dict[str, str]:
    return {
        "title": "Remove this notification endpoint?",
        "sentence": f"{endpoint_id} is told of no further event. This cannot be undone: to hear"
        " again, add it anew (with a new signing secret).",
        "verb": "Yes, remove it",
        "back": f"/dashboard/p/{pid}/endpoints",
    }


# -- the button ------------------------------------------------------------------------------


@blueprint.get("/p/<pid>/button")
async def button(pid: str) -> str:
    who = await require()
    async with api(who) as client:
        project = await client.get(f"/api/manage/projects/{pid}")
    ctx = node()
    product_ids = [p["id"] for p in project["products"]]
    product = request.args.get("product")
    product = product if product in product_ids else (product_ids[0] if product_ids else None)
    mode = "live" if request.args.get("mode") == "live" else "test"
    offered = [p["provider"] for p in project["providers"] if _offered(p, mode)]
    html = snippet(ctx.signer, ctx.public_url, pid, product, mode=mode) if product else ""
    pasted = (
        snippet(ctx.signer, ctx.public_url, pid, product, mode=mode, card_form="paddle" in offered)
        if product
        else ""
    )
    return await page(
        "button.html",
        who,
        project=project,
        product=product,
        mode=mode,
        snippet=pasted,
        preview=html,
        offered=offered,
        integrity=current(ctx.signer).integrity,
    )
