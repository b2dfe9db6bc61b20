"""The Paddle simulator's lists, reads and failures on demand: ``GET /adjustments`` and ``GET
/events`` filtered, ordered and paged as Paddle's lists are; ``GET /subscriptions/{id}``;
chargebacks (in part), their warnings and reversals; a credit balance paying part; 429
``too_many_requests`` with ``Retry-After``; and webhook faults (dropped, held, mis-signed)."""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from support.asgi import serving

from edge.providers.base import Delivery, SignatureInvalid
from edge.providers.paddle import PADDLE
from edge.sim.faults import WRONG_SECRET
from edge.sim.paddle import PaddleSimulator

TX = "tx_01JD0000000000000000000011"
KEY = "pdl_sdbx_apikey_lists"


def headers(key: str = KEY) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", "Paddle-Version": "1"}


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


class Receiver:
    def __init__(self) -> None:
        self.got: list[tuple[dict[str, str], bytes]] = []

    async def __call__(self, scope: dict[str, Any], body: bytes) -> tuple[int, bytes]:
        self.got.append(({k.decode().lower(): v.decode() for k, v in scope["headers"]}, body))
        return 200, b""

    def types(self) -> list[str]:
        return [json.loads(body)["event_type"] for _, body in self.got]


@pytest.fixture
async def receiver() -> AsyncIterator[tuple[Receiver, str]]:
    app = Receiver()
    async with serving(app) as url:
        yield app, url


async def paid(
    http: httpx.AsyncClient, sim: PaddleSimulator, cycle: bool = False, key: str = KEY
) -> str:
    price: dict[str, Any] = {
        "description": "Plan",
        "unit_price": {"amount": "1000", "currency_code": "EUR"},
        "product": {"name": "Plan", "tax_category": "standard"},
    }
    if cycle:
        price["billing_cycle"] = {"interval": "month", "frequency": 1}
    body = {"items": [{"quantity": 1, "price": price}], "custom_data": {"txId": TX}}
    made = await http.post(f"{sim.url}/transactions", json=body, headers=headers(key))
    assert made.status_code == 201, made.text
    txn = str(made.json()["data"]["id"])
    await sim.pay(txn)
    return txn


async def listed(
    http: httpx.AsyncClient, sim: PaddleSimulator, path: str, key: str = KEY, **query: str
) -> dict[str, Any]:
    answer = await http.get(f"{sim.url}{path}", params=query, headers=headers(key))
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


# --- GET /transactions ------------------------------------------------------------------------


async def test_transactions_are_filtered_by_origin_and_the_time_of_making(http, paddle):
    """openapi.yaml list-transactions: ``origin`` (a comma-separated list) and ``created_at``
    ("an RFC 3339 datetime string, or use [LT], [LTE], [GT], or [GTE] operators")."""
    made = await paid(http, paddle)
    at = paddle.transaction(made)["created_at"]
    since = await listed(http, paddle, "/transactions", origin="api", **{"created_at[GTE]": at})
    assert [t["id"] for t in since["data"]] == [made]
    assert (await listed(http, paddle, "/transactions", **{"created_at[GT]": at}))["data"] == []
    before = await listed(http, paddle, "/transactions", **{"created_at[LT]": at})
    assert before["data"] == []
    assert (await listed(http, paddle, "/transactions", created_at=at))["data"] != []
    assert (await listed(http, paddle, "/transactions", origin="web"))["data"] == []
    bad = await http.get(
        f"{paddle.url}/transactions", params={"created_at[GTE]": "yesterday"}, headers=headers()
    )
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_field"


# --- GET /adjustments -------------------------------------------------------------------------


