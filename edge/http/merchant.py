"""The merchant's server API (CONTRACT 4.5): the project's key is required, and a key sees only
its own mode's transactions and events."""

from __future__ import annotations

from functools import partial

import trio
from quart import Blueprint, Response, request

from edge.actors import queries
from edge.actors.messages import CancelTx, MarkPaid, RefundTx, ResolveTx
from edge.actors.sync import Syncer
from edge.domain import ids
from edge.domain.errors import InvalidInput
from edge.domain.inputs import bounded_int
from edge.domain.money import spelled
from edge.domain.status import Status
from edge.domain.timefmt import iso_ms
from edge.errors import check_project_id, project_not_found, tx_not_found, unavailable
from edge.http import bodies, idempotency
from edge.http.auth import Caller, project_caller
from edge.http.context import ask, node
from edge.http.jsonio import NO_STORE, json_response, read_json_object
from edge.http.paging import limit

blueprint = Blueprint("merchant", __name__)

FEED_WAIT_MAX_S = 25
FEED_POLL_S = 0.25


async def _caller(project_id: str) -> Caller:
    check_project_id(project_id)
    caller = await project_caller(project_id, required=True, sessions=True)
    assert caller is not None
    if caller.is_admin and not await queries.project_exists(node(), project_id):
        raise project_not_found()
    return caller


@blueprint.get("/api/projects/<project_id>/transactions")
async def list_transactions(project_id: str) -> Response:
    caller = await _caller(project_id)
    status = request.args.get("status")
    if status is not None and status not in {s.value for s in Status}:
        raise InvalidInput("status must be one of the transaction statuses", "status")
    after = request.args.get("after")
    if after is not None and not ids.is_tx_id(after):
        raise InvalidInput("after must be a transaction id", "after")
    reference = request.args.get("reference")
    if reference is not None:
        reference = ids.normalize_reference_code(reference)
        if reference is None:
            raise InvalidInput(
                "reference is not a valid reference code (check character)", "reference"
            )
    page = await queries.list_transactions(
        node(),
        project_id,
        mode=caller.mode,
        status=status,
        after=after,
        reference=reference,
        limit=limit(50, 100),
    )
    return json_response(page, headers=NO_STORE)


@blueprint.get("/api/projects/<project_id>/transactions/<tx_id>")
async def get_transaction(project_id: str, tx_id: str) -> Response:
    caller = await _caller(project_id)
    view = await queries.get_transaction(node(), project_id, tx_id, caller.mode)
    return json_response(view, headers=NO_STORE)


@blueprint.get("/api/projects/<project_id>/events")
async def events(project_id: str) -> Response:
    caller = await _caller(project_id)
    after = request.args.get("after")
    if after is not None and not ids.is_evt_id(after):
        raise InvalidInput("after must be an event id (evt_...)", "after")
    raw_wait = request.args.get("wait")
    wait_s = 0 if raw_wait is None else bounded_int(raw_wait, 0, FEED_WAIT_MAX_S)
    if wait_s is None:
        raise InvalidInput(f"wait must be an integer from 0 to {FEED_WAIT_MAX_S}", "wait")
    feed = partial(
        queries.event_feed,
        node(),
        project_id,
        mode=caller.mode,
        after=after,
        limit=limit(100, 500),
    )
    page = await feed()
    # ?wait=N: a long poll for what comes after ``after`` (``edge listen``). The feed is read
    # from the store, so it is looked at again every quarter second until something is there.
    with trio.move_on_after(wait_s):
        while not page["items"]:
            await trio.sleep(FEED_POLL_S)
            page = await feed()
    return json_response(page, headers=NO_STORE)


@blueprint.post("/api/projects/<project_id>/transactions/<tx_id>/mark-paid")
async def mark_paid(project_id: str, tx_id: str) -> Response:
    caller = await _caller(project_id)
    note = bodies.mark_paid(await read_json_object(optional=True))
    if not ids.is_tx_id(tx_id):
        raise tx_not_found()
    view = await ask(project_id, MarkPaid(tx_id, caller.mode, note))
    return json_response(view, headers=NO_STORE)


@blueprint.post("/api/projects/<project_id>/transactions/<tx_id>/refund")
async def refund(project_id: str, tx_id: str) -> Response:
    caller = await _caller(project_id)
    key = idempotency.key()
    amount, reason = bodies.refund(await read_json_object(optional=True))
    if not ids.is_tx_id(tx_id):
        raise tx_not_found()
    # a retry whose answer was lost gets the first refund's answer, never a second refund
    asked = {"refund": tx_id, "mode": caller.mode, "amount": spelled(amount), "reason": reason}
    message = RefundTx(tx_id, caller.mode, amount, reason, key, idempotency.body_hash(asked))
    view = await ask(project_id, message)
    # 202: the provider is asked from the durable queue; its own webhook brings the outcome
    status = 200 if view["state"] == "done" else 202
    return json_response(view, status=status, headers=NO_STORE)


@blueprint.post("/api/projects/<project_id>/transactions/<tx_id>/resolve")
async def resolve(project_id: str, tx_id: str) -> Response:
    caller = await _caller(project_id)
    note = bodies.resolve(await read_json_object(optional=True))
    if not ids.is_tx_id(tx_id):
        raise tx_not_found()
    view = await ask(project_id, ResolveTx(tx_id, caller.mode, caller.who, note))
    return json_response(view, headers=NO_STORE)


@blueprint.post("/api/projects/<project_id>/transactions/<tx_id>/sync")
async def sync(project_id: str, tx_id: str) -> Response:
    """Ask the provider what became of the transaction and apply what it says (CONTRACT
    4.3a); the transaction as it now is, with what was learned."""
    caller = await _caller(project_id)
    bodies.only(await read_json_object(optional=True), set())  # optional, and empty
    if not ids.is_tx_id(tx_id):
        raise tx_not_found()
    answer = await _syncer().sync(project_id, tx_id, caller.mode, "asked")
    view = await queries.get_transaction(node(), project_id, tx_id, caller.mode)
    view["sync"] = {"found": answer["found"], "learned": answer["learned"]}
    return json_response(view, headers=NO_STORE)


@blueprint.post("/api/projects/<project_id>/reconcile")
async def reconcile(project_id: str) -> Response:
    """Walk the providers' lists of events since a time and apply what the node missed (after
    an outage or a fixed secret); what each provider's walk saw and learned."""
    caller = await _caller(project_id)
    since, provider, asked_mode = bodies.reconcile(await read_json_object())
    mode = caller.mode or asked_mode or "live"
    if caller.mode is not None and asked_mode not in (None, caller.mode):
        raise InvalidInput(f"this key reconciles {caller.mode} mode only", "mode")
    names = await queries.reconcilable(node(), project_id, mode, provider)
    results = [await _syncer().reconcile(project_id, name, mode, since) for name in names]
    return json_response({"since": iso_ms(since), "providers": results}, headers=NO_STORE)


def _syncer() -> Syncer:
    syncer = node().syncer
    if syncer is None:
        raise unavailable()
    return syncer


@blueprint.post("/api/projects/<project_id>/transactions/<tx_id>/cancel")
async def cancel(project_id: str, tx_id: str) -> Response:
    caller = await _caller(project_id)
    await read_json_object(optional=True)
    if not ids.is_tx_id(tx_id):
        raise tx_not_found()
    view = await ask(project_id, CancelTx(tx_id, caller.mode))
    return json_response(view, headers=NO_STORE)
