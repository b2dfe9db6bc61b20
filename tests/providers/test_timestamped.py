"""The timestamped signature scheme's window (CONTRACT 4.3): 300 seconds either way, compared
in whole seconds (the second the node's clock is in): 301 s is out, 300.9 s in."""

from __future__ import annotations

import pytest

from edge.providers.base import SignatureInvalid
from edge.providers.paddle.signature import PADDLE
from edge.providers.stripe.signature import sign_header, verify

SECRET = "whsec_window_0123456789"
BODY = b'{"id": "evt_window"}'
SIGNED_AT = 1_800_000_000


@pytest.mark.parametrize("offset", [0, 299.99, 300, 300.01, 300.99, -300, -299.5, 0.5])
def test_up_to_300_seconds_either_way_is_in(offset: float) -> None:
    PADDLE.verify(PADDLE.sign_header(SECRET, BODY, SIGNED_AT), BODY, [SECRET], SIGNED_AT + offset)


@pytest.mark.parametrize(
    ("offset", "said"),
    [
        (301, "301 seconds old"),
        (301.5, "301 seconds old"),
        (-300.5, "301 seconds in the future"),
        (-301, "301 seconds in the future"),
        (-3600, "3600 seconds in the future"),
    ],
)
def test_past_300_seconds_is_out_and_says_by_how_much(offset: float, said: str) -> None:
    header = PADDLE.sign_header(SECRET, BODY, SIGNED_AT)
    with pytest.raises(SignatureInvalid) as caught:
        PADDLE.verify(header, BODY, [SECRET], SIGNED_AT + offset)
    assert caught.value.reason == "timestamp_out_of_tolerance"
    assert said in caught.value.message


def test_stripe_keeps_the_same_window() -> None:
    header = sign_header(SECRET, BODY, SIGNED_AT)
    verify(header, BODY, [SECRET], SIGNED_AT + 300.5)
    with pytest.raises(SignatureInvalid):
        verify(header, BODY, [SECRET], SIGNED_AT + 301)
