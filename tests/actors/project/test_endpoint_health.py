"""An endpoint's health as its actor keeps it from the notifier's reports (CONTRACT 4.8): the
first failure marks it failing, a success clears that, five days failing with no success
disables it, and so does one 410 at once."""

from __future__ import annotations

from typing import Any

from edge.actors import messages as m

DAY_MS = 24 * 3600 * 1000


async def endpoint_of(harness: Any, project_id: str) -> dict[str, Any]:
    (endpoint,) = (await harness.call(project_id, m.ListEndpoints()))["items"]
    return dict(endpoint)


async def test_five_days_failing_disables_an_endpoint_and_a_success_resets_the_count(harness):
    project_id = await harness.project()
    made = await harness.call(project_id, m.CreateEndpoint("http://localhost:9/h", "test", (), ""))
    endpoint_id = made["endpointId"]
    real = harness.ctx.clock_ms
    start = real()

    async def report(days: float, ok: bool, status: int | None) -> dict[str, Any]:
        harness.ctx.clock_ms = lambda: start + int(days * DAY_MS)
        await harness.call(project_id, m.EndpointOutcome(endpoint_id, ok, status))
        return await endpoint_of(harness, project_id)

    failing = await report(0, False, 500)
    assert failing["enabled"] and failing["failingSince"] is not None
    assert (await report(4.9, False, None))["failingSince"] == failing["failingSince"]
    cleared = await report(4.95, True, 200)  # a success: the five days start again
    assert cleared["enabled"] and cleared["failingSince"] is None
    assert (await report(5.0, False, 503))["enabled"]
    assert (await report(9.9, False, 503))["enabled"]
    disabled = await report(10.0, False, 503)
    assert not disabled["enabled"]
    assert disabled["disabledReason"] == "the endpoint has failed for 5 days"
    # a disabled endpoint's late reports change nothing
    assert await report(10.1, True, 200) == disabled


async def test_one_410_disables_an_endpoint_at_once(harness):
    project_id = await harness.project()
    made = await harness.call(project_id, m.CreateEndpoint("http://localhost:9/h", "live", (), ""))
    await harness.call(project_id, m.EndpointOutcome(made["endpointId"], False, 410))
    endpoint = await endpoint_of(harness, project_id)
    assert not endpoint["enabled"]
    assert endpoint["disabledReason"] == "the endpoint answered 410 Gone"
