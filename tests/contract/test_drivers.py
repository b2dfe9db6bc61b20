"""The contract suite covers every provider the node registers: a provider added to
``edge.providers.registry`` without a driver in tests/contract/drivers.py fails here (and its
contract tests fail, since the suite runs for every registered provider)."""

from __future__ import annotations

from contract.drivers import DRIVERS, UNDRIVEN, driven, uncovered

from edge.providers.registry import PROVIDERS


def test_every_registered_provider_has_a_contract_driver() -> None:
    assert uncovered(PROVIDERS, DRIVERS, UNDRIVEN) == []
    assert set(DRIVERS) <= set(PROVIDERS), "a driver for a provider the node does not register"
    assert driven() == [name for name in PROVIDERS if name in DRIVERS]


def test_a_sixth_provider_without_a_driver_is_uncovered() -> None:
    registered = [*PROVIDERS, "sixth"]
    assert uncovered(registered, DRIVERS, UNDRIVEN) == ["sixth"]


def test_only_a_provider_that_talks_to_no_provider_goes_without_a_driver() -> None:
    for name in UNDRIVEN:
        adapter = PROVIDERS[name]
        assert adapter.webhook is None and adapter.read_event is None, name
        assert adapter.sync is None and adapter.send_refund is None, name
        assert adapter.list_events is None and not adapter.follow_ups, name
