"""JSON checked against the type annotations of the stripe-python SDK.

stripe-python is generated from Stripe's OpenAPI spec for the one API version its release pins
(``stripe._api_version._ApiVersion.CURRENT``): its resource classes (``stripe.checkout.Session``
...) carry the type of every field of an API object, and its ``...CreateParams`` TypedDicts the
parameters a request may send. ``object_issues`` and ``param_issues`` walk a JSON value against
those annotations (``typing.get_type_hints``), nested objects and list items included, and
return one line per finding:

- a key the SDK does not know (``unknown field``);
- a required field (typed without ``Optional``) left out (``missing``), or null;
- a value of the wrong JSON type (a string amount, a number id);
- a string outside the ``Literal[...]`` of an enum, the open ``Literal[...] | str`` enums
  included: the ``str`` there is the SDK's room for values later API versions add, so a value
  the pinned version does not list is flagged.

An empty list means the value has the SDK's shape.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any, Literal, Union

import stripe
from stripe._api_version import _ApiVersion
from stripe._list_object import ListObject
from stripe._object_classes import OBJECT_CLASSES
from stripe._request_options import RequestOptions
from stripe._stripe_object import StripeObject, UntypedStripeObject
from typing_extensions import is_typeddict

API_VERSION: str = _ApiVersion.CURRENT
SDK_VERSION: str = stripe.VERSION

_NONE = type(None)
_SCALARS = (str, int, float, bool, Decimal)
_LIST_KEYS = ("object", "data", "has_more", "url")
# The SDK's per-request options share the params TypedDicts; they are not API parameters.
_REQUEST_OPTIONS = frozenset(RequestOptions.__annotations__)


def resource_class(object_name: str) -> type[StripeObject]:
    """The SDK class of an API object by its ``object`` value (``"checkout.session"``)."""
    module, name = OBJECT_CLASSES[object_name]
    cls: type[StripeObject] = getattr(importlib.import_module(module), name)
    return cls


def object_issues(value: Any, path: str = "", *, partial: bool = False) -> list[str]:
    """Issues of an API object, its class chosen by its ``object`` field. An event's
    ``data.object`` (untyped in the SDK) is checked against its own class too. ``partial``:
    an example trimmed on purpose, whose missing required fields are not issues."""
    walker = _Walker(require_all=not partial)
    return walker.api_object(value, path or "<root>")


def list_issues(value: Any, object_name: str, path: str = "") -> list[str]:
    """Issues of a list answer (``{"object": "list", "data": [...], "has_more", "url"}``) whose
    items are API objects of ``object_name`` (``"refund"``): each checked against its class,
    and an event's ``data.object`` against its own."""
    path = path or "<list>"
    walker = _Walker(require_all=True)
    issues = walker.check(value, ListObject[resource_class(object_name)], path)  # type: ignore[misc]
    if object_name == "event" and isinstance(value, dict) and isinstance(value.get("data"), list):
        for n, event in enumerate(value["data"]):
            data = event.get("data") if isinstance(event, dict) else None
            if isinstance(data, dict):
                issues += walker.api_object(data.get("object"), f"{path}.data[{n}].data.object")
    return issues


def param_issues(params: Mapping[str, Any], typed_dict: type, path: str = "") -> list[str]:
    """Issues of request parameters (before form encoding) against a ``...CreateParams``
    TypedDict. The SDK's request options (``api_key``, ``idempotency_key`` ...) are refused."""
    return _Walker(require_all=True).check(params, typed_dict, path or "<params>")


