"""Stripe's form encoding: nested parameters in bracket notation.

``{"line_items": [{"quantity": 2}], "metadata": {"txId": "tx_1"}}`` travels as
``line_items[0][quantity]=2&metadata[txId]=tx_1``. ``encode`` is what the adapter sends;
``decode`` is its inverse, used by the simulator to read requests the way Stripe does.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import urlencode

_PART = re.compile(r"\[([^\[\]]*)\]")


def encode(params: Mapping[str, Any]) -> str:
    """``application/x-www-form-urlencoded`` text; None values are left out, booleans are
    ``true``/``false``, order follows the mapping."""
    return urlencode(list(_flatten(params, "")))


def _flatten(value: Any, prefix: str) -> Iterable[tuple[str, str]]:
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield from _flatten(item, f"{prefix}[{key}]" if prefix else str(key))
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            yield from _flatten(item, f"{prefix}[{index}]")
    elif value is None:
        return
    elif isinstance(value, bool):
        yield prefix, "true" if value else "false"
    else:
        yield prefix, str(value)


def decode(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Nested dicts and lists from decoded form pairs. ``a[0]``/``a[1]`` become a list, as does
    ``a[]`` repeated; values stay strings. Raises ValueError on a key it cannot read."""
    root: dict[str, Any] = {}
    for key, value in pairs:
        head, _, rest = key.partition("[")
        parts = [head] + (_PART.findall("[" + rest) if rest else [])
        if not head or (rest and "".join(f"[{p}]" for p in parts[1:]) != "[" + rest):
            raise ValueError(f"unreadable parameter name {key!r}")
        node: dict[str, Any] = root
        for index, part in enumerate(parts):
            last = index == len(parts) - 1
            if part == "":  # a[] appends
                if not last:
                    raise ValueError(f"unreadable parameter name {key!r}")
                node.setdefault("", []).append(value)
                break
            if last:
                node[part] = value
            else:
                child = node.setdefault(part, {})
                if not isinstance(child, dict):
                    raise ValueError(f"parameter {key!r} conflicts with another")
                node = child
    return _listify(root)


def _listify(node: Any) -> Any:
    if not isinstance(node, dict):
        return node
    if set(node) == {""}:
        return list(node[""])
    items = {key: _listify(value) for key, value in node.items()}
    if items and all(key.isdigit() for key in items):
        return [items[key] for key in sorted(items, key=int)]
    return items
