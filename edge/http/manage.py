"""The management API (CONTRACT 4.6, 4.7): projects, products, providers, keys, endpoints.
The operator's token manages every project; an account's dashboard session only its own (any
other answers ``404 project_not_found``, as an unknown one does) and never a tier. Generic over
providers: each provider only declares its credential fields."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import trio
from quart import Blueprint, Response, g, request

from edge.actors import accounts, queries
from edge.actors import messages as m
from edge.actors.records import iso_or_none
from edge.domain import ids
from edge.domain.events import Simulated
from edge.domain.inputs import bounded_int
from edge.domain.logfilter import status_filter
from edge.errors import (
    Forbidden,
    InvalidRequest,
    NotFound,
    check_project_id,
    project_not_found,
    unavailable,
)
from edge.http import bodies
from edge.http.auth import require_admin
from edge.http.context import ask, limited, node
from edge.http.jsonio import NO_STORE, json_response, read_json_object
from edge.http.paging import limit
from edge.http.sessions import check_csrf
from edge.http.sessions import current as current_session
from edge.providers import checking
from edge.providers.egress import resolves_private
from edge.providers.registry import PROVIDERS

blueprint = Blueprint("manage", __name__, url_prefix="/api/manage")
# a provider's credentials refused or not tried: the operator's log says so too
_setup_log = logging.getLogger("edge.setup")


@blueprint.before_request
async def _manager() -> None:
    await manager()


async def manager() -> None:
    """The operator (a bearer token, an operator account's session, or a session signed in
    with the token) or an account (its session, with the CSRF token on a change). Management
    is not project-scoped, so its rate buckets live with the node: one for the operator's
    token, one per session's account."""
    ctx = node()
    if request.headers.get("Authorization") is None:
        session = await current_session(ctx)
        if session is not None:
            check_csrf(session)
            g.account_id, g.operator = session.account_id, session.operator
            limited("manage", session.account_id or "operator")
            return
    require_admin()
    g.account_id, g.operator = None, True
    limited("manage", "operator")


def _account() -> str | None:
    """The account whose projects the caller sees; None for the operator, who sees all."""
    account_id: str | None = None if g.operator else g.account_id
    return account_id


def operator_only() -> None:
    if not g.operator:
        raise Forbidden("forbidden", "Only the node's operator may do this.")


async def _project(project_id: str) -> str:
    check_project_id(project_id)
    account = _account()
    if account is not None and not await accounts.owns(node(), account, project_id):
        raise project_not_found()  # the same answer as an unknown project: ids cannot be probed
    return project_id


def _no_tier(body: dict[str, Any]) -> dict[str, Any]:
    if "tier" in body and _account() is not None:
        raise Forbidden("forbidden", "A project's tier is changed by the node's operator only.")
    return body


@blueprint.post("/projects")
async def create_project() -> Response:
    body = _no_tier(await read_json_object())
    fields = bodies.project(body, set(node().settings.tiers))
    # an operator account's new project is its own, like anyone's (the token's has no owner)
    view = await queries.create_project(node(), fields, owner=g.account_id)
    return json_response(view, 201, NO_STORE)


@blueprint.get("/projects")
async def list_projects() -> Response:
    """The projects the caller may see: the operator every one, an account its own."""
    after = request.args.get("after")
    if after is not None and not ids.is_project_id(after):
        raise InvalidRequest("invalid_request", "after must be a project id", field="after")
    page = await queries.list_projects(node(), after=after, limit=limit(50, 100), owner=_account())
    return json_response(page, headers=NO_STORE)


@blueprint.get("/projects/<project_id>")
async def get_project(project_id: str) -> Response:
    return json_response(await ask(await _project(project_id), m.GetProject()), headers=NO_STORE)


@blueprint.patch("/projects/<project_id>")
async def patch_project(project_id: str) -> Response:
    body = _no_tier(await read_json_object())
    changes = bodies.project(body, set(node().settings.tiers), partial=True)
    return json_response(
        await ask(await _project(project_id), m.PatchProject(changes)), headers=NO_STORE
    )


@blueprint.put("/projects/<project_id>/products/<product_id>")
async def put_product(project_id: str, product_id: str) -> Response:
    product = bodies.product(product_id, await read_json_object())
    return json_response(
        await ask(await _project(project_id), m.PutProduct(product)), headers=NO_STORE
    )


@blueprint.delete("/projects/<project_id>/products/<product_id>")
async def delete_product(project_id: str, product_id: str) -> Response:
    return json_response(
        await ask(await _project(project_id), m.DeleteProduct(product_id)), headers=NO_STORE
    )


