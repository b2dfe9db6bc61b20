"""What an endpoint is owed and when (CONTRACT 4.8)."""

from __future__ import annotations

from edge.domain import notifications as n


def test_the_schedule_is_standard_webhooks():
    # at once, then 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h
    assert [n.next_try_s(i) for i in range(8)] == [5, 300, 1800, 7200, 18000, 36000, 36000, None]


def test_an_endpoint_takes_its_mode_and_its_types():
    assert n.wants((), False, "live", "payment.succeeded")
    assert not n.wants((), True, "live", "payment.succeeded")
    assert n.wants((), True, "test", "checkout.created")
    assert n.wants(("payment.succeeded",), False, "live", "payment.succeeded")
    assert not n.wants(("payment.succeeded",), False, "live", "checkout.created")


def test_success_is_2xx_only():
    assert [n.succeeded(s) for s in (200, 204, 299, 300, 302, 410, 500, None)] == [
        True, True, True, False, False, False, False, False,
    ]  # fmt: skip


def test_gone_disables_at_once_and_five_days_of_failure_disable():
    day = 24 * 3600 * 1000
    assert n.disable_reason(410, None, 0) == "the endpoint answered 410 Gone"
    assert n.disable_reason(500, None, 10 * day) is None
    assert n.disable_reason(500, 0, 5 * day - 1) is None
    assert n.disable_reason(None, 0, 5 * day) == "the endpoint has failed for 5 days"


def test_health_changes_only_when_an_attempt_says_something_new():
    day = 24 * 3600 * 1000
    assert n.health_after(True, 200, None, 10) is None  # healthy, still healthy
    assert n.health_after(True, 204, 5, 10) == (None, None)  # failing, now healthy
    assert n.health_after(False, 500, None, 10) == (10, None)  # starts failing now
    assert n.health_after(False, 500, 5, 10) is None  # still failing, not for 5 days
    assert n.health_after(False, None, 0, 5 * day) == (0, "the endpoint has failed for 5 days")
    assert n.health_after(False, 410, None, 10) == (None, "the endpoint answered 410 Gone")


def _endpoint(*types: str) -> dict[str, object]:
    return {"id": "we_1", "mode": "test", "types": list(types), "enabled": True}


def test_an_entry_goes_only_while_its_event_is_of_a_type_the_endpoint_takes():
    """Queued under one type and changed before it went out (matched; a refund's word
    settled): it goes as what it became where the endpoint takes that, not at all where it
    does not or where it became a repeat of a change already told; a replay (no type kept)
    goes as asked."""
    both = _endpoint("unmatched", "payment.disputed")
    only = _endpoint("unmatched")
    matched = {"type": "payment.disputed", "isTest": True}
    assert n.still_wanted("unmatched", both, matched)
    assert not n.still_wanted("unmatched", only, matched)
    assert not n.still_wanted("unmatched", both, matched | {"duplicateOf": "evt_1"})
    assert n.still_wanted(None, only, matched)
    assert n.still_wanted("unmatched", only, {"type": "unmatched", "isTest": True})
    partial = _endpoint("payment.partially_refunded")
    refunded = {"type": "payment.refunded", "isTest": True}
    assert not n.still_wanted("payment.partially_refunded", partial, refunded)
    assert n.still_wanted("payment.partially_refunded", _endpoint(), refunded)


def test_what_may_be_told_again_under_another_type():
    """Unmatched (matched later), or a refund held until its payment (its word, all or part,
    settled when it applies); nothing else."""
    assert n.may_change({"type": "unmatched"})
    held = {"type": "payment.partially_refunded", "txId": "tx_1", "appliedAt": None}
    assert n.may_change(held)
    assert not n.may_change(held | {"appliedAt": 5})
    assert not n.may_change({"type": "payment.succeeded", "txId": "tx_1", "appliedAt": None})
    assert n.may_have_changed(held | {"appliedAt": 5, "type": "payment.refunded"})
    assert n.may_have_changed({"type": "payment.disputed", "matchedAt": 5})
    assert not n.may_have_changed({"type": "payment.succeeded", "appliedAt": 5})
