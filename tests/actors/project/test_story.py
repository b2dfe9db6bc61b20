"""What the refund sums and the charged amount read of a story kept on the record: only the
steps that carry them are parsed, and they read the same as from every step."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from edge.actors.project import story
from edge.domain.convergence import Fate, Refund, Step
from edge.domain.events import EventType
from edge.domain.refunds import reported
from edge.domain.status import Status

_KINDS = [
    (EventType.PAYMENT_SUCCEEDED, Status.SUCCEEDED),
    (EventType.PAYMENT_PARTIALLY_REFUNDED, Status.PARTIALLY_REFUNDED),
    (EventType.PAYMENT_REFUNDED, Status.REFUNDED),
    (EventType.PAYMENT_REFUND_FAILED, None),
    (EventType.PAYMENT_DISPUTE_CLOSED, Status.SUCCEEDED),
    (EventType.PAYMENT_DISPUTED, Status.DISPUTED),
]


@st.composite
def steps(draw: st.DrawFn) -> Step:
    kind, status = draw(st.sampled_from(_KINDS))
    refund = None
    if kind != EventType.PAYMENT_SUCCEEDED and draw(st.booleans()):
        refund = Refund(draw(st.integers(1, 5000)), draw(st.sampled_from([None, "re_1", "re_2"])))
    charged = draw(st.one_of(st.none(), st.integers(1, 9000)))
    return Step(
        event_id=f"evt_{draw(st.integers(0, 10**9))}",
        at=draw(st.integers(0, 10_000)),
        type=str(kind),
        payment=status,
        refund=refund,
        charged=charged if kind == EventType.PAYMENT_SUCCEEDED else None,
    )


def _record(kept: list[Step], start: dict[str, object]) -> dict[str, object]:
    stored = [story.Entry(step).stored(Fate.APPLIED) for step in kept]
    return {"amount": 1000, "story": stored, "storyStart": start}


@given(
    st.lists(steps(), max_size=30),
    st.sampled_from([{}, {"refunded": 300}, {"refunds": [["re_0", 200]], "charged": 1200}]),
)
def test_the_refund_sums_and_the_charge_read_as_from_every_step(kept, start):
    tx = _record(kept, start)
    every = [story.entry_of(e).step for e in tx["story"]]
    assert all(step.refund is not None for step in story.refund_steps(tx))
    # the folded start's refunds are steps of their own; the story's own are the refund steps
    from_story = [s for s in story.refund_steps(tx) if not s.event_id.startswith("start")]
    assert from_story == [step for step in every if step.refund is not None]
    folded = [s for s in story.refund_steps(tx) if s.event_id.startswith("start")]
    assert reported(story.refund_steps(tx)) == reported([*folded, *every])
    assert story.reported(tx) == reported([*folded, *every])
    paid = [s.charged for s in every if s.charged is not None and s.payment == Status.SUCCEEDED]
    expected = paid[-1] if paid else start.get("charged", 1000)
    assert story.charged(tx) == expected
