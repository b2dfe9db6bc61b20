"""CONTRACT 7 through a real node: the framework's own refusals (404, 405, 413, 415) and the
domain's invalid input leave Quart as contract errors, and an unexpected fault is 500 internal
with the request id and without a trace."""

from __future__ import annotations

import logging

from support.client import bearer, manual_shop

from edge.errors import ContractError, NotFound
from edge.http import bodies
from edge.http.errors import STATUS, status_of
from edge.store import keys


def test_every_contract_error_has_one_status():
    assert status_of(NotFound("project_not_found", "No.")) == 404
    assert status_of(ContractError("odd", "Unmapped.")) == 500
    assert len(set(STATUS.values())) == len(STATUS)


async def test_framework_errors_use_the_envelope(http, admin, envelope):
    shop = await manual_shop(admin)
    envelope(await http.get("/no/such/path"), 404, "not_found")
    refused = await http.delete(f"/api/checkout/manual/{shop.project_id}")
    envelope(refused, 405, "method_not_allowed")
    assert "POST" in refused.headers["allow"]
    envelope(
        await http.post(
            f"/api/checkout/manual/{shop.project_id}",
            content=b"{}",
            headers={"content-type": "text/plain"},
        ),
        415,
        "unsupported_media_type",
    )
    big = b'{"productId": "book", "metadata": {"x": "' + b"a" * 20_000 + b'"}}'
    envelope(
        await http.post(
            f"/api/checkout/manual/{shop.project_id}",
            content=big,
            headers={"content-type": "application/json"},
        ),
        413,
        "payload_too_large",
    )
    # the domain's InvalidInput, raised in a handler
    invalid = await http.post(
        f"/api/checkout/manual/{shop.project_id}", json={"productId": "book", "quantity": 0}
    )
    assert envelope(invalid, 400, "invalid_request")["field"] == "quantity"


async def test_a_streamed_json_body_is_cut_off_at_16_kib(node, admin, chunked):
    shop = await manual_shop(admin)
    path = f"/api/checkout/manual/{shop.project_id}"
    answer = await chunked(node.url, path, b"a" * 1024, 40)
    assert answer.startswith(b"HTTP/1.1 413")


async def test_an_unknown_version_is_refused_on_every_path(http, envelope):
    for path in (
        "/status/prj_aaaaaaaaaaaaaaaa/tx_01M7YS2H2CXEBWK64PPXXP5WHD",
        "/api/projects/prj_aaaaaaaaaaaaaaaa/public-info",
        "/no/such/path",
    ):
        response = await http.get(path, headers={"Cm-Version": "2020-01-01"})
        assert envelope(response, 400, "unknown_version")["field"] == "Cm-Version"


async def test_an_unexpected_fault_is_500_internal_and_the_actor_recovers(
    node, http, admin, envelope
):
    shop = await manual_shop(admin)
    other = await manual_shop(admin)
    pid = shop.project_id
    tx = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()["txId"]
    healthy = (await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})).json()[
        "txId"
    ]
    other_tx = (
        await http.post(f"/api/checkout/manual/{other.project_id}", json={"productId": "book"})
    ).json()["txId"]
    # Corrupt one stored record behind the actor's back, and restart the actor so it reads it.
    await node.ctx.writer.write(
        [("records", keys.record(pid, keys.TRANSACTION, tx), b"\xc1garbage")]
    )
    del node.ctx.registry._entries[pid]  # evicted: the next call loads the actor from the store
    response = await http.post(
        f"/api/projects/{pid}/transactions/{tx}/mark-paid", headers=bearer(shop.live_key)
    )
    error = envelope(response, 500, "internal")
    assert error["requestId"] == response.headers["cm-request-id"]
    assert "Traceback" not in response.text and "garbage" not in response.text
    # the project's actor was rebuilt and serves its other transactions; other projects unaffected
    assert (await http.get(f"/status/{pid}/{healthy}")).json()["status"] == "pending"
    assert (await http.get(f"/status/{other.project_id}/{other_tx}")).json()["status"] == "pending"
    assert node.ctx.registry.restarts >= 1


async def test_a_bug_in_a_quart_handler_is_logged_once_and_answered_500(
    admin, http, envelope, monkeypatch, caplog
):
    shop = await manual_shop(admin)

    def broken(body: object) -> dict:
        raise KeyError("secret-detail")

    monkeypatch.setattr(bodies, "checkout", broken)
    caplog.set_level(logging.ERROR)
    response = await http.post(f"/api/checkout/manual/{shop.project_id}", json={"productId": "b"})
    error = envelope(response, 500, "internal")
    assert error["requestId"] == response.headers["cm-request-id"]
    assert "secret-detail" not in response.text
    faults = [r for r in caplog.records if r.exc_info is not None]
    assert len(faults) == 1 and faults[0].exc_info[0] is KeyError
    assert response.headers["cm-request-id"] in faults[0].getMessage()