async def test_adjustments_are_filtered_by_transaction_action_and_status(http, paddle):
    one, other = await paid(http, paddle), await paid(http, paddle)
    approved = await paddle.refund(one, 100)
    rejected = await paddle.refund(one, 100, approve=False)
    await paddle.reject_refund(rejected)
    chargeback = await paddle.chargeback(one, 300)
    elsewhere = await paddle.refund(other, 100)
    of_one = await listed(http, paddle, "/adjustments", transaction_id=one)
    assert {a["id"] for a in of_one["data"]} == {approved, rejected, chargeback}
    refunds = await listed(http, paddle, "/adjustments", transaction_id=one, action="refund")
    assert {a["id"] for a in refunds["data"]} == {approved, rejected}
    both = await listed(http, paddle, "/adjustments", transaction_id=f"{one},{other}")
    assert elsewhere in {a["id"] for a in both["data"]} and len(both["data"]) == 4
    by_status = await listed(http, paddle, "/adjustments", status="rejected,reversed")
    assert [a["id"] for a in by_status["data"]] == [rejected]
    by_id = await listed(http, paddle, "/adjustments", id=chargeback)
    assert [a["action"] for a in by_id["data"]] == ["chargeback"]
    customer = paddle.transaction(one)["customer_id"]
    assert len((await listed(http, paddle, "/adjustments", customer_id=customer))["data"]) == 3
    # another account sees none of them
    assert (await listed(http, paddle, "/adjustments", key="pdl_sdbx_apikey_other"))["data"] == []
    many = await http.get(
        f"{paddle.url}/adjustments", params={"action": "refund,chargeback"}, headers=headers()
    )
    assert many.status_code == 400 and many.json()["error"]["code"] == "invalid_field"


async def test_adjustments_page_newest_first_by_after(http, paddle):
    txn = await paid(http, paddle)
    made = [await paddle.refund(txn, 10) for _ in range(23)]
    first = await listed(http, paddle, "/adjustments")
    pagination = first["meta"]["pagination"]
    assert len(first["data"]) == 10 and pagination["per_page"] == 10  # the default
    assert pagination["has_more"] is True and pagination["estimated_total"] == 23
    seen = [a["id"] for a in first["data"]]
    following = pagination["next"]
    while True:
        after = parse_qs(urlsplit(following).query)["after"][0]
        page = await listed(http, paddle, "/adjustments", after=after)
        seen += [a["id"] for a in page["data"]]
        following = page["meta"]["pagination"]["next"]  # always given
        if not page["meta"]["pagination"]["has_more"]:
            break
    assert seen == sorted(made, reverse=True)  # order_by id[DESC], the default
    oldest = await listed(http, paddle, "/adjustments", order_by="id[ASC]", per_page="500")
    assert [a["id"] for a in oldest["data"]] == sorted(made)
    assert oldest["meta"]["pagination"]["per_page"] == 50  # "Paddle returns the maximum"
    for query in ({"order_by": "created_at[ASC]"}, {"per_page": "0"}, {"per_page": "ten"}):
        refused = await http.get(f"{paddle.url}/adjustments", params=query, headers=headers())
        assert refused.status_code == 400, query


# --- chargebacks, warnings and their reversals -----------------------------------------------


async def test_chargebacks_in_part_warnings_and_reversals(http, paddle, receiver):
    app, url = receiver
    paddle.register_destination(KEY, url)
    txn = await paid(http, paddle)
    warning = await paddle.chargeback_warning(txn)
    await paddle.chargeback_warning_reverse(txn)
    chargeback = await paddle.chargeback(txn, 400)
    reverse = await paddle.chargeback_reverse(txn)
    sent = [json.loads(b)["data"] for _, b in app.got[-4:]]
    assert app.types()[-4:] == ["adjustment.created"] * 4  # Paddle updates only refunds
    assert [(a["action"], a["totals"]["total"], a["status"]) for a in sent] == [
        ("chargeback_warning", "1000", "approved"),
        ("chargeback_warning_reverse", "1000", "approved"),
        ("chargeback", "400", "approved"),
        ("chargeback_reverse", "400", "approved"),
    ]
    assert sent[2]["type"] == "partial" and sent[0]["type"] == "full"
    assert paddle.adjustment(chargeback)["status"] == "reversed"
    assert paddle.adjustment(warning)["status"] == "approved"  # not documented: left as made
    assert paddle.adjustment(reverse)["transaction_id"] == txn
    # a refund is still possible after all of it
    assert await paddle.refund(txn, 1000)


# --- GET /events -------------------------------------------------------------------------------


async def test_events_are_the_event_stream_filtered_and_paged(http, paddle):
    for _ in range(3):
        await paid(http, paddle)
    everything = await listed(http, paddle, "/events")
    assert len(everything["data"]) == 9  # created, paid, completed, three times
    assert everything["meta"]["pagination"]["per_page"] == 50
    event = everything["data"][0]
    assert set(event) == {"event_id", "event_type", "occurred_at", "data"}  # schema ``event``
    ids = [e["event_id"] for e in everything["data"]]
    assert ids == sorted(ids, reverse=True)
    only = await listed(
        http, paddle, "/events", event_type="transaction.paid,transaction.completed"
    )
    assert {e["event_type"] for e in only["data"]} == {"transaction.paid", "transaction.completed"}
    assert len(only["data"]) == 6
    two = await listed(http, paddle, "/events", per_page="2", order_by="id[ASC]")
    assert [e["event_id"] for e in two["data"]] == sorted(ids)[:2]
    assert two["meta"]["pagination"]["has_more"] is True
    big = await listed(http, paddle, "/events", per_page="1000")
    assert big["meta"]["pagination"]["per_page"] == 200