@blueprint.put("/projects/<project_id>/providers/<provider>")
async def put_provider(project_id: str, provider: str) -> Response:
    project_id = await _project(project_id)
    if provider not in PROVIDERS:  # whatever the body: the name decides first
        raise NotFound("unknown_provider", f"This node has no provider {provider!r}.")
    body = bodies.provider_settings(await read_json_object())
    opened = await ask(project_id, m.TryProvider(provider, body))
    checked = await checking.check_modes(PROVIDERS[provider], opened, node().http)
    for found in checked:
        if found.result in (checking.REFUSED, checking.UNCHECKED):
            _setup_log.warning("project %s: %s", project_id, found.sentence(PROVIDERS[provider]))
        if found.result == checking.REFUSED:
            raise InvalidRequest(
                "credentials_refused",
                found.sentence(PROVIDERS[provider]),
                field=f"{found.mode}.{found.field}" if found.field else found.mode,
            )
    checks = {found.mode: {**found.view(), "at": node().clock_ms()} for found in checked}
    view = await ask(project_id, m.PutProvider(provider, body, checks))
    return json_response(view, headers=NO_STORE)


# each provider has a path of its own too, so the API reference can state each one's credential
# fields (the same handler; any other name reaches the one above: 404 unknown_provider)
for _name in PROVIDERS:
    blueprint.add_url_rule(
        f"/projects/<project_id>/providers/{_name}",
        endpoint=f"put_provider_{_name}",
        view_func=put_provider,
        methods=["PUT"],
        defaults={"provider": _name},
    )


@blueprint.post("/projects/<project_id>/keys")
async def create_key(project_id: str) -> Response:
    fields = bodies.new_key(await read_json_object())
    answer = await ask(await _project(project_id), m.CreateKey(**fields))
    return json_response(answer, 201, NO_STORE)


@blueprint.get("/projects/<project_id>/keys")
async def list_keys(project_id: str) -> Response:
    project = await ask(await _project(project_id), m.GetProject())
    return json_response({"items": project["keys"]}, headers=NO_STORE)


@blueprint.delete("/projects/<project_id>/keys/<key_id>")
async def revoke_key(project_id: str, key_id: str) -> Response:
    return json_response(
        await ask(await _project(project_id), m.RevokeKey(key_id)), headers=NO_STORE
    )


@blueprint.get("/projects/<project_id>/usage")
async def usage(project_id: str) -> Response:
    return json_response(await ask(await _project(project_id), m.GetUsage()), headers=NO_STORE)


@blueprint.get("/projects/<project_id>/deliveries")
async def deliveries(project_id: str) -> Response:
    if not await queries.project_exists(node(), await _project(project_id)):
        raise project_not_found()
    return json_response(await queries.rejected_deliveries(node(), project_id), headers=NO_STORE)


async def _resolvable(url: str | None) -> None:
    """A name that resolves to a private address is refused when saved (CONTRACT 4.8), not
    only when the node connects."""
    allowed = node().settings.notify_allow | {"localhost"}
    if url is not None and await resolves_private(url, allowed):
        raise InvalidRequest(
            "url_not_allowed",
            "This address resolves to a private address; the node does not call it.",
            field="url",
        )


@blueprint.post("/projects/<project_id>/endpoints")
async def create_endpoint(project_id: str) -> Response:
    fields = bodies.endpoint(await read_json_object())
    await _resolvable(fields["url"])
    message = m.CreateEndpoint(
        url=fields["url"],
        mode=fields["mode"],
        types=fields["types"],
        description=fields["description"],
    )
    return json_response(await ask(await _project(project_id), message), 201, NO_STORE)


@blueprint.get("/projects/<project_id>/endpoints")
async def list_endpoints(project_id: str) -> Response:
    return json_response(await ask(await _project(project_id), m.ListEndpoints()), headers=NO_STORE)


@blueprint.patch("/projects/<project_id>/endpoints/<endpoint_id>")
async def patch_endpoint(project_id: str, endpoint_id: str) -> Response:
    changes = bodies.endpoint(await read_json_object(), partial=True)
    await _resolvable(changes.get("url"))
    message = m.PatchEndpoint(_endpoint(endpoint_id), changes)
    return json_response(await ask(await _project(project_id), message), headers=NO_STORE)


@blueprint.delete("/projects/<project_id>/endpoints/<endpoint_id>")
async def delete_endpoint(project_id: str, endpoint_id: str) -> Response:
    message = m.DeleteEndpoint(_endpoint(endpoint_id))
    return json_response(await ask(await _project(project_id), message), headers=NO_STORE)


@blueprint.get("/projects/<project_id>/endpoints/<endpoint_id>/attempts")
async def endpoint_attempts(project_id: str, endpoint_id: str) -> Response:
    listed = await ask(await _project(project_id), m.ListEndpoints())
    if _endpoint(endpoint_id) not in {e["endpointId"] for e in listed["items"]}:
        raise NotFound("not_found", "No endpoint with this id in this project.")
    attempts = await queries.endpoint_attempts(node(), endpoint_id)
    return json_response({"items": [attempt_view(a) for a in attempts]}, headers=NO_STORE)


