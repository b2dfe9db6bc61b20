"""Typed answers (``edge.providers.answers``): what an answer must hold, read in one place, and
the one error for an answer that lacks it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest

from edge.errors import ProviderError
from edge.providers import answers
from edge.providers.answers import at
from edge.providers.btcpay.api import Invoice
from edge.providers.paddle.api import PortalSession, Transaction
from edge.providers.paypal.api import API as PAYPAL_API
from edge.providers.paypal.api import Order


@dataclass(frozen=True)
class Made:
    LACKING: ClassVar[str] = "a thing and its address"
    id: str
    url: str = at("links", "self")
    size: int | None = at("size")


def test_an_answer_is_read_into_its_fields() -> None:
    made = answers.read("Acme", {"id": "t_1", "links": {"self": "https://x"}, "size": 3}, Made)
    assert made == Made("t_1", "https://x", 3)


@pytest.mark.parametrize(
    "body",
    [
        {"links": {"self": "https://x"}},
        {"id": "", "links": {"self": "https://x"}},
        {"id": 7, "links": {"self": "https://x"}},
        {"id": "t_1", "links": "https://x"},
        {"id": "t_1"},
    ],
)
def test_a_required_field_absent_or_of_another_shape_is_the_one_error(body: dict) -> None:
    with pytest.raises(ProviderError) as caught:
        answers.read("Acme", body, Made)
    assert caught.value.code == "provider_error" and caught.value.retryable
    assert caught.value.message == "Acme answered without a thing and its address."


@pytest.mark.parametrize("size", [True, "3", 3.0, None])
def test_an_optional_field_of_another_shape_counts_as_absent(size: object) -> None:
    body = {"id": "t_1", "links": {"self": "https://x"}, "size": size}
    assert answers.read("Acme", body, Made).size is None


def test_the_providers_answers() -> None:
    assert answers.read("Paddle", {"id": "txn_01"}, Transaction).id == "txn_01"
    with pytest.raises(ProviderError, match="Paddle answered without a transaction id"):
        answers.read("Paddle", {"id": "pri_01"}, Transaction)  # not a transaction's id
    portal = {"urls": {"general": {"overview": "https://p"}}}
    assert answers.read("Paddle", portal, PortalSession).url == "https://p"
    invoice = answers.read(
        "BTCPay Server",
        {"id": "I1", "checkoutLink": "https://b/i/I1", "expirationTime": 9},
        Invoice,
    )
    assert (invoice.checkout_link, invoice.expiration_time) == ("https://b/i/I1", 9)
    links = [{"rel": "self", "href": "https://s"}, {"rel": "payer-action", "href": "https://a"}]
    assert answers.read(PAYPAL_API, {"id": "O1", "links": links}, Order).approve == "https://a"
    with pytest.raises(ProviderError, match="PayPal answered without an order and its approval"):
        answers.read(PAYPAL_API, {"id": "O1", "links": links[:1]}, Order)
