"""The simulators' faults (edge.sim.faults): a request is carried out in full, and then its
answer is lost as asked; a sender's deliveries are dropped, held or mis-signed as asked."""

from __future__ import annotations

import httpx
import pytest
from quart import jsonify
from quart_trio import QuartTrio

from edge.sim.faults import (
    DROP,
    HOLD,
    LOST_5XX,
    LOST_DROPPED,
    LOST_LATE,
    MISSIGN,
    SEND,
    WebhookFaults,
)
from edge.sim.loopback import LoopbackServer


class Counter(LoopbackServer):
    """A provider that counts what it was asked to do."""

    def __init__(self) -> None:
        self.done = 0
        app = QuartTrio(__name__)
        app.add_url_rule("/things", view_func=self._make, methods=["POST"])
        super().__init__(app)

    async def _make(self):  # type: ignore[no-untyped-def]
        self.done += 1
        return jsonify({"id": f"thing_{self.done}"}), 201


@pytest.mark.parametrize("how", [LOST_DROPPED, LOST_5XX, LOST_LATE])
async def test_the_request_is_carried_out_and_its_answer_lost(how):
    server = Counter()
    async with server.serving() as url, httpx.AsyncClient(base_url=url, timeout=1.0) as http:
        server.faults.lose("POST", "/things", how)
        if how == LOST_5XX:
            answer = await http.post("/things")
            assert answer.status_code == 502
        else:
            with pytest.raises(httpx.HTTPError):
                await http.post("/things")
        assert (server.done, server.faults.lost) == (1, 1)
        # only the next one: the one after is answered
        answer = await http.post("/things")
        assert (answer.status_code, answer.json()) == (201, {"id": "thing_2"})


async def test_a_loss_matches_by_method_and_path_and_counts_down():
    server = Counter()
    async with server.serving() as url, httpx.AsyncClient(base_url=url, timeout=1.0) as http:
        server.faults.lose("GET", "/things", LOST_5XX)
        server.faults.lose("POST", "/other", LOST_5XX)
        assert (await http.post("/things")).status_code == 201
        server.faults.lose("POST", "/thi", LOST_5XX, times=2)
        assert [(await http.post("/things")).status_code for _ in range(3)] == [502, 502, 201]


def test_an_unknown_loss_is_refused():
    with pytest.raises(ValueError, match="unknown loss"):
        Counter().faults.lose("POST", "/things", "vanished")


def test_webhook_verdicts_follow_their_rules_in_order():
    faults = WebhookFaults()
    assert faults.verdict("a") == SEND
    faults.drop(types=("a",), times=2)
    faults.hold(types=("b",))
    faults.missign(times=1)
    assert [faults.verdict(t) for t in ("a", "b", "a", "a", "c", "c", "b")] == [
        DROP, HOLD, DROP, MISSIGN, SEND, SEND, HOLD,
    ]  # fmt: skip
    assert (faults.dropped, faults.missigned) == (2, 1)
    faults.clear()
    assert faults.verdict("b") == SEND