@blueprint.post("/projects/<project_id>/endpoints/<endpoint_id>/replay")
async def replay_endpoint(project_id: str, endpoint_id: str) -> Response:
    since, event_ids = bodies.replay(await read_json_object())
    message = m.ReplayEvents(_endpoint(endpoint_id), since, event_ids)
    return json_response(await ask(await _project(project_id), message), 202, NO_STORE)


@blueprint.post("/projects/<project_id>/endpoints/<endpoint_id>/test")
async def test_endpoint(project_id: str, endpoint_id: str) -> Response:
    """A sample event posted to the endpoint now, signed as every notification: what its
    server answered. Not stored, counted or queued (``Notifier.send_test``)."""
    bodies.only(await read_json_object(optional=True), set())
    project_id = await _project(project_id)
    notifier = node().notifier
    if notifier is None:
        raise unavailable()
    sent = await notifier.send_test(project_id, _endpoint(endpoint_id))
    if sent is None:
        raise NotFound("not_found", "No endpoint with this id in this project.")
    return json_response(sent, headers=NO_STORE)


def _endpoint(endpoint_id: str) -> str:
    if not ids.is_endpoint_id(endpoint_id):
        raise NotFound("not_found", "No endpoint with this id in this project.")
    return endpoint_id


def attempt_view(attempt: dict[str, Any]) -> dict[str, Any]:
    return {
        "at": iso_or_none(attempt["at"]),
        "eventId": attempt["eventId"],
        "attempt": attempt["number"],
        "status": attempt["status"],
        "outcome": attempt["outcome"],
        "error": attempt["detail"] or None,
        "durationMs": attempt["durationMs"],
        "nextAttemptAt": iso_or_none(attempt.get("nextAt")),
    }


LOGS_WAIT_MAX_S = 25


@blueprint.get("/logs")
async def logs() -> Response:
    """The node's recent requests and notification attempts, oldest first after ``after`` (a
    line's ``seq``), for ``edge logs --follow``: ``?wait=`` long-polls for the next line. The
    operator sees every project's; an account its own projects' only. ``?projectId=`` and
    ``?status=`` (404, 4xx, error, comma-separated) narrow it."""
    ctx = node()
    after = _query_int("after", 0, 2**53) or 0
    wait = _query_int("wait", 0, LOGS_WAIT_MAX_S) or 0
    wanted_status = status_filter(request.args.get("status"))
    project_id = request.args.get("projectId")
    if project_id is not None:
        await _project(project_id)  # another account's project is not found, as an unknown one
    account = _account()
    owned = set(await accounts.owned_projects(ctx, account)) if account is not None else None

    def keep(line: dict[str, Any]) -> bool:
        if project_id is not None and line["projectId"] != project_id:
            return False
        if owned is not None and line["projectId"] not in owned:
            return False
        return wanted_status(line["status"])

    activity = ctx.activity
    if after > activity.last:  # a cursor from before the node restarted: from the oldest line
        after = 0
    count = limit(100, 500)
    deadline = trio.current_time() + wait
    seen = after
    while True:
        items = activity.after(seen, keep, count)
        seen = activity.last
        if items or trio.current_time() >= deadline:
            break
        await activity.wait_past(seen, deadline - trio.current_time())
    # next: where to go on from, past lines another reader's filter skipped too
    nxt = items[-1]["seq"] if len(items) == count else max(seen, after)
    return json_response({"items": items, "next": nxt}, headers=NO_STORE)


def _query_int(name: str, low: int, high: int) -> int | None:
    raw = request.args.get(name)
    if raw is None:
        return None
    value = bounded_int(raw, low, high)
    if value is None:
        raise InvalidRequest(
            "invalid_request", f"{name} must be an integer from {low} to {high}", field=name
        )
    return value


@blueprint.post("/trigger")
async def trigger() -> Response:
    """Send a signed simulated provider event for a test transaction (``edge trigger``)."""
    operator_only()
    body = await read_json_object()
    bodies.only(body, {"provider", "type", "txId"})
    provider, event_type, tx_id = body.get("provider"), body.get("type"), body.get("txId")
    if not isinstance(provider, str) or not isinstance(event_type, str):
        raise InvalidRequest(
            "invalid_request", "provider and type are required strings", field="type"
        )
    if not isinstance(tx_id, str):
        raise InvalidRequest("invalid_request", "txId is a required string", field="txId")
    project_id = await queries.project_of_tx(node(), tx_id)
    if project_id is None:
        raise NotFound("not_found", "No transaction with this id on this node.", field="txId")
    material = await ask(project_id, m.TriggerMaterial(provider, tx_id))
    ctx = node()
    # the node posts to itself: its own address, not one an account holder set
    async with httpx.AsyncClient(timeout=15.0, trust_env=False) as own:
        sent = await ctx.send_simulated(
            own, Simulated(ctx.bound_url, project_id, provider, event_type, material)
        )
    return json_response({"projectId": project_id, "txId": tx_id, **sent}, headers=NO_STORE)


@blueprint.get("/stats")
async def stats() -> Response:
    operator_only()
    return json_response(queries.node_stats(node()), headers=NO_STORE)
