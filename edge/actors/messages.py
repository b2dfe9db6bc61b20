"""Messages to a project actor. Frozen: once sent, nobody changes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class GetStatus:
    item_id: str


@dataclass(frozen=True)
class GetPublicInfo:
    product_id: str | None
    mode: str


@dataclass(frozen=True)
class StartCheckout:
    provider: str
    product_id: str
    metadata: dict[str, str]
    quantity: int
    mode: str
    tx_id: str | None = None
    success_url: str | None = None
    cancel_url: str | None = None


@dataclass(frozen=True)
class CheckoutFinished:
    """Sent by the actor's own background task when the provider call returns."""

    tx_id: str
    result: Any  # CheckoutResult or Failure
    reply: Callable[[Any], None]


@dataclass(frozen=True)
class MarkPaid:
    tx_id: str
    mode: str | None  # the key's mode; None for the operator's token
    note: str | None = None


@dataclass(frozen=True)
class CancelTx:
    tx_id: str
    mode: str | None


@dataclass(frozen=True)
class GetProject:
    pass


@dataclass(frozen=True)
class PatchProject:
    changes: dict[str, Any]


@dataclass(frozen=True)
class PutProduct:
    product: dict[str, Any]


@dataclass(frozen=True)
class DeleteProduct:
    product_id: str


@dataclass(frozen=True)
class PutProvider:
    provider: str
    body: dict[str, Any]


@dataclass(frozen=True)
class CreateKey:
    mode: str
    name: str


@dataclass(frozen=True)
class RevokeKey:
    key_id: str


@dataclass(frozen=True)
class Webhook:
    provider: str
    headers: dict[str, str]
    body: bytes = field(repr=False)
