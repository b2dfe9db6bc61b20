"""The webhook intake on a real store: verification off the actor, deduplication on every id,
refusals kept, the transition applied once and durably."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from actors.project.harness import EchoProvider, delivery
from support.waits import bound
from trio.testing import wait_all_tasks_blocked

from edge.actors import messages as m
from edge.actors import queries
from edge.actors.project.story import STORY_KEPT
from edge.errors import InvalidRequest, NotFound, Unauthorized
from edge.store import keys, outbox


async def _echo_tx(harness):
    project_id = await harness.project("manual", "echo")
    answer = await harness.call(project_id, m.StartCheckout("manual", "book", {}, 1, "test"))
    return project_id, answer["txId"]


async def _echo_owned_tx(harness):
    """A pending transaction that echo deliveries match: its provider object ``c_<tx id>`` is
    linked as a checkout links it (an event only ever matches a transaction of its own provider,
    by an object the node linked)."""
    project_id = await harness.project("echo", "manual")
    answer = await harness.call(project_id, m.StartCheckout("manual", "book", {}, 1, "test"))
    ledger = harness.ledger(project_id)
    tx = await ledger.tx(answer["txId"])
    tx["provider"] = "echo"
    tx["providerRef"] = f"c_{tx['id']}"
    ops = ledger.tx_ops(tx)
    ops.append(ledger.index_op(keys.PROVIDER_REF, "echo", tx["providerRef"], tx["id"]))
    await ledger.submit(ops).wait()
    return project_id, ledger, tx


async def test_a_verified_delivery_moves_its_transaction_after_the_commit(harness, echo):
    project_id = await harness.project("echo")
    answer = await harness.call(project_id, delivery(id="evt_1", type="unmatched"))
    assert answer["duplicate"] is False
    stored = await harness.ctx.store.get(keys.record(project_id, keys.EVENT, answer["eventId"]))
    assert (stored["providerEventId"], stored["isTest"]) == ("evt_1", True)


async def test_every_dedup_id_is_kept_and_any_of_them_finds_the_first(harness, echo):
    project_id = await harness.project("echo")
    first = await harness.call(project_id, delivery(id="a", dedupIds=["a", "b"]))
    again = await harness.call(project_id, delivery(id="c", dedupIds=["c", "b"]))
    assert again == {"received": True, "eventId": first["eventId"], "duplicate": True}
    for dedup_id in ("a", "b"):  # a test-mode delivery's ids are kept in the test space
        raw = await harness.ctx.store.get_raw(
            keys.named(project_id, keys.DEDUP, "echo/test", dedup_id)
        )
        assert raw == first["eventId"].encode()
    assert (
        await harness.ctx.store.get_raw(keys.named(project_id, keys.DEDUP, "echo/test", "c"))
        is None
    )


async def test_a_bad_signature_is_refused_and_kept_with_its_reason(harness, echo):
    project_id = await harness.project("echo")
    with pytest.raises(Unauthorized) as info:
        await harness.call(project_id, delivery(signature="forged", id="evt_1"))
    assert info.value.extra == {"reason": "no_matching_signature"}
    kept = (await queries.rejected_deliveries(harness.ctx, project_id))["items"]
    assert [(r["provider"], r["code"], r["reason"]) for r in kept] == [
        ("echo", "signature_invalid", "no_matching_signature")
    ]


async def test_a_verified_body_that_is_no_event_is_refused_as_malformed(harness, echo):
    project_id = await harness.project("echo")
    with pytest.raises(InvalidRequest) as info:
        await harness.call(project_id, m.Webhook("echo", {"x-signature": "ok"}, b"[]"))
    assert info.value.code == "malformed_payload"


async def test_an_overlong_id_is_refused_for_good_and_spares_its_neighbours(harness, echo):
    project_id = await harness.project("echo")
    answers: list[object] = []

    async def send(event_id: str) -> None:
        try:
            answers.append(await harness.call(project_id, delivery(id=event_id, type="unmatched")))
        except InvalidRequest as refused:
            answers.append(refused.code)

    async with trio.open_nursery() as nursery:  # one group commit for all of them
        for n in range(10):
            nursery.start_soon(send, "x" * 600 if n % 3 == 0 else f"evt_{n}")
    assert answers.count("malformed_payload") == 4
    assert sum(1 for a in answers if isinstance(a, dict) and not a["duplicate"]) == 6
    kept = (await queries.rejected_deliveries(harness.ctx, project_id))["items"]
    assert {r["code"] for r in kept} == {"malformed_payload"} and len(kept) == 4


async def test_a_provider_not_enabled_is_refused_before_verification(harness, echo):
    project_id = await harness.project()
    with pytest.raises(NotFound) as info:
        await harness.call(project_id, delivery(id="evt_1"))
    assert info.value.code == "provider_not_enabled"


async def test_verification_runs_off_the_actor(harness, echo):
    project_id, tx_id = await _echo_tx(harness)
    EchoProvider.gate = gate = trio.Event()
    answers = []

    async def deliver() -> None:
        answers.append(await harness.call(project_id, delivery(id="evt_1")))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(deliver)
        await wait_all_tasks_blocked()
        # the actor is not held up by the verification: other messages are answered meanwhile
        project = await harness.call(project_id, m.GetProject())
        assert project["id"] == project_id and answers == []
        gate.set()
    assert answers[0]["duplicate"] is False


async def test_a_provider_turned_off_during_the_check_is_answered_at_once(harness, echo):
    project_id = await harness.project("echo")
    EchoProvider.gate = gate = trio.Event()
    refused: list[NotFound] = []

    async def deliver() -> None:
        with pytest.raises(NotFound) as info:
            await harness.call(project_id, delivery(id="evt_1"))
        refused.append(info.value)

    with trio.fail_after(bound(5)):  # not the registry's 30 s call timeout
        async with trio.open_nursery() as nursery:
            nursery.start_soon(deliver)
            await wait_all_tasks_blocked()
            off = {"enabled": False, "label": None, "order": None}
            await harness.call(project_id, m.PutProvider("echo", off))
            gate.set()
    assert refused[0].code == "provider_not_enabled"
    stored = await harness.ctx.store.get_raw(keys.named(project_id, keys.DEDUP, "echo", "evt_1"))
    assert stored is None


async def test_the_transition_is_applied_once_for_concurrent_duplicates(harness, echo):
    project_id, ledger, tx = await _echo_owned_tx(harness)
    EchoProvider.gate = gate = trio.Event()
    answers = []

    async def deliver() -> None:
        answers.append(
            await harness.call(
                project_id, delivery(id="evt_1", refs=[tx["providerRef"]], status="succeeded")
            )
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(deliver)
        nursery.start_soon(deliver)
        await wait_all_tasks_blocked()
        gate.set()
    assert sorted(a["duplicate"] for a in answers) == [False, True]
    assert len({a["eventId"] for a in answers}) == 1
    stored = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, tx["id"]))
    assert (stored["status"], stored["version"]) == ("succeeded", 2)
    usage = await harness.call(project_id, m.GetUsage())
    assert usage["test"]["used"] == 1


async def test_follow_ups_are_written_with_their_event(harness, echo):
    project_id, ledger, tx = await _echo_owned_tx(harness)
    await harness.call(
        project_id, delivery(id="evt_1", refs=[tx["providerRef"]], followUps=["capture"])
    )
    # durable before the delivery was answered
    (entry,) = await outbox.due(harness.ctx.store, harness.ctx.clock_ms(), limit=10)
    assert (entry["projectId"], entry["txId"], entry["provider"], entry["mode"]) == (
        project_id,
        tx["id"],
        "echo",
        "test",
    )
    assert (entry["action"], entry["state"], entry["attempts"]) == ("capture", "pending", 0)
    # an event that matches no transaction owes nothing
    await harness.call(project_id, delivery(id="evt_2", followUps=["capture"]))
    assert len(await outbox.due(harness.ctx.store, harness.ctx.clock_ms(), limit=10)) == 1


async def test_a_step_repeated_under_new_ids_is_kept_once_in_the_story(harness, echo):
    project_id, ledger, tx = await _echo_owned_tx(harness)
    for n in range(30):  # a provider's redeliveries of one fact, each under a new event id
        await harness.call(
            project_id,
            delivery(id=f"evt_{n}", refs=[tx["providerRef"]], status="succeeded", at=1000),
        )
    refund = delivery(
        id="evt_r", refs=[tx["providerRef"]], status="refunded", type="payment.refunded", at=9
    )
    await harness.call(project_id, refund)  # stamped before the payment: held, then applied
    stored = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, tx["id"]))
    assert [(e["t"], e["f"]) for e in stored["story"]] == [
        ("payment.refunded", "a"),
        ("payment.succeeded", "a"),
    ]
    assert (stored["status"], stored["version"]) == ("refunded", 3)


async def test_a_long_story_folds_its_older_half_into_its_start(harness, echo):
    project_id, ledger, tx = await _echo_owned_tx(harness)
    for n in range(STORY_KEPT + 1):  # each a step of its own: another time
        await harness.call(
            project_id,
            delivery(id=f"evt_{n}", refs=[tx["providerRef"]], status="succeeded", at=1000 + n),
        )
    stored = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, tx["id"]))
    assert len(stored["story"]) == STORY_KEPT // 2 + 1
    assert stored["storyStart"] == {
        "status": "succeeded",
        "version": 2,
        "sub": None,
        "subVersion": 0,
        "refunded": 0,
        "refunds": [],
        "charged": None,
    }
    refund = delivery(
        id="evt_r",
        refs=[tx["providerRef"]],
        status="refunded",
        type="payment.refunded",
        at=9_000_000,
    )
    await harness.call(project_id, refund)
    stored = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, tx["id"]))
    assert (stored["status"], stored["version"]) == ("refunded", 3)


async def test_an_unmatched_event_is_matched_by_its_own_mode_only(harness, echo):
    project_id, ledger, tx = await _echo_owned_tx(harness)  # a test-mode transaction
    refund = {"status": "refunded", "type": "payment.refunded", "at": 50, "refs": ["pi_1"]}
    live = await harness.call(project_id, delivery(id="evt_live", mode="live", **refund))
    test = await harness.call(project_id, delivery(id="evt_test", **refund))
    paid = delivery(
        id="evt_paid", refs=[tx["providerRef"]], status="succeeded", at=10, linkRefs=["pi_1"]
    )
    await harness.call(project_id, paid)

    def stored(answer):
        return harness.ctx.store.get_sync(keys.record(project_id, keys.EVENT, answer["eventId"]))

    assert (stored(test)["type"], stored(test)["txId"]) == ("payment.refunded", tx["id"])
    assert (stored(live)["type"], stored(live)["txId"]) == ("unmatched", None)
    waiting = await harness.ctx.store.get_raw(keys.named(project_id, keys.WAITING, "echo", "pi_1"))
    assert waiting == live["eventId"].encode()  # still waiting for a live transaction
    record = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, tx["id"]))
    assert (record["status"], record["version"]) == ("refunded", 3)


async def test_the_same_effect_under_another_id_shares_its_steps_fate_and_moves_nothing(
    harness, echo
):
    project_id, ledger, tx = await _echo_owned_tx(harness)
    store = harness.ctx.store

    async def send(event_id: str, status: str, at: int, repeat: bool = False) -> dict[str, Any]:
        answer = await harness.call(
            project_id,
            delivery(
                id=event_id, refs=[tx["providerRef"]], status=status, type=f"payment.{status}",
                at=at,
            ),
        )  # fmt: skip
        # a repeat of a change already told is answered as a duplicate of the first event
        assert answer["duplicate"] is repeat
        stored = await store.get(keys.record(project_id, keys.EVENT, answer["eventId"]))
        record = await store.get(keys.record(project_id, keys.TRANSACTION, tx["id"]))
        return {"applied": stored["appliedAt"] is not None, "first": answer["eventId"], **record}

    refund = await send("evt_r1", "refunded", 2_000)  # before its payment: held
    assert (refund["applied"], refund["status"], len(refund["story"])) == (False, "pending", 1)
    again = await send("evt_r2", "refunded", 2_000, repeat=True)
    assert (again["applied"], again["status"], len(again["story"])) == (False, "pending", 1)
    assert again["first"] == refund["first"]
    paid = await send("evt_p1", "succeeded", 1_000)  # the refund follows it
    assert (paid["applied"], paid["status"], len(paid["story"])) == (True, "refunded", 2)
    repeat = await send("evt_p2", "succeeded", 1_000, repeat=True)
    assert (repeat["applied"], repeat["status"]) == (True, "refunded")
    assert (repeat["version"], repeat["story"]) == (paid["version"], paid["story"])


async def test_a_test_event_never_shadows_a_live_one_with_the_same_id(harness, echo):
    """CONTRACT 4.3: deduplication is scoped by mode. A test-signed event carrying a live
    event's id (anyone with the test secret can send one) must not make the real live
    delivery a duplicate."""
    project_id = await harness.project("echo")
    body = {"id": "evt_same", "type": "unmatched"}
    test = await harness.call(project_id, delivery(mode="test", **body))
    live = await harness.call(project_id, delivery(mode="live", **body))
    assert live["duplicate"] is False and live["eventId"] != test["eventId"]
    again = await harness.call(project_id, delivery(mode="live", **body))
    assert (again["duplicate"], again["eventId"]) == (True, live["eventId"])
    test_again = await harness.call(project_id, delivery(mode="test", **body))
    assert (test_again["duplicate"], test_again["eventId"]) == (True, test["eventId"])


async def test_a_test_event_kept_before_the_modes_had_spaces_is_still_a_duplicate(harness, echo):
    project_id = await harness.project("echo")
    ledger = harness.ledger(project_id)
    first = await harness.call(project_id, delivery(mode="test", id="evt_old", type="unmatched"))
    # as a node before the split kept it: under the provider's own name
    moved = [
        ledger.unindex_op(keys.DEDUP, "echo/test", "evt_old"),
        ledger.index_op(keys.DEDUP, "echo", "evt_old", first["eventId"]),
    ]
    await ledger.submit(moved).wait()
    again = await harness.call(project_id, delivery(mode="test", id="evt_old", type="unmatched"))
    assert (again["duplicate"], again["eventId"]) == (True, first["eventId"])
    live = await harness.call(project_id, delivery(mode="live", id="evt_old", type="unmatched"))
    assert live["duplicate"] is False  # a test event never shadows a live one


async def test_an_event_before_the_providers_answer_waits_for_it(harness, echo):
    """The provider's event may come before its answer to the checkout call is applied (a fast
    webhook, a slow answer): it waits unmatched under the object it names, and the answer that
    links the object folds it in."""
    project_id = await harness.project("echo")
    early = await harness.call(
        project_id, delivery(id="evt_early", refs=["c_1"], status="succeeded", at=5)
    )
    stored = await harness.ctx.store.get(keys.record(project_id, keys.EVENT, early["eventId"]))
    assert (stored["type"], stored["txId"]) == ("unmatched", None)
    answer = await harness.call(project_id, m.StartCheckout("echo", "book", {}, 1, "test"))
    record = await harness.ctx.store.get(keys.record(project_id, keys.TRANSACTION, answer["txId"]))
    assert (record["providerRef"], record["status"], record["version"]) == ("c_1", "succeeded", 2)
    stored = await harness.ctx.store.get(keys.record(project_id, keys.EVENT, early["eventId"]))
    assert (stored["type"], stored["txId"]) == ("payment.succeeded", answer["txId"])


async def test_an_echoed_id_alone_is_stored_unmatched_with_its_claim(harness, echo):
    project_id, ledger, tx = await _echo_owned_tx(harness)
    answer = await harness.call(
        project_id,
        delivery(id="evt_elsewhere", txId=tx["id"], refs=["c_other"], status="succeeded"),
    )
    stored = await harness.ctx.store.get(keys.record(project_id, keys.EVENT, answer["eventId"]))
    assert (stored["type"], stored["txId"], stored["claimedTxId"]) == ("unmatched", None, tx["id"])
    assert (await ledger.tx(tx["id"]))["status"] == "pending"


async def test_a_mismatched_payment_owes_the_provider_nothing(harness, echo):
    project_id, ledger, tx = await _echo_owned_tx(harness)
    await harness.call(
        project_id,
        delivery(
            id="evt_approved",
            refs=[tx["providerRef"]],
            type="payment.processing",
            followUps=["capture"],
            amount=100,
            currency="EUR",
        ),
    )
    owed = await outbox.due(harness.ctx.store, harness.ctx.clock_ms() + 10**9, 100)
    assert [e["action"] for e in owed if e["txId"] == tx["id"]] == [outbox.EXPIRE]  # its guard
    assert all(e["params"].get(outbox.UNANSWERED) for e in owed)  # no capture for 1.00
    record = await ledger.tx(tx["id"])
    assert record["status"] == "pending" and record["needsAttention"] is True
