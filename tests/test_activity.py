"""The activity ring (edge.activity): requests and notification attempts in one order, read
from a sequence number on, oldest first, the oldest dropped past the ring's size."""

from __future__ import annotations

from edge.activity import UNLOGGED, ActivityLog

PROJECT = "prj_0123456789abcdef"


def attempt(n: int) -> dict[str, object]:
    return {
        "projectId": PROJECT,
        "endpointId": "we_1",
        "eventId": f"evt_{n}",
        "number": n,
        "status": 200,
        "outcome": "delivered",
        "durationMs": 3.0,
        "detail": "",
    }


def test_lines_are_read_in_words_in_order_from_a_sequence_number_on():
    log = ActivityLog(lambda: 1_700_000_000_123, size=10)
    log.request("POST", f"/webhook/stripe/{PROJECT}", 200, 0.00123, "req_1")
    log.notification(attempt(1))
    log.request("GET", UNLOGGED, 200, 0.5, "req_2")  # the logs' own long polls: not kept
    log.request("GET", "/health", 200, 0.0001, "req_3")
    assert log.last == 3
    lines = log.after(0, lambda line: True, 10)
    assert [line["seq"] for line in lines] == [1, 2, 3]
    assert lines[0] == {
        "seq": 1,
        "at": "2023-11-14T22:13:20.123Z",
        "kind": "request",
        "projectId": PROJECT,
        "method": "POST",
        "path": f"/webhook/stripe/{PROJECT}",
        "status": 200,
        "durationMs": 1.2,
        "requestId": "req_1",
    }
    assert lines[1]["kind"] == "notification" and lines[1]["eventId"] == "evt_1"
    assert lines[2]["projectId"] is None
    assert [line["seq"] for line in log.after(1, lambda line: True, 10)] == [2, 3]
    mine = log.after(0, lambda line: line["projectId"] == PROJECT, 1)
    assert [line["seq"] for line in mine] == [1]  # up to the limit


def test_the_ring_keeps_only_the_latest_lines():
    log = ActivityLog(lambda: 0, size=3)
    for n in range(5):
        log.request("GET", f"/status/{PROJECT}/tx_{n}", 200, 0.001, f"req_{n}")
    assert [line["seq"] for line in log.after(0, lambda line: True, 10)] == [3, 4, 5]
