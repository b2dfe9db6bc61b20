"""The event feed keeps 90 days: older events go, with their history and every dedup entry."""

from __future__ import annotations

from actors.project.harness import delivery

from edge.actors import messages as m
from edge.store import keys

DAY_MS = 24 * 3600 * 1000


async def test_expired_events_are_pruned_with_every_dedup_id(harness, echo):
    project_id = await harness.project("echo")
    stored = await harness.call(project_id, delivery(id="a", dedupIds=["a", "b"]))
    real = harness.ctx.clock_ms
    harness.ctx.clock_ms = lambda: real() + 91 * DAY_MS
    await harness.call(project_id, m.GetProject())  # any message prunes, now and then
    await harness.ledger(project_id).quiesce()
    store = harness.ctx.store
    assert await store.get_raw(keys.record(project_id, keys.EVENT, stored["eventId"])) is None
    for dedup_id in ("a", "b"):
        assert await store.get_raw(keys.named(project_id, keys.DEDUP, "echo", dedup_id)) is None


async def test_a_pruned_event_is_not_answered_from_memory(harness, echo):
    """The ledger remembers the types of events it read (a provider's repeats name them) and
    the events written lately: a pruned event leaves both."""
    project_id = await harness.project("echo")
    stored = await harness.call(project_id, delivery(id="c"))
    evt_id = stored["eventId"]
    ledger = harness.ledger(project_id)
    await ledger.quiesce()
    assert await ledger.event_type(evt_id) is not None
    real = harness.ctx.clock_ms
    harness.ctx.clock_ms = lambda: real() + 91 * DAY_MS
    await harness.call(project_id, m.GetProject())
    await ledger.quiesce()
    assert await ledger.stored_event(evt_id) is None
    assert await ledger.event_type(evt_id) is None
