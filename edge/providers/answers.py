"""Typed answers: what a provider's successful answer must hold, declared once per answer as a
dataclass, and read by one function (``read``), as BTCPay's Greenfield client reads each answer
into its model class. The one place a provider's answer that lacks what the node needs becomes
the contract's error (CONTRACT 4.3: ``502 provider_error``, "<provider> answered without ...").

A field's annotation says what the value must be: ``str`` a non-empty string, ``int`` an integer
that is not a boolean; ``X | None`` is optional (a value of another shape counts as absent).
``at(...)`` says where the value is when it is not the field's own name at the top (a path into
nested objects, or a function of the whole answer, as PayPal's ``links``), and a prefix a string
must start with (Paddle's ``txn_``). Each answer class states, as ``LACKING``, what the merchant
is told is missing.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, ClassVar, Protocol, TypeVar

from edge.errors import ProviderError
from edge.providers import calls


class Shape(Protocol):
    LACKING: ClassVar[str]  # "a checkout session and its address"


A = TypeVar("A", bound=Shape)


def at(*path: str, read: Callable[[Mapping[str, Any]], Any] | None = None, prefix: str = "") -> Any:
    """Where a field's value is in the answer: ``path`` (keys into nested objects) or ``read``
    (a function of the whole answer); a string value must start with ``prefix``."""
    return dataclasses.field(metadata={"path": path, "read": read, "prefix": prefix})


def read(api: calls.Api | str, body: Mapping[str, Any], shape: type[A]) -> A:
    """``body`` read as ``shape``; ``provider_error`` (retryable, as any answer the node cannot
    use) when a required field is absent or of another shape."""
    values: dict[str, Any] = {}
    for name, (path, reader, prefix, kind, optional) in _fields(shape).items():
        value = reader(body) if reader is not None else _dig(body, path or (name,))
        if not _fits(value, kind, prefix):
            if not optional:
                raise without(api, shape.LACKING)
            value = None
        values[name] = value
    return shape(**values)


def without(api: calls.Api | str, lacking: str) -> ProviderError:
    """The error for a successful answer that lacks what the node needs of it (retryable: the
    same call, idempotent, may be answered in full), where an answer is read by a reader of its
    own (a refund read as the provider's events show it)."""
    provider = api if isinstance(api, str) else api.name
    return calls.provider_error(f"{provider} answered without {lacking}.")


_Field = tuple[tuple[str, ...], Callable[[Mapping[str, Any]], Any] | None, str, type, bool]


@cache
def _fields(shape: type) -> dict[str, _Field]:
    hints = typing.get_type_hints(shape)
    fields: dict[str, _Field] = {}
    for f in dataclasses.fields(shape):
        hint = hints[f.name]
        args = typing.get_args(hint)
        optional = isinstance(hint, types.UnionType) and type(None) in args
        kind = next(a for a in args if a is not type(None)) if optional else hint
        meta = f.metadata
        fields[f.name] = (
            meta.get("path", ()),
            meta.get("read"),
            meta.get("prefix", ""),
            kind,
            optional,
        )
    return fields


def _dig(body: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = body
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def _fits(value: Any, kind: type, prefix: str) -> bool:
    if kind is str:
        return isinstance(value, str) and bool(value) and value.startswith(prefix)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)