# --- GET /subscriptions/{id} ---------------------------------------------------------------------


async def test_a_subscription_is_read_by_its_account(http, paddle):
    txn = await paid(http, paddle, cycle=True)
    sub_id = str(paddle.transaction(txn)["subscription_id"])
    read = await http.get(f"{paddle.url}/subscriptions/{sub_id}", headers=headers())
    assert read.status_code == 200 and read.json()["data"] == paddle.subscription(sub_id)
    other = await http.get(
        f"{paddle.url}/subscriptions/{sub_id}", headers=headers("pdl_sdbx_apikey_other")
    )
    assert (other.status_code, other.json()["error"]["code"]) == (404, "not_found")


# --- failures on demand ----------------------------------------------------------------------


async def test_a_rate_limit_answers_429_with_retry_after(http, paddle):
    paddle.rate_limit(times=2, retry_after_s=12)
    for _ in range(2):
        limited = await http.get(f"{paddle.url}/events", headers=headers())
        assert limited.status_code == 429 and limited.headers["retry-after"] == "12"
        error = limited.json()["error"]
        assert (error["type"], error["code"]) == ("api_error", "too_many_requests")
        assert "Retry-After" in error["detail"]
    assert (await http.get(f"{paddle.url}/events", headers=headers())).status_code == 200


async def test_a_credit_balance_pays_part(http, paddle):
    made = await http.post(
        f"{paddle.url}/transactions",
        json={
            "items": [
                {
                    "quantity": 1,
                    "price": {
                        "description": "Plan",
                        "unit_price": {"amount": "1000", "currency_code": "EUR"},
                        "product": {"name": "Plan", "tax_category": "standard"},
                    },
                }
            ]
        },
        headers=headers(),
    )
    txn = made.json()["data"]["id"]
    await paddle.pay(txn, credit=250)
    totals = paddle.transaction(txn)["details"]["totals"]
    assert (totals["total"], totals["credit"], totals["grand_total"], totals["balance"]) == (
        "1000",
        "250",
        "750",
        "0",
    )
    assert paddle.transaction(txn)["payments"][0]["amount"] == "750"


# --- webhook faults ----------------------------------------------------------------------------


async def verify(secret: str, got_headers: dict[str, str], body: bytes) -> str:
    async with httpx.AsyncClient() as unused:
        return await PADDLE.verify_webhook(
            Delivery(got_headers, body, {"test": {"webhookSecret": secret}}, time.time(), unused)
        )


async def test_webhooks_are_dropped_held_or_missigned_as_asked(http, paddle, receiver):
    app, url = receiver
    secret = paddle.register_destination(KEY, url)
    paddle.webhook_faults.drop(types=("transaction.created",))
    paddle.webhook_faults.hold(types=("transaction.paid",))
    paddle.webhook_faults.missign(types=("transaction.completed",))
    txn = await paid(http, paddle)
    assert app.types() == ["transaction.completed"]
    got_headers, body = app.got[0]
    with pytest.raises(SignatureInvalid):
        await verify(secret, got_headers, body)
    assert await verify(WRONG_SECRET, got_headers, body) == "test"
    assert [event["event_type"] for _, event in paddle.held] == ["transaction.paid"]
    await paddle.release()
    assert app.types()[-1] == "transaction.paid" and paddle.held == []
    assert await verify(secret, *app.got[-1]) == "test"
    # the dropped event is in the event stream all the same
    stream = await listed(http, paddle, "/events", event_type="transaction.created")
    assert [e["data"]["id"] for e in stream["data"]] == [txn]
    assert paddle.webhook_faults.dropped == 1 and paddle.webhook_faults.missigned == 1


async def test_paused_deliveries_are_held_and_released_by_either_name(http, paddle, receiver):
    app, url = receiver
    paddle.register_destination(KEY, url)
    paddle.deliveries_paused = True
    await paid(http, paddle)
    assert app.got == [] and len(paddle.held) == 3
    paddle.deliveries_paused = False
    await paddle.release_held()
    assert app.types() == ["transaction.created", "transaction.paid", "transaction.completed"]
