"""A dispute learned by asking, then its webhooks late: told once, the same end, in every
provider that has disputes (CONTRACT 2, 4.3a)."""

from __future__ import annotations

from typing import Any

import pytest
import trio
from contract.drivers import Driver, providers
from support.client import bearer
from support.merchant import Merchant, listening

from edge.sim.paddle import objects as paddle_objects


async def _sync(driver: Driver, tx: str) -> dict[str, Any]:
    synced = await driver.http.post(
        f"/api/projects/{driver.project_id}/transactions/{tx}/sync",
        headers=bearer(driver.test_key),
    )
    assert synced.status_code == 200, synced.text
    return dict(synced.json())


def _rows(record: dict[str, Any]) -> str:
    return "\n".join(
        str((e["type"], e["source"], e.get("duplicateOf"), e["status"], e.get("version")))
        for e in record["events"]
    )


@pytest.mark.parametrize("provider", providers(btcpay="no disputes"))
@pytest.mark.parametrize("won", [True, False])
@pytest.mark.parametrize("ask", [True, False])
async def test_a_dispute_asked_about_then_its_late_webhooks_end_and_are_told_once(
    driver: Driver, won: bool, ask: bool
):
    if driver.name == "paddle" and not won:
        pytest.skip("Paddle's simulator loses no chargeback")
    merchant = Merchant()
    async with trio.open_nursery() as nursery:
        await listening(nursery, merchant, driver.admin, driver.project_id, mode="test")
        made = await driver.checkout()
        await driver.pay(made)
        await driver.until(made.tx, "succeeded")
        if ask:
            driver.sim.webhook_faults.hold()
        await driver.dispute(made)
        await driver.close_dispute(made, won=won)
        want = "succeeded" if won else "refunded"
        if ask:
            view = await _sync(driver, made.tx)
        else:
            view = await driver.until(made.tx, want)
        assert view["status"] == want, _rows(view)
        await driver.release_webhooks()
        await trio.sleep(1.5)
        after = await driver.record(made.tx)
        assert (after["status"], after["version"]) == (want, view["version"]), _rows(after)
        await trio.sleep(1)
        nursery.cancel_scope.cancel()
    told = [e["type"] for e in merchant.events()]
    assert told.count("payment.succeeded") == 1, told
    assert told.count("payment.disputed") == 1, told
    assert told.count("payment.dispute_closed" if won else "payment.refunded") == 1, told


@pytest.mark.parametrize("provider", ["paddle"])
async def test_a_paddle_chargeback_reversed_asked_about_then_late_webhooks_move_nothing(
    driver: Driver,
):
    """Paddle moves a chargeback's ``updated_at`` as it reverses it: asked about, it is still
    the chargeback made before its reversal, and the late webhooks repeat what asking found."""
    made = await driver.checkout()
    await driver.pay(made)
    await driver.until(made.tx, "succeeded")
    driver.sim.webhook_faults.hold()
    chargeback = await driver.sim.chargeback(made.ref)
    await trio.sleep(0.05)
    await driver.sim.chargeback_reverse(made.ref)
    await trio.sleep(0.01)
    driver.sim.adjustment(chargeback)["updated_at"] = paddle_objects.now_iso()
    view = await _sync(driver, made.tx)
    assert view["status"] == "succeeded", _rows(view)
    await driver.release_webhooks()
    await trio.sleep(1)
    after = await driver.record(made.tx)
    assert (after["status"], after["version"]) == ("succeeded", view["version"]), _rows(after)


@pytest.mark.parametrize("provider", ["stripe"])
async def test_a_dispute_opening_asked_about_then_its_webhook_after_the_closing(driver: Driver):
    """A dispute's opening learned by asking (its webhook held), won and told at once; then
    the held ``charge.dispute.created`` arrives, its event stamped after the dispute object
    (Stripe stamps an event when it makes it): the same change, one step, nothing moves."""
    made = await driver.checkout()
    await driver.pay(made)
    await driver.until(made.tx, "succeeded")
    driver.sim.webhook_faults.hold(types=("charge.dispute.created",))
    await driver.dispute(made)
    view = await _sync(driver, made.tx)
    assert view["status"] == "disputed", _rows(view)
    driver.sim.webhook_faults.clear()
    await driver.close_dispute(made, won=True)
    won = await driver.until(made.tx, "succeeded")
    for _, event in driver.sim.held:
        event["created"] += 1
    await driver.release_webhooks()
    await trio.sleep(1)
    after = await driver.record(made.tx)
    assert (after["status"], after["version"]) == ("succeeded", won["version"]), _rows(after)