@dataclass(frozen=True)
class _Walker:
    require_all: bool

    def api_object(self, value: Any, path: str) -> list[str]:
        if not isinstance(value, dict) or value.get("object") not in OBJECT_CLASSES:
            return [f"{path}: not a known API object"]
        issues = self.check(value, resource_class(value["object"]), path)
        data = value.get("data")
        if value["object"] == "event" and isinstance(data, dict):
            issues += self.api_object(data.get("object"), f"{path}.data.object")
        return issues

    def check(self, value: Any, annotation: Any, path: str) -> list[str]:
        """Issues of ``value`` against one resolved annotation."""
        if annotation is Any:
            return []
        if annotation is _NONE:
            return [] if value is None else [f"{path}: expected null, got {_show(value)}"]
        origin, args = typing.get_origin(annotation), typing.get_args(annotation)
        if origin is Union or origin is types.UnionType:
            return self._union(value, args, path)
        if value is None:
            return [f"{path}: null in a non-nullable field"]
        if origin is Literal:
            return [] if value in args else [f"{path}: {value!r} is not one of {list(args)}"]
        if origin is list:
            if not isinstance(value, list):
                return [f"{path}: expected a list, got {_show(value)}"]
            return [
                issue
                for i, v in enumerate(value)
                for issue in self.check(v, args[0], f"{path}[{i}]")
            ]
        if origin in (dict, Mapping) or _subclass(origin, UntypedStripeObject):  # metadata & co.
            if not isinstance(value, Mapping):
                return [f"{path}: expected an object, got {_show(value)}"]
            item = args[-1] if args else Any
            return [issue for k, v in value.items() for issue in self.check(v, item, f"{path}.{k}")]
        if _subclass(origin, ListObject):
            return self._list_object(value, args[0], path)
        if inspect.isclass(annotation):
            return self._class(value, annotation, path)
        raise TypeError(f"{path}: no rule for the annotation {annotation!r}")

    def _union(self, value: Any, options: tuple[Any, ...], path: str) -> list[str]:
        if value is None:
            return [] if _NONE in options else [f"{path}: null in a non-nullable field"]
        options = tuple(o for o in options if o is not _NONE)
        literals = [
            a for o in options if typing.get_origin(o) is Literal for a in typing.get_args(o)
        ]
        if literals and isinstance(value, str) and str in options:  # an open enum
            return [] if value in literals else [f"{path}: {value!r} is not one of {literals}"]
        attempts = [self.check(value, option, path) for option in options]
        if any(not issues for issues in attempts):
            return []
        if isinstance(value, dict):  # an expanded object: report its own issues, not "a str"
            attempts = [a for o, a in zip(options, attempts, strict=True) if o not in _SCALARS]
        return min(attempts, key=len)

    def _class(self, value: Any, cls: type, path: str) -> list[str]:
        if cls is bool:
            ok = isinstance(value, bool)
        elif cls is int:
            ok = isinstance(value, int) and not isinstance(value, bool)
        elif cls is float:
            ok = isinstance(value, int | float) and not isinstance(value, bool)
        elif cls is str:
            ok = isinstance(value, str)
        elif cls is Decimal:  # decimal fields travel as strings: "unit_amount_decimal": "1999"
            ok = _is_decimal(value)
        elif issubclass(cls, StripeObject) or is_typeddict(cls):
            return self._fields(value, cls, path)
        else:
            raise TypeError(f"{path}: no rule for the class {cls!r}")
        return [] if ok else [f"{path}: expected {cls.__name__}, got {_show(value)}"]

    def _fields(self, value: Any, cls: type, path: str) -> list[str]:
        """An SDK object class or a params TypedDict: known keys, required ones present."""
        name = cls.__qualname__
        if not isinstance(value, Mapping):
            return [f"{path}: expected a {name} object, got {_show(value)}"]
        fields = field_types(cls)
        if is_typeddict(cls):
            fields = {k: v for k, v in fields.items() if k not in _REQUEST_OPTIONS}
            required = set(getattr(cls, "__required_keys__", ())) - _REQUEST_OPTIONS
        else:
            required = {k for k, v in fields.items() if not _nullable(v)}
        issues = [f"{path}.{k}: unknown field of {name}" for k in value if k not in fields]
        for key, annotation in fields.items():
            if key in value:
                issues += self.check(value[key], annotation, f"{path}.{key}")
            elif key in required and self.require_all:
                issues.append(f"{path}.{key}: required field of {name} missing")
        return issues

    def _list_object(self, value: Any, item: Any, path: str) -> list[str]:
        """``ListObject[X]``: ``{"object": "list", "data": [X...], "has_more", "url"}``."""
        if not isinstance(value, dict):
            return [f"{path}: expected a list object, got {_show(value)}"]
        issues = [f"{path}.{k}: unknown field of a list" for k in value if k not in _LIST_KEYS]
        if self.require_all:
            issues += [
                f"{path}.{k}: required field of a list missing"
                for k in _LIST_KEYS
                if k not in value
            ]
        if value.get("object", "list") != "list":
            issues.append(f"{path}.object: {value['object']!r} is not 'list'")
        issues += self.check(value.get("has_more", False), bool, f"{path}.has_more")
        issues += self.check(value.get("url", ""), str, f"{path}.url")
        issues += self.check(value.get("data", []), list[item], f"{path}.data")  # type: ignore[valid-type]
        return issues


def field_types(cls: type) -> dict[str, Any]:
    """The public fields of an SDK class or TypedDict with their resolved annotations
    (``typing.get_type_hints``, given the names the SDK imports only for type checkers)."""
    if cls not in _FIELD_TYPES:
        hints = typing.get_type_hints(cls, localns=_type_checking_names(cls))
        _FIELD_TYPES[cls] = {
            name: hint
            for name, hint in hints.items()
            if not name.startswith("_") and typing.get_origin(hint) is not typing.ClassVar
        }
    return _FIELD_TYPES[cls]


_FIELD_TYPES: dict[type, dict[str, Any]] = {}


def _type_checking_names(cls: type) -> dict[str, Any]:
    """The names the annotations of ``cls`` and of its bases may use: what their modules
    import under ``if TYPE_CHECKING:`` (the SDK names those classes in strings,
    ``ExpandableField["Customer"]``), and the globals of the bases' modules (a TypedDict's
    inherited keys keep their strings, not their module). Names of ``cls``'s own module win."""
    bases = [*inspect.getmro(cls), *getattr(cls, "__orig_bases__", ())]
    modules = dict.fromkeys(getattr(b, "__module__", "") for b in bases)
    names: dict[str, Any] = {}
    for module_name in reversed([m for m in modules if m.split(".")[0] == "stripe"]):
        names.update(vars(sys.modules[module_name]))
        names.update(_module_type_checking_names(module_name))
    return names


@cache
def _module_type_checking_names(module_name: str) -> dict[str, Any]:
    tree = ast.parse(inspect.getsource(sys.modules[module_name]))
    names: dict[str, Any] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test).endswith("TYPE_CHECKING"):
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom) and statement.module:
                    source = importlib.import_module(statement.module)
                    for alias in statement.names:
                        names[alias.asname or alias.name] = getattr(source, alias.name)
    return names


def _nullable(annotation: Any) -> bool:
    origin = typing.get_origin(annotation)
    return (origin is Union or origin is types.UnionType) and _NONE in typing.get_args(annotation)


def _subclass(origin: Any, cls: type) -> bool:
    return inspect.isclass(origin) and issubclass(origin, cls)


def _is_decimal(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        Decimal(value)
    except InvalidOperation:
        return False
    return True


def _show(value: Any) -> str:
    return f"{type(value).__name__} {value!r}"[:80]
